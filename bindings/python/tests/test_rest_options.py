"""REST options from Python (issue 34 item 8): ``rest=RestOptions(...)`` or a
mapping of its fields sets the token and the allowed hosts; ``status_str``
names a status as the C library does."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

import sicore
from sicore import sicore_pb2


def _request(addr: str, path: str, method: str = "GET", headers: dict[str, str] | None = None) -> int:
    req = urllib.request.Request(f"http://{addr}{path}", method=method, headers=headers or {},
                                 data=b"" if method == "PUT" else None)
    try:
        with urllib.request.urlopen(req, timeout=20) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


@pytest.mark.parametrize("rest", [
    sicore_pb2.RestOptions(token="s3cret", allowed_hosts=["sched.example"]),
    {"token": "s3cret", "allowed_hosts": ["sched.example"], "header_timeout_ms": 5000},
])
def test_rest_options_set_token_and_allowed_hosts(rest: object) -> None:
    with sicore.Scheduler(rest_address="127.0.0.1:0", rest=rest) as sched:
        addr = sched.rest_address()
        assert _request(addr, "/ws/v1/scheduler/healthcheck") == 200
        # An allowed host name reaches the service; an unknown one does not.
        assert _request(addr, "/ws/v1/scheduler/healthcheck", headers={"Host": "sched.example"}) == 200
        assert _request(addr, "/ws/v1/scheduler/healthcheck", headers={"Host": "evil.example"}) == 403
        # A change needs the token now, even on loopback.
        assert _request(addr, "/ws/v1/loglevel/info", "PUT") in (401, 403)
        ok = _request(addr, "/ws/v1/loglevel/info", "PUT", {"Authorization": "Bearer s3cret"})
        assert ok == 200


def test_bad_rest_options_name_the_field() -> None:
    with pytest.raises(TypeError, match="rest"):
        sicore.options_message(rest="token")
    with pytest.raises(TypeError, match="rest"):
        sicore.options_message(rest={"no_such_field": 1})


def test_status_str_names_statuses() -> None:
    assert sicore.status_str(0) == "SICORE_OK"
    assert sicore.status_str(12345) == "unknown sicore_status"
