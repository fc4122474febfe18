"""Callbacks: exceptions, predicates, re-entrancy and the lifetime of the callback object."""

from __future__ import annotations

import gc
import logging
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import WAIT, RecordingRM, app_request, ask_request, node_request, register_request

import sicore
from sicore import si_pb2


class BoomError(RuntimeError):
    pass


class RaisingRM(RecordingRM):
    """Records node responses, then raises from update_node."""

    def update_node(self, response: si_pb2.NodeResponse) -> None:
        super().update_node(response)
        raise BoomError("node handling failed on purpose")


class _Catcher(logging.Handler):
    """Collects records of the `sicore` logger and signals each arrival."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []
        self.cond = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self.cond:
            self.records.append(record)
            self.cond.notify_all()

    def wait_for_exception(self, exc_type: type[BaseException]) -> logging.LogRecord:
        def match() -> list[logging.LogRecord]:
            return [r for r in self.records if r.exc_info and r.exc_info[0] is exc_type]

        with self.cond:
            found = self.cond.wait_for(match, WAIT)
        assert found, f"no {exc_type.__name__} was logged"
        return found[0]


@pytest.fixture
def catcher() -> Iterator[_Catcher]:
    handler = _Catcher()
    logger = logging.getLogger("sicore")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def test_exception_in_callback_is_logged_and_the_scheduler_goes_on(
        scheduler: sicore.Scheduler, catcher: _Catcher) -> None:
    rm = RaisingRM()
    scheduler.register_resource_manager(register_request(), rm)
    scheduler.update_node(node_request("n1"))
    rm.wait_for(lambda: "n1" in rm.accepted_nodes())
    record = catcher.wait_for_exception(BoomError)
    assert record.name == "sicore"
    assert record.levelno == logging.ERROR
    assert "update_node" in record.getMessage()
    assert "node handling failed on purpose" in record.getMessage()
    # The process and the scheduler are fine: more work is accepted.
    scheduler.update_application(app_request("after-boom"))
    rm.wait_for(lambda: "after-boom" in rm.accepted_apps())


class BaseExceptionRM(RecordingRM):
    def update_node(self, response: si_pb2.NodeResponse) -> None:
        super().update_node(response)
        raise SystemExit("not even this escapes")


def test_base_exception_in_callback_does_not_escape(scheduler: sicore.Scheduler) -> None:
    rm = BaseExceptionRM()
    scheduler.register_resource_manager(register_request(), rm)
    scheduler.update_node(node_request("n1"))
    rm.wait_for(lambda: rm.nodes)
    scheduler.update_application(app_request("still-alive"))
    rm.wait_for(lambda: "still-alive" in rm.accepted_apps())


class PickyRM(RecordingRM):
    """Refuses every node except ``allowed`` through predicates."""

    def __init__(self, allowed: str) -> None:
        super().__init__()
        self.allowed = allowed
        self.checked: list[si_pb2.PredicatesArgs] = []

    def predicates(self, args: si_pb2.PredicatesArgs) -> None:
        with self.cond:
            self.checked.append(args)
            self.cond.notify_all()
        if args.nodeID != self.allowed:
            raise ValueError(f"node {args.nodeID} is not {self.allowed}")


def test_predicates_refusing_nodes(scheduler: sicore.Scheduler) -> None:
    rm = PickyRM(allowed="good")
    scheduler.register_resource_manager(register_request(), rm)
    # "bad" is much emptier so the default node order would try it first.
    scheduler.update_node(node_request("bad", memory=100_000, vcore=100))
    scheduler.update_node(node_request("good", memory=1_000, vcore=2))
    rm.wait_for(lambda: rm.accepted_nodes() == {"bad", "good"})
    scheduler.update_application(app_request("app-p"))
    rm.wait_for(lambda: "app-p" in rm.accepted_apps())
    scheduler.update_allocation(ask_request("app-p", "k1", "k2"))
    allocs = rm.wait_for(lambda: len(rm.new_allocations()) >= 2 and rm.new_allocations())
    assert {a.nodeID for a in allocs} == {"good"}
    assert rm.checked, "predicates should have been consulted"


def test_only_overridden_callbacks_are_installed() -> None:
    from sicore._callbacks import add_registration, drop_registration

    lib = sicore.load_library()
    handle, table, _ = add_registration(RecordingRM(), lib, owner=-1)
    try:
        assert not table.predicates  # NULL: every node fits, no call per node
        assert not table.resync_scheduler_cache
        assert table.update_allocation and table.update_node and table.send_event
        assert table.update_configuration and table.release  # always
    finally:
        drop_registration(handle)
    handle, table, _ = add_registration(PickyRM("x"), lib, owner=-1)
    try:
        assert table.predicates
    finally:
        drop_registration(handle)
    plain = sicore.ResourceManagerCallback()
    plain.predicates = lambda args: None  # type: ignore[method-assign]
    handle, table, _ = add_registration(plain, lib, owner=-1)
    try:
        assert table.predicates and not table.update_allocation
    finally:
        drop_registration(handle)


class ReentrantRM(RecordingRM):
    """From inside callbacks: queues an application (async) and tries sync calls."""

    def __init__(self) -> None:
        super().__init__()
        self.scheduler: sicore.Scheduler | None = None
        self.sync_errors: dict[str, BaseException] = {}
        self.async_ok = threading.Event()

    def update_node(self, response: si_pb2.NodeResponse) -> None:
        super().update_node(response)
        assert self.scheduler is not None
        if not any(n.nodeID == "reentrant" for n in response.accepted):
            return
        self.scheduler.update_application(app_request("from-callback"))
        self.async_ok.set()
        attempts: dict[str, Any] = {
            "register": lambda: self.scheduler.register_resource_manager(register_request(), self),
            "update_configuration": lambda: self.scheduler.update_configuration("rm-test"),
            "state_dump": self.scheduler.state_dump,
            "close": self.scheduler.close,
        }
        for name, attempt in attempts.items():
            try:
                attempt()
            except BaseException as e:
                self.sync_errors[name] = e
        with self.cond:
            self.cond.notify_all()


def test_callbacks_calling_back_into_the_scheduler(scheduler: sicore.Scheduler) -> None:
    rm = ReentrantRM()
    rm.scheduler = scheduler
    scheduler.register_resource_manager(register_request(), rm)
    scheduler.update_node(node_request("reentrant"))
    # Async from a callback works: the application it queued is accepted.
    rm.wait_for(lambda: "from-callback" in rm.accepted_apps())
    assert rm.async_ok.is_set()
    rm.wait_for(lambda: len(rm.sync_errors) == 4)
    for name, err in rm.sync_errors.items():
        assert isinstance(err, sicore.WouldDeadlockError), (name, err)
        assert err.status is sicore.Status.WOULD_DEADLOCK
        assert err.message
    # close() from the callback did nothing: the scheduler still works.
    assert not scheduler.closed
    assert scheduler.state_dump()["partitions"]


def test_dropped_callback_object_stays_alive_while_registered() -> None:
    events = threading.Event()
    seen: list[str] = []

    class Forgetful(sicore.ResourceManagerCallback):
        def update_node(self, response: si_pb2.NodeResponse) -> None:
            seen.extend(n.nodeID for n in response.accepted)
            events.set()

    sched = sicore.Scheduler(scheduling_interval_ms=10)
    try:
        cb = Forgetful()
        ref = weakref.ref(cb)
        sched.register_resource_manager(register_request(), cb)
        del cb
        gc.collect()
        assert ref() is not None, "the binding must keep the registered callback alive"
        sched.update_node(node_request("after-gc"))
        assert events.wait(WAIT)
        assert seen == ["after-gc"]
    finally:
        sched.close()
    # sicore_free released the table: the binding dropped its reference.
    gc.collect()
    assert ref() is None


def test_reregistration_releases_the_previous_callback(scheduler: sicore.Scheduler) -> None:
    first = RecordingRM()
    ref = weakref.ref(first)
    scheduler.register_resource_manager(register_request(), first)
    del first
    second = RecordingRM()
    scheduler.register_resource_manager(register_request(), second)
    gc.collect()
    released = threading.Event()

    def check() -> bool:
        gc.collect()
        return ref() is None

    # The library releases the old table when it is done with it.
    for _ in range(600):
        if check():
            released.set()
            break
        released.wait(0.1)
    assert released.is_set(), "the replaced callback object was never released"
    scheduler.update_node(node_request("n2"))
    second.wait_for(lambda: "n2" in second.accepted_nodes())


def test_failed_registration_does_not_keep_the_callback() -> None:
    cb = RecordingRM()
    ref = weakref.ref(cb)
    with sicore.Scheduler(policy_configs={"queues": "partitions: [broken"}) as sched:
        with pytest.raises(sicore.RejectedError):
            sched.register_resource_manager(register_request(), cb)
        del cb
        gc.collect()
        assert ref() is None


def test_default_callbacks_do_nothing_and_succeed(scheduler: sicore.Scheduler) -> None:
    base = sicore.ResourceManagerCallback()
    assert base.update_allocation(si_pb2.AllocationResponse()) is None
    assert base.predicates(si_pb2.PredicatesArgs()) is None
    assert base.send_event([]) is None
    answer = base.update_configuration(si_pb2.UpdateConfigurationRequest())
    assert isinstance(answer, si_pb2.UpdateConfigurationResponse) and answer.success
    # A bare base instance is a valid RM.
    scheduler.register_resource_manager(register_request(), base)
    scheduler.update_node(node_request("plain"))

    def node_known() -> bool:
        parts = scheduler.state_dump()["partitions"]
        return any(n["id"] == "plain" for p in parts for n in p["nodes"])

    assert node_known()


SMALL_QUEUE_YAML = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: small
            resources:
              max: {memory: 100, vcore: 1}
    placementrules:
      - name: provided
        create: false
"""


