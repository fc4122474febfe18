"""An SI v1.x resource manager's callbacks: the base class and the ctypes trampolines.

The registry of ``user_data`` handles, the per-thread bookkeeping and the
status and notify trampolines are the v0.12 binding's (``sicore._callbacks``),
so a v1 RM and a v0.12 RM on one scheduler are released, and refused a
re-entrant ``close()``, the same way. What differs is the table
(``sicore_v1_callbacks``), the messages (``sicore.v1.si_pb2``) and the two
answer callbacks ``preemption_predicates`` and ``get_state_dump``.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
from typing import Any

from .._callbacks import (
    _TRAMPOLINES as _V0_TRAMPOLINES,
)
from .._callbacks import (
    _describe,
    _first_callback_on_thread,
    _notify_trampoline,
    _registrations,
    _status_trampoline,
    _tls,
    new_registration,
)
from .._native import ANSWER_CALLBACK, DUMP_CALLBACK, Library, borrowed_bytes, sicore_v1_callbacks
from . import si_pb2, sicore_pb2

__all__ = ["ResourceManagerCallback"]


class ResourceManagerCallback:
    """Base class of an SI v1.x resource manager's callbacks (``api.ResourceManagerCallback``).

    Subclass it and override what you need; the defaults do nothing and
    succeed. Only overridden methods are handed to the library: without
    :meth:`predicates` every node fits, without :meth:`get_state_dump` the
    RM has no state of its own to dump. The library calls these methods on
    its own threads (never on the thread of the RM's own call), possibly
    several at once, so implementations must be thread-safe.

    With :meth:`predicates` overridden, :meth:`update_allocation` announcing
    a decision (``new``) has returned before the next :meth:`predicates`
    call: an RM may record the placement there and answer predicates from
    that record, as the k8shim does.

    Raise to report an error: the message becomes the reason the library
    logs (for :meth:`predicates`, why the node was skipped). Exceptions never
    propagate into the library; they are logged on the ``sicore`` logger.
    """

    def update_allocation(self, response: si_pb2.AllocationResponse) -> None:
        """New allocations (by key), released allocations and rejected allocations."""

    def update_application(self, response: si_pb2.ApplicationResponse) -> None:
        """Accepted, rejected and updated applications."""

    def update_node(self, response: si_pb2.NodeResponse) -> None:
        """Accepted and rejected nodes; every node the RM creates is answered."""

    def predicates(self, args: si_pb2.PredicatesArgs) -> None:
        """Check whether an allocation may run on a node; raise to refuse the node."""

    def preemption_predicates(
        self, args: si_pb2.PreemptionPredicatesArgs
    ) -> si_pb2.PreemptionPredicatesResponse:
        """Whether the allocation fits once some victims are gone; return the answer.

        Called by preemption (guarantee, required node and quota change),
        once per candidate node, whenever it is overridden, with or without
        :meth:`predicates`; like :meth:`predicates`, after every decision
        made before it has reached :meth:`update_allocation`.
        Raising, or returning anything but a ``PreemptionPredicatesResponse``,
        answers ``success=False``.
        """
        return si_pb2.PreemptionPredicatesResponse(success=False, index=-1)

    def send_event(self, events: list[si_pb2.EventRecord]) -> None:
        """One batch of SI v1.x event records."""

    def update_container_scheduling_state(
        self, request: si_pb2.UpdateContainerSchedulingStateRequest
    ) -> None:
        """The scheduling state of one allocation (skipped, scheduled, reserved, failed)."""

    def get_state_dump(self) -> str:
        """The RM's own state as JSON text (a ``str``, or a value ``json.dumps`` accepts).

        Optional (the v1.8 ``StateDumpPlugin``): only handed to the library
        when overridden. The library does not call it yet: its state dump
        does not include the RM's JSON.
        """
        return "{}"


def _enter(owner: int) -> list[int]:
    try:
        owners: list[int] = _tls.owners
    except AttributeError:
        owners = _first_callback_on_thread()
    owners.append(owner)
    return owners


def _preemption_predicates(user_data: int | None, msg: int | None, length: int,
                           response: int | None) -> None:
    reg = None
    try:
        reg = _registrations.get(user_data)  # type: ignore[arg-type]
        if reg is None:
            raise RuntimeError(f"preemption_predicates: unknown or released callback handle {user_data}")
        args = si_pb2.PreemptionPredicatesArgs.FromString(borrowed_bytes(msg, length))
        owners = _enter(reg.owner)
        try:
            answer = reg.callback.preemption_predicates(args)
        finally:
            owners.pop()
        if not isinstance(answer, si_pb2.PreemptionPredicatesResponse):
            raise TypeError("preemption_predicates must return sicore.v1.si_pb2."
                            f"PreemptionPredicatesResponse, not {type(answer).__name__}")
        reg.library.reply(response, answer.SerializeToString())
    except BaseException as exc:  # noqa: BLE001 - never unwind into the library
        try:
            _describe("preemption_predicates", exc)
            if reg is not None:
                failed = si_pb2.PreemptionPredicatesResponse(success=False, index=-1)
                reg.library.reply(response, failed.SerializeToString())
        except BaseException:  # noqa: BLE001
            pass


def _get_state_dump(user_data: int | None, response: int | None) -> None:
    try:
        reg = _registrations.get(user_data)  # type: ignore[arg-type]
        if reg is None:
            raise RuntimeError(f"get_state_dump: unknown or released callback handle {user_data}")
        owners = _enter(reg.owner)
        try:
            answer = reg.callback.get_state_dump()
        finally:
            owners.pop()
        text = answer if isinstance(answer, str) else json.dumps(answer)
        reg.library.reply(response, text.encode("utf-8"))
    except BaseException as exc:  # noqa: BLE001 - never unwind into the library
        # No answer: the library leaves the RM's part out.
        with contextlib.suppress(BaseException):
            _describe("get_state_dump", exc)


def _events(data: bytes) -> list[si_pb2.EventRecord]:
    return list(sicore_pb2.EventRecords.FromString(data).events)


# Module-level for the life of the process: the library may hold any of them.
_TRAMPOLINES: dict[str, Any] = {
    "update_allocation": _status_trampoline("update_allocation", si_pb2.AllocationResponse.FromString),
    "update_application": _status_trampoline("update_application", si_pb2.ApplicationResponse.FromString),
    "update_node": _status_trampoline("update_node", si_pb2.NodeResponse.FromString),
    "predicates": _status_trampoline("predicates", si_pb2.PredicatesArgs.FromString),
    "preemption_predicates": ANSWER_CALLBACK(_preemption_predicates),
    "send_event": _notify_trampoline("send_event", _events),
    "update_container_scheduling_state": _notify_trampoline(
        "update_container_scheduling_state", si_pb2.UpdateContainerSchedulingStateRequest.FromString),
    "get_state_dump": DUMP_CALLBACK(_get_state_dump),
    # One release for both editions: it only drops the registry entry.
    "release": _V0_TRAMPOLINES["release"],
}


def _overrides(callback: ResourceManagerCallback, method: str) -> bool:
    if method in getattr(callback, "__dict__", {}):
        return True
    return getattr(type(callback), method) is not getattr(ResourceManagerCallback, method)


def add_registration(callback: ResourceManagerCallback, library: Library,
                     owner: int) -> tuple[int, sicore_v1_callbacks]:
    """Create a handle for ``callback`` and the ``sicore_v1_callbacks`` table that uses it."""
    if not isinstance(callback, ResourceManagerCallback):
        raise TypeError("callback must be an instance of sicore.v1.ResourceManagerCallback, "
                        f"not {type(callback).__name__}")
    handle, _reg = new_registration(callback, library, owner)
    table = sicore_v1_callbacks()
    table.struct_size = ctypes.sizeof(sicore_v1_callbacks)
    table.user_data = handle
    for name, trampoline in _TRAMPOLINES.items():
        # NULL = "succeeds, not called": saves a call and a decode per
        # message the RM does not want (for predicates, one per node).
        if name == "release" or _overrides(callback, name):
            setattr(table, name, trampoline)
    return handle, table
