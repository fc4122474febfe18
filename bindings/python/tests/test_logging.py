"""Library log records reach the `sicore` logger."""

from __future__ import annotations

import logging

import pytest
from conftest import RecordingRM, node_request, register_request

import sicore


def test_library_records_reach_the_sicore_logger(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(sicore.TRACE, logger="sicore")
    rm = RecordingRM()
    with sicore.Scheduler(log_level="debug") as sched:
        sched.register_resource_manager(register_request(), rm)
        sched.update_node(node_request("logged-node"))
        rm.wait_for(lambda: "logged-node" in rm.accepted_nodes())
    records = [r for r in caplog.records if r.name == "sicore" and hasattr(r, "sicore_target")]
    assert records, "expected at least one record from the library"
    for r in records:
        assert r.levelno in (logging.ERROR, logging.WARNING, logging.INFO, logging.DEBUG, sicore.TRACE)
        assert isinstance(r.sicore_target, str)


def test_trace_level_has_a_name() -> None:
    assert logging.getLevelName(sicore.TRACE) == "TRACE"
