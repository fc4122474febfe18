"""The SI v1.x :class:`Scheduler`: the ``sicore_v1_*`` family over one scheduler handle."""

from __future__ import annotations

import os
from types import TracebackType
from typing import Any

from google.protobuf.message import Message

from .. import _scheduler as _core
from .._pending import PendingReason
from . import si_pb2
from ._callbacks import ResourceManagerCallback, add_registration

__all__ = ["RawScheduler", "Scheduler"]


class RawScheduler:
    """The byte-level layer under :class:`Scheduler`: requests are pre-encoded SI v1.x bytes."""

    def __init__(self, owner: Scheduler) -> None:
        """Wrap ``owner``; prefer :attr:`Scheduler.raw`."""
        self._owner = owner

    def register_resource_manager(self, request: bytes, callback: ResourceManagerCallback) -> bytes:
        """Register from an encoded ``RegisterResourceManagerRequest``; return the encoded response."""
        return self._owner._register(bytes(request), callback)

    def update_allocation(self, request: bytes) -> None:
        """Queue an encoded ``AllocationRequest``."""
        self._owner._core._async_call("sicore_v1_update_allocation", bytes(request))

    def update_application(self, request: bytes) -> None:
        """Queue an encoded ``ApplicationRequest``."""
        self._owner._core._async_call("sicore_v1_update_application", bytes(request))

    def update_node(self, request: bytes) -> None:
        """Queue an encoded ``NodeRequest``."""
        self._owner._core._async_call("sicore_v1_update_node", bytes(request))

    def update_configuration(self, request: bytes) -> None:
        """Apply an encoded ``UpdateConfigurationRequest`` (synchronous)."""
        self._owner._core._sync_call("sicore_v1_update_configuration", bytes(request))


