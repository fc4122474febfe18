//! Why asks wait, over time: the causes of the waiting asks
//! (`pending_asks[].pending_reason.cause` of the state dump,
//! docs/why-pending.md) counted per cause in samples, then replayed into
//! the report's time buckets.
//!
//! Callbacks do not carry the causes, so this is the one series that asks
//! the scheduler: a state dump taken from the simulator's waiting loop
//! while the workload runs. A dump waits for the scheduling pass and then
//! holds the scheduling thread while it is made, so it is taken when
//! allocations have not moved for [`QUIET`] (a stall, which is when asks
//! wait), and while they move at most once a second; in both cases at
//! least 20 ms and 20 times the last dump's time after the last one (a
//! twentieth of the run at most). The final state dump adds one more.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The cause of an ask the dump lists but no pass has tried yet.
pub const NOT_TRIED: &str = "notTried";

/// Allocations that have not moved for this long: the scheduler is not
/// busy placing, and a dump does not disturb the run's throughput.
pub const QUIET: Duration = Duration::from_millis(50);
/// While allocations move, at most one sample this often.
const BUSY_GAP: Duration = Duration::from_secs(1);
/// At least this long between two samples ...
const MIN_GAP: Duration = Duration::from_millis(20);
/// ... and at least this many times the last dump's time.
const GAP_PER_DUMP: u32 = 20;

/// The samples taken, and what they cost.
#[derive(Default)]
pub(super) struct Samples {
    /// (ns since the start, cause -> waiting asks), in time order.
    points: Vec<(u64, BTreeMap<String, u32>)>,
    /// When the next sample may be taken, and when the next one while busy.
    next: Option<(Instant, Instant)>,
    /// Time the dumps took, ns.
    dump_ns: u64,
}

impl Samples {
    /// Whether a sample is due at `now`; `busy` while allocations move.
    pub(super) fn due(&mut self, now: Instant, busy: bool) -> bool {
        let (next, busy_next) = *self.next.get_or_insert((now, now + BUSY_GAP));
        now >= next && (!busy || now >= busy_next)
    }

    /// Notes a dump taken at `t_ns` that took `took`, ending at `now`.
    pub(super) fn add(&mut self, t_ns: u64, now: Instant, took: Duration, dump: &Value) {
        self.dump_ns = self.dump_ns.saturating_add(took.as_nanos() as u64);
        let next = now + MIN_GAP.max(took * GAP_PER_DUMP);
        self.next = Some((next, next.max(now + BUSY_GAP)));
        self.points.push((t_ns, causes(dump)));
    }
}

/// Waiting asks per cause over all partitions of `dump`.
pub fn causes(dump: &Value) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    let apps = dump["partitions"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| p["applications"].as_array().into_iter().flatten());
    for ask in apps.flat_map(|a| a["pending_asks"].as_array().into_iter().flatten()) {
        let cause = ask["pending_reason"]["cause"].as_str().unwrap_or(NOT_TRIED);
        *out.entry(cause.to_string()).or_insert(0) += 1;
    }
    out
}

/// The chart's data: per cause, waiting asks at the end of each bucket.
#[derive(Default)]
pub struct WaitingSeries {
    /// (cause, count per bucket), the largest peak first.
    pub causes: Vec<(String, Vec<u32>)>,
    /// The first bucket a sample covers. The buckets before it have no
    /// data (0 in `causes`): the chart leaves them empty rather than
    /// drawing a count of 0 nobody measured.
    pub first_bucket: usize,
    /// When the first sample was taken, ns since the start (at most the
    /// end of `first_bucket`).
    pub first_ns: u64,
    /// Samples taken (the final state dump included).
    pub samples: usize,
    /// Time the samples' dumps took, ns.
    pub dump_ns: u64,
}

