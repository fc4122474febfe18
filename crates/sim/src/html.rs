//! Renders a [`Report`] as one self-contained HTML page: inline CSS and
//! SVG, no scripts, no fonts or anything else fetched, so it opens offline
//! and can be attached to a ticket. Tooltips are SVG `<title>` elements.

use std::fmt::Write;
use std::path::Path;
use std::time::Instant;

use crate::report::{Recorder, Report};

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

/// The drawing area of one chart: time on x, a quantity on y.
struct Plot {
    w: f64,
    h: f64,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    end_ns: f64,
    y_max: f64,
    y_step: f64,
}

impl Plot {
    fn new(w: f64, h: f64, end_ns: u64, data_max: f64) -> Self {
        let y_step = nice_step(data_max, 4.0);
        let y_max = ((data_max / y_step).ceil() * y_step).max(y_step);
        Plot {
            w,
            h,
            left: 58.0,
            right: 14.0,
            top: 10.0,
            bottom: 34.0,
            end_ns: end_ns as f64,
            y_max,
            y_step,
        }
    }

    fn x(&self, t_ns: f64) -> f64 {
        self.left + (self.w - self.left - self.right) * (t_ns / self.end_ns).clamp(0.0, 1.0)
    }

    fn y(&self, v: f64) -> f64 {
        self.h - self.bottom - (self.h - self.top - self.bottom) * (v / self.y_max).clamp(0.0, 1.05)
    }

    fn open(&self, out: &mut String, label: &str) {
        let _ = write!(
            out,
            r#"<svg class="chart" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{l}">"#,
            w = self.w,
            h = self.h,
            l = esc(label)
        );
    }

    /// Grid, tick labels and axis titles.
    fn axes(
        &self,
        out: &mut String,
        unit: &TimeUnit,
        y_label: &str,
        y_fmt: &dyn Fn(f64) -> String,
    ) {
        let (x0, x1) = (self.left, self.w - self.right);
        let (y0, y1) = (self.h - self.bottom, self.top);
        let mut v = 0.0;
        while v <= self.y_max + self.y_step * 1e-9 {
            let y = self.y(v);
            let _ = write!(
                out,
                r#"<line class="grid" x1="{x0}" x2="{x1}" y1="{y:.1}" y2="{y:.1}"/><text class="tick" x="{tx}" y="{ty:.1}" text-anchor="end">{}</text>"#,
                esc(&y_fmt(v)),
                tx = x0 - 5.0,
                ty = y + 4.0
            );
            v += self.y_step;
        }
        let t_step = nice_step(self.end_ns / unit.ns, 8.0) * unit.ns;
        let mut t = 0.0;
        while t <= self.end_ns * (1.0 + 1e-9) {
            let x = self.x(t);
            let _ = write!(
                out,
                r#"<line class="axis" x1="{x:.1}" x2="{x:.1}" y1="{y0}" y2="{y2}"/><text class="tick" x="{x:.1}" y="{ty}" text-anchor="middle">{}</text>"#,
                esc(&fmt_num(t / unit.ns)),
                y2 = y0 + 4.0,
                ty = y0 + 15.0
            );
            t += t_step;
        }
        let _ = write!(
            out,
            r#"<line class="axis" x1="{x0}" x2="{x1}" y1="{y0}" y2="{y0}"/><line class="axis" x1="{x0}" x2="{x0}" y1="{y0}" y2="{y1}"/><text class="axis-title" x="{xm:.1}" y="{ya}" text-anchor="middle">time since start ({u})</text><text class="axis-title" transform="translate(12 {ym:.1}) rotate(-90)" text-anchor="middle">{yl}</text>"#,
            xm = (x0 + x1) / 2.0,
            ya = self.h - 3.0,
            u = unit.name,
            ym = (y0 + y1) / 2.0,
            yl = esc(y_label)
        );
    }

