"""The resource manager's callbacks: the Python base class and the ctypes trampolines.

The library calls plain C functions with an opaque ``user_data``. Python
objects never cross the boundary: ``user_data`` is an integer handle into
``_registrations``, and a small set of module-level trampolines (which live as
long as the module) look the registration up, decode the message, call the
user's method and turn any exception into an error code. The registration
holds the user's callback object until the library calls ``release``.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import logging
import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from . import si_pb2, sicore_pb2
from ._native import (
    ANSWER_CALLBACK,
    NOTIFY_CALLBACK,
    RELEASE_CALLBACK,
    STATUS_CALLBACK,
    Library,
    borrowed_bytes,
    sicore_callbacks,
)

if TYPE_CHECKING:
    from google.protobuf.message import Message

__all__ = ["ResourceManagerCallback"]

_log = logging.getLogger("sicore")


class ResourceManagerCallback:
    """Base class of a resource manager's callbacks (the SI's ``ResourceManagerCallback``).

    Subclass it and override the methods you need; the defaults do nothing and
    succeed. Only overridden methods are handed to the library, so the others
    cost nothing (for :meth:`predicates`: every node fits). The library calls
    these methods on its own threads, possibly several at once, so
    implementations must be thread-safe.

    To report an error, raise an exception: its message becomes the reason the
    library logs (for :meth:`predicates`, the reason the node was skipped).
    Exceptions never propagate into the library; they are logged on the
    ``sicore`` logger with their traceback.

    From inside a callback, :meth:`Scheduler.update_allocation`,
    :meth:`Scheduler.update_application` and :meth:`Scheduler.update_node`
    work; the synchronous calls raise :class:`WouldDeadlockError`.
    """

    def update_allocation(self, response: si_pb2.AllocationResponse) -> None:
        """New, released and rejected allocations and asks."""

    def update_application(self, response: si_pb2.ApplicationResponse) -> None:
        """Accepted, rejected and updated applications."""

    def update_node(self, response: si_pb2.NodeResponse) -> None:
        """Accepted and rejected nodes."""

    def predicates(self, args: si_pb2.PredicatesArgs) -> None:
        """Check whether an ask may run on a node; raise to refuse the node.

        Only consulted when a subclass overrides it; otherwise every node fits
        and the library saves one call per node.
        """

    def resync_scheduler_cache(self, args: si_pb2.ReSyncSchedulerCacheArgs) -> None:
        """Assumed and forgotten allocations."""

    def send_event(self, events: list[si_pb2.EventRecord]) -> None:
        """One batch of events from the scheduler's event system."""

    def update_container_scheduling_state(
        self, request: si_pb2.UpdateContainerSchedulingStateRequest
    ) -> None:
        """The scheduling state of one ask (skipped, scheduled, reserved, failed)."""

    def update_configuration(
        self, request: si_pb2.UpdateConfigurationRequest
    ) -> si_pb2.UpdateConfigurationResponse:
        """Apply a configuration the scheduler pushes; return the outcome.

        Returning ``None`` counts as ``UpdateConfigurationResponse(success=True)``;
        raising counts as ``success=False`` with the exception's message as reason.
        """
        return si_pb2.UpdateConfigurationResponse(success=True)


@dataclass
class _Registration:
    """What a ``user_data`` handle stands for while the library holds it."""

    callback: Any
    """A :class:`ResourceManagerCallback` or a ``sicore.v1.ResourceManagerCallback``."""
    library: Library
    owner: int
    """Serial number of the Scheduler that registered it (to detect re-entrant close)."""
    released: threading.Event = field(default_factory=threading.Event)


_registrations: dict[int, _Registration] = {}
# Guards changes to _registrations; the trampolines read it without the lock
# (one dict.get: atomic under the GIL, and locked internally on free-threaded
# builds), since they run for every message.
_registrations_lock = threading.Lock()
_handles = itertools.count(1)  # never reused, so a late release cannot hit a newer entry


# Per thread, from its first callback on: ``owners``, the serial numbers of
# the schedulers whose callbacks run on it, innermost last.
_tls = threading.local()


def in_callback_of(owner: int) -> bool:
    """Whether this thread is running a callback registered by scheduler ``owner``."""
    return owner in getattr(_tls, "owners", ())


def in_any_callback() -> bool:
    """Whether this thread is running a callback of any scheduler."""
    return bool(getattr(_tls, "owners", ()))


def _first_callback_on_thread() -> list[int]:
    """Make this thread's ``owners`` list and bind the thread (:func:`_bind_thread`)."""
    owners: list[int] = []
    _tls.owners = owners
    _bind_thread()
    return owners


