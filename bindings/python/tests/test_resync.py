"""ReSync before Predicates (issue 11 part 1), as a Python RM observes it."""

from __future__ import annotations

from conftest import RecordingRM, app_request, ask_request, node_request, register_request

import sicore
from sicore import si_pb2

BINPACKING = """
partitions:
  - name: default
    nodesortpolicy: {type: binpacking}
    placementrules: [{name: provided, create: true}]
    queues: [{name: root, submitacl: "*"}]
"""


class CachingRM(RecordingRM):
    """Answers predicates from a cache that only ReSyncSchedulerCache feeds,
    as the Kubernetes shim does: a node holding an assumed allocation is
    refused."""

    def __init__(self) -> None:
        super().__init__()
        self.cache: dict[str, str] = {}
        self.unannounced: list[str] = []

    def resync_scheduler_cache(self, args: si_pb2.ReSyncSchedulerCacheArgs) -> None:
        with self.cond:
            for f in args.forgetAllocations:
                self.cache.pop(f.allocationKey, None)
            for a in args.assumedAllocations:
                self.cache[a.allocationKey] = a.nodeID

    def predicates(self, args: si_pb2.PredicatesArgs) -> None:
        with self.cond:
            if args.nodeID in self.cache.values():
                raise RuntimeError(f"{args.nodeID} already holds an assumed allocation")

    def update_allocation(self, response: si_pb2.AllocationResponse) -> None:
        with self.cond:
            self.unannounced += [a.allocationKey for a in response.new
                                 if a.allocationKey not in self.cache]
        super().update_allocation(response)


def test_each_predicate_call_sees_the_earlier_assumptions() -> None:
    rm = CachingRM()
    with sicore.Scheduler(policy_configs={"queues": BINPACKING}) as sched:
        sched.register_resource_manager(register_request(), rm)
        sched.update_node(node_request("n1", "n2", "n3"))
        rm.wait_for(lambda: rm.accepted_nodes() == {"n1", "n2", "n3"})
        sched.update_application(app_request("app-1"))
        rm.wait_for(lambda: "app-1" in rm.accepted_apps())
        sched.update_allocation(ask_request("app-1", "k1", "k2", "k3"))
        allocs = rm.wait_for(lambda: len(rm.new_allocations()) == 3 and rm.new_allocations())
        placed = sorted(f"{a.allocationKey}@{a.nodeID}" for a in allocs)
        assert placed == ["k1@n1", "k2@n2", "k3@n3"]
        with rm.cond:
            assert rm.unannounced == [], "UpdateAllocation came before its ReSync"