/// Replays `s`, then the final `dump` at `end`, into `buckets` buckets of
/// `bucket_ns`: a bucket shows the latest sample at or before its end.
pub(super) fn series(
    s: &Samples,
    dump: &Value,
    end: u64,
    bucket_ns: u64,
    buckets: usize,
) -> WaitingSeries {
    let last = (end, causes(dump));
    let points: Vec<&(u64, BTreeMap<String, u32>)> =
        s.points.iter().chain(std::iter::once(&last)).collect();
    let mut names: Vec<String> = points
        .iter()
        .flat_map(|p| p.1.keys().cloned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut rows: BTreeMap<String, Vec<u32>> = names
        .iter()
        .map(|n| (n.clone(), vec![0; buckets]))
        .collect();
    let mut next = 0;
    let mut current: Option<&BTreeMap<String, u32>> = None;
    let mut first_bucket = buckets.saturating_sub(1);
    for b in 0..buckets {
        let bucket_end = (b as u64 + 1).saturating_mul(bucket_ns);
        while next < points.len() && (points[next].0 < bucket_end || b + 1 == buckets) {
            if current.is_none() {
                first_bucket = b;
            }
            current = Some(&points[next].1);
            next += 1;
        }
        for (cause, n) in current.into_iter().flatten() {
            if let Some(row) = rows.get_mut(cause) {
                row[b] = *n;
            }
        }
    }
    let peak = |n: &String| rows[n].iter().copied().max().unwrap_or(0);
    names.sort_by_key(|n| (std::cmp::Reverse(peak(n)), n.clone()));
    let first_end = (first_bucket as u64 + 1).saturating_mul(bucket_ns).min(end);
    WaitingSeries {
        causes: names
            .into_iter()
            .filter_map(|n| rows.remove(&n).map(|r| (n, r)))
            .filter(|(_, r)| r.iter().any(|&c| c > 0))
            .collect(),
        first_bucket,
        first_ns: points[0].0.min(first_end),
        samples: points.len(),
        dump_ns: s.dump_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dump(causes: &[Option<&str>]) -> Value {
        let asks: Vec<Value> = causes
            .iter()
            .enumerate()
            .map(|(i, c)| match c {
                Some(c) => {
                    json!({"allocation_key": format!("k{i}"), "pending_reason": {"cause": c}})
                }
                None => json!({"allocation_key": format!("k{i}")}),
            })
            .collect();
        json!({"partitions": [{"name": "default", "applications": [{"id": "a", "pending_asks": asks}]}]})
    }

    #[test]
    fn asks_are_counted_per_cause() {
        let d = dump(&[Some("nodes"), Some("nodes"), Some("queueHeadroom"), None]);
        let c = causes(&d);
        assert_eq!(c["nodes"], 2);
        assert_eq!(c["queueHeadroom"], 1);
        assert_eq!(c[NOT_TRIED], 1);
    }

    #[test]
    fn samples_are_spaced_by_their_cost_and_replayed_into_buckets() {
        let mut s = Samples::default();
        let now = Instant::now();
        assert!(!s.due(now, true), "busy: the first sample waits a second");
        assert!(s.due(now, false));
        assert!(s.due(now + BUSY_GAP, true));
        s.add(5, now, Duration::from_millis(2), &dump(&[Some("nodes"); 3]));
        // 20 dumps' time (40 ms), at least MIN_GAP; a second while busy.
        assert!(!s.due(now + Duration::from_millis(39), false));
        assert!(s.due(now + Duration::from_millis(40), false));
        assert!(!s.due(now + Duration::from_millis(40), true));
        assert!(s.due(now + BUSY_GAP, true));
        s.add(25, now, Duration::ZERO, &dump(&[Some("queueHeadroom")]));
        let w = series(&s, &dump(&[]), 40, 10, 4);
        assert_eq!(w.samples, 3);
        assert_eq!((w.first_bucket, w.first_ns), (0, 5));
        assert_eq!(w.dump_ns, 2_000_000);
        assert_eq!(
            w.causes,
            vec![
                ("nodes".to_string(), vec![3, 3, 0, 0]),
                ("queueHeadroom".to_string(), vec![0, 0, 1, 0]),
            ]
        );
    }

    #[test]
    fn buckets_before_the_first_sample_have_no_data() {
        let mut s = Samples::default();
        s.add(
            35,
            Instant::now(),
            Duration::ZERO,
            &dump(&[Some("nodes"); 2]),
        );
        let w = series(&s, &dump(&[]), 100, 10, 10);
        assert_eq!((w.first_bucket, w.first_ns), (3, 35));
        assert_eq!(
            w.causes,
            vec![("nodes".to_string(), vec![0, 0, 0, 2, 2, 2, 2, 2, 2, 0])]
        );
        // Only the final dump: its bucket, the last, is the first.
        let w = series(&Samples::default(), &dump(&[Some("nodes")]), 100, 10, 10);
        assert_eq!((w.first_bucket, w.first_ns), (9, 100));
    }
}
