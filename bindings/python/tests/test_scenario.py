"""End to end: nodes, an application in a dynamic queue, asks, allocations, release, removal."""

from __future__ import annotations

import threading

from conftest import RM_ID, RecordingRM, app_request, ask_request, node_request, register_request

import sicore
from sicore import si_pb2


def test_full_lifecycle_with_the_embedded_default_config() -> None:
    rm = RecordingRM()
    # No options at all: policy group "queues" gets the embedded default.
    with sicore.Scheduler() as sched:
        resp = sched.register_resource_manager(register_request(), rm)
        assert isinstance(resp, si_pb2.RegisterResourceManagerResponse)

        sched.update_node(node_request("node-1", "node-2"))
        rm.wait_for(lambda: rm.accepted_nodes() == {"node-1", "node-2"})

        sched.update_application(app_request("app-1", queue="root.a", user="alice"))
        rm.wait_for(lambda: "app-1" in rm.accepted_apps())

        sched.update_allocation(ask_request("app-1", "ask-1", "ask-2"))
        allocs = rm.wait_for(lambda: len(rm.new_allocations()) >= 2 and rm.new_allocations())
        by_key = {a.allocationKey: a for a in allocs}
        assert set(by_key) == {"ask-1", "ask-2"}
        for alloc in by_key.values():
            assert alloc.applicationID == "app-1"
            assert alloc.UUID
            assert alloc.nodeID in {"node-1", "node-2"}
            assert alloc.queueName == "root.a"
            assert alloc.partitionName == "default"
            assert alloc.resourcePerAlloc.resources["memory"].value == 100

        dump = sched.state_dump()
        (partition,) = [p for p in dump["partitions"] if p["name"] == "default"]
        leaves = {c["path"]: c for c in partition["root"]["children"]}
        assert "root.a" in leaves, "provided rule should create the leaf root.a"
        assert leaves["root.a"]["leaf"] is True
        assert leaves["root.a"]["managed"] is False
        (app,) = [a for a in partition["applications"] if a["id"] == "app-1"]
        assert app["queue"] == "root.a"
        assert app["user"] == "alice"
        assert sorted(app["allocations"]) == sorted(a.UUID for a in allocs)

        # Release one allocation by UUID: echoed back as released, STOPPED_BY_RM.
        first = by_key["ask-1"]
        sched.update_allocation(si_pb2.AllocationRequest(
            rmID=RM_ID,
            releases=si_pb2.AllocationReleasesRequest(allocationsToRelease=[si_pb2.AllocationRelease(
                partitionName="default", applicationID="app-1", UUID=first.UUID,
                terminationType=si_pb2.STOPPED_BY_RM, message="done")])))
        released = rm.wait_for(lambda: [r for r in rm.released() if r.UUID == first.UUID])
        assert released[0].terminationType == si_pb2.STOPPED_BY_RM
        assert released[0].applicationID == "app-1"

        # Remove the application: its remaining allocation is released too.
        sched.update_application(si_pb2.ApplicationRequest(rmID=RM_ID, remove=[
            si_pb2.RemoveApplicationRequest(applicationID="app-1", partitionName="default")]))
        second = by_key["ask-2"]
        released = rm.wait_for(lambda: [r for r in rm.released() if r.UUID == second.UUID])
        assert released[0].terminationType == si_pb2.STOPPED_BY_RM

        def app_gone() -> bool:
            parts = sched.state_dump()["partitions"]
            return all(a["id"] != "app-1" for p in parts for a in p["applications"])

        assert app_gone()
        # Callbacks ran on library threads, never on this one.
        assert threading.get_ident() not in rm.threads


def test_asks_that_do_not_fit_stay_pending(registered: tuple[sicore.Scheduler, RecordingRM]) -> None:
    sched, rm = registered
    sched.update_node(node_request("small", memory=100, vcore=1))
    rm.wait_for(lambda: "small" in rm.accepted_nodes())
    sched.update_application(app_request("app-big"))
    rm.wait_for(lambda: "app-big" in rm.accepted_apps())
    sched.update_allocation(ask_request("app-big", "huge", memory=1_000_000, vcore=1))

    def pending() -> bool:
        parts = sched.state_dump()["partitions"]
        apps = [a for p in parts for a in p["applications"] if a["id"] == "app-big"]
        return bool(apps) and any(k["allocation_key"] == "huge" for k in apps[0]["pending_asks"])

    # The dump is taken after the ask was queued, so the core has seen it.
    assert pending()
    assert not [a for a in rm.new_allocations() if a.allocationKey == "huge"]


def test_application_in_an_unknown_partition_is_rejected(
        registered: tuple[sicore.Scheduler, RecordingRM]) -> None:
    sched, rm = registered
    sched.update_application(si_pb2.ApplicationRequest(rmID=RM_ID, new=[si_pb2.AddApplicationRequest(
        applicationID="lost", queueName="root.a", partitionName="nope",
        ugi=si_pb2.UserGroupInformation(user="alice"))]))
    reasons = rm.wait_for(rm.rejected_apps)
    assert "lost" in reasons
    assert "nope" in reasons["lost"]