# -- Library threads keep their Python thread state ------------------------------------
#
# ctypes enters a callback on a thread Python did not start with
# PyGILState_Ensure, which creates a thread state, and leaves it with
# PyGILState_Release, which destroys it again. On the library's threads that
# was most of what a small callback cost (a Predicates or ReSync call: about
# 10 of 13 us; bindings/python/benchmarks/bench_scheduling.py --predicates).
# So the first callback on a library thread takes one more reference on the
# thread state, which then lives as long as the thread, and registers a
# thread-exit hook that drops that reference on the thread itself as it ends.
# The hook is glibc's __cxa_thread_atexit_impl (what C++ thread_local
# destructors use): it runs before the thread's pthread keys are cleared, so
# Python still finds the thread's state. Where it is missing (not glibc),
# callbacks take the plain path. Only the library's own threads (named
# "sicore-...") are bound: a thread someone else started may go on running
# Python after the callback.

def _thread_binder() -> tuple[Any, Any, Any, Any] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        thread_atexit = libc.__cxa_thread_atexit_impl
        getname = libc.pthread_getname_np
        self_id = libc.pthread_self
        # Our own handle on the C API, so that declaring signatures here
        # does not change ctypes.pythonapi for anyone else.
        capi = ctypes.PyDLL(None)
        ensure = capi.PyGILState_Ensure
        release = capi.PyGILState_Release
    except (AttributeError, OSError):
        return None
    thread_atexit.restype = ctypes.c_int
    thread_atexit.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    getname.restype = ctypes.c_int
    getname.argtypes = [ctypes.c_ulong, ctypes.c_char_p, ctypes.c_size_t]
    self_id.restype = ctypes.c_ulong
    self_id.argtypes = []
    ensure.restype = ctypes.c_int
    ensure.argtypes = []
    release.restype = None
    release.argtypes = [ctypes.c_int]
    return thread_atexit, lambda buf: getname(self_id(), buf, len(buf)), ensure, release


_BINDER = _thread_binder()


def _thread_exit(state: int | None) -> None:
    """Runs on a bound library thread as it ends: drops the reference taken in _bind_thread."""
    try:
        if _BINDER is not None:
            _BINDER[3](state or 0)
    except BaseException:  # noqa: BLE001 - never unwind into the C runtime
        pass


_THREAD_EXIT = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(_thread_exit)


def _bind_thread() -> None:
    """Keep this thread's Python thread state until the thread ends, if it is a library thread."""
    if _BINDER is None:
        return
    thread_atexit, thread_name, ensure, release = _BINDER
    try:
        name = ctypes.create_string_buffer(16)
        if thread_name(name) != 0 or not name.value.startswith(b"sicore-"):
            return
        state = ensure()
        if thread_atexit(ctypes.cast(_THREAD_EXIT, ctypes.c_void_p), state or None, None) != 0:
            release(state)
    except Exception:  # noqa: BLE001 - binding is an optimisation; the callback goes on
        _log.debug("sicore: cannot keep this thread's Python thread state", exc_info=True)


def _reason(exc: BaseException) -> str:
    text = str(exc)
    return text if text else type(exc).__name__


def _describe(method: str, exc: BaseException) -> None:
    _log.error("sicore callback %s raised %s: %s", method, type(exc).__name__, exc,
               exc_info=(type(exc), exc, exc.__traceback__))


def _status_call(method: str, decode: Callable[[bytes], Any]) -> Callable[[Any, Any, int, Any], int]:
    """The Python body of a status trampoline (benchmarks/ time it without ctypes)."""
    # Runs for every message: the lookup, the copy and the decode inline.
    registrations = _registrations
    string_at = ctypes.string_at

    def call(user_data: int | None, msg: int | None, length: int, error: int | None) -> int:
        reg = registrations.get(user_data)  # type: ignore[arg-type]
        try:
            if reg is None:
                raise RuntimeError(f"{method}: unknown or released callback handle {user_data}")
            arg = decode(string_at(msg, length) if msg and length else b"")
            try:
                owners = _tls.owners
            except AttributeError:
                owners = _first_callback_on_thread()
            owners.append(reg.owner)
            try:
                getattr(reg.callback, method)(arg)
            finally:
                owners.pop()
            return 0
        except BaseException as exc:  # noqa: BLE001 - never unwind into the library
            try:
                _describe(method, exc)
                if reg is not None:
                    reg.library.reply(error, _reason(exc).encode("utf-8", "replace"))
            except BaseException:  # noqa: BLE001
                pass
            return 1

    return call


def _status_trampoline(method: str, decode: Callable[[bytes], Any]) -> Any:
    return STATUS_CALLBACK(_status_call(method, decode))


def _notify_trampoline(method: str, decode: Callable[[bytes], Any]) -> Any:
    registrations = _registrations
    string_at = ctypes.string_at

    def call(user_data: int | None, msg: int | None, length: int) -> None:
        try:
            reg = registrations.get(user_data)  # type: ignore[arg-type]
            if reg is None:
                raise RuntimeError(f"{method}: unknown or released callback handle {user_data}")
            arg = decode(string_at(msg, length) if msg and length else b"")
            try:
                owners = _tls.owners
            except AttributeError:
                owners = _first_callback_on_thread()
            owners.append(reg.owner)
            try:
                getattr(reg.callback, method)(arg)
            finally:
                owners.pop()
        except BaseException as exc:  # noqa: BLE001 - never unwind into the library
            with contextlib.suppress(BaseException):
                _describe(method, exc)

    return NOTIFY_CALLBACK(call)