class Scheduler:
    """A scheduler core driven through the SI v1.x ``SchedulerAPI``.

    ``Scheduler(**options)`` creates and starts a scheduler, taking the
    fields of ``sicore.sicore_pb2.SchedulerOptions`` as keywords (see
    :func:`sicore.options_message`). ``Scheduler(core)`` instead speaks v1.8
    to an existing :class:`sicore.Scheduler`, so RMs of both editions can
    share one scheduler handle (each sees only its own partitions)::

        core = sicore.Scheduler()
        v1 = sicore.v1.Scheduler(core)
        core.register_resource_manager(v012_request, V012Rm())
        v1.register_resource_manager(v18_request, V18Rm())

    The edition is bound to the rmID at registration: a call of this
    class for an RM that registered through :class:`sicore.Scheduler`
    (or the reverse) raises :class:`sicore.RejectedError` with the
    library's message, which names the RM's edition.

    Methods are thread-safe and, except :meth:`register_resource_manager`,
    :meth:`update_configuration` and :meth:`stop`, may be called from
    inside callbacks. Outcomes of the asynchronous ``update_*`` calls reach
    the registered :class:`ResourceManagerCallback` on library threads.
    """

    def __init__(self, core: _core.Scheduler | None = None, *,
                 library: str | os.PathLike[str] | None = None, **options: Any) -> None:
        """Create a scheduler with ``options``, or speak v1.8 to ``core``."""
        if core is None:
            core = _core.Scheduler(library=library, **options)
        elif not isinstance(core, _core.Scheduler):
            raise TypeError(f"core must be a sicore.Scheduler, not {type(core).__name__}")
        elif library is not None or options:
            raise TypeError("options and library apply to a new scheduler, not to a given core")
        self._core = core

    # -- lifecycle -----------------------------------------------------------------

    @property
    def core(self) -> _core.Scheduler:
        """The :class:`sicore.Scheduler` (the handle) this speaks v1.8 to; v0.12 RMs use it."""
        return self._core

    @property
    def closed(self) -> bool:
        """Whether the scheduler was stopped."""
        return self._core.closed

    @property
    def raw(self) -> RawScheduler:
        """The byte-level view of this scheduler (:class:`RawScheduler`)."""
        return RawScheduler(self)

    def stop(self) -> None:
        """The v1.8 ``Stop()``: shut the scheduler down and free it.

        This is :meth:`sicore.Scheduler.close` of the core, so it stops the
        RMs of both editions on it: it waits for calls in progress, joins
        the library's threads and releases every callback object. Calling it
        again does nothing; from inside a callback it raises
        :class:`sicore.WouldDeadlockError` and stops nothing.
        """
        self._core.close()

    close = stop

    def __enter__(self) -> Scheduler:
        """Return the scheduler itself."""
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """Stop the scheduler."""
        self.stop()

    def __repr__(self) -> str:
        """Show the core."""
        return f"<sicore.v1.Scheduler over {self._core!r}>"

    # -- the SchedulerAPI -----------------------------------------------------------------

    def _register(self, request: bytes, callback: ResourceManagerCallback) -> bytes:
        core = self._core
        handle_id, table = add_registration(callback, core.library, core._serial)
        # Drops the registration itself when the library refuses it.
        return core._register_table("sicore_v1_register_resource_manager", request, handle_id, table)

    def register_resource_manager(
        self, request: si_pb2.RegisterResourceManagerRequest, callback: ResourceManagerCallback
    ) -> si_pb2.RegisterResourceManagerResponse:
        """Register (or re-register, resetting its state) an SI v1.x resource manager.

        Synchronous. ``request.config`` is the queues configuration text
        (empty: the built-in v1.8 default, partition ``default`` placing by
        the ``namespace`` tag) and ``request.extraConfig`` the other keys
        (``log.level`` is read). Invalid YAML raises
        :class:`sicore.RejectedError` with the reason and leaves the RM
        unregistered; an empty ``rmID`` or ``policyGroup`` raises
        :class:`sicore.InvalidArgumentError`. The scheduler keeps
        ``callback`` alive until the RM re-registers or the scheduler stops.
        """
        _expect(request, si_pb2.RegisterResourceManagerRequest)
        data = self._register(request.SerializeToString(), callback)
        return si_pb2.RegisterResourceManagerResponse.FromString(data)

    def update_allocation(self, request: si_pb2.AllocationRequest) -> None:
        """Queue allocations (merged by key) and releases (by key).

        An allocation without ``nodeID`` is a request, one with a node is
        placed by the RM (echoed in ``new``), one tagged ``foreign`` is
        tracked on its node. Shape errors raise here; the outcome reaches
        the callback's ``update_allocation``.
        """
        _expect(request, si_pb2.AllocationRequest)
        self._core._async_call("sicore_v1_update_allocation", request.SerializeToString())

    def update_application(self, request: si_pb2.ApplicationRequest) -> None:
        """Queue applications to add and remove; outcomes reach ``update_application``."""
        _expect(request, si_pb2.ApplicationRequest)
        self._core._async_call("sicore_v1_update_application", request.SerializeToString())

    def update_node(self, request: si_pb2.NodeRequest) -> None:
        """Queue nodes to create (``CREATE_DRAIN``: unschedulable), update, drain or remove.

        Every created node is answered in ``update_node``.
        """
        _expect(request, si_pb2.NodeRequest)
        self._core._async_call("sicore_v1_update_node", request.SerializeToString())

    def update_configuration(self, request: si_pb2.UpdateConfigurationRequest) -> None:
        """Apply ``extraConfig``, then the configuration text ``config`` (empty: the default).

        Synchronous: invalid YAML raises :class:`sicore.RejectedError` with
        the reason and the old queues stay; a text with the checksum in
        force changes nothing.
        """
        _expect(request, si_pb2.UpdateConfigurationRequest)
        self._core._sync_call("sicore_v1_update_configuration", request.SerializeToString())

    def state_dump(self) -> dict[str, Any]:
        """The scheduler's state as a dict (:meth:`sicore.Scheduler.state_dump`)."""
        return self._core.state_dump()

    def pending_reasons(self, application_id: str,
                        partition: str | None = None) -> dict[str, PendingReason | None]:
        """Why each waiting ask of an application waits (:meth:`sicore.Scheduler.pending_reasons`)."""
        return self._core.pending_reasons(application_id, partition)

    def metrics(self) -> str:
        """The Prometheus text of the ``yunikorn_*`` metrics (:meth:`sicore.Scheduler.metrics`)."""
        return self._core.metrics()

    def rest_address(self) -> str:
        """The REST service's ``host:port`` (:meth:`sicore.Scheduler.rest_address`)."""
        return self._core.rest_address()


def _expect(request: Message, cls: type[Message]) -> None:
    # A v0.12 message of the same name is a different class: refused here
    # rather than encoded into bytes the other edition would misread.
    if not isinstance(request, cls):
        raise TypeError(f"expected sicore.v1.si_pb2.{cls.__name__}, not "
                        f"{type(request).__module__}.{type(request).__name__}")
