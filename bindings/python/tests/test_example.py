"""The example RM runs to completion."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "simple_rm.py"


def test_example_rm_runs() -> None:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), "--nodes", "2", "--apps", "2", "--tasks", "3",
         "--run-seconds", "0.05"],
        capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["finished"] is True
    assert summary["tasks_run"] == 6
