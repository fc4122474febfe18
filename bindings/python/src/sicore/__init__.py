"""Python binding of ``sicore``, a YuniKorn scheduler-interface (SI v0.12) scheduler core.

A resource manager creates a :class:`Scheduler`, registers itself with a
:class:`ResourceManagerCallback` subclass, and drives the scheduler with
``sicore.si_pb2`` request messages::

    import sicore
    from sicore import si_pb2

    class RM(sicore.ResourceManagerCallback):
        def update_allocation(self, response):
            for alloc in response.new:
                print("allocated", alloc.allocationKey, "on", alloc.nodeID)

    with sicore.Scheduler() as sched:
        sched.register_resource_manager(
            si_pb2.RegisterResourceManagerRequest(rmID="rm", policyGroup="queues"), RM())
        ...

Errors raise subclasses of :class:`SicoreError`. The library's log records go
to the ``sicore`` logger. The SI v1.x edition is :mod:`sicore.v1`.
"""

from __future__ import annotations

from importlib import metadata as _metadata

from . import si_pb2, sicore_pb2
from ._callbacks import ResourceManagerCallback
from ._errors import (
    DecodeError,
    InternalError,
    InvalidArgumentError,
    RejectedError,
    SicoreError,
    Status,
    StoppedError,
    WouldDeadlockError,
)
from ._native import ENV_VAR, TRACE, Library, find_library, load_library
from ._pending import (
    GangState,
    LogEntry,
    NodeCounts,
    PendingReason,
    Preemption,
    Refusal,
    pending_reasons,
)
from ._scheduler import RawScheduler, Scheduler, options_message

try:
    __version__ = _metadata.version("sicore")
    """Version of this Python package: the crate's, from Cargo.toml (setup.py)."""
except _metadata.PackageNotFoundError:  # imported from a source tree, not installed
    __version__ = "unknown"

__all__ = [
    "ENV_VAR",
    "TRACE",
    "DecodeError",
    "GangState",
    "InternalError",
    "InvalidArgumentError",
    "Library",
    "LogEntry",
    "NodeCounts",
    "PendingReason",
    "Preemption",
    "RawScheduler",
    "Refusal",
    "RejectedError",
    "ResourceManagerCallback",
    "Scheduler",
    "SicoreError",
    "Status",
    "StoppedError",
    "WouldDeadlockError",
    "__version__",
    "find_library",
    "library_version",
    "load_library",
    "options_message",
    "pending_reasons",
    "si_pb2",
    "sicore_pb2",
    "status_str",
]


def status_str(status: int, library: str | None = None) -> str:
    """The native library's name of a status value, as ``sicore_status_str`` gives it."""
    return load_library(library).status_str(status)


def library_version(library: str | None = None) -> str:
    """The version string of the native library (loading it if needed)."""
    return load_library(library).version
