"""One guarantee preemption end to end, in both SI editions.

Queue ``a`` fills two nodes above its guarantee; a request of queue ``b``
(below its guarantee, ``preemption.delay: 1ms``) arrives. The core asks the
RM about each candidate node in check order (v1.8: ``preemption_predicates``;
v0.12, which has no such call: ``predicates`` with ``allocate=False``),
releases one victim with ``PREEMPTED_BY_SCHEDULER``, the RM confirms with a
release of the same type, and the preemptor gets the victim's node.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import RM_ID, RecordingRM, app_request, node_request, register_request, resource
from v1rm import V1RM, Driver
from v1rm import register_request as v1_register_request
from v1rm import resource as v1_resource

import sicore
import sicore.v1
from sicore import si_pb2
from sicore.v1 import si_pb2 as si18

QUEUES = """
partitions:
  - name: default
{switch}    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources: {{guaranteed: {{memory: 100}}}}
          - name: b
            resources: {{guaranteed: {{memory: 1000}}}}
            properties: {{preemption.delay: 1ms}}
"""


class PreemptionV1RM(V1RM):
    """The k8shim's answers: every node passes its filters once the victims
    up to the start index are gone (with ``predicates`` overridden too; see
    ``PreemptionOnlyV1RM`` for an RM without it)."""

    def __init__(self) -> None:
        super().__init__()
        self.checks: list[si18.PreemptionPredicatesArgs] = []

    def predicates(self, args: si18.PredicatesArgs) -> None:
        return None

    def preemption_predicates(self, args: si18.PreemptionPredicatesArgs) -> si18.PreemptionPredicatesResponse:
        with self.cond:
            self.checks.append(args)
        return si18.PreemptionPredicatesResponse(success=True, index=args.startIndex)


def preempted_v1(rm: V1RM) -> list[si18.AllocationRelease]:
    return [r for r in rm.released if r.terminationType == si18.PREEMPTED_BY_SCHEDULER]


def start_one_preemption(sched: sicore.v1.Scheduler, rm: V1RM) -> Driver:
    """app-a's four running pods fill n1 and n2, then app-b asks b1, which
    needs one of them; returns once the first victim is released."""
    sched.register_resource_manager(v1_register_request(config=QUEUES.format(switch="")), rm)
    d = Driver(sched, rm)
    d.ready_nodes("n1", "n2")
    d.app("app-a", "root.a")
    d.app("app-b", "root.b")
    policy = si18.PreemptionPolicy(allowPreemptSelf=True, allowPreemptOther=True)
    # Running pods, in age order: p2 is newer than p1 on n1.
    pods = [("p1", "n1"), ("p2", "n1"), ("p3", "n2"), ("p4", "n2")]
    d.allocate(*(si18.Allocation(allocationKey=k, applicationID="app-a", partitionName="default",
                                 resourcePerAlloc=v1_resource(500, 1), nodeID=n, preemptionPolicy=policy)
                 for k, n in pods))
    rm.wait_for("the running pods echoed", lambda: len(rm.new) == 4)
    d.allocate(si18.Allocation(allocationKey="b1", applicationID="app-b", partitionName="default",
                               resourcePerAlloc=v1_resource(500, 1), preemptionPolicy=policy))
    rm.wait_for("a victim", lambda: preempted_v1(rm))
    return d


def test_v1_one_preemption_end_to_end() -> None:
    with sicore.v1.Scheduler(scheduling_interval_ms=10, event_flush_interval_ms=50) as sched:
        rm = PreemptionV1RM()
        d = start_one_preemption(sched, rm)
        with rm.cond:
            victims = preempted_v1(rm)
            assert [(v.allocationKey, v.applicationID) for v in victims] == [("p2", "app-a")]
            assert victims[0].message == "preempting allocations to free up resources to run ask: b1"
            first = rm.checks[0]
            got = (first.allocationKey, first.nodeID, list(first.preemptAllocationKeys), first.startIndex)
            assert got == ("b1", "n1", ["p2", "p1"], 0)
        # The k8shim deletes the pod and confirms with the same type.
        d.allocate(releases=(si18.AllocationRelease(
            partitionName="default", applicationID="app-a", allocationKey="p2",
            terminationType=si18.PREEMPTED_BY_SCHEDULER, message="pod deleted"),))
        rm.wait_for("the preemptor's allocation", lambda: any(a.allocationKey == "b1" for a in rm.new))
        with rm.cond:
            b1 = next(a for a in rm.new if a.allocationKey == "b1")
            assert b1.nodeID == "n1"
            assert len(preempted_v1(rm)) == 1
        queues = {q["path"]: q for q in walk(sched.state_dump()["partitions"][0]["root"])}
        assert queues["root.a"]["allocated"]["memory"] == 1500
        assert queues["root.b"]["allocated"]["memory"] == 500


class PreemptionRM(RecordingRM):
    """A v0.12 RM whose predicates refuse node-0 for the preemptor."""

    def __init__(self) -> None:
        super().__init__()
        self.checks: list[tuple[str, bool]] = []

    def predicates(self, args: si_pb2.PredicatesArgs) -> None:
        if args.allocationKey != "b1":
            return
        with self.cond:
            self.checks.append((args.nodeID, args.allocate))
        if args.nodeID == "node-0":
            raise RuntimeError("node-0: the pod's affinity does not match")


@pytest.fixture
def v012() -> Iterator[tuple[sicore.Scheduler, PreemptionRM]]:
    config = QUEUES.format(switch="    preemption: {enabled: true}\n")
    sched = sicore.Scheduler(scheduling_interval_ms=10, event_flush_interval_ms=50,
                             policy_configs={"queues": config})
    try:
        rm = PreemptionRM()
        sched.register_resource_manager(register_request(), rm)
        yield sched, rm
    finally:
        sched.close()


def test_v012_one_preemption_through_repeated_predicates(v012: tuple[sicore.Scheduler, PreemptionRM]) -> None:
    sched, rm = v012
    sched.update_node(node_request("node-0", "node-1", memory=1000))
    rm.wait_for(lambda: rm.accepted_nodes() == {"node-0", "node-1"})
    sched.update_application(app_request("app-a", "root.a"))
    sched.update_application(app_request("app-b", "root.b"))
    rm.wait_for(lambda: rm.accepted_apps() == {"app-a", "app-b"})
    sched.update_allocation(si_pb2.AllocationRequest(rmID=RM_ID, asks=[si_pb2.AllocationAsk(
        allocationKey="a", applicationID="app-a", partitionName="default",
        resourceAsk=resource(500, 1), maxAllocations=4)]))
    rm.wait_for(lambda: len(rm.new_allocations()) == 4)
    sched.update_allocation(si_pb2.AllocationRequest(rmID=RM_ID, asks=[si_pb2.AllocationAsk(
        allocationKey="b1", applicationID="app-b", partitionName="default",
        resourceAsk=resource(500, 1), maxAllocations=1)]))

    def victims() -> list[si_pb2.AllocationRelease]:
        return [r for r in rm.released() if r.terminationType == si_pb2.PREEMPTED_BY_SCHEDULER]

    rm.wait_for(victims)
    with rm.cond:
        (victim,) = victims()
        node_of = {a.UUID: a.nodeID for a in rm.new_allocations()}
        assert node_of[victim.UUID] == "node-1", "nothing goes on the refused node"
        assert victim.applicationID == "app-a"
        assert rm.checks == [("node-0", False), ("node-1", False)]
    sched.update_allocation(si_pb2.AllocationRequest(rmID=RM_ID, releases=si_pb2.AllocationReleasesRequest(
        allocationsToRelease=[si_pb2.AllocationRelease(
            partitionName="default", applicationID="app-a", UUID=victim.UUID,
            terminationType=si_pb2.PREEMPTED_BY_SCHEDULER, message="pod deleted")])))
    b1 = rm.wait_for(lambda: next((a for a in rm.new_allocations() if a.allocationKey == "b1"), None))
    assert (b1.nodeID, b1.queueName) == ("node-1", "root.b")
    with rm.cond:
        assert len(victims()) == 1


def walk(q: dict) -> Iterator[dict]:
    yield q
    for c in q.get("children", []):
        yield from walk(c)



class PreemptionOnlyV1RM(V1RM):
    """The k8shim without a ``predicates`` override: only the preemption check."""

    def __init__(self) -> None:
        super().__init__()
        self.checks: list[si18.PreemptionPredicatesArgs] = []

    def preemption_predicates(self, args: si18.PreemptionPredicatesArgs) -> si18.PreemptionPredicatesResponse:
        with self.cond:
            self.checks.append(args)
        return si18.PreemptionPredicatesResponse(success=True, index=args.startIndex)


def test_v1_preemption_predicates_is_asked_without_predicates() -> None:
    with sicore.v1.Scheduler(scheduling_interval_ms=10, event_flush_interval_ms=50) as sched:
        rm = PreemptionOnlyV1RM()
        start_one_preemption(sched, rm)
        with rm.cond:
            assert [v.allocationKey for v in preempted_v1(rm)] == ["p2"]
            assert rm.checks, "preemption_predicates was never asked"
            first = rm.checks[0]
            assert (first.allocationKey, first.nodeID, first.startIndex) == ("b1", "n1", 0)
