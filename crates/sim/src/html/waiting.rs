//! The "why waiting" chart: waiting asks per cause over time, stacked
//! (docs/why-pending.md names the causes).

use std::fmt::Write;

use super::charts::Plot;
use super::{duration, esc, fmt_num, TimeUnit};
use crate::report::Report;

/// One colour per cause; held before any node (warm), on the nodes (blue),
/// gang (purple), not tried yet (grey).
fn cause_colour(cause: &str) -> &'static str {
    match cause {
        "applicationLimit" => "#bf8700",
        "queueHeadroom" => "#cf222e",
        "userLimit" => "#e16f24",
        "resourceType" => "#82071e",
        "nodes" => "#0969da",
        "requiredNodeMissing" => "#54aeff",
        "reserved" => "#1a7f37",
        "gangPlaceholders" => "#8250df",
        "gangReplacement" => "#a475f9",
        "gangTimeout" => "#4c2889",
        "notTried" => "#8c959f",
        _ => "#24292f",
    }
}

pub(super) fn waiting(out: &mut String, r: &Report, unit: &TimeUnit) {
    let w = &r.waiting;
    out.push_str(r#"<h2 id="waiting">Why asks wait</h2>"#);
    let _ = write!(
        out,
        r#"<p class="note">Waiting asks per cause (the <code>pending_reason</code> of each ask in the state dump; <code>notTried</code>: no pass has tried it yet) at the end of each time bucket, stacked. From {} state dumps taken during the run and at its end, which took {} in all (a dump waits for the scheduling pass, then holds it while it is made). The first was taken at {} (the dashed line): the chart is empty before it.</p>"#,
        w.samples,
        esc(&duration(w.dump_ns as f64)),
        esc(&duration(w.first_ns as f64))
    );
    if w.causes.is_empty() {
        out.push_str(r#"<p id="waiting-none" class="note">No ask waited in any sample.</p>"#);
        return;
    }
    out.push_str(r#"<div class="legend">"#);
    for (cause, _) in &w.causes {
        let _ = write!(
            out,
            r#"<span><i class="sw" style="background:{}"></i>{}</span>"#,
            cause_colour(cause),
            esc(cause)
        );
    }
    out.push_str("</div>");
    let totals: Vec<u32> = (0..r.buckets)
        .map(|b| {
            w.causes
                .iter()
                .map(|(_, c)| c.get(b).copied().unwrap_or(0))
                .sum()
        })
        .collect();
    let most = totals.iter().copied().max().unwrap_or(0);
    let p = Plot::new(1100.0, 240.0, r.end_ns, (most as f64).max(1.0));
    p.open(out, "waiting asks by cause over time");
    p.axes(out, unit, "waiting asks", &fmt_num);
    // Nothing was measured before the first sample: the bands start there.
    let first = w.first_bucket.min(r.buckets.saturating_sub(1));
    let from = |v: &[u32]| {
        p.level_points_from(
            r,
            first,
            w.first_ns,
            v.iter().skip(first).map(|&v| f64::from(v)),
        )
    };
    let mut base = vec![0u32; r.buckets];
    for (cause, counts) in &w.causes {
        let top: Vec<u32> = base
            .iter()
            .zip(counts)
            .map(|(b, c)| b.saturating_add(*c))
            .collect();
        let upper = from(&top);
        let lower_pts = from(&base);
        let mut lower: Vec<&str> = lower_pts.split(' ').collect();
        lower.reverse();
        let peak = counts.iter().copied().max().unwrap_or(0);
        let _ = write!(
            out,
            r#"<polygon class="cause" data-cause="{}" data-peak="{}" points="{upper} {}" fill="{}" stroke="white" stroke-width="0.5"><title>{}: at most {} waiting, {} at end</title></polygon>"#,
            esc(cause),
            peak,
            lower.join(" "),
            cause_colour(cause),
            esc(cause),
            peak,
            counts.last().copied().unwrap_or(0)
        );
        base = top;
    }
    let x = p.x(w.first_ns as f64);
    let _ = write!(
        out,
        r##"<line class="first-sample" x1="{x:.1}" x2="{x:.1}" y1="{}" y2="{}" stroke="#57606a" stroke-dasharray="3 3"><title>first sample at {}</title></line>"##,
        p.top,
        p.h - p.bottom,
        esc(&duration(w.first_ns as f64))
    );
    p.marks(out, r, false);
    out.push_str("</svg>");
}
