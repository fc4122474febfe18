"""Shared fixtures: a scheduler per test and a callback object that records everything."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any, Callable

import pytest

import sicore
from sicore import si_pb2

# Generous: the machine may be busy; nothing here measures time.
WAIT = 60.0


class RecordingRM(sicore.ResourceManagerCallback):
    """Records every callback under a condition variable; tests wait on it."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.allocations: list[si_pb2.AllocationResponse] = []
        self.applications: list[si_pb2.ApplicationResponse] = []
        self.nodes: list[si_pb2.NodeResponse] = []
        self.events: list[si_pb2.EventRecord] = []
        self.scheduling_states: list[si_pb2.UpdateContainerSchedulingStateRequest] = []
        self.threads: set[int] = set()

    def _record(self, bucket: list[Any], item: Any) -> None:
        with self.cond:
            bucket.append(item)
            self.threads.add(threading.get_ident())
            self.cond.notify_all()

    def update_allocation(self, response: si_pb2.AllocationResponse) -> None:
        self._record(self.allocations, response)

    def update_application(self, response: si_pb2.ApplicationResponse) -> None:
        self._record(self.applications, response)

    def update_node(self, response: si_pb2.NodeResponse) -> None:
        self._record(self.nodes, response)

    def send_event(self, events: list[si_pb2.EventRecord]) -> None:
        with self.cond:
            self.events.extend(events)
            self.cond.notify_all()

    def update_container_scheduling_state(
        self, request: si_pb2.UpdateContainerSchedulingStateRequest
    ) -> None:
        self._record(self.scheduling_states, request)

    def wait_for(self, predicate: Callable[[], Any], timeout: float = WAIT) -> Any:
        """Wait until ``predicate()`` (called under the lock) is truthy; return it."""
        with self.cond:
            result = self.cond.wait_for(predicate, timeout)
        assert result, "timed out waiting for a callback"
        return result

    # Convenience views -------------------------------------------------------------

    def accepted_nodes(self) -> set[str]:
        return {n.nodeID for r in self.nodes for n in r.accepted}

    def accepted_apps(self) -> set[str]:
        return {a.applicationID for r in self.applications for a in r.accepted}

    def rejected_apps(self) -> dict[str, str]:
        return {a.applicationID: a.reason for r in self.applications for a in r.rejected}

    def app_states(self, app_id: str) -> list[str]:
        return [u.state for r in self.applications for u in r.updated if u.applicationID == app_id]

    def new_allocations(self) -> list[si_pb2.Allocation]:
        return [a for r in self.allocations for a in r.new]

    def released(self) -> list[si_pb2.AllocationRelease]:
        return [a for r in self.allocations for a in r.released]


RM_ID = "rm-test"


def register_request(rm_id: str = RM_ID,
                     policy_group: str = "queues") -> si_pb2.RegisterResourceManagerRequest:
    return si_pb2.RegisterResourceManagerRequest(rmID=rm_id, version="test", policyGroup=policy_group)


def resource(memory: int, vcore: int) -> si_pb2.Resource:
    return si_pb2.Resource(resources={
        "memory": si_pb2.Quantity(value=memory),
        "vcore": si_pb2.Quantity(value=vcore),
    })


def node_request(*node_ids: str, rm_id: str = RM_ID, memory: int = 10_000, vcore: int = 10,
                 action: int = si_pb2.NodeInfo.CREATE) -> si_pb2.NodeRequest:
    return si_pb2.NodeRequest(rmID=rm_id, nodes=[
        si_pb2.NodeInfo(nodeID=n, action=action, schedulableResource=resource(memory, vcore))
        for n in node_ids
    ])


def app_request(app_id: str, queue: str = "root.a", user: str = "alice",
                rm_id: str = RM_ID) -> si_pb2.ApplicationRequest:
    return si_pb2.ApplicationRequest(rmID=rm_id, new=[si_pb2.AddApplicationRequest(
        applicationID=app_id, queueName=queue, partitionName="default",
        ugi=si_pb2.UserGroupInformation(user=user, groups=["users"]))])


def ask_request(app_id: str, *keys: str, memory: int = 100, vcore: int = 1,
                rm_id: str = RM_ID) -> si_pb2.AllocationRequest:
    return si_pb2.AllocationRequest(rmID=rm_id, asks=[si_pb2.AllocationAsk(
        allocationKey=k, applicationID=app_id, partitionName="default",
        resourceAsk=resource(memory, vcore), maxAllocations=1) for k in keys])


@pytest.fixture
def scheduler() -> Iterator[sicore.Scheduler]:
    """A scheduler with short intervals, closed after the test."""
    sched = sicore.Scheduler(scheduling_interval_ms=10, event_flush_interval_ms=50)
    try:
        yield sched
    finally:
        sched.close()


@pytest.fixture
def rm() -> RecordingRM:
    return RecordingRM()


@pytest.fixture
def registered(scheduler: sicore.Scheduler, rm: RecordingRM) -> tuple[sicore.Scheduler, RecordingRM]:
    scheduler.register_resource_manager(register_request(), rm)
    return scheduler, rm