def test_events_arrive_as_a_list_of_records(rm: RecordingRM) -> None:
    # An ask that does not fit its queue's headroom raises an
    # InsufficientQueueResources REQUEST event (spec 13.2).
    with sicore.Scheduler(policy_configs={"queues": SMALL_QUEUE_YAML}, scheduling_interval_ms=10,
                          event_flush_interval_ms=50, disable_events=False) as sched:
        sched.register_resource_manager(register_request(), rm)
        sched.update_node(node_request("ev-node"))
        sched.update_application(app_request("ev-app", queue="root.small"))
        rm.wait_for(lambda: "ev-app" in rm.accepted_apps())
        sched.update_allocation(ask_request("ev-app", "ev-ask", memory=1000))
        events = rm.wait_for(lambda: rm.events, timeout=15)
        assert all(isinstance(e, si_pb2.EventRecord) for e in events)
        assert any(e.objectID == "ev-ask" for e in events)


def _call_trampoline(name: str, handle: int, message: bytes, *extra: object) -> object:
    """Call a trampoline the way the library does, with a C copy of the message."""
    import ctypes

    from sicore._callbacks import _TRAMPOLINES

    buf = ctypes.create_string_buffer(message, len(message) or 1)
    return _TRAMPOLINES[name](handle, ctypes.addressof(buf), len(message), *extra)


