"""The v1.x user and group usage endpoints under a user cap."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from conftest import RecordingRM, app_request, ask_request, node_request, register_request

import sicore

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        limits:
          - {limit: per user, users: [alice], maxresources: {memory: 200}}
          - {limit: group, groups: [users], maxapplications: 3}
        queues:
          - name: a
"""


def _get(addr: str, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://{addr}{path}", timeout=20) as resp:
            return resp.status, resp.read().decode("utf-8")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8")


def test_usage_endpoints() -> None:
    rm = RecordingRM()
    with sicore.Scheduler(rest_address="127.0.0.1:0", policy_configs={"queues": CONFIG}) as sched:
        sched.register_resource_manager(register_request(), rm)
        sched.update_node(node_request("node-1"))
        rm.wait_for(lambda: rm.accepted_nodes() == {"node-1"})
        sched.update_application(app_request("app-1", queue="root.a", user="alice"))
        rm.wait_for(lambda: "app-1" in rm.accepted_apps())
        sched.update_allocation(ask_request("app-1", "ask-1", "ask-2", "ask-3"))
        rm.wait_for(lambda: len(rm.new_allocations()) >= 2)
        addr = sched.rest_address()

        deadline = time.monotonic() + 20
        while True:
            status, body = _get(addr, "/ws/v1/partition/default/usage/user/alice")
            assert status == 200, body
            alice = json.loads(body)
            if alice["queues"].get("resourceUsage", {}).get("memory") == 200:
                break
            assert time.monotonic() < deadline, body
            time.sleep(0.05)
        assert len(rm.new_allocations()) == 2  # the third ask is over the cap
        assert alice["userName"] == "alice"
        assert alice["groups"] == {"app-1": "users"}
        root = alice["queues"]
        assert root["queuePath"] == "root"
        assert root["maxResources"] == {"memory": 200}
        assert [c["queuePath"] for c in root["children"]] == ["root.a"]
        assert root["children"][0]["runningApplications"] == ["app-1"]

        status, body = _get(addr, "/ws/v1/partition/default/usage/users")
        assert status == 200
        assert [u["userName"] for u in json.loads(body)] == ["alice"]
        status, body = _get(addr, "/ws/v1/partition/default/usage/groups")
        assert status == 200
        groups = json.loads(body)
        assert [g["groupName"] for g in groups] == ["users"]
        assert groups[0]["applications"] == ["app-1"]
        assert groups[0]["queues"]["maxApplications"] == 3
        status, body = _get(addr, "/ws/v1/partition/default/usage/group/users")
        assert status == 200 and json.loads(body)["groupName"] == "users"

        status, body = _get(addr, "/ws/v1/partition/default/usage/user/nobody")
        assert status == 404 and "User not found" in body
        status, body = _get(addr, "/ws/v1/partition/default/usage/user/1bad")
        assert status == 400 and "Invalid user name" in body
        status, body = _get(addr, "/ws/v1/partition/missing/usage/users")
        assert status == 404