def _update_configuration(user_data: int | None, msg: int | None, length: int,
                          response: int | None) -> None:
    reg = None
    try:
        reg = _registrations.get(user_data)  # type: ignore[arg-type]
        if reg is None:
            raise RuntimeError(f"update_configuration: unknown or released callback handle {user_data}")
        data = borrowed_bytes(msg, length)
        request = si_pb2.UpdateConfigurationRequest.FromString(data)
        try:
            owners = _tls.owners
        except AttributeError:
            owners = _first_callback_on_thread()
        owners.append(reg.owner)
        try:
            answer = reg.callback.update_configuration(request)
        finally:
            owners.pop()
        if answer is None:
            answer = si_pb2.UpdateConfigurationResponse(success=True)
        if not isinstance(answer, si_pb2.UpdateConfigurationResponse):
            raise TypeError("update_configuration must return si_pb2.UpdateConfigurationResponse, "
                            f"not {type(answer).__name__}")
        reg.library.reply(response, answer.SerializeToString())
    except BaseException as exc:  # noqa: BLE001 - never unwind into the library
        try:
            _describe("update_configuration", exc)
            if reg is not None:
                failed = si_pb2.UpdateConfigurationResponse(success=False, reason=_reason(exc))
                reg.library.reply(response, failed.SerializeToString())
        except BaseException:  # noqa: BLE001
            pass


def _release(user_data: int | None) -> None:
    try:
        with _registrations_lock:
            reg = _registrations.pop(user_data or 0, None)
        if reg is not None:
            reg.released.set()
        # `reg` (and with it the user's callback object) is dropped here.
    except BaseException:  # noqa: BLE001 - never unwind into the library
        pass


def _events(data: bytes) -> list[si_pb2.EventRecord]:
    return list(sicore_pb2.EventRecords.FromString(data).events)


def _parser(cls: type[Message]) -> Callable[[bytes], Any]:
    return cls.FromString


# The trampolines live at module level for the life of the process, so no
# function pointer the library holds can be garbage-collected.
_TRAMPOLINES: dict[str, Any] = {
    "update_allocation": _status_trampoline("update_allocation", _parser(si_pb2.AllocationResponse)),
    "update_application": _status_trampoline("update_application", _parser(si_pb2.ApplicationResponse)),
    "update_node": _status_trampoline("update_node", _parser(si_pb2.NodeResponse)),
    "predicates": _status_trampoline("predicates", _parser(si_pb2.PredicatesArgs)),
    "resync_scheduler_cache": _status_trampoline(
        "resync_scheduler_cache", _parser(si_pb2.ReSyncSchedulerCacheArgs)),
    "send_event": _notify_trampoline("send_event", _events),
    "update_container_scheduling_state": _notify_trampoline(
        "update_container_scheduling_state", _parser(si_pb2.UpdateContainerSchedulingStateRequest)),
    "update_configuration": ANSWER_CALLBACK(_update_configuration),
    "release": RELEASE_CALLBACK(_release),
}


def overrides(callback: ResourceManagerCallback, method: str) -> bool:
    """Whether ``callback`` (its class, or the instance itself) replaces ``method``."""
    if method in getattr(callback, "__dict__", {}):
        return True
    return getattr(type(callback), method) is not getattr(ResourceManagerCallback, method)


# A NULL pointer means "succeeds, do not call": used for every method the RM
# does not override, which saves a call (and a decode) per event, and for
# predicates also one per node. update_configuration is always installed,
# because NULL there means failure while the Python default succeeds.
_ALWAYS_INSTALLED = frozenset({"update_configuration", "release"})


def add_registration(callback: ResourceManagerCallback, library: Library,
                     owner: int) -> tuple[int, sicore_callbacks, _Registration]:
    """Create a handle for ``callback`` and the C callback table that uses it."""
    if not isinstance(callback, ResourceManagerCallback):
        raise TypeError("callback must be an instance of sicore.ResourceManagerCallback, "
                        f"not {type(callback).__name__}")
    handle, reg = new_registration(callback, library, owner)
    table = sicore_callbacks()
    table.struct_size = ctypes.sizeof(sicore_callbacks)
    table.user_data = handle
    for name, trampoline in _TRAMPOLINES.items():
        if name in _ALWAYS_INSTALLED or overrides(callback, name):
            setattr(table, name, trampoline)
    return handle, table, reg


def new_registration(callback: Any, library: Library, owner: int) -> tuple[int, _Registration]:
    """Create the ``user_data`` handle of one callback object of either edition."""
    handle = next(_handles)
    reg = _Registration(callback=callback, library=library, owner=owner)
    with _registrations_lock:
        _registrations[handle] = reg
    return handle, reg


def drop_registration(handle: int) -> None:
    """Forget a handle the library will not release (its registration failed)."""
    with _registrations_lock:
        _registrations.pop(handle, None)


def live_registrations(owner: int) -> list[int]:
    """Handles of ``owner``'s registrations the library has not released yet."""
    with _registrations_lock:
        return [h for h, r in _registrations.items() if r.owner == owner]