def test_send_event_trampoline_decodes_a_batch(caplog: pytest.LogCaptureFixture) -> None:
    from sicore._callbacks import add_registration, drop_registration

    rm = RecordingRM()
    handle, _, _ = add_registration(rm, sicore.load_library(), owner=-1)
    try:
        batch = sicore.sicore_pb2.EventRecords(events=[
            si_pb2.EventRecord(type=si_pb2.EventRecord.REQUEST, objectID="k1", reason="r1"),
            si_pb2.EventRecord(type=si_pb2.EventRecord.APP, objectID="a1", reason="r2"),
        ])
        _call_trampoline("send_event", handle, batch.SerializeToString())
        assert [e.objectID for e in rm.events] == ["k1", "a1"]
        assert all(isinstance(e, si_pb2.EventRecord) for e in rm.events)
        # An empty batch is an empty list.
        _call_trampoline("send_event", handle, b"")
        assert len(rm.events) == 2
        # Garbage from the library is logged, never raised into C.
        caplog.set_level(logging.ERROR, logger="sicore")
        _call_trampoline("send_event", handle, b"\xff\xff\xff")
        assert any("send_event" in r.getMessage() for r in caplog.records)
    finally:
        drop_registration(handle)


def test_update_configuration_trampoline(caplog: pytest.LogCaptureFixture) -> None:
    from sicore._callbacks import add_registration, drop_registration

    seen: list[str] = []

    class ConfigRM(sicore.ResourceManagerCallback):
        def update_configuration(
                self, request: si_pb2.UpdateConfigurationRequest) -> si_pb2.UpdateConfigurationResponse:
            seen.append(request.configs)
            if request.configs == "bad":
                raise ValueError("refusing bad config")
            return si_pb2.UpdateConfigurationResponse(success=True, oldConfig="old")

    handle, _, _ = add_registration(ConfigRM(), sicore.load_library(), owner=-1)
    caplog.set_level(logging.ERROR, logger="sicore")
    try:
        # A NULL reply slot is ignored by sicore_reply_set, so this exercises
        # the Python side only.
        for configs in ("good", "bad"):
            msg = si_pb2.UpdateConfigurationRequest(configs=configs).SerializeToString()
            _call_trampoline("update_configuration", handle, msg, None)
        assert seen == ["good", "bad"]
        assert any("refusing bad config" in r.getMessage() for r in caplog.records)
    finally:
        drop_registration(handle)


