"""Browser check of the YuniKorn web UI in front of sicore's REST service.

Opens every screen of the UI (served by YuniKorn's own web server, which
proxies `/ws` with the browser's Host header) in headless Chromium over
the DevTools protocol (the driver of tests/simreport/check_report.py),
waits for its REST calls, writes a full-page PNG per screen and fails on:

- the UI's error page (`#/error`), a script exception or a console error;
- a REST call answered with a status of 400 or more;
- "NaN" anywhere on a screen, or "n/a" in a cell the simulator has data
  for (the columns the UI itself never fills are listed in KNOWN_NA).

Usage: check_webui.py UI_URL OUT_DIR PARTITION LEAF_QUEUE
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "simreport"))
from check_report import Browser

SETTLE = 4.0

# "n/a" the UI shows whatever the scheduler sends (rest-v1.9.md 32.3: the
# finished-time column is wired to a field it never reads).
KNOWN_NA = ["Finished Time"]
# An application that holds nothing has no used resource (the reference
# leaves the empty resource out as well): its "Used Resource" shows n/a.
HOLDS_NOTHING = ("New", "Accepted")

# Cells showing "n/a", with their column heading and their row's text, in
# any Material table.
NA_CELLS_JS = """
Array.from(document.querySelectorAll('mat-cell, td.mat-mdc-cell, td')).
  filter(c => c.innerText.includes('n/a')).
  map(c => {
    const cls = Array.from(c.classList).find(x => x.startsWith('mat-column-')) || '';
    const col = cls.replace('mat-column-', '');
    const table = c.closest('table, mat-table');
    let head = col;
    if (table && cls) {
      const h = table.querySelector('th.' + cls + ', mat-header-cell.' + cls);
      if (h) head = h.innerText.trim();
    }
    const row = c.closest('tr, mat-row');
    return {head: head, row: row ? row.innerText.replace(/\\s+/g, ' ') : ''};
  })
"""

# Rows of the first data table (a filter that matches nothing leaves none).
ROWS_JS = "document.querySelectorAll('tr.mat-mdc-row, mat-row').length"


def rest_failures(events: list[dict]) -> list[str]:
    """REST answers of 400 or more seen by the page."""
    out = []
    for e in events:
        if e["method"] != "Network.responseReceived":
            continue
        r = e["params"]["response"]
        if "/ws/" in r["url"] and r["status"] >= 400:
            out.append(f"REST {r['status']}: {r['url']}")
    return out


def page_problems(browser: Browser) -> list[str]:
    """Exceptions and console errors (any request is fine here)."""
    return [p for p in browser.problems("") if not p.startswith("request: ")]


def na_allowed(cell: dict) -> bool:
    if cell["head"] in KNOWN_NA:
        return True
    return cell["head"] == "Used Resource" and any(
        f" {s} " in f" {cell['row']} " for s in HOLDS_NOTHING
    )


def visit(
    browser: Browser, url: str, name: str, out: Path, setup: list[str], rows: bool
) -> list[str]:
    browser.call(
        "Emulation.setDeviceMetricsOverride",
        width=1440,
        height=900,
        deviceScaleFactor=1,
        mobile=False,
    )
    # A hash change alone fires no load event: start from a blank page.
    browser.open("about:blank")
    browser.open(url)
    time.sleep(SETTLE)
    for step in setup:
        browser.eval(step)
        time.sleep(SETTLE / 2)
    browser.call("Runtime.evaluate", expression="1")
    failures = []
    where = browser.eval("location.hash")
    if where.startswith("#/error"):
        failures.append(f"{name}: the UI went to its error page ({where})")
    failures += [
        f"{name}: {p}" for p in page_problems(browser) + rest_failures(browser.events)
    ]
    text = browser.eval("document.body.innerText") or ""
    if "NaN" in text:
        failures.append(f"{name}: 'NaN' on the page")
    na = [c for c in (browser.eval(NA_CELLS_JS) or []) if not na_allowed(c)]
    for c in na:
        failures.append(
            f"{name}: 'n/a' in column {c['head']!r} of row {c['row'][:120]!r}"
        )
    if rows and not browser.eval(ROWS_JS):
        failures.append(f"{name}: the table has no row")
    browser.screenshot(out / f"{name}.png")
    (out / f"{name}.txt").write_text(text)
    print(
        f"{name}: {url} -> {out / (name + '.png')} ({'ok' if not failures else 'FAILED'})"
    )
    return failures


def first_app(base: str, partition: str, queue: str) -> str:
    # The simulator serves REST while its workload still runs: wait for the
    # first allocation in the queue rather than read the first answer.
    url = f"{base}/ws/v1/partition/{partition}/queue/{queue}/applications"
    deadline = time.monotonic() + 30
    while True:
        with urllib.request.urlopen(url, timeout=10) as r:
            apps = json.load(r)
        with_allocs = [a for a in apps if a.get("allocations")]
        if with_allocs:
            return with_allocs[0]["applicationID"]
        if time.monotonic() > deadline:
            raise SystemExit(f"no application with allocations in {queue} after 30 s")
        time.sleep(0.5)


def first_node(base: str, partition: str) -> str:
    with urllib.request.urlopen(
        f"{base}/ws/v1/partition/{partition}/nodes", timeout=10
    ) as r:
        return json.load(r)[0]["nodeID"]


def main() -> int:
    base, out, partition, queue = (
        sys.argv[1],
        Path(sys.argv[2]).resolve(),
        sys.argv[3],
        sys.argv[4],
    )
    out.mkdir(parents=True, exist_ok=True)
    app = first_app(base, partition, queue)
    node = first_node(base, partition)
    # Typing in the filter: the UI filters on keyup, over every column and
    # the node's attributes (a missing `attributes` threw here).
    filter_js = (
        "(() => { const i = document.querySelector('.filter input');"
        f" i.value = '{node}'; i.dispatchEvent(new KeyboardEvent('keyup', {{key: '0'}})); return 1; }})()"
    )
    # Expands the queue tree down to the leaf and opens its details.
    # The rack labels each queue with its full path.
    split = queue.split(".")
    parts = [".".join(split[: i + 1]) for i in range(len(split))]
    expand = [
        "(() => { const q = Array.from(document.querySelectorAll('.queue-name'))"
        f".find(e => e.innerText.trim() === '{p}'); if (!q) return 0;"
        " const a = q.querySelector('a'); if (a) a.click(); return 1; })()"
        for p in parts[:-1]
    ]
    select = (
        "(() => { const q = Array.from(document.querySelectorAll('.queue-name'))"
        f".find(e => e.innerText.trim() === '{parts[-1]}'); if (q) q.click(); return q ? 1 : 0; }})()"
    )
    screens = [
        ("dashboard", f"{base}/#/dashboard", [], False),
        ("queues", f"{base}/#/queues", [*expand, select], False),
        ("queues-v2", f"{base}/#/queues-v2", [], False),
        (
            "applications",
            f"{base}/#/applications?partition={partition}&queue={queue}&applicationId={app}",
            [],
            True,
        ),
        ("nodes", f"{base}/#/nodes", [], True),
        ("nodes-filtered", f"{base}/#/nodes", [filter_js], True),
        ("status", f"{base}/#/status", [], False),
    ]
    browser = Browser()
    failures: list[str] = []
    try:
        for name, url, setup, rows in screens:
            failures += visit(browser, url, name, out, setup, rows)
    finally:
        browser.close()
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
