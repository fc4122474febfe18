"""Both SI editions in one interpreter, and RMs of both on one scheduler handle."""

from __future__ import annotations

import time

import pytest
from conftest import RecordingRM
from google.protobuf.internal import api_implementation
from v1rm import CONFIG, V1RM, Driver, ask, node, register_request

import sicore
import sicore.v1
from sicore import si_pb2 as si012
from sicore.v1 import si_pb2 as si18


def test_the_editions_have_distinct_pools_and_classes() -> None:
    from google.protobuf import descriptor_pool

    assert si012.AllocationRequest.DESCRIPTOR.full_name == si18.AllocationRequest.DESCRIPTOR.full_name
    assert si012.AllocationRequest is not si18.AllocationRequest
    assert si012.DESCRIPTOR.pool is descriptor_pool.Default()
    assert si18.DESCRIPTOR.pool is sicore.v1._pool.POOL
    assert sicore.v1.sicore_pb2.DESCRIPTOR.pool is sicore.v1._pool.POOL
    assert "UUID" in si012.Allocation.DESCRIPTOR.fields_by_name
    assert "UUID" not in si18.Allocation.DESCRIPTOR.fields_by_name
    if api_implementation.Type() != "python":
        # The default pool still resolves si.v1 names to v0.12. (The pure-Python
        # backend's symbol database indexes every generated class in the default
        # pool, whatever its pool: there the later import wins the name.)
        found = descriptor_pool.Default().FindMessageTypeByName("si.v1.Allocation")
        assert found is si012.Allocation.DESCRIPTOR
    assert si18.NodeInfo.CREATE_DRAIN == 6
    # Messages round-trip through their own edition.
    m = si18.Allocation(allocationKey="k", nodeID="n1", priority=-3)
    assert si18.Allocation.FromString(m.SerializeToString()) == m
    assert type(m).__module__ == "sicore.v1.si_pb2"


@pytest.mark.skipif(api_implementation.Type() == "python",
                    reason="the pure-Python backend does not refuse the duplicate")
def test_the_default_pool_refuses_a_second_si_proto() -> None:
    # Why the v1.8 modules need the private pool.
    from google.protobuf import descriptor_pool

    with pytest.raises(TypeError):
        descriptor_pool.Default().AddSerializedFile(si18.DESCRIPTOR.serialized_pb)


V012_CONFIG = """
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


def test_rms_of_both_editions_share_one_scheduler_and_see_only_their_own() -> None:
    core = sicore.Scheduler(event_flush_interval_ms=50, scheduling_interval_ms=10,
                            policy_configs={"queues": V012_CONFIG})
    v1 = sicore.v1.Scheduler(core)
    assert v1.core is core
    try:
        rm18 = V1RM()
        v1.register_resource_manager(register_request("rm1", CONFIG), rm18)
        rm012 = RecordingRM()
        core.register_resource_manager(
            si012.RegisterResourceManagerRequest(rmID="rm0", policyGroup="queues", version="0.12"), rm012)

        # The same node and application ids on both sides.
        d = Driver(v1, rm18)
        d.ready_nodes("n1")
        d.app("app-1")
        core.update_node(si012.NodeRequest(rmID="rm0", nodes=[si012.NodeInfo(
            nodeID="n1", action=si012.NodeInfo.CREATE,
            schedulableResource=si012.Resource(resources={
                "memory": si012.Quantity(value=1000), "vcore": si012.Quantity(value=10)}))]))
        rm012.wait_for(lambda: "n1" in rm012.accepted_nodes())
        core.update_application(si012.ApplicationRequest(rmID="rm0", new=[si012.AddApplicationRequest(
            applicationID="app-1", queueName="root.a", partitionName="default",
            ugi=si012.UserGroupInformation(user="bob"))]))
        rm012.wait_for(lambda: "app-1" in rm012.accepted_apps())
        core.update_allocation(si012.AllocationRequest(rmID="rm0", asks=[si012.AllocationAsk(
            allocationKey="v0-ask", applicationID="app-1", maxAllocations=1,
            resourceAsk=si012.Resource(resources={
                "memory": si012.Quantity(value=100), "vcore": si012.Quantity(value=1)}))]))
        d.allocate(ask("app-1", "v1-pod"))

        rm18.wait_for("v1 pod placed", lambda: len(rm18.new) == 1)
        rm012.wait_for(rm012.new_allocations)
        assert [a.allocationKey for a in rm012.new_allocations()] == ["v0-ask"]
        assert isinstance(rm012.new_allocations()[0], si012.Allocation)
        assert rm012.new_allocations()[0].UUID
        assert [a.allocationKey for a in rm18.new] == ["v1-pod"]
        assert isinstance(rm18.new[0], si18.Allocation)

        dump = core.state_dump()

        def keys_of(rm_id: str) -> list[str]:
            return [a["allocation_key"] for p in dump["partitions"] if p["rm_id"] == rm_id
                    for n in p["nodes"] for a in n["allocations"]]

        assert keys_of("rm0") == ["v0-ask"]
        assert keys_of("rm1") == ["v1-pod"]
    finally:
        v1.stop()
    assert core.closed


def test_a_call_of_the_other_edition_is_rejected_with_the_librarys_message() -> None:
    with sicore.Scheduler(policy_configs={"queues": V012_CONFIG}) as core:
        v1 = sicore.v1.Scheduler(core)
        v1.register_resource_manager(register_request("rm1"), V1RM())
        core.register_resource_manager(
            si012.RegisterResourceManagerRequest(rmID="rm0", policyGroup="queues", version="0.12"),
            RecordingRM())
        # v1 calls for the v0.12 RM.
        with pytest.raises(sicore.RejectedError, match=r"SI v0\.12") as err:
            v1.update_node(si18.NodeRequest(rmID="rm0", nodes=[node("n1")]))
        assert err.value.status == sicore.Status.REJECTED
        with pytest.raises(sicore.RejectedError, match=r"SI v0\.12"):
            v1.update_allocation(si18.AllocationRequest(rmID="rm0"))
        with pytest.raises(sicore.RejectedError, match=r"SI v0\.12"):
            v1.update_application(si18.ApplicationRequest(rmID="rm0"))
        with pytest.raises(sicore.RejectedError, match=r"SI v0\.12"):
            v1.update_configuration(si18.UpdateConfigurationRequest(rmID="rm0", config=CONFIG))
        # v0.12 calls for the v1 RM.
        with pytest.raises(sicore.RejectedError, match=r"SI v1\.x"):
            core.update_node(si012.NodeRequest(rmID="rm1"))
        with pytest.raises(sicore.RejectedError, match=r"SI v1\.x"):
            core.update_allocation(si012.AllocationRequest(rmID="rm1"))
        with pytest.raises(sicore.RejectedError, match=r"SI v1\.x"):
            core.update_configuration("rm1")
        time.sleep(0.1)
        assert all(p["nodes"] == [] for p in core.state_dump()["partitions"])


def test_options_belong_to_a_new_scheduler_only() -> None:
    with sicore.Scheduler() as core, pytest.raises(TypeError):
        sicore.v1.Scheduler(core, scheduling_interval_ms=10)
    with pytest.raises(TypeError):
        sicore.v1.Scheduler("not a scheduler")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unknown scheduler option"):
        sicore.v1.Scheduler(no_such_option=1)
