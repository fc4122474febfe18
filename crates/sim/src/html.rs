//! Renders a [`Report`] as one self-contained HTML page: inline CSS and
//! SVG, no scripts, no fonts or anything else fetched, so it opens offline
//! and can be attached to a ticket. Tooltips are SVG `<title>` elements.

use std::fmt::Write;
use std::path::Path;
use std::time::Instant;

use crate::report::{Recorder, Report};

mod charts;
mod policy;
mod waiting;
use charts::{app_states, heat_map, queues, throughput};

/// Escapes text for HTML and SVG content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// 1, 2 or 5 times a power of ten, so that `max / step` is at most `ticks`.
fn nice_step(max: f64, ticks: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let raw = max / ticks;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| max / s <= ticks)
        .unwrap_or(10.0 * mag)
}

/// A quantity with a k/M/G/T suffix, three significant digits at most.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    let (d, suffix) = if a >= 1e12 {
        (1e12, "T")
    } else if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    let x = v / d;
    let s = if x.abs() >= 100.0 || x.fract() == 0.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("{s}{suffix}")
}

/// The unit the time axis is labelled in, chosen from the run's length.
struct TimeUnit {
    ns: f64,
    name: &'static str,
}

impl TimeUnit {
    /// The largest unit in which the span is at least one.
    fn for_span(end_ns: u64) -> Self {
        let (ns, name) = match end_ns {
            0..=999_999 => (1e3, "µs"),
            1_000_000..=999_999_999 => (1e6, "ms"),
            1_000_000_000..=119_999_999_999 => (1e9, "s"),
            _ => (60e9, "min"),
        };
        TimeUnit { ns, name }
    }
}

/// A duration or instant in its own unit ("14.6 ms", "1.15 s").
fn duration(t_ns: f64) -> String {
    let unit = TimeUnit::for_span(t_ns.max(0.0) as u64);
    format!("{} {}", fmt_num(t_ns / unit.ns), unit.name)
}

