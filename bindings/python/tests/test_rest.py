"""The REST service and metrics: /ws/v1/queues as the web UI reads it, and metrics()."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest
from conftest import RecordingRM, app_request, ask_request, node_request, register_request

import sicore


def _get(addr: str, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://{addr}{path}", timeout=20) as resp:
            return resp.status, resp.read().decode("utf-8")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8")


def test_queues_endpoint_and_metrics() -> None:
    rm = RecordingRM()
    with sicore.Scheduler(rest_address="127.0.0.1:0") as sched:
        sched.register_resource_manager(register_request(), rm)
        sched.update_node(node_request("node-1", "node-2"))
        rm.wait_for(lambda: rm.accepted_nodes() == {"node-1", "node-2"})
        sched.update_application(app_request("app-1", queue="root.a", user="alice"))
        rm.wait_for(lambda: "app-1" in rm.accepted_apps())
        sched.update_allocation(ask_request("app-1", "ask-1", "ask-2"))
        rm.wait_for(lambda: len(rm.new_allocations()) >= 2)

        addr = sched.rest_address()
        assert addr.startswith("127.0.0.1:")

        def used_in_leaf() -> dict[str, object] | None:
            status, body = _get(addr, "/ws/v1/queues")
            assert status == 200, body
            doc = json.loads(body)  # one partition: one document
            assert doc["partitionName"] == "default"
            root = doc["queues"]
            assert root["queuename"] == "root"
            leaves = {q["queuename"]: q for q in root["queues"] or []}
            leaf = leaves.get("a")
            if leaf and leaf["capacities"]["usedCapacity"] == "[memory:200 vcore:2]":
                return leaf
            return None

        deadline = time.monotonic() + 20
        while (leaf := used_in_leaf()) is None:
            assert time.monotonic() < deadline, "root.a never showed the two allocations"
            time.sleep(0.05)
        assert set(leaf["capacities"]) == {"capacity", "maxCapacity", "usedCapacity", "absUsedCapacity"}
        assert leaf["status"] == "Active"

        text = sched.metrics()
        assert 'yunikorn_scheduler_container_allocation_attempt_total{state="allocated"} 2' in text
        assert 'yunikorn_scheduler_application_submission_total{result="accepted"} 1' in text
        status, body = _get(addr, "/metrics")
        assert status == 200
        assert "yunikorn_scheduler_node_active_total" in body

        status, body = _get(addr, "/ws/v1/stack")
        assert status == 404
        assert json.loads(body)["status_code"] == 404

    with sicore.Scheduler() as plain:
        assert plain.rest_address() == ""
        assert "yunikorn_scheduler_node_active_total" in plain.metrics()


def test_an_unusable_address_is_refused() -> None:
    with pytest.raises(sicore.InvalidArgumentError, match="rest_address"):
        sicore.Scheduler(rest_address="no port here")
