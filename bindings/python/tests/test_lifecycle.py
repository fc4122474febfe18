"""close(), context management, use after close, and calls from many threads at once."""

from __future__ import annotations

import gc
import logging
import threading
import weakref

import pytest
from conftest import RecordingRM, app_request, ask_request, node_request, register_request

import sicore
from sicore import si_pb2


def test_close_twice_is_harmless() -> None:
    sched = sicore.Scheduler()
    assert not sched.closed
    sched.close()
    sched.close()
    assert sched.closed


def test_context_manager_closes() -> None:
    with sicore.Scheduler() as sched:
        assert not sched.closed
    assert sched.closed
    sched.close()


def test_context_manager_closes_on_error() -> None:
    with pytest.raises(KeyError), sicore.Scheduler() as sched:
        raise KeyError("inside")
    assert sched.closed


def test_use_after_close_raises(rm: RecordingRM) -> None:
    sched = sicore.Scheduler()
    sched.register_resource_manager(register_request(), rm)
    sched.close()
    calls = [
        lambda: sched.register_resource_manager(register_request(), rm),
        lambda: sched.update_allocation(ask_request("a", "k")),
        lambda: sched.update_application(app_request("a")),
        lambda: sched.update_node(node_request("n")),
        lambda: sched.update_configuration("rm-test"),
        sched.state_dump,
        lambda: sched.raw.update_node(b""),
    ]
    for call in calls:
        with pytest.raises(sicore.StoppedError, match="closed") as info:
            call()
        assert isinstance(info.value, sicore.SicoreError)
        assert info.value.status is sicore.Status.STOPPED


def test_no_callback_runs_after_close(rm: RecordingRM) -> None:
    sched = sicore.Scheduler(scheduling_interval_ms=10)
    sched.register_resource_manager(register_request(), rm)
    sched.update_node(node_request(*(f"n{i}" for i in range(20))))
    sched.update_application(app_request("busy"))
    sched.update_allocation(ask_request("busy", *(f"k{i}" for i in range(50))))
    sched.close()
    with rm.cond:
        counts = (len(rm.nodes), len(rm.applications), len(rm.allocations), len(rm.events))
    # Nothing can arrive any more; give stray threads a chance to prove it wrong.
    threading.Event().wait(0.3)
    with rm.cond:
        assert counts == (len(rm.nodes), len(rm.applications), len(rm.allocations), len(rm.events))


def test_unclosed_scheduler_is_freed_when_collected() -> None:
    rm = RecordingRM()
    cb_ref = weakref.ref(rm)
    sched = sicore.Scheduler()
    sched.register_resource_manager(register_request(), rm)
    sched_ref = weakref.ref(sched)
    del sched, rm
    gc.collect()
    assert sched_ref() is None
    assert cb_ref() is None


def test_calls_from_many_threads(registered: tuple[sicore.Scheduler, RecordingRM]) -> None:
    sched, rm = registered
    n_threads, per_thread = 8, 10
    errors: list[BaseException] = []
    start = threading.Barrier(n_threads)

    def worker(t: int) -> None:
        try:
            start.wait()
            sched.update_node(node_request(f"node-{t}", memory=100_000, vcore=100))
            sched.update_application(app_request(f"app-{t}"))
            for i in range(per_thread):
                sched.update_allocation(ask_request(f"app-{t}", f"ask-{t}-{i}"))
                if i % 3 == 0:
                    sched.state_dump()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    expected = {f"ask-{t}-{i}" for t in range(n_threads) for i in range(per_thread)}
    rm.wait_for(lambda: expected <= {a.allocationKey for a in rm.new_allocations()})
    uuids = [a.UUID for a in rm.new_allocations()]
    assert len(uuids) == len(set(uuids))


