"""Browser test of `sicore-sim --html`.

Runs the simulator on tests/simreport/queues.yaml, opens the report in
headless Chromium (Debian's `chromium`) over the DevTools protocol, and
checks what a person opening the file would get:

- no script exception, no console or log error, and no request for anything
  but the file itself (the report must work offline);
- the page text names every queue of the configuration, has the four
  sections, and says the recorded usage matches the state dump;
- the "why waiting" chart is drawn with data: at least one cause band
  with waiting asks (its page's causes are checked against the expected),
  each starting at the first sample's dashed line, none drawn before it;
- a full-page PNG screenshot is written (for a person to look at).

Then the two policy workloads (`--workload tenants` over SI v0.12,
`--workload preemption` over SI v1.x) get the same checks, plus what their
charts must show as drawn: in every tenant chart the usage line stays on
or below the dashed cap line, and reaches it in some; the preemption
section has one marker per victim listed and the guaranteed queue's line
ends on its guarantee line.

First, the same checks run on a deliberately broken page (a throwing
script, an external image), which they must catch; so a checker that went
blind would fail here rather than pass everything.

The DevTools protocol is driven directly (websocket-client, one small pure
Python package) rather than through playwright-core, whose releases are tied
to particular browser builds, or by scraping `--enable-logging` output,
whose format is not an interface. Runtime.exceptionThrown and
Log.entryAdded are stable protocol events.

Usage: check_report.py SICORE_SIM OUT_DIR
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import websocket

HERE = Path(__file__).resolve().parent
QUEUES = [
    "root",
    "root.analytics",
    "root.analytics.etl-nightly",
    "root.analytics.dashboards",
    "root.ml-training",
]
SECTIONS = [
    "Allocations per second",
    "Why asks wait",
    "Queue usage against guaranteed and max",
    "Node utilisation",
    "Application states",
]
TIMEOUT = 60.0

# The page's own checks, by element id, that must say "ok" per workload.
VERDICTS = {
    "tenants": ["consistency", "limits-check"],
    "preemption": ["consistency", "guarantee-check"],
}
WORKLOAD_SECTIONS = {
    "tenants": ["Tenant usage against limits", "group datasci", "user alice", "root.tenants.research"],
    "preemption": ["Preemptions", "root.prod", "root.batch", "PREEMPTED_BY_SCHEDULER"],
}

# In the browser: for each chart of a tenant (aria-label "... against its
# cap"), the lowest (in SVG, highest y) the usage line gets to, against the
# cap line's y. A point above the cap line is a larger value than the cap.
TENANT_CHARTS_JS = """
Array.from(document.querySelectorAll('#tenants ~ table svg.chart')).
  filter(s => s.getAttribute('aria-label').endsWith('against its cap')).
  map(s => {
    const cap = s.querySelector('line.limit');
    const line = s.querySelector('polyline');
    const ys = line ? line.getAttribute('points').trim().split(' ')
      .map(p => parseFloat(p.split(',')[1])) : [];
    return {label: s.getAttribute('aria-label'),
            cap: cap ? parseFloat(cap.getAttribute('y1')) : null,
            top: ys.length ? Math.min(...ys) : null};
  })
"""

# In the browser: the guarantee charts (markers, the guarantee line, the
# usage line's end) and the victims table's rows.
PREEMPTION_JS = """
({charts: Array.from(document.querySelectorAll('#preemptions ~ table svg.chart')).
   filter(s => s.getAttribute('aria-label').endsWith('against its guarantee')).
   map(s => {
     const pts = s.querySelector('polyline').getAttribute('points').trim().split(' ');
     return {label: s.getAttribute('aria-label'),
             markers: s.querySelectorAll('path.preempt').length,
             guarantee: parseFloat(s.querySelector('line.limit').getAttribute('y1')),
             end: parseFloat(pts[pts.length - 1].split(',')[1])};
   }),
  victims: parseInt(document.getElementById('victims')?.dataset.victims ?? '0', 10),
  throughputMarkers: document.querySelectorAll('#throughput ~ svg.chart path.preempt').length})
