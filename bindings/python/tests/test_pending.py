"""Why an ask waits, read back through the typed accessor (both editions)."""

from __future__ import annotations

import time

import pytest
from conftest import WAIT, RecordingRM, app_request, ask_request, node_request, register_request
from v1rm import CONFIG, V1RM, Driver, ask
from v1rm import register_request as v1_register_request

import sicore
import sicore.v1

QUEUE_MAX_YAML = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: small
            resources:
              max: {memory: 150, vcore: 10}
    placementrules:
      - name: provided
        create: false
"""


def wait_reason(sched: sicore.Scheduler | sicore.v1.Scheduler, app_id: str, key: str,
                cause: str) -> sicore.PendingReason:
    """Poll the accessor until ``key`` of ``app_id`` waits for ``cause``."""
    deadline = time.monotonic() + WAIT
    seen: sicore.PendingReason | None = None
    while time.monotonic() < deadline:
        seen = sched.pending_reasons(app_id).get(key)
        if seen is not None and seen.cause == cause:
            return seen
        time.sleep(0.02)
    raise AssertionError(f"{key} never waited for {cause}; last reason: {seen}")


def test_nodes_too_small_are_counted_per_resource(registered: tuple[sicore.Scheduler, RecordingRM]) -> None:
    sched, rm = registered
    sched.update_node(node_request("n1", "n2", memory=1000))
    rm.wait_for(lambda: rm.accepted_nodes() == {"n1", "n2"})
    sched.update_application(app_request("big", queue="root.a"))
    rm.wait_for(lambda: "big" in rm.accepted_apps())
    # Larger than each node, smaller than the two: held by the nodes, not root.
    sched.update_allocation(ask_request("big", "huge", memory=1500))

    r = wait_reason(sched, "big", "huge", "nodes")
    assert isinstance(r, sicore.PendingReason)
    assert r.nodes is not None
    assert r.nodes.total == 2
    assert r.nodes.insufficient == {"memory": 2}
    assert r.nodes.refused == 0 and r.nodes.refusals == ()
    assert not r.nodes.required_node_missing
    assert r.message.startswith("0/2 nodes fit"), r.message
    assert "memory" in r.message
    assert r.passes >= 1 and 0 < r.since <= r.last_tried
    assert r.queue is None and r.gang is None and r.reserved_node is None
    assert r.allocation_log and r.allocation_log[-1].count >= 1
    again = sicore.pending_reasons(sched.state_dump(), "big", "default")["huge"]
    assert again is not None and again.cause == "nodes" and again.since == r.since


def test_queue_max_names_the_queue_and_the_amounts(rm: RecordingRM) -> None:
    with sicore.Scheduler(policy_configs={"queues": QUEUE_MAX_YAML}, scheduling_interval_ms=10) as sched:
        sched.register_resource_manager(register_request(), rm)
        sched.update_node(node_request("n1"))
        rm.wait_for(lambda: rm.accepted_nodes() == {"n1"})
        sched.update_application(app_request("capped", queue="root.small"))
        rm.wait_for(lambda: "capped" in rm.accepted_apps())
        sched.update_allocation(ask_request("capped", "first", memory=100))
        rm.wait_for(lambda: len(rm.new_allocations()) == 1)
        sched.update_allocation(ask_request("capped", "second", memory=100))

        r = wait_reason(sched, "capped", "second", "queueHeadroom")
        assert r.queue == "root.small"
        assert r.resource == "memory"
        assert (r.asked, r.free) == (100, 50)
        assert r.nodes is None
        assert "root.small" in r.message
        # The placed ask is not listed; only the waiting one is.
        assert set(sched.pending_reasons("capped")) == {"second"}


def test_unknown_application_and_untried_ask() -> None:
    dump = {"partitions": [{"name": "default", "applications": [
        {"id": "a", "pending_asks": [{"allocation_key": "k"}]}]}]}
    assert sicore.pending_reasons(dump, "a") == {"k": None}
    with pytest.raises(KeyError):
        sicore.pending_reasons(dump, "missing")
    with pytest.raises(KeyError):
        sicore.pending_reasons(dump, "a", partition="other")
    twice = {"partitions": [dict(dump["partitions"][0]), {**dump["partitions"][0], "name": "p2"}]}
    with pytest.raises(ValueError):
        sicore.pending_reasons(twice, "a")
    assert sicore.pending_reasons(twice, "a", partition="p2") == {"k": None}


def test_v1_edition_reads_the_same_reason() -> None:
    with sicore.v1.Scheduler(event_flush_interval_ms=50, scheduling_interval_ms=10) as sched:
        rm = V1RM()
        sched.register_resource_manager(v1_register_request(config=CONFIG), rm)
        d = Driver(sched, rm)
        d.ready_nodes("v1-n1", "v1-n2")
        d.app("v1-app")
        d.allocate(ask("v1-app", "too-big", memory=1500))

        r = wait_reason(sched, "v1-app", "too-big", "nodes")
        assert isinstance(r, sicore.v1.PendingReason)
        assert r.nodes is not None and r.nodes.insufficient == {"memory": 2}
        assert r.message.startswith("0/2 nodes fit"), r.message