def test_close_while_other_threads_call(rm: RecordingRM) -> None:
    sched = sicore.Scheduler(scheduling_interval_ms=10)
    sched.register_resource_manager(register_request(), rm)
    sched.update_node(node_request("n"))
    sched.update_application(app_request("app"))
    stop = threading.Event()
    unexpected: list[BaseException] = []

    def hammer(t: int) -> None:
        i = 0
        while not stop.is_set():
            try:
                sched.update_allocation(ask_request("app", f"k-{t}-{i}"))
                sched.state_dump()
            except sicore.StoppedError:
                return
            except BaseException as e:
                unexpected.append(e)
                return
            i += 1

    threads = [threading.Thread(target=hammer, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    rm.wait_for(lambda: rm.allocations)
    sched.close()
    stop.set()
    for th in threads:
        th.join()
    assert unexpected == []


def test_version_and_library_path() -> None:
    version = sicore.library_version()
    assert version and isinstance(version, str)
    with sicore.Scheduler() as sched:
        assert sched.library.path.is_file()
        assert "open" in repr(sched)
    assert "closed" in repr(sched)


def test_options_message() -> None:
    msg = sicore.options_message(
        config_dir="/tmp/x", policy_configs={"queues": "a: b"}, scheduling_interval_ms=5,
        event_flush_interval_ms=6, log_level="debug", reservation_delay_ms=0,
        disable_reservation=True, app_start_timeout_ms=None, disable_events=True,
        outstanding_check_interval_ms=7)
    assert msg.config_dir == "/tmp/x"
    assert dict(msg.policy_configs) == {"queues": "a: b"}
    assert msg.HasField("reservation_delay_ms") and msg.reservation_delay_ms == 0
    assert not msg.HasField("app_start_timeout_ms")
    assert isinstance(msg, sicore.sicore_pb2.SchedulerOptions)
    with pytest.raises(TypeError):
        sicore.options_message(policy_configs=["not", "a", "mapping"])


def test_every_option_is_accepted() -> None:
    with sicore.Scheduler(
        config_dir="", policy_configs={}, scheduling_interval_ms=20, event_flush_interval_ms=100,
        log_level="warn", reservation_delay_ms=1000, disable_reservation=True,
        app_start_timeout_ms=1000, app_completing_timeout_ms=1000, app_terminated_timeout_ms=1000,
        disable_events=True, outstanding_check_interval_ms=500,
    ) as sched:
        sched.register_resource_manager(register_request(), RecordingRM())
        assert isinstance(sched.state_dump(), dict)


def test_messages_pickle() -> None:
    import pickle

    msg = si_pb2.NodeInfo(nodeID="n", action=si_pb2.NodeInfo.CREATE)
    assert pickle.loads(pickle.dumps(msg)) == msg


class _ClosesOther(RecordingRM):
    """An RM of scheduler A whose node callback closes scheduler B."""

    def __init__(self, other: sicore.Scheduler) -> None:
        super().__init__()
        self.other = other
        self.outcome: list[BaseException | None] = []

    def update_node(self, response: si_pb2.NodeResponse) -> None:
        super().update_node(response)
        try:
            self.other.close()
            result: BaseException | None = None
        except BaseException as e:
            result = e
        with self.cond:
            self.outcome.append(result)
            self.cond.notify_all()


def test_close_of_another_scheduler_from_a_callback_is_refused_and_it_keeps_running(
        rm: RecordingRM) -> None:
    """Issue 24, defect 3: the library cannot stop B from A's callback; close() says so."""
    b = sicore.Scheduler(scheduling_interval_ms=10)
    try:
        b.register_resource_manager(register_request(), rm)
        b.update_node(node_request("node-b"))
        b.update_application(app_request("app-b"))
        rm.wait_for(lambda: "app-b" in rm.accepted_apps())
        with sicore.Scheduler(scheduling_interval_ms=10) as a:
            closer = _ClosesOther(b)
            a.register_resource_manager(register_request("rm-a"), closer)
            a.update_node(node_request("node-a", rm_id="rm-a"))
            closer.wait_for(lambda: closer.outcome)
            err = closer.outcome[0]
            assert isinstance(err, sicore.WouldDeadlockError), err
            assert err.status is sicore.Status.WOULD_DEADLOCK
            assert "another scheduler" in err.message
        # B was neither stopped nor freed: it still schedules and answers.
        assert not b.closed
        b.update_allocation(ask_request("app-b", "after-refused-close"))
        rm.wait_for(lambda: any(a.allocationKey == "after-refused-close"
                                for a in rm.new_allocations()))
        assert b.state_dump()["rms"]
    finally:
        b.close()
    assert b.closed
    with pytest.raises(sicore.StoppedError):
        b.state_dump()


class _ClosingHandler(logging.Handler):
    """A logging handler that closes a scheduler from the first record of a library thread."""

    def __init__(self, target: sicore.Scheduler) -> None:
        super().__init__(logging.INFO)
        self.target = target
        self.outcome: list[BaseException | None] = []
        self.done = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.done.is_set() or threading.current_thread() is threading.main_thread():
            return
        try:
            self.target.close()
            self.outcome.append(None)
        except BaseException as e:
            self.outcome.append(e)
        self.done.set()


def test_close_from_a_log_handler_is_refused_and_keeps_the_scheduler() -> None:
    """From a handler of a library log record (here on a library thread) close() refuses."""
    b = sicore.Scheduler()
    handler = _ClosingHandler(b)
    log = logging.getLogger("sicore")
    level = log.level
    log.setLevel(logging.INFO)
    log.addHandler(handler)
    try:
        # The level is process-wide and an earlier test may have lowered
        # it: this one needs the info records.
        with sicore.Scheduler(log_level="info") as a:
            # The registration is logged on a's core thread.
            a.register_resource_manager(register_request("rm-a"), RecordingRM())
            assert handler.done.wait(60)
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
    err = handler.outcome[0]
    assert isinstance(err, sicore.WouldDeadlockError), err
    assert "log handler" in err.message, err.message
    assert not b.closed
    assert b.state_dump()["partitions"] is not None
    b.close()
    assert b.closed
