"""The :class:`Scheduler`: one scheduler core instance driven from Python."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import itertools
import json
import os
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from google.protobuf.message import Message

from . import si_pb2, sicore_pb2
from ._callbacks import (
    ResourceManagerCallback,
    add_registration,
    drop_registration,
    in_any_callback,
    in_callback_of,
    live_registrations,
)
from ._errors import Status, StoppedError, WouldDeadlockError
from ._native import Library, in_log_handler, load_library, sicore_buffer
from ._pending import PendingReason, pending_reasons

__all__ = ["RawScheduler", "Scheduler", "options_message"]

_serials = itertools.count(1)
_open: weakref.WeakSet[Scheduler] = weakref.WeakSet()
_OPTION_FIELDS = frozenset(f.name for f in sicore_pb2.SchedulerOptions.DESCRIPTOR.fields)


def options_message(**options: Any) -> sicore_pb2.SchedulerOptions:
    """Build a ``sicore.v1.SchedulerOptions`` from keyword arguments.

    The keywords are the message's fields (``config_dir``, ``policy_configs``,
    ``scheduling_interval_ms``, ``event_flush_interval_ms``, ``log_level``,
    ``reservation_delay_ms``, ``disable_reservation``, ``app_start_timeout_ms``,
    ``app_completing_timeout_ms``, ``app_terminated_timeout_ms``,
    ``disable_events``, ``outstanding_check_interval_ms``, ``event_types``,
    ``placeholder_timeout_ms``, ``rest_address``, ``rest``, ...). ``None``
    leaves a field unset; ``config_dir`` accepts any path-like object.

    ``rest`` takes a ``sicore_pb2.RestOptions`` or a mapping of its fields:
    ``rest={"token": "s3cret", "allowed_hosts": ["sched.example"],
    "header_timeout_ms": 5000, "max_connections": 32}``.

    ``event_types`` lists the event record types sent to ``send_event``, as
    names (``"REQUEST"``, ``"APP"``, ``"NODE"``, ``"QUEUE"``) or
    ``si_pb2.EventRecord`` enum values. Left out, the library sends
    ``REQUEST`` and ``NODE`` records, the types a v0.12 RM handles; ``APP``
    (application state changes) and ``QUEUE`` (a configuration file the
    reload watcher refused) are opt-in. An unknown name raises
    :class:`InvalidArgumentError` when the scheduler is created.
    """
    unknown = sorted(set(options) - _OPTION_FIELDS)
    if unknown:
        raise TypeError(f"unknown scheduler option(s): {', '.join(unknown)}; "
                        f"known: {', '.join(sorted(_OPTION_FIELDS))}")
    msg = sicore_pb2.SchedulerOptions()
    for name, value in options.items():
        if value is None:
            continue
        if name == "policy_configs":
            if not isinstance(value, Mapping):
                raise TypeError("policy_configs must be a mapping of policy group to YAML text")
            for group, text in value.items():
                msg.policy_configs[str(group)] = str(text)
        elif name == "config_dir":
            msg.config_dir = os.fspath(value)
        elif name == "event_types":
            msg.event_types.extend(_event_type_names(value))
        elif isinstance(getattr(msg, name), Message):
            _set_message(msg, name, value)
        else:
            setattr(msg, name, value)
    return msg


def _set_message(msg: sicore_pb2.SchedulerOptions, name: str, value: Any) -> None:
    # A message field cannot be assigned: copy a message of its type, or
    # build one from a mapping of its field names (``rest={"token": ...}``).
    field = getattr(msg, name)
    if isinstance(value, type(field)):
        field.CopyFrom(value)
    elif isinstance(value, Mapping):
        try:
            field.CopyFrom(type(field)(**value))
        except (ValueError, TypeError) as e:
            raise TypeError(f"{name}: {e}") from e
    else:
        raise TypeError(f"{name} must be a {type(field).__name__} or a mapping of its fields, "
                        f"not {type(value).__name__}")


def _event_type_names(value: Any) -> list[str]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError("event_types must be a list of event type names or "
                        "si_pb2.EventRecord.Type values")
    names = []
    for t in value:
        if isinstance(t, str):
            names.append(t)
        elif isinstance(t, int) and t in si_pb2.EventRecord.Type.values():
            names.append(si_pb2.EventRecord.Type.Name(t))
        else:
            raise TypeError(f"event_types: {t!r} is not an event type name or "
                            "si_pb2.EventRecord.Type value")
    return names


class RawScheduler:
    """The byte-level layer under :class:`Scheduler`: requests are pre-encoded bytes.

    Each method takes the encoded message the C function takes and returns the
    encoded answer, raising the same exceptions as :class:`Scheduler`. Useful
    to forward bytes that are already encoded, and to test the library's own
    decoding. Obtain it as :attr:`Scheduler.raw`.
    """

    def __init__(self, owner: Scheduler) -> None:
        """Wrap ``owner``; prefer :attr:`Scheduler.raw`."""
        self._owner = owner

    def register_resource_manager(self, request: bytes, callback: ResourceManagerCallback) -> bytes:
        """Register an RM from an encoded ``RegisterResourceManagerRequest``."""
        return self._owner._register(bytes(request), callback)

    def update_allocation(self, request: bytes) -> None:
        """Queue an encoded ``AllocationRequest``."""
        self._owner._async_call("sicore_update_allocation", bytes(request))

    def update_application(self, request: bytes) -> None:
        """Queue an encoded ``ApplicationRequest``."""
        self._owner._async_call("sicore_update_application", bytes(request))

    def update_node(self, request: bytes) -> None:
        """Queue an encoded ``NodeRequest``."""
        self._owner._async_call("sicore_update_node", bytes(request))

    def update_configuration(self, cluster_id: bytes) -> None:
        """Re-read the configuration of the RM whose rmID is the UTF-8 ``cluster_id``."""
        self._owner._update_configuration(bytes(cluster_id))

    def state_dump(self) -> bytes:
        """The state dump as UTF-8 JSON bytes."""
        return self._owner._state_dump()


class Scheduler:
    """A scheduler core: the SI's ``SchedulerAPI`` over ``libsicore``.

    ``Scheduler(**options)`` takes the fields of ``sicore.v1.SchedulerOptions``
    as keywords (see :func:`options_message`); with none, every default
    applies and a policy group without configuration gets the embedded
    default (partition ``default``, queue ``root`` open to all, a ``provided``
    placement rule that creates queues). ``library`` optionally names the
    shared library file (see :func:`sicore.find_library` for the search).

    Use it as a context manager, or call :meth:`close`. Methods are
    thread-safe. Outcomes of the asynchronous ``update_*`` calls reach the
    registered :class:`ResourceManagerCallback` on library threads.
    """

    def __init__(self, *, library: str | os.PathLike[str] | None = None, **options: Any) -> None:
        """Create and start a scheduler with the given ``SchedulerOptions`` fields."""
        encoded = options_message(**options).SerializeToString()
        self._lib: Library = load_library(library)
        self._serial = next(_serials)
        # A plain lock under the condition: never taken twice by one thread,
        # and the per-request path takes it directly (a C call) rather than
        # through Condition's Python-level __enter__/__exit__.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._closing = threading.Lock()
        self._inflight = 0
        self._closed = False
        self._handle: int | None = None
        out = ctypes.c_void_p()
        err = sicore_buffer()
        status = self._lib.sicore_new(encoded, len(encoded), ctypes.byref(out), ctypes.byref(err))
        self._lib.check(status, err, "sicore_new")
        self._handle = out.value
        _open.add(self)

    # -- lifecycle -----------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    @property
    def library(self) -> Library:
        """The loaded library this scheduler runs in."""
        return self._lib

    @property
    def raw(self) -> RawScheduler:
        """The byte-level view of this scheduler (:class:`RawScheduler`)."""
        return RawScheduler(self)

    def close(self) -> None:
        """Stop the scheduler and free it.

        Waits for calls in progress on other threads, then joins the library's
        threads; every registered callback object is released and no callback
        runs after this returns. Calling it again does nothing.

        From inside a callback, of this scheduler or of any other, it raises
        :class:`WouldDeadlockError` and stops nothing: the scheduler keeps
        running and a later ``close()`` from another thread stops it. The same
        holds inside a handler of the library's log records, and whenever the
        library refuses to stop it: the reason is raised.
        """
        if in_callback_of(self._serial):
            raise WouldDeadlockError("Scheduler.close() called from inside one of its own callbacks; "
                                     "it keeps running")
        if in_any_callback() or in_log_handler():
            raise WouldDeadlockError("Scheduler.close() called from inside a callback of another "
                                     "scheduler or the library's log handler; it keeps running")
        # One close at a time: a second waits for the first's outcome, and
        # tries again itself if the first was refused.
        with self._closing:
            with self._cond:
                if self._closed:
                    return
                self._closed = True
                while self._inflight:
                    self._cond.wait()
                handle = self._handle
            if handle is not None:
                # sicore_shutdown reports a refusal, which sicore_free could
                # only log; once it succeeded, sicore_free releases the memory.
                err = sicore_buffer()
                status = self._lib.sicore_shutdown(handle, ctypes.byref(err))
                if status != Status.OK:
                    with self._cond:
                        self._closed = False
                    self._lib.check(status, err, "sicore_shutdown")
                with self._cond:
                    self._handle = None
                _open.discard(self)
                self._lib.sicore_free(handle)
            else:
                _open.discard(self)
        for h in live_registrations(self._serial):
            # The library promises to release every table in sicore_shutdown.
            drop_registration(h)

    def __enter__(self) -> Scheduler:
        """Return the scheduler itself."""
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """Close the scheduler."""
        self.close()

    def __del__(self) -> None:
        """Free the library's scheduler if the owner forgot to close it."""
        if getattr(self, "_closed", True) or getattr(self, "_handle", None) is None:
            return
        try:
            if in_any_callback() or in_log_handler():
                # Stopping it here is refused (it may join the thread we run
                # on): hand it off.
                threading.Thread(target=self.close, name="sicore-close", daemon=True).start()
            else:
                self.close()
        except Exception:  # noqa: BLE001 - nothing to report to in a finalizer
            pass

    def __repr__(self) -> str:
        """Show the library path and whether the scheduler is open."""
        state = "closed" if self._closed else "open"
        return f"<sicore.Scheduler {state} library={str(self._lib.path)!r}>"

    @contextmanager
    def _call(self) -> Iterator[int]:
        with self._cond:
            if self._closed or self._handle is None:
                raise StoppedError("the scheduler is closed")
            self._inflight += 1
            handle = self._handle
        try:
            yield handle
        finally:
            with self._cond:
                self._inflight -= 1
                if not self._inflight:
                    self._cond.notify_all()

    # -- byte-level calls ---------------------------------------------------------------

    def _register(self, request: bytes, callback: ResourceManagerCallback) -> bytes:
        handle_id, table, _reg = add_registration(callback, self._lib, self._serial)
        return self._register_table("sicore_register_resource_manager", request, handle_id, table)

    def _register_table(self, fn_name: str, request: bytes, handle_id: int, table: Any) -> bytes:
        """Register through ``fn_name`` with a callback table whose registration is ``handle_id``."""
        ok = False
        try:
            with self._call() as handle:
                resp = sicore_buffer()
                err = sicore_buffer()
                status = getattr(self._lib, fn_name)(
                    handle, request, len(request), ctypes.byref(table),
                    ctypes.byref(resp), ctypes.byref(err))
                try:
                    self._lib.check(status, err, "register_resource_manager")
                except BaseException:
                    self._lib.take_buffer(resp)
                    raise
                ok = True
                return self._lib.take_buffer(resp)
        finally:
            if not ok:
                # The library will not call back for a failed registration;
                # whether it released the table depends on where it failed.
                drop_registration(handle_id)

    def _async_call(self, fn_name: str, request: bytes) -> None:
        # What _call() does, written out: this runs for every request an RM
        # sends, and the generator-based context manager cost more than the
        # library's own checks of a small request.
        fn = getattr(self._lib, fn_name)
        lock = self._lock
        with lock:
            if self._closed or self._handle is None:
                raise StoppedError("the scheduler is closed")
            self._inflight += 1
            handle = self._handle
        try:
            err = sicore_buffer()
            status = fn(handle, request, len(request), ctypes.byref(err))
            if status or err.data:
                self._lib.check(status, err, fn_name.removeprefix("sicore_"))
        finally:
            with lock:
                self._inflight -= 1
                # Only close() waits, and only once it has set _closed.
                if not self._inflight and self._closed:
                    self._cond.notify_all()

    def _update_configuration(self, cluster_id: bytes) -> None:
        self._sync_call("sicore_update_configuration", cluster_id)

    def _sync_call(self, fn_name: str, request: bytes) -> None:
        """Call a synchronous ``(s, bytes, len, error_out)`` function."""
        with self._call() as handle:
            err = sicore_buffer()
            status = getattr(self._lib, fn_name)(handle, request, len(request), ctypes.byref(err))
            self._lib.check(status, err, fn_name.removeprefix("sicore_"))

    def _set_policy_config(self, policy_group: bytes, yaml: bytes) -> None:
        with self._call() as handle:
            err = sicore_buffer()
            status = self._lib.sicore_set_policy_config(
                handle, policy_group, len(policy_group), yaml, len(yaml), ctypes.byref(err))
            self._lib.check(status, err, "set_policy_config")

    def _state_dump(self) -> bytes:
        return self._text_call("sicore_state_dump")

    def _text_call(self, fn_name: str) -> bytes:
        """Call a ``(s, out, error_out)`` function and return what it wrote to ``out``."""
        with self._call() as handle:
            out = sicore_buffer()
            err = sicore_buffer()
            status = getattr(self._lib, fn_name)(handle, ctypes.byref(out), ctypes.byref(err))
            try:
                self._lib.check(status, err, fn_name.removeprefix("sicore_"))
            except BaseException:
                self._lib.take_buffer(out)
                raise
            return self._lib.take_buffer(out)

    # -- the SchedulerAPI -----------------------------------------------------------------

    def register_resource_manager(
        self, request: si_pb2.RegisterResourceManagerRequest, callback: ResourceManagerCallback
    ) -> si_pb2.RegisterResourceManagerResponse:
        """Register (or re-register, resetting its state) a resource manager.

        Synchronous: loads the configuration of ``request.policyGroup`` and
        raises :class:`RejectedError` when it is missing or invalid. The
        scheduler keeps ``callback`` alive until the RM is re-registered or
        the scheduler is closed.
        """
        _expect(request, si_pb2.RegisterResourceManagerRequest)
        data = self._register(request.SerializeToString(), callback)
        response = si_pb2.RegisterResourceManagerResponse()
        response.ParseFromString(data)
        return response

    def update_allocation(self, request: si_pb2.AllocationRequest) -> None:
        """Queue asks to add or update and asks or allocations to release.

        Checked on this thread (unknown rmID raises :class:`RejectedError`);
        the outcome reaches the callback's ``update_allocation``.
        """
        _expect(request, si_pb2.AllocationRequest)
        self._async_call("sicore_update_allocation", request.SerializeToString())

    def update_application(self, request: si_pb2.ApplicationRequest) -> None:
        """Queue applications to add and remove; outcomes reach ``update_application``."""
        _expect(request, si_pb2.ApplicationRequest)
        self._async_call("sicore_update_application", request.SerializeToString())

    def update_node(self, request: si_pb2.NodeRequest) -> None:
        """Queue nodes to create, update, drain or remove; outcomes reach ``update_node``."""
        _expect(request, si_pb2.NodeRequest)
        self._async_call("sicore_update_node", request.SerializeToString())

    def update_configuration(self, cluster_id: str) -> None:
        """Re-read and apply the configuration of the RM ``cluster_id`` (its rmID).

        Synchronous: an invalid configuration raises :class:`RejectedError`
        and the old one stays in force.
        """
        if not isinstance(cluster_id, str):
            raise TypeError(f"cluster_id must be a str, not {type(cluster_id).__name__}")
        self._update_configuration(cluster_id.encode("utf-8"))

    def set_policy_config(self, policy_group: str, yaml: str) -> None:
        """Replace the in-memory configuration text of ``policy_group`` and reload.

        The text is what the ``policy_configs`` option gave (it wins over
        files); every registered RM that uses the group is reloaded before
        the call returns. All or nothing: invalid text, or a reload that
        would fail for any of those RMs, raises :class:`RejectedError` and
        the old configuration stays in force. An empty ``yaml`` removes the
        in-memory text, so the group's file applies again. A group no RM
        uses yet is checked and kept for later registrations. An empty
        ``policy_group`` raises :class:`InvalidArgumentError`.
        """
        if not isinstance(policy_group, str) or not isinstance(yaml, str):
            raise TypeError("policy_group and yaml must be str")
        self._set_policy_config(policy_group.encode("utf-8"), yaml.encode("utf-8"))

    def state_dump(self) -> dict[str, Any]:
        """The scheduler's state (partitions, queues, applications, nodes) as a dict."""
        result: dict[str, Any] = json.loads(self._state_dump().decode("utf-8"))
        return result

    def pending_reasons(self, application_id: str,
                        partition: str | None = None) -> dict[str, PendingReason | None]:
        """Why each waiting ask of an application waits, by allocation key.

        Read from :meth:`state_dump` (see :func:`sicore.pending_reasons`):
        ``None`` for an ask no pass has tried yet. Raises :class:`KeyError`
        when the application is not known.
        """
        return pending_reasons(self.state_dump(), application_id, partition)

    def metrics(self) -> str:
        """The Prometheus text exposition of the ``yunikorn_*`` metrics.

        Prometheus text format 0.0.4; for an RM that serves
        ``/metrics`` itself. Never waits for the scheduling thread.
        """
        return self._text_call("sicore_metrics").decode("utf-8")

    def rest_address(self) -> str:
        """The ``host:port`` the REST service listens on, ``""`` when not started.

        Start it with the ``rest_address="127.0.0.1:9080"`` option (port 0
        picks a free port).
        """
        return self._text_call("sicore_rest_address").decode("utf-8")


def _expect(request: Message, cls: type[Message]) -> None:
    if not isinstance(request, cls):
        raise TypeError(f"expected si_pb2.{cls.__name__}, not {type(request).__name__}")


@atexit.register
def _close_all() -> None:
    # Library threads must not call into an interpreter that is finalizing.
    for sched in list(_open):
        with contextlib.suppress(Exception):
            sched.close()