    /// Vertical lines at the run's milestones, labelled when `labels`.
    fn marks(&self, out: &mut String, r: &Report, labels: bool) {
        for (i, (t, label)) in r.marks.iter().enumerate() {
            let x = self.x(*t as f64);
            let _ = write!(
                out,
                r#"<line class="mark" x1="{x:.1}" x2="{x:.1}" y1="{}" y2="{}"><title>{} at {}</title></line>"#,
                self.top,
                self.h - self.bottom,
                esc(label),
                esc(&duration(*t as f64))
            );
            if labels {
                // Right of the line, or left of it near the right edge.
                let (lx, anchor) = if x > self.w * 0.8 {
                    (x - 3.0, "end")
                } else {
                    (x + 3.0, "start")
                };
                let _ = write!(
                    out,
                    r#"<text class="mark-label" x="{lx:.1}" y="{:.1}" text-anchor="{anchor}">{}</text>"#,
                    self.top + 11.0 + 12.0 * i as f64,
                    esc(label)
                );
            }
        }
    }

    /// A polyline through the value at the end of each bucket, from 0 at t=0.
    fn level_points(&self, r: &Report, values: impl Iterator<Item = f64>) -> String {
        let mut pts = format!("{:.1},{:.1}", self.x(0.0), self.y(0.0));
        for (i, v) in values.enumerate() {
            let t = ((i as u64 + 1) * r.bucket_ns).min(r.end_ns) as f64;
            let _ = write!(pts, " {:.1},{:.1}", self.x(t), self.y(v));
        }
        pts
    }
}

