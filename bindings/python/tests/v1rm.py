"""A recording SI v1.x RM for the ``test_v1_*`` tests, playing the k8shim's part.

Like the k8shim v1.8.0 it assumes a pod inside ``update_allocation`` (the
``new`` list) and answers ``predicates`` from that cache, one pod per node,
so that a ``predicates`` call ahead of the ``new`` it depends on shows up
as a violation.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import sicore.v1
from sicore.v1 import si_pb2

WAIT = 60.0

CONFIG = """
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
"""


class V1RM(sicore.v1.ResourceManagerCallback):
    """Records every callback under a condition variable."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.new: list[si_pb2.Allocation] = []
        self.released: list[si_pb2.AllocationRelease] = []
        self.rejected: list[si_pb2.RejectedAllocation] = []
        self.apps_accepted: list[str] = []
        self.nodes_accepted: list[str] = []
        self.nodes_rejected: list[str] = []
        self.events: list[si_pb2.EventRecord] = []
        self.threads: set[int] = set()

    def _note(self, f: Callable[[], None]) -> None:
        with self.cond:
            f()
            self.threads.add(threading.get_ident())
            self.cond.notify_all()

    def update_allocation(self, response: si_pb2.AllocationResponse) -> None:
        def f() -> None:
            self.new.extend(response.new)
            self.released.extend(response.released)
            self.rejected.extend(response.rejectedAllocations)
        self._note(f)

    def update_application(self, response: si_pb2.ApplicationResponse) -> None:
        self._note(lambda: self.apps_accepted.extend(a.applicationID for a in response.accepted))

    def update_node(self, response: si_pb2.NodeResponse) -> None:
        def f() -> None:
            self.nodes_accepted.extend(n.nodeID for n in response.accepted)
            self.nodes_rejected.extend(n.nodeID for n in response.rejected)
        self._note(f)

    def send_event(self, events: list[si_pb2.EventRecord]) -> None:
        self._note(lambda: self.events.extend(events))

    def wait_for(self, what: str, predicate: Callable[[], Any], timeout: float = WAIT) -> Any:
        with self.cond:
            result = self.cond.wait_for(predicate, timeout)
        assert result, f"timed out waiting for {what}"
        return result


class AssumingRM(V1RM):
    """Assumes pods in ``update_allocation``; ``predicates`` allows one pod per node."""

    def __init__(self) -> None:
        super().__init__()
        self.assumed: dict[str, str] = {}  # node -> key
        self.violations: list[str] = []
        self.predicate_calls = 0
        self.refused = 0

    def update_allocation(self, response: si_pb2.AllocationResponse) -> None:
        with self.cond:
            for a in response.new:
                holder = self.assumed.get(a.nodeID)
                if holder is not None and holder != a.allocationKey:
                    self.violations.append(f"{a.allocationKey} placed on {a.nodeID} held by {holder}")
                self.assumed[a.nodeID] = a.allocationKey
        super().update_allocation(response)

    def predicates(self, args: si_pb2.PredicatesArgs) -> None:
        with self.cond:
            self.predicate_calls += 1
            holder = self.assumed.get(args.nodeID)
            if holder is not None and holder != args.allocationKey:
                self.refused += 1
                self.cond.notify_all()
                raise RuntimeError(f"{args.nodeID} already runs {holder}")


def register_request(rm_id: str = "rm1", config: str = CONFIG) -> si_pb2.RegisterResourceManagerRequest:
    return si_pb2.RegisterResourceManagerRequest(
        rmID=rm_id, version="v1.8.0", policyGroup="queues", config=config,
        buildInfo={"buildVersion": "test"},
        extraConfig={"log.level": "info", "some.unknown.key": "x"})


def resource(memory: int, vcore: int) -> si_pb2.Resource:
    return si_pb2.Resource(resources={"memory": si_pb2.Quantity(value=memory),
                                      "vcore": si_pb2.Quantity(value=vcore)})


def node(node_id: str, memory: int = 1000, vcore: int = 10,
         action: int = si_pb2.NodeInfo.CREATE_DRAIN) -> si_pb2.NodeInfo:
    return si_pb2.NodeInfo(nodeID=node_id, action=action, schedulableResource=resource(memory, vcore),
                           attributes={"si.io/hostname": node_id})


def ask(app_id: str, key: str, memory: int = 100, vcore: int = 1, node_id: str = "") -> si_pb2.Allocation:
    return si_pb2.Allocation(allocationKey=key, applicationID=app_id, partitionName="default",
                             resourcePerAlloc=resource(memory, vcore), nodeID=node_id)


def release(app_id: str, key: str) -> si_pb2.AllocationRelease:
    return si_pb2.AllocationRelease(partitionName="default", applicationID=app_id, allocationKey=key,
                                    terminationType=si_pb2.STOPPED_BY_RM, message="pod deleted")


class Driver:
    """One v1 RM's requests to a :class:`sicore.v1.Scheduler`."""

    def __init__(self, sched: sicore.v1.Scheduler, rm: V1RM, rm_id: str = "rm1") -> None:
        self.sched = sched
        self.rm = rm
        self.rm_id = rm_id

    def nodes(self, *nodes: si_pb2.NodeInfo) -> None:
        self.sched.update_node(si_pb2.NodeRequest(nodes=list(nodes), rmID=self.rm_id))

    def ready_nodes(self, *ids: str) -> None:
        """CREATE_DRAIN, wait for every answer, then DRAIN_TO_SCHEDULABLE."""
        self.nodes(*(node(n) for n in ids))
        self.rm.wait_for("every node answered", lambda: set(ids) <= set(self.rm.nodes_accepted))
        self.nodes(*(si_pb2.NodeInfo(nodeID=n, action=si_pb2.NodeInfo.DRAIN_TO_SCHEDULABLE) for n in ids))

    def app(self, app_id: str, queue: str = "root.a", **extra: Any) -> None:
        self.sched.update_application(si_pb2.ApplicationRequest(
            new=[si_pb2.AddApplicationRequest(
                applicationID=app_id, queueName=queue, partitionName="default",
                ugi=si_pb2.UserGroupInformation(user="alice"), **extra)],
            rmID=self.rm_id))
        self.rm.wait_for(f"{app_id} accepted", lambda: app_id in self.rm.apps_accepted)

    def allocate(self, *allocations: si_pb2.Allocation,
                 releases: tuple[si_pb2.AllocationRelease, ...] = ()) -> None:
        request = si_pb2.AllocationRequest(allocations=list(allocations), rmID=self.rm_id)
        if releases:
            request.releases.allocationsToRelease.extend(releases)
        self.sched.update_allocation(request)


def rm_entry(dump: dict[str, Any], rm_id: str) -> dict[str, Any]:
    for rm in dump["rms"]:
        if rm["rm_id"] == rm_id:
            return rm  # type: ignore[no-any-return]
    raise AssertionError(f"RM {rm_id} not in the dump: {dump}")