const CSS: &str = r#"
body{font-family:"DejaVu Sans","Liberation Sans",Arial,Helvetica,sans-serif;margin:24px;color:#1d2329;background:#fff;max-width:1180px}
h1{font-size:24px;margin:0 0 4px}
h2{font-size:18px;margin:28px 0 4px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
p.note{color:#57606a;font-size:13px;margin:4px 0 8px}
table.meta{border-collapse:collapse;font-size:13px}
table.meta td{padding:2px 14px 2px 0;vertical-align:top}
table.meta td:first-child{color:#57606a}
.ok{color:#1a7f37;font-weight:bold}
.bad{color:#cf222e;font-weight:bold}
svg.chart{display:block;font-size:11px}
svg text{fill:#1d2329}
.grid{stroke:#eaeef2;stroke-width:1}
.axis{stroke:#8c959f;stroke-width:1}
.tick{font-size:10px;fill:#57606a}
.axis-title{font-size:11px;fill:#57606a}
.mark{stroke:#8250df;stroke-width:1;stroke-dasharray:2 3}
.mark-label{font-size:10px;fill:#8250df}
.legend{font-size:12px;margin:4px 0 2px}
.legend span{margin-right:16px;white-space:nowrap}
.sw{display:inline-block;width:14px;height:10px;margin-right:5px;vertical-align:middle;border-radius:2px}
.sw.alloc{background:#0969da}.sw.release{background:#bf8700}.sw.reject{background:#cf222e}
.sw.preempt{background:#e16f24}.sw.run{background:#8250df}
.sw.used{background:#0969da}.sw.guar{background:#1a7f37}.sw.max{background:#cf222e}.sw.markk{background:#8250df}
table.queues{border-collapse:collapse}
table.queues td{vertical-align:top;padding:6px 10px 6px 0;border-top:1px solid #eaeef2}
td.qname{font-size:13px;width:210px}
td.qname b{font-family:"DejaVu Sans Mono","Liberation Mono",monospace;font-size:13px;word-break:break-all}
td.qname div{color:#57606a;font-size:12px;margin-top:3px}
.ctitle{font-size:11.5px;font-weight:bold;margin:0 0 2px 40px;white-space:nowrap}
"#;

/// Builds the report from the recorder and the final state dump and writes
/// it to `path`; returns a line for the simulator's text report.
pub fn write(
    path: &Path,
    rec: &Recorder,
    dump: &serde_json::Value,
    meta: Vec<(String, String)>,
) -> Result<String, String> {
    let started = Instant::now();
    let page = render(&rec.finish(dump, meta));
    std::fs::write(path, &page).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(format!(
        "{} ({} KiB, built in {:.0} ms)",
        path.display(),
        page.len() / 1024,
        started.elapsed().as_secs_f64() * 1e3
    ))
}

/// Writes an already built report to `path`; returns the same line.
pub fn write_report(path: &Path, r: &Report) -> Result<String, String> {
    let started = Instant::now();
    let page = render(r);
    std::fs::write(path, &page).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(format!(
        "{} ({} KiB, built in {:.0} ms)",
        path.display(),
        page.len() / 1024,
        started.elapsed().as_secs_f64() * 1e3
    ))
}

pub fn render(r: &Report) -> String {
    let unit = TimeUnit::for_span(r.end_ns);
    let mut out = String::with_capacity(256 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    out.push_str("<title>sicore-sim report</title><style>");
    out.push_str(CSS);
    out.push_str("</style></head><body>\n<h1>sicore-sim report</h1>");
    let _ = write!(
        out,
        r#"<p class="note">Timeline of one simulator run, {} from the scheduler's creation to the end of the workload, sampled from what the resource manager was told (allocations, releases, application state changes) in buckets of {}. Hover over a chart for exact values.</p>"#,
        esc(&duration(r.end_ns as f64)),
        esc(&duration(r.bucket_ns as f64))
    );

    out.push_str(r#"<table class="meta">"#);
    for (k, v) in &r.meta {
        let _ = write!(out, "<tr><td>{}</td><td>{}</td></tr>", esc(k), esc(v));
    }
    let _ = write!(
        out,
        "<tr><td>cost of recording</td><td>{:.1} ms ({:.0} ns per allocation) wall-clock in the RM's callback thread, including any wait for a CPU; none on the scheduler's thread</td></tr>",
        r.recording_ns as f64 / 1e6,
        r.recording_ns as f64 / r.total_allocations.max(1) as f64
    );
    for (t, label) in &r.marks {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>at {}</td></tr>",
            esc(label),
            esc(&duration(*t as f64))
        );
    }
    out.push_str("</table>");
    if r.mismatches.is_empty() {
        out.push_str(r#"<p id="consistency" class="ok">Recorded usage matches the final state dump for every queue and node.</p>"#);
    } else {
        let _ = write!(
            out,
            r#"<p id="consistency" class="bad">Recorded usage differs from the final state dump in {} places:</p><ul>"#,
            r.mismatches.len()
        );
        for m in r.mismatches.iter().take(20) {
            let _ = write!(out, "<li>{}</li>", esc(m));
        }
        out.push_str("</ul>");
    }

    throughput(&mut out, r, &unit);
    policy::preemptions(&mut out, r, &unit);
    policy::tenants(&mut out, r, &unit);
    waiting::waiting(&mut out, r, &unit);
    queues(&mut out, r, &unit);
    heat_map(&mut out, r, &unit);
    app_states(&mut out, r, &unit);
    out.push_str("\n</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc(r#"<a href="x">'q' & b</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;q&#39; &amp; b&lt;/a&gt;"
        );
    }

    #[test]
    fn numbers_get_short_suffixes() {
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(950.0), "950");
        assert_eq!(fmt_num(1500.0), "1.5k");
        assert_eq!(fmt_num(31_955_456.0), "32M");
        assert_eq!(fmt_num(7_957_504.0), "7.96M");
        assert_eq!(fmt_num(2e9), "2G");
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(nice_step(208.0, 8.0), 50.0);
        assert_eq!(nice_step(10.0, 4.0), 5.0);
        assert_eq!(nice_step(31_955_456.0, 4.0), 1e7);
    }
}
