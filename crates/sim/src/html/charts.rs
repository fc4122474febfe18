//! The page's charts: the plot frame (axes, ticks, milestones, series) and
//! the four sections drawn with it (throughput, queue usage, the node heat
//! map, application states and timelines).

use std::fmt::Write;

use super::{duration, esc, fmt_num, nice_step, TimeUnit};
use crate::report::Report;

/// The drawing area of one chart: time on x, a quantity on y.
pub(super) struct Plot {
    pub(super) w: f64,
    pub(super) h: f64,
    pub(super) left: f64,
    pub(super) right: f64,
    pub(super) top: f64,
    pub(super) bottom: f64,
    end_ns: f64,
    y_max: f64,
    y_step: f64,
}

impl Plot {
    pub(super) fn new(w: f64, h: f64, end_ns: u64, data_max: f64) -> Self {
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

    pub(super) fn x(&self, t_ns: f64) -> f64 {
        self.left + (self.w - self.left - self.right) * (t_ns / self.end_ns).clamp(0.0, 1.0)
    }

    pub(super) fn y(&self, v: f64) -> f64 {
        self.h - self.bottom - (self.h - self.top - self.bottom) * (v / self.y_max).clamp(0.0, 1.05)
    }

    pub(super) fn open(&self, out: &mut String, label: &str) {
        let _ = write!(
            out,
            r#"<svg class="chart" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{l}">"#,
            w = self.w,
            h = self.h,
            l = esc(label)
        );
    }

    /// Grid, tick labels and axis titles.
    pub(super) fn axes(
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
    pub(super) fn marks(&self, out: &mut String, r: &Report, labels: bool) {
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
    pub(super) fn level_points(&self, r: &Report, values: impl Iterator<Item = f64>) -> String {
        let mut pts = format!("{:.1},{:.1}", self.x(0.0), self.y(0.0));
        for (i, v) in values.enumerate() {
            let t = ((i as u64 + 1) * r.bucket_ns).min(r.end_ns) as f64;
            let _ = write!(pts, " {:.1},{:.1}", self.x(t), self.y(v));
        }
        pts
    }

    /// As [`Plot::level_points`] for a series known only from `t0_ns` on,
    /// inside bucket `first`: `values` are the buckets' from `first` on,
    /// and the line starts at `t0_ns` with the first of them, leaving the
    /// time before it empty.
    pub(super) fn level_points_from(
        &self,
        r: &Report,
        first: usize,
        t0_ns: u64,
        values: impl Iterator<Item = f64>,
    ) -> String {
        let mut pts = String::new();
        for (i, v) in values.enumerate() {
            let b = (first.saturating_add(i) as u64).saturating_add(1);
            let t = b.saturating_mul(r.bucket_ns).min(r.end_ns);
            if i == 0 {
                let _ = write!(pts, "{:.1},{:.1} ", self.x(t0_ns.min(t) as f64), self.y(v));
            }
            let _ = write!(pts, "{:.1},{:.1} ", self.x(t as f64), self.y(v));
        }
        pts.truncate(pts.trim_end().len());
        pts
    }

    /// A small triangle at the top of the plot for each preemption.
    pub(super) fn preemption_marks(&self, out: &mut String, r: &Report) {
        for p in &r.preemptions {
            let x = self.x(p.t_ns as f64);
            let y = self.top;
            let _ = write!(
                out,
                r##"<path class="preempt" d="M{:.1},{y:.1} l4,-7 h-8 z" transform="translate(0 7)" fill="#e16f24"><title>preemption at {}: {} of {} in {} on {}, for ask {}</title></path>"##,
                x,
                esc(&duration(p.t_ns as f64)),
                esc(&p.victim),
                esc(&p.app),
                esc(&p.queue),
                esc(&p.node),
                esc(&p.preemptor)
            );
        }
    }
}

pub(super) fn legend(out: &mut String, items: &[(&str, String)]) {
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
pub(super) fn throughput(out: &mut String, r: &Report, unit: &TimeUnit) {
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
    if !r.preemptions.is_empty() {
        items.push(("preempt", format!("preemption ({})", r.preemptions.len())));
    }
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
    p.preemption_marks(out, r);
    out.push_str("</svg>");
}

pub(super) fn queues(out: &mut String, r: &Report, unit: &TimeUnit) {
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

pub(super) fn heat_map(out: &mut String, r: &Report, unit: &TimeUnit) {
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

pub(super) fn app_states(out: &mut String, r: &Report, unit: &TimeUnit) {
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
