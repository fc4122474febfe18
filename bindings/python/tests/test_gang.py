"""Gang scheduling from Python: placeholders hold the gang, real asks replace them."""

from __future__ import annotations

from conftest import RM_ID, RecordingRM, node_request, register_request, resource

import sicore
from sicore import si_pb2


def test_gang_placeholders_are_replaced_by_real_allocations() -> None:
    rm = RecordingRM()
    with sicore.Scheduler(scheduling_interval_ms=10, placeholder_timeout_ms=600_000) as sched:
        sched.register_resource_manager(register_request(), rm)
        sched.update_node(node_request("node-1", "node-2"))
        rm.wait_for(lambda: rm.accepted_nodes() == {"node-1", "node-2"})

        # The application declares the whole gang: two members of 100.
        sched.update_application(si_pb2.ApplicationRequest(rmID=RM_ID, new=[si_pb2.AddApplicationRequest(
            applicationID="job", queueName="root.gang", partitionName="default",
            ugi=si_pb2.UserGroupInformation(user="alice"),
            placeholderAsk=resource(200, 2), gangSchedulingStyle="Soft")]))
        rm.wait_for(lambda: "job" in rm.accepted_apps())

        def asks(key: str, placeholder: bool) -> si_pb2.AllocationRequest:
            return si_pb2.AllocationRequest(rmID=RM_ID, asks=[si_pb2.AllocationAsk(
                allocationKey=key, applicationID="job", partitionName="default",
                resourceAsk=resource(100, 1), maxAllocations=2,
                taskGroupName="workers", placeholder=placeholder)])

        sched.update_allocation(asks("workers-ph", placeholder=True))
        placeholders = rm.wait_for(lambda: len(rm.new_allocations()) == 2 and rm.new_allocations())
        assert all(p.placeholder and p.taskGroupName == "workers" for p in placeholders)
        rm.wait_for(lambda: "Starting" in rm.app_states("job"))

        sched.update_allocation(asks("worker", placeholder=False))

        def replacements() -> list[si_pb2.AllocationRelease]:
            return [r for r in rm.released() if r.terminationType == si_pb2.PLACEHOLDER_REPLACED]

        rels = rm.wait_for(lambda: len(replacements()) == 2 and replacements())
        assert {r.UUID for r in rels} == {p.UUID for p in placeholders}
        assert len(rm.new_allocations()) == 2, "the real allocations wait for confirmation"
        dump = sched.state_dump()
        (app,) = [a for p in dump["partitions"] for a in p["applications"] if a["id"] == "job"]
        assert len(app["replacements"]) == 2

        confirm = si_pb2.AllocationReleasesRequest(allocationsToRelease=[si_pb2.AllocationRelease(
            partitionName="default", applicationID="job", UUID=r.UUID,
            terminationType=si_pb2.PLACEHOLDER_REPLACED) for r in rels])
        sched.update_allocation(si_pb2.AllocationRequest(rmID=RM_ID, releases=confirm))
        allocs = rm.wait_for(lambda: len(rm.new_allocations()) == 4 and rm.new_allocations())
        real = [a for a in allocs if not a.placeholder]
        node_of = {p.UUID: p.nodeID for p in placeholders}
        for r in rels:
            real_uuid = r.message.removeprefix("replacing UUID: ")
            (a,) = [a for a in real if real_uuid == a.UUID]
            assert a.allocationKey == "worker"
            assert a.nodeID == node_of[r.UUID]
        rm.wait_for(lambda: "Running" in rm.app_states("job"))
        dump = sched.state_dump()
        (app,) = [a for p in dump["partitions"] for a in p["applications"] if a["id"] == "job"]
        assert app["allocated"]["memory"] == 200
        assert app["task_groups"] == [
            {"name": "workers", "placeholders": 0, "free_placeholders": 0, "real": 2}]
