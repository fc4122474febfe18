"""The SI v1.x edition of the binding: what current YuniKorn RMs (the k8shim v1.x) speak.

The same scheduler core as :mod:`sicore`, driven through the library's
``sicore_v1_*`` family with the SI v1.x messages of
:mod:`sicore.v1.si_pb2`. Allocations are identified by their key::

    import sicore.v1
    from sicore.v1 import si_pb2

    class RM(sicore.v1.ResourceManagerCallback):
        def update_allocation(self, response):
            for alloc in response.new:
                print("allocated", alloc.allocationKey, "on", alloc.nodeID)

    with sicore.v1.Scheduler() as sched:
        sched.register_resource_manager(
            si_pb2.RegisterResourceManagerRequest(rmID="rm", policyGroup="queues",
                                                  config=QUEUES_YAML), RM())
        ...

Both editions' ``si.proto`` declare package ``si.v1``; the v1.8 messages
live in a private descriptor pool (:mod:`sicore.v1._pool`), so
``sicore.si_pb2`` and ``sicore.v1.si_pb2`` can be used in one process,
and ``sicore.v1.Scheduler(core)`` serves v1.8 RMs on a
:class:`sicore.Scheduler` that also serves v0.12 RMs. Errors are the
exceptions of :mod:`sicore`.
"""

from __future__ import annotations

from .._errors import (
    DecodeError,
    InternalError,
    InvalidArgumentError,
    RejectedError,
    SicoreError,
    Status,
    StoppedError,
    WouldDeadlockError,
)
from .._pending import (
    GangState,
    LogEntry,
    NodeCounts,
    PendingReason,
    Preemption,
    Refusal,
    pending_reasons,
)
from . import si_pb2, sicore_pb2
from ._callbacks import ResourceManagerCallback
from ._scheduler import RawScheduler, Scheduler

__all__ = [
    "DecodeError",
    "GangState",
    "InternalError",
    "InvalidArgumentError",
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
    "pending_reasons",
    "si_pb2",
    "sicore_pb2",
]
