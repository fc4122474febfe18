"""sicore.v1.Scheduler as an SI v1.x RM (the k8shim) drives it through the v1 family."""

from __future__ import annotations

import ctypes
import gc
import threading
import time
from collections.abc import Iterator

import pytest
from v1rm import CONFIG, V1RM, AssumingRM, Driver, ask, node, register_request, release, rm_entry

import sicore
import sicore.v1
from sicore.v1 import si_pb2

OPTIONS = {"event_flush_interval_ms": 50, "scheduling_interval_ms": 10}


@pytest.fixture
def sched() -> Iterator[sicore.v1.Scheduler]:
    with sicore.v1.Scheduler(**OPTIONS) as s:
        yield s


def registered(sched: sicore.v1.Scheduler, rm: V1RM | None = None, config: str = CONFIG) -> Driver:
    rm = rm if rm is not None else V1RM()
    response = sched.register_resource_manager(register_request(config=config), rm)
    assert isinstance(response, si_pb2.RegisterResourceManagerResponse)
    return Driver(sched, rm)


def test_registration_takes_the_config_text_and_extra_config(sched: sicore.v1.Scheduler) -> None:
    registered(sched)
    dump = sched.state_dump()
    assert rm_entry(dump, "rm1")["config_source"] == "RegisterResourceManager request"
    assert "root.a" in str(dump)


def test_an_empty_config_is_the_built_in_default(sched: sicore.v1.Scheduler) -> None:
    d = registered(sched, config="")
    assert rm_entry(sched.state_dump(), "rm1")["config_source"] == "built-in SI v1.x default"
    d.app("app-1", queue="", tags={"namespace": "ns1"})
    assert "root.ns1" in str(sched.state_dump())


def test_invalid_yaml_fails_registration_with_the_reason(sched: sicore.v1.Scheduler) -> None:
    rm = V1RM()
    with pytest.raises(sicore.RejectedError) as err:
        sched.register_resource_manager(register_request(config="partitions: [\n  - name"), rm)
    assert err.value.status == sicore.Status.REJECTED
    assert "rm1" in err.value.message
    # Not registered: its calls are refused, and the callback object is let go.
    with pytest.raises(sicore.RejectedError):
        sched.update_node(si_pb2.NodeRequest(nodes=[node("n1")], rmID="rm1"))
    assert not any(r["rm_id"] == "rm1" for r in sched.state_dump().get("rms", []))


def test_missing_rm_id_is_an_invalid_argument(sched: sicore.v1.Scheduler) -> None:
    request = register_request()
    request.rmID = ""
    with pytest.raises(sicore.InvalidArgumentError):
        sched.register_resource_manager(request, V1RM())


def test_update_configuration_is_synchronous_and_keeps_the_old_queues_on_invalid_yaml(
    sched: sicore.v1.Scheduler,
) -> None:
    registered(sched)

    def update(config: str) -> None:
        sched.update_configuration(si_pb2.UpdateConfigurationRequest(
            rmID="rm1", policyGroup="queues", config=config, extraConfig={"log.level": "INFO"}))

    before = rm_entry(sched.state_dump(), "rm1")["config_checksum"]
    with pytest.raises(sicore.RejectedError) as err:
        update("partitions:\n  - name: default\n    queues: {{{")
    assert "old configuration stays" in err.value.message
    dump = sched.state_dump()
    assert rm_entry(dump, "rm1")["config_checksum"] == before
    assert "root.a" in str(dump)
    # The same text: nothing changes, the source included.
    update(CONFIG)
    assert rm_entry(sched.state_dump(), "rm1")["config_source"] == "RegisterResourceManager request"
    # A changed text is in force when the call returns.
    update(CONFIG.replace("- name: a", "- name: b"))
    dump = sched.state_dump()
    assert rm_entry(dump, "rm1")["config_checksum"] != before
    assert rm_entry(dump, "rm1")["config_source"] == "UpdateConfiguration request"
    assert "root.b" in str(dump)


def test_create_drain_is_answered_per_node_and_requests_become_new_by_key(
    sched: sicore.v1.Scheduler,
) -> None:
    d = registered(sched)
    d.nodes(node("n1"), node("n2", memory=-1))
    d.rm.wait_for("both nodes answered",
                  lambda: d.rm.nodes_accepted == ["n1"] and d.rm.nodes_rejected == ["n2"])
    d.app("app-1")
    d.allocate(ask("app-1", "pod-1"))
    time.sleep(0.2)
    with d.rm.cond:
        assert d.rm.new == [], "placed on a node created draining"
    d.nodes(si_pb2.NodeInfo(nodeID="n1", action=si_pb2.NodeInfo.DRAIN_TO_SCHEDULABLE))
    d.rm.wait_for("pod-1 allocated", lambda: len(d.rm.new) == 1)
    a = d.rm.new[0]
    assert (a.allocationKey, a.applicationID, a.nodeID) == ("pod-1", "app-1", "n1")
    assert a.resourcePerAlloc.resources["memory"].value == 100
    # The same message again changes nothing (merge by key); then release by key.
    d.allocate(ask("app-1", "pod-1"))
    d.allocate(releases=(release("app-1", "pod-1"),))
    d.rm.wait_for("pod-1 released", lambda: d.rm.released)
    with d.rm.cond:
        assert len(d.rm.new) == 1
        assert d.rm.released[0].allocationKey == "pod-1"
        assert d.rm.released[0].terminationType == si_pb2.STOPPED_BY_RM
    assert all(n["allocations"] == [] for p in sched.state_dump()["partitions"] for n in p["nodes"])