"""


# In the browser: the cause bands of the "why waiting" chart, their peaks,
# their leftmost x and the x of the first sample's line (null without one).
WAITING_JS = """
(() => {
  const chart = 'svg.chart[aria-label="waiting asks by cause over time"]';
  const line = document.querySelector(chart + ' line.first-sample');
  const first = line ? parseFloat(line.getAttribute('x1')) : null;
  return Array.from(document.querySelectorAll(chart + ' polygon.cause')).
    map(p => {
      const pts = p.getAttribute('points').trim().split(' ');
      return {cause: p.dataset.cause, peak: parseInt(p.dataset.peak, 10),
              points: pts.length, first: first,
              left: Math.min(...pts.map(xy => parseFloat(xy.split(',')[0])))};
    });
})()
"""

# Per page, causes the "why waiting" chart must show with waiting asks.
WAITING_CAUSES = {
    "report": {"queueHeadroom"},
    "tenants": {"userLimit"},
    "preemption": set(),
    "early": set(),
}


def check_waiting(browser: Browser, page: str) -> list[str]:
    """The "why waiting" chart has bands with data, among them the expected causes."""
    bands = browser.eval(WAITING_JS) or []
    failures = []
    if not bands:
        failures.append(f"{page}: the why-waiting chart has no cause band")
    for b in bands:
        if b["peak"] < 1 or b["points"] < 4:
            failures.append(f"{page}: why-waiting band {b['cause']} is empty ({b})")
        # Before the first sample nothing was measured: no band there.
        if b["first"] is None or abs(b["left"] - b["first"]) > 0.05:
            failures.append(f"{page}: why-waiting band {b['cause']} does not start at the first sample ({b})")
    missing = WAITING_CAUSES[page] - {b["cause"] for b in bands if b["peak"] > 0}
    if missing:
        failures.append(f"{page}: why-waiting chart lacks {sorted(missing)}; it has {bands}")
    return failures


class Browser:
    """One headless Chromium with a fresh profile, driven over CDP."""

    def __init__(self) -> None:
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        if exe is None:
            raise SystemExit("chromium not found (scripts/test.sh installs Debian's chromium)")
        self.profile = tempfile.mkdtemp(prefix="sicore-chromium-")
        # Chromium's own log goes to a file: a pipe nobody reads would fill
        # up and block it. Shown when it fails to start.
        self.log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [
                exe,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--hide-scrollbars",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--user-data-dir={self.profile}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            text=True,
        )
        port = self._port()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            targets = json.load(r)
        page = next(t for t in targets if t.get("type") == "page")
        # Chromium refuses websocket clients that send an Origin it was not told to allow.
        self.ws = websocket.create_connection(
            page["webSocketDebuggerUrl"], timeout=TIMEOUT, suppress_origin=True
        )
        self.next_id = 0
        self.events: list[dict] = []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        # A desktop-sized window; the screenshot later grows it to the page's height.
        self.call(
            "Emulation.setDeviceMetricsOverride", width=1240, height=900, deviceScaleFactor=1, mobile=False
        )

    def _port(self) -> int:
        # Chromium writes the port it picked to DevToolsActivePort in the profile.
        path = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"chromium exited with {self.proc.returncode}: {self.log_tail()}")
            if path.exists():
                first = path.read_text().split("\n")[0].strip()
                if first:
                    return int(first)
            time.sleep(0.05)
        raise SystemExit("chromium did not open its DevTools port")

    def log_tail(self) -> str:
        self.log.seek(0)
        return self.log.read()[-2000:]

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while not any(e["method"] == method for e in self.events):
            if time.monotonic() > deadline:
                raise SystemExit(f"no {method} within {TIMEOUT}s")
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self.events.append(msg)

    def open(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")
        # A round trip after the load event: events queued before it arrive first.
        self.call("Runtime.evaluate", expression="1")

    def problems(self, page_url: str) -> list[str]:
        """Script exceptions, console/log errors and requests for anything but the page."""
        found = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                found.append("exception: " + d.get("exception", {}).get("description", d.get("text", "?")))
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                found.append(
                    "console error: "
                    + " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", []))
                )
            elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                found.append("log error: " + p["entry"].get("text", "?"))
            elif m == "Network.requestWillBeSent":
                url = p["request"]["url"]
                if url != page_url and not url.startswith("data:"):
                    found.append("request: " + url)
        return found

    def eval(self, expression: str):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluating {expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self, path: Path) -> tuple[int, int]:
        size = self.call("Page.getLayoutMetrics")["cssContentSize"]
        w, h = int(size["width"]), int(size["height"])
        self.call("Emulation.setDeviceMetricsOverride", width=w, height=h, deviceScaleFactor=1, mobile=False)
        data = base64.b64decode(
            self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        )
        path.write_bytes(data)
        return w, h

    def close(self) -> None:
        # The socket may close before Browser.close answers.
        with contextlib.suppress(OSError, websocket.WebSocketException, RuntimeError):
            self.call("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path} is not a PNG")
    return struct.unpack(">II", data[16:24])


def check_workload(browser: Browser, sim: Path, out: Path, workload: str, edition: str) -> list[str]:
    """Runs one policy workload with --html and checks its page; returns the failures."""
    page = out / f"{workload}.html"
    page.unlink(missing_ok=True)
    subprocess.run(
        [str(sim), "--workload", workload, "--edition", edition, "--html", str(page)],
        check=True,
        stdout=subprocess.DEVNULL,
        timeout=120,
    )
    failures = []
    # The previous screenshot grew the window to its page; start at desktop size again.
    browser.call(
        "Emulation.setDeviceMetricsOverride", width=1240, height=900, deviceScaleFactor=1, mobile=False
    )
    browser.open(page.as_uri())
    failures += [f"{workload}: {p}" for p in browser.problems(page.as_uri())]
    text = browser.eval("document.body.innerText")
    for name in SECTIONS + WORKLOAD_SECTIONS[workload]:
        if name not in text:
            failures.append(f"{workload}: page text lacks {name!r}")
    for verdict in VERDICTS[workload]:
        cls = browser.eval(f"document.getElementById('{verdict}')?.className")
        if cls != "ok":
            said = browser.eval(f"document.getElementById('{verdict}')?.innerText")
            failures.append(f"{workload}: #{verdict} is {cls!r}: {said}")
    failures += check_waiting(browser, workload)
    if workload == "tenants":
        charts = browser.eval(TENANT_CHARTS_JS) or []
        if len(charts) < 10:
            failures.append(f"tenants: {len(charts)} tenant charts, expected at least 10")
        for c in charts:
            if c["cap"] is None or c["top"] is None:
                failures.append(f"tenants: {c['label']} lacks its cap or usage line")
            elif c["top"] < c["cap"] - 0.5:
                failures.append(f"tenants: {c['label']} is drawn above its cap")
        at_cap = [c for c in charts if None not in (c["top"], c["cap"]) and abs(c["top"] - c["cap"]) <= 0.5]
        if not at_cap:
            failures.append("tenants: no tenant chart reaches its cap")
    else:
        got = browser.eval(PREEMPTION_JS)
        victims = got["victims"]
        if victims < 1:
            failures.append("preemption: no victim listed")
        if got["throughputMarkers"] != victims:
            failures.append(
                f"preemption: {got['throughputMarkers']} markers on the throughput chart, {victims} victims"
            )
        if not got["charts"]:
            failures.append("preemption: no guarantee chart")
        for c in got["charts"]:
            if c["markers"] != victims:
                failures.append(f"preemption: {c['label']} has {c['markers']} markers, {victims} victims")
            if abs(c["end"] - c["guarantee"]) > 0.5:
                failures.append(f"preemption: {c['label']} does not end on its guarantee")
    width, height = browser.screenshot(out / f"{workload}.png")
    png = png_size(out / f"{workload}.png")
    if png != (width, height) or height < 1500:
        failures.append(f"{workload}: screenshot is {png}, page is {(width, height)}")
    print(f"{workload} ({edition}): {page} ({page.stat().st_size // 1024} KiB), screenshot {png[0]}x{png[1]}")
    return failures


def main() -> int:
    sim, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    report = out / "report.html"
    report.unlink(missing_ok=True)
    subprocess.run(
        [
            str(sim),
            "--config",
            str(HERE / "queues.yaml"),
            "--queues",
            "root.analytics.etl-nightly,root.analytics.dashboards,root.ml-training",
            "--apps",
            "6",
            "--nodes",
            "40",
            "--asks",
            "3000",
            "--stall-seconds",
            "1",
            "--html",
            str(report),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        timeout=120,
    )

    # A page with a throwing script and an external image (a loopback port
    # nothing listens on): both must be reported.
    broken = out / "broken.html"
    broken.write_text(
        '<!DOCTYPE html><html><body><p>broken</p><img src="http://127.0.0.1:9/x.png">'
        "<script>notDefinedAnywhere();</script></body></html>"
    )
    failures = []
    browser = Browser()
    try:
        browser.open(broken.as_uri())
        caught = browser.problems(broken.as_uri())
        if not any(c.startswith("exception:") for c in caught) or not any("127.0.0.1:9" in c for c in caught):
            failures.append(f"the checks missed the broken page's faults; they found only {caught}")

        # A why-waiting band drawn from the start while the first sample
        # came later (zeros nobody measured): it must be reported.
        early = out / "early.html"
        early.write_text(
            '<!DOCTYPE html><html><body><svg class="chart" width="1100" height="240"'
            ' aria-label="waiting asks by cause over time">'
            '<polygon class="cause" data-cause="nodes" data-peak="2"'
            ' points="58,206 600,100 1086,100 1086,206 600,206 58,206"></polygon>'
            '<line class="first-sample" x1="600" x2="600" y1="10" y2="206"></line>'
            "</svg></body></html>"
        )
        browser.open(early.as_uri())
        if not any("does not start at the first sample" in f for f in check_waiting(browser, "early")):
            failures.append("the checks missed a why-waiting band drawn before its first sample")

        browser.open(report.as_uri())
        failures += browser.problems(report.as_uri())
        text = browser.eval("document.body.innerText")
        for name in QUEUES + SECTIONS:
            if name not in text:
                failures.append(f"page text lacks {name!r}")
        consistency = browser.eval("document.getElementById('consistency')?.className")
        if consistency != "ok":
            failures.append(
                "the report says recorded usage and state dump differ: "
                + str(browser.eval("document.getElementById('consistency')?.innerText"))
            )
        charts = browser.eval("document.querySelectorAll('svg.chart').length")
        # 1 throughput + why waiting + 5 queues x 2 resources + heat map + states + timelines.
        if charts != 15:
            failures.append(f"expected 15 charts, found {charts}")
        failures += check_waiting(browser, "report")
        width, height = browser.screenshot(out / "report.png")
        # The policy workloads, one per edition.
        failures += check_workload(browser, sim, out, "tenants", "v0.12")
        failures += check_workload(browser, sim, out, "preemption", "v1")
    finally:
        browser.close()
    png = png_size(out / "report.png")
    if png != (width, height) or height < 1500:
        failures.append(f"screenshot is {png}, page is {(width, height)}")
    for f in failures:
        print("FAIL:", f)
    print(
        f"report: {report} ({report.stat().st_size // 1024} KiB),",
        f"screenshot: {out / 'report.png'} {png[0]}x{png[1]}",
    )
    print(f"{1 if not failures else 0} passed, {1 if failures else 0} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
