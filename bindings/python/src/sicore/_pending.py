"""Why an ask waits: typed views of the state dump's ``pending_reason``.

The state dump gives each waiting ask (``partitions[].applications[].
pending_asks[]``) a ``pending_reason`` object; the project's
docs/why-pending.md lists the causes and their fields. These frozen
dataclasses read it with the dump's snake_case names. Times are Unix
nanoseconds, 0 when unknown. Both editions share them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Refusal:
    """One text the RM's predicates gave, and how many nodes gave it."""

    reason: str
    count: int


@dataclass(frozen=True)
class NodeCounts:
    """What the last pass found on the nodes it tried."""

    total: int
    """Nodes in the partition."""
    examined: int
    """Nodes the pass examined."""
    insufficient: Mapping[str, int] = field(default_factory=dict)
    """Per resource type, nodes short of it."""
    refused: int = 0
    """Nodes the RM's predicates refused."""
    refusals: tuple[Refusal, ...] = ()
    """The RM's texts, grouped."""
    unschedulable: int = 0
    """Nodes draining or unschedulable."""
    reserved_for_other: int = 0
    """Nodes reserved for another ask."""
    required_node_missing: bool = False
    """The ask's required node is not registered."""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> NodeCounts:
        return cls(
            total=int(d.get("total", 0)),
            examined=int(d.get("examined", 0)),
            insufficient={str(k): int(v) for k, v in d.get("insufficient", {}).items()},
            refused=int(d.get("refused", 0)),
            refusals=tuple(Refusal(str(r["reason"]), int(r["count"])) for r in d.get("refusals", [])),
            unschedulable=int(d.get("unschedulable", 0)),
            reserved_for_other=int(d.get("reserved_for_other", 0)),
            required_node_missing=bool(d.get("required_node_missing", False)),
        )


@dataclass(frozen=True)
class GangState:
    """The gang state of the ask's application, for its task group."""

    task_group: str
    placed: int
    """Placeholders placed (held or replaced)."""
    total: int
    """Placeholders asked in all."""
    waiting_for: str
    """``placeholders`` or ``replacement``."""
    timeout_at: int = 0
    """Unix ns the placeholder timeout fired (0: not)."""
    timeout_outcome: str = ""
    """What the timeout did."""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GangState:
        return cls(
            task_group=str(d.get("task_group", "")),
            placed=int(d.get("placed", 0)),
            total=int(d.get("total", 0)),
            waiting_for=str(d.get("waiting_for", "")),
            timeout_at=int(d.get("timeout_at", 0)),
            timeout_outcome=str(d.get("timeout_outcome", "")),
        )


@dataclass(frozen=True)
class Preemption:
    """The last preemption attempt for the ask."""

    attempted: int
    """Unix ns."""
    outcome: str
    """``guaranteeCheck``, ``fence``, ``noVictims``, ``rmRefusedEveryNode``,
    ``shortOfResources``, ``attemptsExhausted`` or ``waitingForVictims``."""


@dataclass(frozen=True)
class LogEntry:
    """One entry of YuniKorn's ``allocationLog``."""

    message: str
    last_occurrence: int
    count: int


@dataclass(frozen=True)
class PendingReason:
    """Why one ask waits: the cause the last pass found, or the state holds.

    ``cause`` is one of ``applicationLimit``, ``queueHeadroom``,
    ``userLimit``, ``resourceType``, ``nodes``, ``requiredNodeMissing``,
    ``reserved``, ``gangPlaceholders``, ``gangReplacement`` or
    ``gangTimeout``; the optional fields are set when the cause names them.
    """

    cause: str
    message: str
    """One line, worded like kube-scheduler's ``FailedScheduling``."""
    group: str
    """The grouping key of the REST ``pending`` route."""
    since: int
    """Unix ns the cause was first found (0: read from the state now)."""
    last_tried: int
    """Unix ns of the last pass that tried the ask (0: none did)."""
    passes: int
    """Passes that found the same cause."""
    scope: str | None = None
    name: str | None = None
    queue: str | None = None
    limit: int | None = None
    resource: str | None = None
    asked: int | None = None
    free: int | None = None
    nodes: NodeCounts | None = None
    reserved_node: str | None = None
    gang: GangState | None = None
    preemption: Preemption | None = None
    allocation_log: tuple[LogEntry, ...] = ()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PendingReason:
        """Read one ``pending_reason`` object of the state dump."""

        def opt_int(key: str) -> int | None:
            v = d.get(key)
            return None if v is None else int(v)

        def opt_str(key: str) -> str | None:
            v = d.get(key)
            return None if v is None else str(v)

        nodes = d.get("nodes")
        gang = d.get("gang")
        pre = d.get("preemption")
        return cls(
            cause=str(d["cause"]),
            message=str(d.get("message", "")),
            group=str(d.get("group", "")),
            since=int(d.get("since", 0)),
            last_tried=int(d.get("last_tried", 0)),
            passes=int(d.get("passes", 0)),
            scope=opt_str("scope"),
            name=opt_str("name"),
            queue=opt_str("queue"),
            limit=opt_int("limit"),
            resource=opt_str("resource"),
            asked=opt_int("asked"),
            free=opt_int("free"),
            nodes=None if nodes is None else NodeCounts.from_dict(nodes),
            reserved_node=opt_str("reserved_node"),
            gang=None if gang is None else GangState.from_dict(gang),
            preemption=None if pre is None else Preemption(int(pre["attempted"]), str(pre["outcome"])),
            allocation_log=tuple(
                LogEntry(str(e["message"]), int(e["last_occurrence"]), int(e["count"]))
                for e in d.get("allocation_log", [])),
        )


def pending_reasons(dump: Mapping[str, Any], application_id: str,
                    partition: str | None = None) -> dict[str, PendingReason | None]:
    """The reasons of an application's waiting asks in a state dump, by allocation key.

    ``None`` for an ask no pass has tried yet. ``partition`` (the name the
    dump shows, e.g. ``default``) is needed only when the id is in more than
    one partition. The dump lists a bounded number of asks per application,
    so an application with very many waiting asks shows the first ones in
    scheduling order. Raises :class:`KeyError` when the application is not
    in the dump and :class:`ValueError` when the id is ambiguous.
    """
    apps = [a for p in dump.get("partitions", [])
            if partition is None or p.get("name") == partition
            for a in p.get("applications", []) if a.get("id") == application_id]
    if not apps:
        raise KeyError(application_id)
    if len(apps) > 1:
        raise ValueError(f"application {application_id!r} is in more than one partition; name one")
    out: dict[str, PendingReason | None] = {}
    for ask in apps[0].get("pending_asks", []):
        r = ask.get("pending_reason")
        out[str(ask["allocation_key"])] = None if r is None else PendingReason.from_dict(r)
    return out