def test_a_placed_allocation_is_echoed_and_an_unknown_app_is_rejected_by_key(
    sched: sicore.v1.Scheduler,
) -> None:
    d = registered(sched)
    d.ready_nodes("n1")
    d.app("app-1")
    d.allocate(ask("app-1", "running-pod", node_id="n1"))
    d.rm.wait_for("echo", lambda: len(d.rm.new) == 1)
    assert (d.rm.new[0].allocationKey, d.rm.new[0].nodeID) == ("running-pod", "n1")
    d.allocate(ask("nope", "k9"))
    d.rm.wait_for("rejection", lambda: d.rm.rejected)
    assert d.rm.rejected[0].allocationKey == "k9"
    assert d.rm.rejected[0].reason


def test_an_allocation_without_key_is_refused_on_the_calling_thread(sched: sicore.v1.Scheduler) -> None:
    d = registered(sched)
    with pytest.raises(sicore.InvalidArgumentError):
        d.allocate(ask("app-1", ""))


def test_new_reaches_the_rm_before_the_next_predicates(sched: sicore.v1.Scheduler) -> None:
    # Bin packing puts every pod on the first node: only a current cache
    # (filled by update_allocation) keeps them one per node.
    packing = CONFIG.replace("  - name: default\n",
                             "  - name: default\n    nodesortpolicy: {type: binpacking}\n")
    rm = AssumingRM()
    d = registered(sched, rm, config=packing)
    nodes = ["n1", "n2", "n3", "n4"]
    d.ready_nodes(*nodes)
    d.app("app-1")
    d.allocate(*(ask("app-1", f"pod-{i}") for i in range(1, 5)))
    rm.wait_for("four pods placed", lambda: len(rm.new) == 4)
    with rm.cond:
        assert rm.violations == [], "stale cache"
        assert sorted(a.nodeID for a in rm.new) == nodes
        assert rm.predicate_calls >= 4
    # A fifth pod finds every node taken: refused by the raised exceptions.
    d.allocate(ask("app-1", "pod-5"))
    rm.wait_for("pod-5 refused everywhere", lambda: rm.refused >= 4)
    time.sleep(0.1)
    with rm.cond:
        assert len(rm.new) == 4
    # Callbacks ran on library threads, never on this one.
    assert threading.get_ident() not in rm.threads


def test_foreign_allocations_occupy_their_node_and_are_never_echoed(sched: sicore.v1.Scheduler) -> None:
    d = registered(sched)
    d.ready_nodes("n1")
    d.app("app-1")

    def foreign(memory: int) -> si_pb2.Allocation:
        a = ask("", "other-pod", memory=memory, vcore=2, node_id="n1")
        a.allocationTags["foreign"] = "default"
        return a

    def n1() -> dict[str, object]:
        return next(n for p in sched.state_dump()["partitions"] for n in p["nodes"] if n["id"] == "n1")

    d.allocate(foreign(300))
    deadline = time.monotonic() + 60
    while n1()["foreign"] != {"other-pod": {"memory": 300, "vcore": 2}}:
        assert time.monotonic() < deadline, n1()
        time.sleep(0.02)
    assert n1()["occupied"] == {"memory": 300, "vcore": 2}
    # Re-sending resizes it; then a pod too big for what is left waits.
    d.allocate(foreign(950))
    while n1()["occupied"] != {"memory": 950, "vcore": 2}:
        assert time.monotonic() < deadline, n1()
        time.sleep(0.02)
    d.allocate(ask("app-1", "big", memory=100))
    time.sleep(0.2)
    with d.rm.cond:
        assert d.rm.new == [], "foreign allocations are never echoed, and big does not fit"
    # Released (empty application): the node is free and big is placed.
    d.allocate(releases=(si_pb2.AllocationRelease(partitionName="default", allocationKey="other-pod",
                                                  terminationType=si_pb2.STOPPED_BY_RM),))
    d.rm.wait_for("big placed", lambda: len(d.rm.new) == 1)
    assert d.rm.new[0].allocationKey == "big"
    assert "other-pod" not in n1().get("foreign", {})


