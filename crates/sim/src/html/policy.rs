//! The sections of the policy workloads: preemptions with the preemptors'
//! queues against their guarantees (`--workload preemption`), and each
//! tenant's usage against its caps (`--workload tenants`). Each shows only
//! when the run has something for it.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::charts::{legend, Plot};
use super::{duration, esc, fmt_num, TimeUnit};
use crate::report::Report;

fn quantities(m: &BTreeMap<String, i64>) -> String {
    if m.is_empty() {
        return "none".into();
    }
    m.iter()
        .map(|(k, v)| format!("{k} {}", fmt_num(*v as f64)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One usage chart: the series, a dashed line at `limit`, and the
/// preemption markers when `preemptions`.
#[allow(clippy::too_many_arguments)]
fn limit_chart(
    out: &mut String,
    r: &Report,
    unit: &TimeUnit,
    label: &str,
    y_label: &str,
    series: &[f64],
    limit: (f64, &str, &str),
    (width, preemptions): (f64, bool),
) {
    let (limit, limit_name, colour) = limit;
    let peak = series.iter().copied().fold(0.0, f64::max);
    let p = Plot::new(width, 170.0, r.end_ns, peak.max(limit).max(1.0));
    p.open(out, label);
    p.axes(out, unit, y_label, &fmt_num);
    p.marks(out, r, false);
    let pts = p.level_points(r, series.iter().copied());
    let _ = write!(
        out,
        r##"<polygon points="{pts} {:.1},{:.1}" fill="#0969da" fill-opacity="0.15" stroke="none"/><polyline points="{pts}" fill="none" stroke="#0969da" stroke-width="1.8"><title>{}: peak {}, at end {}</title></polyline>"##,
        p.x(r.end_ns as f64),
        p.y(0.0),
        esc(label),
        fmt_num(peak),
        fmt_num(series.last().copied().unwrap_or(0.0))
    );
    let y = p.y(limit);
    let _ = write!(
        out,
        r#"<line class="limit" x1="{}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="{colour}" stroke-width="1.5" stroke-dasharray="6 4"><title>{limit_name}: {}</title></line>"#,
        p.left,
        p.w - p.right,
        fmt_num(limit)
    );
    if preemptions {
        p.preemption_marks(out, r);
    }
    out.push_str("</svg>");
}

pub(super) fn preemptions(out: &mut String, r: &Report, unit: &TimeUnit) {
    if r.preemptions.is_empty() {
        return;
    }
    out.push_str(r#"<h2 id="preemptions">Preemptions</h2>"#);
    let asks: std::collections::BTreeSet<&str> =
        r.preemptions.iter().map(|p| p.preemptor.as_str()).collect();
    let mut waits: Vec<u64> = r
        .preemptions
        .iter()
        .filter_map(|p| Some(p.freed_ns?.saturating_sub(p.t_ns)))
        .collect();
    waits.sort_unstable();
    let freed = waits.len();
    let _ = write!(
        out,
        r#"<p class="note">{} victims released with PREEMPTED_BY_SCHEDULER, for {} asks; {freed} confirmed by the RM and freed{}. Triangles mark each release on the charts; the dashed green line is the preemptor's queue's guarantee.</p>"#,
        r.preemptions.len(),
        asks.len(),
        waits
            .get(freed / 2)
            .map(|m| format!(" (median {} after the release)", duration(*m as f64)))
            .unwrap_or_default()
    );
    let unreached: Vec<&str> = r
        .guarantees
        .iter()
        .filter(|g| g.reached_ns.is_none())
        .map(|g| g.queue.as_str())
        .collect();
    if r.guarantees.is_empty() {
        out.push_str(r#"<p id="guarantee-check" class="bad">No preemptor was allocated in a queue with a guarantee.</p>"#);
    } else if unreached.is_empty() {
        let text: Vec<String> = r
            .guarantees
            .iter()
            .map(|g| {
                format!(
                    "{} reached its guarantee ({}) at {}",
                    g.queue,
                    quantities(&g.guaranteed),
                    duration(g.reached_ns.unwrap_or(0) as f64)
                )
            })
            .collect();
        let _ = write!(
            out,
            r#"<p id="guarantee-check" class="ok">{}.</p>"#,
            esc(&text.join("; "))
        );
    } else {
        let _ = write!(
            out,
            r#"<p id="guarantee-check" class="bad">Below its guarantee to the end: {}.</p>"#,
            esc(&unreached.join(", "))
        );
    }
    legend(
        out,
        &[
            ("used", "allocated".into()),
            ("guar", "guaranteed".into()),
            ("preempt", "preemption".into()),
        ],
    );
    out.push_str(r#"<table class="queues">"#);
    for g in &r.guarantees {
        let _ = write!(
            out,
            r#"<tr><td class="qname"><b>{}</b><div>guaranteed: {}</div><div>at end: {}</div></td>"#,
            esc(&g.queue).replace('.', ".<wbr>"),
            esc(&quantities(&g.guaranteed)),
            esc(&quantities(
                &g.guaranteed
                    .keys()
                    .cloned()
                    .zip(g.end.iter().copied())
                    .collect()
            ))
        );
        for ((res, &want), series) in g.guaranteed.iter().zip(&g.usage) {
            let _ = write!(
                out,
                r#"<td><div class="ctitle">{}: {} at end of {} guaranteed</div>"#,
                esc(res),
                fmt_num(series.last().copied().unwrap_or(0) as f64),
                fmt_num(want as f64)
            );
            let values: Vec<f64> = series.iter().map(|&v| v as f64).collect();
            limit_chart(
                out,
                r,
                unit,
                &format!("{} {res} usage against its guarantee", g.queue),
                res,
                &values,
                (want as f64, "guaranteed", "#1a7f37"),
                (440.0, true),
            );
            out.push_str("</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");

    const ROWS: usize = 40;
    let _ = write!(
        out,
        r#"<table class="meta" id="victims" data-victims="{}">"#,
        r.preemptions.len()
    );
    out.push_str(r#"<tr><td>released at</td><td>victim</td><td>application</td><td>queue</td><td>node</td><td>resource</td><td>for ask</td><td>freed after</td></tr>"#);
    for p in r.preemptions.iter().take(ROWS) {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}{}</td><td>{}</td></tr>",
            esc(&duration(p.t_ns as f64)),
            esc(&p.victim),
            esc(&p.app),
            esc(&p.queue),
            esc(&p.node),
            esc(&quantities(&p.resource)),
            esc(&p.preemptor),
            p.preemptor_queue
                .as_ref()
                .map(|q| format!(" ({})", esc(q)))
                .unwrap_or_default(),
            p.freed_ns
                .map(|f| esc(&duration(f.saturating_sub(p.t_ns) as f64)))
                .unwrap_or_else(|| "not freed".into())
        );
    }
    out.push_str("</table>");
    if r.preemptions.len() > ROWS {
        let _ = write!(
            out,
            r#"<p class="note">{} more victims are not listed.</p>"#,
            r.preemptions.len() - ROWS
        );
    }
}

/// Three tenant charts (two resource types and applications) fit the page.
const TENANT_CHART_W: f64 = 310.0;

pub(super) fn tenants(out: &mut String, r: &Report, unit: &TimeUnit) {
    let Some(tenants) = &r.tenants else {
        return;
    };
    out.push_str(r#"<h2 id="tenants">Tenant usage against limits</h2>"#);
    out.push_str(r#"<p class="note">Each user and group tracker at each queue level that caps it (the <code>limits</code> of that queue, named or wildcard): what its applications held there (the queue and everything below it), and how many of them were running (Starting or Running as the RM was told), against the cap (dashed red). Caps and group links are the scheduler's, read from the state dump's usage trackers (the shapes of <code>/ws/v1/partition/{partition}/usage/users</code> and <code>/groups</code>); usage is replayed from what the RM was told and checked after every callback.</p>"#);
    let users = tenants
        .iter()
        .filter(|t| t.kind == "user")
        .map(|t| &t.name)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let groups = tenants
        .iter()
        .filter(|t| t.kind == "group")
        .map(|t| &t.name)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    if r.cap_violations.is_empty() {
        let _ = write!(
            out,
            r#"<p id="limits-check" class="ok">No tenant went over a cap: {} capped levels of {users} users and {groups} groups, checked after every callback.</p>"#,
            tenants.len()
        );
    } else {
        let _ = write!(
            out,
            r#"<p id="limits-check" class="bad">{} times over a cap:</p><ul>"#,
            r.cap_violations.len()
        );
        for v in r.cap_violations.iter().take(20) {
            let _ = write!(out, "<li>{}</li>", esc(v));
        }
        out.push_str("</ul>");
    }
    legend(
        out,
        &[("used", "used / running".into()), ("max", "cap".into())],
    );
    out.push_str(r#"<table class="queues">"#);
    for t in tenants {
        let _ = write!(
            out,
            r#"<tr><td class="qname"><b>{} {}</b><div>at {}</div><div>maxresources: {}</div><div>maxapplications: {}</div><div>{} application(s) on this path</div></td>"#,
            t.kind,
            esc(&t.name),
            esc(&t.level).replace('.', ".<wbr>"),
            esc(&quantities(&t.cap)),
            if t.max_apps > 0 {
                t.max_apps.to_string()
            } else {
                "not set".into()
            },
            t.apps
        );
        for (((res, &cap), series), &peak) in t.cap.iter().zip(&t.usage).zip(&t.peak) {
            let _ = write!(
                out,
                r#"<td><div class="ctitle">{}: peak {} of cap {} ({:.0}%)</div>"#,
                esc(res),
                fmt_num(peak as f64),
                fmt_num(cap as f64),
                100.0 * peak as f64 / cap.max(1) as f64
            );
            let values: Vec<f64> = series.iter().map(|&v| v as f64).collect();
            limit_chart(
                out,
                r,
                unit,
                &format!(
                    "{} {} {res} usage at {} against its cap",
                    t.kind, t.name, t.level
                ),
                res,
                &values,
                (cap as f64, "cap", "#cf222e"),
                (TENANT_CHART_W, false),
            );
            out.push_str("</td>");
        }
        if t.max_apps > 0 {
            let _ = write!(
                out,
                r#"<td><div class="ctitle">running applications: peak {} of cap {}</div>"#,
                t.peak_running, t.max_apps
            );
            let values: Vec<f64> = t.running.iter().map(|&v| f64::from(v)).collect();
            limit_chart(
                out,
                r,
                unit,
                &format!(
                    "{} {} running applications at {} against its cap",
                    t.kind, t.name, t.level
                ),
                "applications",
                &values,
                (t.max_apps as f64, "maxapplications", "#cf222e"),
                (TENANT_CHART_W, false),
            );
            out.push_str("</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}