def test_status_trampoline_reports_failure_for_unknown_handle() -> None:
    msg = si_pb2.NodeResponse().SerializeToString()
    assert _call_trampoline("update_node", 987_654_321, msg, None) == 1


_per_thread = threading.local()


class _Marker:
    pass


class ThreadLocalRM(RecordingRM):
    """Keeps an object per thread in a threading.local, as an RM may cache per-thread state."""

    def __init__(self) -> None:
        super().__init__()
        self.made: list[weakref.ref[_Marker]] = []
        self.found = 0

    def _touch(self) -> None:
        with self.cond:
            if getattr(_per_thread, "marker", None) is None:
                _per_thread.marker = _Marker()
                self.made.append(weakref.ref(_per_thread.marker))
            else:
                self.found += 1

    def update_node(self, response: si_pb2.NodeResponse) -> None:
        self._touch()
        super().update_node(response)

    def update_allocation(self, response: si_pb2.AllocationResponse) -> None:
        self._touch()
        super().update_allocation(response)


@pytest.mark.skipif(sicore._callbacks._BINDER is None,
                    reason="library threads keep their Python thread state with glibc only")
def test_library_threads_keep_their_thread_state_until_they_end() -> None:
    """Thread-local data lasts from one callback to the next on a library thread, and goes with it."""
    rm = ThreadLocalRM()
    sched = sicore.Scheduler()
    try:
        sched.register_resource_manager(register_request(), rm)
        sched.update_node(node_request("n1"))
        rm.wait_for(lambda: rm.accepted_nodes() == {"n1"})
        sched.update_application(app_request("app-1"))
        rm.wait_for(lambda: rm.accepted_apps() == {"app-1"})
        for i in range(5):
            sched.update_allocation(ask_request("app-1", f"ask-{i}"))
            rm.wait_for(lambda i=i: len(rm.new_allocations()) == i + 1)
        with rm.cond:
            # Six callbacks on the library's threads (the core and the
            # dispatcher): each thread made its object once and found it after.
            assert 1 <= len(rm.made) <= 2
            assert rm.found == 6 - len(rm.made)
            assert all(ref() is not None for ref in rm.made)
    finally:
        sched.close()
    gc.collect()
    # The threads ended with close(), and their thread states (holding the
    # thread-local objects) with them.
    assert all(ref() is None for ref in rm.made)