def test_events_arrive_as_v1_event_records(sched: sicore.v1.Scheduler) -> None:
    d = registered(sched)
    kind = si_pb2.EventRecord

    def has(change: int, detail: int) -> bool:
        return any(e.type == kind.NODE and e.objectID == "n1" and e.eventChangeType == change
                   and e.eventChangeDetail == detail for e in d.rm.events)

    d.nodes(node("n1", action=si_pb2.NodeInfo.CREATE))
    d.rm.wait_for("node ADD", lambda: has(kind.ADD, kind.DETAILS_NONE))
    d.nodes(si_pb2.NodeInfo(nodeID="n1", action=si_pb2.NodeInfo.DECOMISSION))
    d.rm.wait_for("node REMOVE", lambda: has(kind.REMOVE, kind.NODE_DECOMISSION))
    with d.rm.cond:
        add = next(e for e in d.rm.events if e.eventChangeType == kind.ADD)
        assert isinstance(add, si_pb2.EventRecord)
        assert "n1" in add.message
        assert add.timestampNano > 0


class RaisingRM(V1RM):
    def update_node(self, response: si_pb2.NodeResponse) -> None:
        super().update_node(response)
        raise ValueError("the RM failed on purpose")

    def send_event(self, events: list[si_pb2.EventRecord]) -> None:
        super().send_event(events)
        raise KeyError("events too")


def test_exceptions_in_callbacks_are_logged_and_never_cross_into_the_library(
    sched: sicore.v1.Scheduler, caplog: pytest.LogCaptureFixture,
) -> None:
    d = registered(sched, RaisingRM())
    d.ready_nodes("n1")
    d.app("app-1")
    d.rm.wait_for("events", lambda: d.rm.events)
    d.allocate(ask("app-1", "pod-1"))
    d.rm.wait_for("pod-1 still scheduled", lambda: len(d.rm.new) == 1)
    messages = [r.getMessage() for r in caplog.records]
    assert any("update_node raised ValueError: the RM failed on purpose" in m for m in messages), messages


class PreemptingRM(V1RM):
    def __init__(self) -> None:
        super().__init__()
        self.released_event = threading.Event()

    def preemption_predicates(self, args: si_pb2.PreemptionPredicatesArgs
                              ) -> si_pb2.PreemptionPredicatesResponse:
        return si_pb2.PreemptionPredicatesResponse(success=True, index=args.startIndex)

    def get_state_dump(self) -> str:
        return '{"pods": 0}'


def test_answer_callbacks_are_installed_and_the_rm_is_released_on_stop() -> None:
    from sicore.v1 import _callbacks

    rm = PreemptingRM()
    handle, table = _callbacks.add_registration(rm, sicore.load_library(), owner=0)
    try:
        # Eleven pointer-sized fields, as include/sicore.h declares them.
        word = ctypes.sizeof(ctypes.c_void_p)
        assert table.struct_size == ctypes.sizeof(sicore._native.sicore_v1_callbacks) == 11 * word
        assert sicore._native.sicore_v1_callbacks.release.offset == 10 * word
        assert table.preemption_predicates and table.get_state_dump and table.update_node
        assert not table.predicates, "not overridden: NULL, every node fits"
    finally:
        sicore._callbacks.drop_registration(handle)

    sched = sicore.v1.Scheduler(**OPTIONS)
    registered(sched, rm)
    assert sicore._callbacks.live_registrations(sched.core._serial)
    sched.stop()
    sched.stop()  # again: nothing
    assert sched.closed
    assert not sicore._callbacks.live_registrations(sched.core._serial)
    with pytest.raises(sicore.StoppedError):
        sched.update_node(si_pb2.NodeRequest(nodes=[node("n1")], rmID="rm1"))
    with pytest.raises(sicore.StoppedError):
        sched.register_resource_manager(register_request(), V1RM())
    del rm, sched
    gc.collect()


def test_stop_from_inside_a_callback_is_refused(sched: sicore.v1.Scheduler) -> None:
    outcome: list[BaseException] = []

    class StoppingRM(V1RM):
        def update_node(self, response: si_pb2.NodeResponse) -> None:
            try:
                sched.stop()
            except BaseException as e:
                outcome.append(e)
            super().update_node(response)

    d = registered(sched, StoppingRM())
    d.nodes(node("n1"))
    d.rm.wait_for("n1 answered", lambda: d.rm.nodes_accepted)
    assert len(outcome) == 1 and isinstance(outcome[0], sicore.WouldDeadlockError)
    assert not sched.closed


def test_wrong_message_types_are_refused(sched: sicore.v1.Scheduler) -> None:
    registered(sched)
    with pytest.raises(TypeError, match=r"sicore\.v1\.si_pb2\.NodeRequest"):
        sched.update_node(sicore.si_pb2.NodeRequest(rmID="rm1"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"sicore\.v1\.ResourceManagerCallback"):
        sched.register_resource_manager(register_request("rm2"), sicore.ResourceManagerCallback())  # type: ignore[arg-type]


def test_raw_bytes_reach_the_same_family(sched: sicore.v1.Scheduler) -> None:
    rm = V1RM()
    sched.raw.register_resource_manager(register_request().SerializeToString(), rm)
    sched.raw.update_node(si_pb2.NodeRequest(nodes=[node("n1")], rmID="rm1").SerializeToString())
    rm.wait_for("n1 answered", lambda: rm.nodes_accepted == ["n1"])
    with pytest.raises(sicore.DecodeError):
        sched.raw.update_node(b"\xff\xff\xff")
