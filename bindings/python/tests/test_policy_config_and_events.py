"""Changing in-memory configuration at run time, and choosing event types."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from conftest import (
    RM_ID,
    WAIT,
    RecordingRM,
    app_request,
    ask_request,
    node_request,
    register_request,
)

import sicore
from sicore import si_pb2


def root_with(*children: str) -> str:
    yaml = "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\n"
    if children:
        yaml += "        queues:\n" + "".join(f"          - name: {c}\n" for c in children)
    return yaml


def rm_config(sched: sicore.Scheduler, rm_id: str) -> dict[str, Any]:
    return next(r for r in sched.state_dump()["rms"] if r["rm_id"] == rm_id)


def queue_paths(sched: sicore.Scheduler, rm_id: str) -> set[str]:
    paths: set[str] = set()

    def walk(q: dict[str, Any]) -> None:
        paths.add(q["path"])
        for c in q["children"]:
            walk(c)

    for p in sched.state_dump()["partitions"]:
        if p["rm_id"] == rm_id:
            walk(p["root"])
    return paths


def test_set_policy_config_applies_valid_text_before_returning(rm: RecordingRM) -> None:
    with sicore.Scheduler(policy_configs={"queues": root_with("a")}) as sched:
        sched.register_resource_manager(register_request(), rm)
        before = rm_config(sched, RM_ID)["config_checksum"]
        sched.set_policy_config("queues", root_with("a", "added"))
        assert "root.added" in queue_paths(sched, RM_ID)
        after = rm_config(sched, RM_ID)
        assert after["config_checksum"] != before
        assert after["config_source"] == "in-memory"


def test_invalid_policy_config_is_rejected_and_the_old_one_stays(rm: RecordingRM) -> None:
    with sicore.Scheduler(policy_configs={"queues": root_with("a")}) as sched:
        sched.register_resource_manager(register_request(), rm)
        before = rm_config(sched, RM_ID)["config_checksum"]
        with pytest.raises(sicore.RejectedError, match="not a name"):
            sched.set_policy_config("queues", root_with("a", "not a name"))
        assert rm_config(sched, RM_ID)["config_checksum"] == before
        assert queue_paths(sched, RM_ID) == {"root", "root.a"}
        # The stored text is still the old one: a reload changes nothing.
        sched.update_configuration(RM_ID)
        assert rm_config(sched, RM_ID)["config_checksum"] == before
        with pytest.raises(sicore.InvalidArgumentError):
            sched.set_policy_config("", root_with())
        with pytest.raises(TypeError):
            sched.set_policy_config("queues", b"partitions: []")  # type: ignore[arg-type]


def test_a_group_no_rm_uses_is_checked_and_kept(rm: RecordingRM) -> None:
    with sicore.Scheduler(policy_configs={"queues": root_with("a")}) as sched:
        sched.register_resource_manager(register_request(), rm)
        before = rm_config(sched, RM_ID)["config_checksum"]
        with pytest.raises(sicore.RejectedError, match="policy group 'later'"):
            sched.set_policy_config("later", "partitions: [")
        sched.set_policy_config("later", root_with("z"))
        assert rm_config(sched, RM_ID)["config_checksum"] == before
        sched.register_resource_manager(register_request("rm-2", "later"), RecordingRM())
        assert rm_config(sched, "rm-2")["config_source"] == "in-memory"
        assert "root.z" in queue_paths(sched, "rm-2")
    with pytest.raises(sicore.StoppedError):
        sched.set_policy_config("queues", root_with())


def _events_until_drain(rm: RecordingRM, **options: Any) -> list[si_pb2.EventRecord]:
    """Run an application to Running, then drain its node; return the events seen."""
    with sicore.Scheduler(policy_configs={"queues": root_with("a")}, scheduling_interval_ms=10,
                          event_flush_interval_ms=20, **options) as sched:
        sched.register_resource_manager(register_request(), rm)
        sched.update_node(node_request("ev-node"))
        sched.update_application(app_request("ev-app"))
        rm.wait_for(lambda: "ev-app" in rm.accepted_apps())
        sched.update_allocation(ask_request("ev-app", "k"))
        rm.wait_for(rm.new_allocations)
        # The drain record is produced after every application record, and
        # batches keep creation order: once it is here, all earlier ones are.
        sched.update_node(node_request("ev-node", action=si_pb2.NodeInfo.DRAIN_NODE))
        rm.wait_for(lambda: any(e.objectID == "ev-node" and e.reason == "NodeDraining"
                                for e in rm.events))
        with rm.cond:
            return list(rm.events)


def test_app_records_are_not_sent_by_default(rm: RecordingRM) -> None:
    events = _events_until_drain(rm)
    types = {e.type for e in events}
    assert si_pb2.EventRecord.APP not in types
    assert types <= {si_pb2.EventRecord.REQUEST, si_pb2.EventRecord.NODE}


def test_app_records_are_sent_when_asked_for(rm: RecordingRM) -> None:
    events = _events_until_drain(rm, event_types=["REQUEST", si_pb2.EventRecord.NODE, "app"])
    assert any(e.type == si_pb2.EventRecord.APP and e.objectID == "ev-app" for e in events)


def test_unknown_event_types_are_refused() -> None:
    with pytest.raises(sicore.InvalidArgumentError, match="ALLOCATION"):
        sicore.Scheduler(event_types=["NODE", "ALLOCATION"])
    with pytest.raises(TypeError):
        sicore.Scheduler(event_types="NODE")
    with pytest.raises(TypeError):
        sicore.Scheduler(event_types=[99])


def _watcher_threads() -> int:
    tasks = Path("/proc/self/task")
    if not tasks.is_dir():
        pytest.skip("no /proc")
    count = 0
    for task in tasks.iterdir():
        with contextlib.suppress(OSError):
            if (task / "comm").read_text().startswith("sicore-watch"):
                count += 1
    return count


def _replace_file(directory: Path, yaml: str) -> None:
    """Swap queues.yaml in one step, as the kubelet updates a mounted configmap."""
    tmp = directory / ".queues.yaml.new"
    tmp.write_text(yaml)
    os.replace(tmp, directory / "queues.yaml")


def _wait(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_the_reload_watcher_catches_a_file_written_after_the_call(
        rm: RecordingRM, tmp_path: Path) -> None:
    _replace_file(tmp_path, root_with("a"))
    others = _watcher_threads()  # of schedulers other tests left open
    sched = sicore.Scheduler(config_dir=tmp_path, event_flush_interval_ms=20,
                             event_types=["NODE", "QUEUE"])
    try:
        sched.register_resource_manager(register_request(), rm)
        before = rm_config(sched, RM_ID)["config_checksum"]
        sched.update_configuration(RM_ID)
        time.sleep(1.5)
        _replace_file(tmp_path, root_with("a", "bad/name"))
        rm.wait_for(lambda: any(e.type == si_pb2.EventRecord.QUEUE
                                and e.reason == "ConfigurationRejected"
                                and "bad/name" in e.message for e in rm.events))
        assert rm_config(sched, RM_ID)["config_checksum"] == before
        _replace_file(tmp_path, root_with("a", "b"))
        _wait(lambda: "root.b" in queue_paths(sched, RM_ID), "root.b from the watcher")
    finally:
        sched.close()
    # close() joined the watcher; its thread leaves /proc a moment later.
    _wait(lambda: _watcher_threads() <= others, "no watcher thread after close")