fn legend(out: &mut String, items: &[(&str, String)]) {
    out.push_str(r#"<div class="legend">"#);
    for (class, text) in items {
        let _ = write!(
            out,
            r#"<span><i class="sw {class}"></i>{}</span>"#,
            esc(text)
        );
    }
    out.push_str("</div>");
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
.sw.used{background:#0969da}.sw.guar{background:#1a7f37}.sw.max{background:#cf222e}.sw.markk{background:#8250df}
table.queues{border-collapse:collapse}
table.queues td{vertical-align:top;padding:6px 10px 6px 0;border-top:1px solid #eaeef2}
td.qname{font-size:13px;width:210px}
td.qname b{font-family:"DejaVu Sans Mono","Liberation Mono",monospace;font-size:13px;word-break:break-all}
td.qname div{color:#57606a;font-size:12px;margin-top:3px}
.ctitle{font-size:11.5px;font-weight:bold;margin:0 0 2px 40px;white-space:nowrap}
"#;

/// Colours of the heat map: viridis in ten steps (perceptually even and
/// readable with the common colour-vision deficiencies).
const HEAT: [&str; 10] = [
    "#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58",
    "#b5de2b", "#fde725",
];

fn heat_colour(share: f64) -> &'static str {
    HEAT[((share * 10.0).floor().max(0.0) as usize).min(9)]
}

fn state_colour(state: &str) -> &'static str {
    match state {
        "New" => "#8c959f",
        "Accepted" => "#d4a72c",
        "Starting" => "#54aeff",
        "Running" => "#0969da",
        "Resuming" => "#a475f9",
        "Completing" => "#4ac26b",
        "Completed" => "#1a7f37",
        "Rejected" => "#cf222e",
        "Failing" => "#fa4549",
        "Failed" => "#82071e",
        "Expired" => "#6e7781",
        "Killed" => "#24292f",
        _ => "#bf8700",
    }
}

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
    queues(&mut out, r, &unit);
    heat_map(&mut out, r, &unit);
    app_states(&mut out, r, &unit);
    out.push_str("\n</body></html>\n");
    out
}

fn throughput(out: &mut String, r: &Report, unit: &TimeUnit) {
    out.push_str(r#"<h2 id="throughput">Allocations per second</h2>"#);
    let peak = r.allocs_per_s.iter().copied().fold(0.0, f64::max);
    let _ = write!(
        out,
        r#"<p class="note">New allocations the RM received in each {} bucket, as a rate; {} in all, peak {}/s. Dotted lines mark the run's milestones.</p>"#,
        esc(&duration(r.bucket_ns as f64)),
        r.total_allocations,
        fmt_num(peak)
    );
    let mut items = vec![("alloc", "allocations/s".to_string())];
    let releases = r.releases_per_s.iter().any(|&v| v > 0.0);
    let rejects = r.rejected_per_s.iter().any(|&v| v > 0.0);
    if releases {
        items.push(("release", "releases/s".into()));
    }
    if rejects {
        items.push(("reject", "rejected asks/s".into()));
    }
    items.push(("markk", "milestone".into()));
    legend(out, &items);
    let max = r
        .allocs_per_s
        .iter()
        .chain(&r.releases_per_s)
        .chain(&r.rejected_per_s)
        .copied()
        .fold(0.0, f64::max);
    let p = Plot::new(1100.0, 260.0, r.end_ns, max.max(1.0));
    p.open(out, "allocations per second over time");
    p.axes(out, unit, "per second", &fmt_num);
    let bw = p.x(r.bucket_ns as f64) - p.x(0.0);
    for (i, &v) in r.allocs_per_s.iter().enumerate() {
        if v <= 0.0 {
            continue;
        }
        let t0 = i as u64 * r.bucket_ns;
        let x = p.x(t0 as f64);
        let y = p.y(v);
        let _ = write!(
            out,
            r##"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="#0969da"><title>{}–{}: {}/s</title></rect>"##,
            (bw - 0.5).max(0.5),
            p.y(0.0) - y,
            esc(&duration(t0 as f64)),
            esc(&duration((t0 + r.bucket_ns).min(r.end_ns) as f64)),
            fmt_num(v)
        );
    }
    for (series, colour, on) in [
        (&r.releases_per_s, "#bf8700", releases),
        (&r.rejected_per_s, "#cf222e", rejects),
    ] {
        if on {
            let pts = p.level_points(r, series.iter().copied());
            let _ = write!(
                out,
                r#"<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="1.5"/>"#
            );
        }
    }
    p.marks(out, r, true);
    out.push_str("</svg>");
}

fn queues(out: &mut String, r: &Report, unit: &TimeUnit) {
    out.push_str(r#"<h2 id="queues">Queue usage against guaranteed and max</h2>"#);
    out.push_str(r#"<p class="note">Resources allocated in each queue (a parent counts its children) at the end of each time bucket, one chart per resource type. Dashed lines are the queue's configured guaranteed and max; a queue without them has no limit of its own (root's max is the partition's total capacity).</p>"#);
    legend(
        out,
        &[
            ("used", "allocated".into()),
            ("guar", "guaranteed".into()),
            ("max", "max".into()),
        ],
    );
    out.push_str(r#"<table class="queues">"#);
    for q in &r.queues {
        let _ = write!(
            out,
            r#"<tr><td class="qname" style="padding-left:{}px"><b>{}</b><div>{}{} application(s)</div>"#,
            q.depth * 12,
            // Long paths may wrap after a dot, not inside a name.
            esc(&q.path).replace('.', ".<wbr>"),
            if q.leaf { "leaf, " } else { "parent, " },
            q.applications
        );
        for (title, m, none) in [
            ("guaranteed", &q.guaranteed, "not set"),
            ("max", &q.max, "not set"),
            ("pending at end", &q.pending, "none"),
        ] {
            let text = if m.is_empty() {
                none.to_string()
            } else {
                m.iter()
                    .map(|(k, v)| format!("{k} {}", fmt_num(*v as f64)))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let _ = write!(out, "<div>{title}: {}</div>", esc(&text));
        }
        out.push_str("</td>");
        for (ri, res) in r.resources.iter().enumerate() {
            let usage = &q.usage[ri];
            let last = usage.last().copied().unwrap_or(0);
            let peak = usage.iter().copied().max().unwrap_or(0);
            let g = q.guaranteed.get(res).copied();
            let m = q.max.get(res).copied();
            let top = [Some(peak), g, m].into_iter().flatten().max().unwrap_or(0);
            let p = Plot::new(440.0, 170.0, r.end_ns, (top as f64).max(1.0));
            // How close to its limits the queue ended, where it has them.
            let share = [(m, "max"), (g, "guaranteed")]
                .into_iter()
                .filter_map(|(v, name)| {
                    let v = v.filter(|&v| v > 0)?;
                    Some(format!(
                        ", {:.0}% of {name}",
                        100.0 * last as f64 / v as f64
                    ))
                })
                .collect::<String>();
            let _ = write!(
                out,
                r#"<td><div class="ctitle">{}: {} at end{}{}</div>"#,
                esc(res),
                fmt_num(last as f64),
                share,
                if peak > last {
                    format!("; peak {}", fmt_num(peak as f64))
                } else {
                    String::new()
                }
            );
            p.open(out, &format!("{} {res} usage over time", q.path));
            p.axes(out, unit, res, &fmt_num);
            p.marks(out, r, false);
            let pts = p.level_points(r, usage.iter().map(|&v| v as f64));
            let _ = write!(
                out,
                r##"<polygon points="{pts} {:.1},{:.1}" fill="#0969da" fill-opacity="0.15" stroke="none"/><polyline points="{pts}" fill="none" stroke="#0969da" stroke-width="1.8"><title>{} {res}: peak {}, at end {}</title></polyline>"##,
                p.x(r.end_ns as f64),
                p.y(0.0),
                esc(&q.path),
                fmt_num(peak as f64),
                fmt_num(last as f64)
            );
            for (value, colour, name) in [(g, "#1a7f37", "guaranteed"), (m, "#cf222e", "max")] {
                if let Some(v) = value {
                    let y = p.y(v as f64);
                    let _ = write!(
                        out,
                        r#"<line x1="{}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="{colour}" stroke-width="1.5" stroke-dasharray="6 4"><title>{name} {res}: {}</title></line>"#,
                        p.left,
                        p.w - p.right,
                        fmt_num(v as f64)
                    );
                }
            }
            out.push_str("</svg></td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    if r.queues_left_out > 0 {
        let _ = write!(
            out,
            r#"<p class="note">{} more queues are not drawn.</p>"#,
            r.queues_left_out
        );
    }
}

fn heat_map(out: &mut String, r: &Report, unit: &TimeUnit) {
    out.push_str(r#"<h2 id="nodes">Node utilisation</h2>"#);
    let group = r.heat.first().map_or(1, |h| h.nodes);
    let (sum, busiest) = r
        .heat
        .iter()
        .filter_map(|row| Some((row.nodes, *row.cells.last()?)))
        .fold((0.0, 0.0f64), |(s, b), (n, (mean, top))| {
            (s + mean * n as f64, b.max(top))
        });
    let _ = write!(
        out,
        r#"<p class="note">Each cell is the utilisation of a node at the end of a {} interval: the largest share of any resource type it has allocated (its dominant resource). {}. At the end: {:.1}% on average, {:.1}% on the busiest node. Hover for the mean and the busiest node of a cell.</p>"#,
        esc(&duration(r.heat_col_ns as f64)),
        if group > 1 {
            format!(
                "{} nodes in rows of {group} consecutive node ids; the colour is the row's mean",
                r.node_count
            )
        } else {
            format!("{} nodes, one per row", r.node_count)
        },
        100.0 * sum / r.node_count.max(1) as f64,
        100.0 * busiest
    );
    // Colour scale.
    out.push_str(r#"<div class="legend">utilisation 0% "#);
    for (i, c) in HEAT.iter().enumerate() {
        let _ = write!(
            out,
            r#"<i class="sw" style="background:{c};width:34px;margin:0" title="{}–{}%"></i>"#,
            i * 10,
            i * 10 + 10
        );
    }
    out.push_str(" 100% (steps of 10%)</div>");
    if r.heat.is_empty() {
        out.push_str(r#"<p class="note">No nodes.</p>"#);
        return;
    }
    let cols = r.heat[0].cells.len().max(1);
    let label_w = 190.0;
    let width = 1100.0;
    let row_h = (480.0 / r.heat.len() as f64).clamp(9.0, 22.0);
    let cell_w = (width - label_w - 14.0) / cols as f64;
    let h = row_h * r.heat.len() as f64 + 40.0;
    let _ = write!(
        out,
        // crispEdges: no hairline seams between cells of one colour.
        r#"<svg class="chart" width="{width}" height="{h}" viewBox="0 0 {width} {h}" role="img" aria-label="node utilisation heat map" shape-rendering="crispEdges">"#
    );
    let show_every = ((12.0 / row_h).ceil() as usize).max(1);
    for (ri, row) in r.heat.iter().enumerate() {
        let y = row_h * ri as f64 + 4.0;
        let label = if row.nodes > 1 {
            format!("{} … {}", row.first, row.last)
        } else {
            row.first.clone()
        };
        if ri % show_every == 0 {
            let _ = write!(
                out,
                r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                label_w - 6.0,
                y + row_h / 2.0 + 3.5,
                esc(&label)
            );
        }
        for (ci, &(mean, top)) in row.cells.iter().enumerate() {
            let t1 = ((ci as u64 + 1) * r.heat_col_ns).min(r.end_ns);
            let _ = write!(
                out,
                r#"<rect x="{:.1}" y="{y:.1}" width="{:.2}" height="{:.1}" fill="{}"><title>{} ({} node(s)) at {}: mean {:.1}%, busiest {:.1}%</title></rect>"#,
                label_w + cell_w * ci as f64,
                cell_w + 0.6,
                row_h,
                heat_colour(mean),
                esc(&label),
                row.nodes,
                esc(&duration(t1 as f64)),
                mean * 100.0,
                top * 100.0
            );
        }
    }
    let y0 = row_h * r.heat.len() as f64 + 4.0;
    let span = r.heat_col_ns as f64 * cols as f64;
    let t_step = nice_step(r.end_ns as f64 / unit.ns, 8.0) * unit.ns;
    let mut t = 0.0;
    while t <= r.end_ns as f64 * (1.0 + 1e-9) {
        let x = label_w + (width - label_w - 14.0) * t / span;
        let _ = write!(
            out,
            r#"<line class="axis" x1="{x:.1}" x2="{x:.1}" y1="{y0:.1}" y2="{:.1}"/><text class="tick" x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            y0 + 4.0,
            y0 + 15.0,
            fmt_num(t / unit.ns)
        );
        t += t_step;
    }
    let _ = write!(
        out,
        r#"<text class="axis-title" x="{:.1}" y="{:.1}" text-anchor="middle">time since start ({})</text></svg>"#,
        (label_w + width) / 2.0,
        h - 3.0,
        unit.name
    );
}

fn app_states(out: &mut String, r: &Report, unit: &TimeUnit) {
    out.push_str(r#"<h2 id="applications">Application states</h2>"#);
    let _ = write!(
        out,
        r#"<p class="note">How many of the {} applications were in each state at the end of each time bucket (stacked), as the RM learnt it from UpdateApplication.</p>"#,
        r.app_count
    );
    out.push_str(r#"<div class="legend">"#);
    for (s, _) in &r.app_states {
        let _ = write!(
            out,
            r#"<span><i class="sw" style="background:{}"></i>{}</span>"#,
            state_colour(s),
            esc(s)
        );
    }
    out.push_str("</div>");
    let p = Plot::new(1100.0, 240.0, r.end_ns, (r.app_count as f64).max(1.0));
    p.open(out, "application states over time");
    p.axes(out, unit, "applications", &fmt_num);
    let mut base = vec![0u32; r.buckets];
    for (state, counts) in &r.app_states {
        let top: Vec<u32> = base.iter().zip(counts).map(|(b, c)| b + c).collect();
        // Counts at bucket ends joined by straight lines, as the queue
        // charts draw usage: the band between `base` and `top`.
        let upper = p.level_points(r, top.iter().map(|&v| v as f64));
        let mut lower: Vec<String> = p
            .level_points(r, base.iter().map(|&v| v as f64))
            .split(' ')
            .map(str::to_string)
            .collect();
        lower.reverse();
        let peak = counts.iter().copied().max().unwrap_or(0);
        let _ = write!(
            out,
            r#"<polygon points="{upper} {}" fill="{}" stroke="white" stroke-width="0.5"><title>{}: at most {peak} at once, {} at end</title></polygon>"#,
            lower.join(" "),
            state_colour(state),
            esc(state),
            counts.last().copied().unwrap_or(0)
        );
        base = top;
    }
    p.marks(out, r, false);
    out.push_str("</svg>");

    if r.app_timelines.is_empty() {
        if r.app_count > 0 {
            out.push_str(r#"<p class="note">Too many applications for one row each; see the counts above.</p>"#);
        }
        return;
    }
    out.push_str(r#"<h2 id="timelines">Application timelines</h2><p class="note">One row per application: when it entered each state.</p>"#);
    let label_w = 240.0;
    let width = 1100.0;
    let row_h = 20.0;
    let h = row_h * r.app_timelines.len() as f64 + 40.0;
    let _ = write!(
        out,
        r#"<svg class="chart" width="{width}" height="{h}" viewBox="0 0 {width} {h}" role="img" aria-label="application timelines">"#
    );
    let x = |t: f64| label_w + (width - label_w - 14.0) * (t / r.end_ns as f64).clamp(0.0, 1.0);
    for (i, app) in r.app_timelines.iter().enumerate() {
        let y = row_h * i as f64 + 4.0;
        let label = if app.queue.is_empty() {
            app.id.clone()
        } else {
            format!("{} ({})", app.id, app.queue)
        };
        let _ = write!(
            out,
            r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            label_w - 6.0,
            y + row_h / 2.0 + 3.0,
            esc(&label)
        );
        for (t0, t1, state) in &app.segments {
            let (x0, x1) = (x(*t0 as f64), x(*t1 as f64));
            let _ = write!(
                out,
                r#"<rect x="{x0:.1}" y="{:.1}" width="{:.2}" height="{:.1}" fill="{}"><title>{}: {} from {} to {}</title></rect>"#,
                y + 2.0,
                (x1 - x0).max(1.0),
                row_h - 4.0,
                state_colour(state),
                esc(&app.id),
                esc(state),
                esc(&duration(*t0 as f64)),
                esc(&duration(*t1 as f64))
            );
        }
    }
    let y0 = row_h * r.app_timelines.len() as f64 + 4.0;
    let t_step = nice_step(r.end_ns as f64 / unit.ns, 8.0) * unit.ns;
    let mut t = 0.0;
    while t <= r.end_ns as f64 * (1.0 + 1e-9) {
        let _ = write!(
            out,
            r#"<line class="axis" x1="{xx:.1}" x2="{xx:.1}" y1="{y0:.1}" y2="{:.1}"/><text class="tick" x="{xx:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            y0 + 4.0,
            y0 + 15.0,
            fmt_num(t / unit.ns),
            xx = x(t)
        );
        t += t_step;
    }
    let _ = write!(
        out,
        r#"<text class="axis-title" x="{:.1}" y="{:.1}" text-anchor="middle">time since start ({})</text></svg>"#,
        (label_w + width) / 2.0,
        h - 3.0,
        unit.name
    );
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
