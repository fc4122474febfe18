//! What one scheduling pass costs when nothing fits: 10,000 waiting asks
//! over 5,000 nodes (issue 31's bound on the cost of explaining why asks
//! wait). Ignored by default; it prints, it asserts nothing about time:
//!
//! `cargo test --profile release-checked --lib nothing_fits -- --ignored --nocapture`
//!
//! Two cases: every ask a different size (no pass can reuse what it found
//! for another ask: each ask checks every node), and ten sizes (the
//! pass's unfit-shape cache answers the rest). Also what the check of
//! held causes (held.rs) adds to a pass: `held_check_cost`.

use crate::scheduler::testkit::{ask, Harness, ONE_LEAF};

const NODES: usize = 5_000;
const ASKS: i64 = 10_000;

/// `SICORE_NOTHING_FITS=NODES:ASKS:PASSES[:SHAPES]` overrides the sizes
/// and runs one case (a smaller run for callgrind).
fn sizes() -> Option<(usize, i64, u32, Option<i64>)> {
    let v = std::env::var("SICORE_NOTHING_FITS").ok()?;
    let mut it = v.split(':').map(|p| p.parse::<i64>().ok());
    match (
        it.next().flatten(),
        it.next().flatten(),
        it.next().flatten(),
    ) {
        (Some(n), Some(a), Some(p)) => Some((n as usize, a, p as u32, it.next().flatten())),
        _ => panic!("SICORE_NOTHING_FITS={v}: expected NODES:ASKS:PASSES[:SHAPES]"),
    }
}

/// CPU time of this thread, in ns (the first field of schedstat).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn pass_cost(nodes: usize, asks: i64, shapes: i64, passes: u32) -> (f64, usize) {
    let mut h = Harness::new(ONE_LEAF);
    for n in 0..nodes {
        h.node(&format!("n{n}"), 1000);
    }
    for a in 0..100 {
        h.app(&format!("app{a}"), "root.a");
    }
    for i in 0..asks {
        let app = format!("app{}", i % 100);
        h.ask(ask(&app, &format!("k{i}"), 1001 + i % shapes, 1));
    }
    // The first pass finds every ask waiting; the measured ones find the
    // same again.
    let placed = h.schedule().placed().len();
    let start = thread_cpu_ns();
    for _ in 0..passes {
        h.schedule();
    }
    let ms = (thread_cpu_ns() - start) as f64 / 1e6 / f64::from(passes);
    (ms, placed)
}

#[test]
#[ignore = "a measurement: run with --ignored --nocapture"]
fn nothing_fits_pass_cost() {
    // Enough passes for a few hundred ms of CPU: the thread's CPU time
    // may move in scheduler ticks.
    let cases = match sizes() {
        Some((nodes, asks, passes, shapes)) => {
            vec![("as given", nodes, asks, shapes.unwrap_or(asks), passes)]
        }
        None => vec![
            ("every ask its own size", NODES, ASKS, ASKS, 5),
            ("ten sizes", NODES, ASKS, 10, 300),
        ],
    };
    // What explaining keeps per waiting ask: its boxed reason (with the
    // refusal texts of a Predicates RM on top, bounded) and the stamp.
    use crate::scheduler::objects::pending::{PendingReason, ReasonStamp};
    println!(
        "per waiting ask: reason {} bytes (boxed), stamp {} bytes",
        std::mem::size_of::<PendingReason>(),
        std::mem::size_of::<ReasonStamp>()
    );
    for (label, nodes, asks, shapes, passes) in cases {
        let (ms, placed) = pass_cost(nodes, asks, shapes, passes);
        assert_eq!(placed, 0, "nothing fits");
        println!("nothing fits, {nodes} nodes, {asks} asks, {label}: {ms:.2} ms CPU per pass ({passes} passes)");
    }
}

/// What the held check (held.rs) costs: 1,000 applications of 10 asks
/// each held by their queue's `maxapplications`, a pass with a check
/// (the clock a second on) against a pass without one.
fn held_cost(check: bool, passes: u32) -> f64 {
    let mut h = Harness::new(
        "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            maxapplications: 1
",
    );
    h.node("n1", 1_000_000);
    h.app("run", "root.a");
    h.ask(ask("run", "r", 1, 1));
    for a in 0..1000 {
        let app = format!("held{a}");
        h.app(&app, "root.a");
        for k in 0..10 {
            h.ask(ask(&app, &format!("k{k}"), 10, 1));
        }
    }
    h.schedule();
    // 300 passes a millisecond apart stay within one check interval.
    let step = std::time::Duration::from_millis(if check { 1000 } else { 1 });
    let start = thread_cpu_ns();
    for _ in 0..passes {
        h.advance(step);
        h.schedule();
    }
    (thread_cpu_ns() - start) as f64 / 1e6 / f64::from(passes)
}

#[test]
#[ignore = "a measurement: run with --ignored --nocapture"]
fn held_check_cost() {
    let without = held_cost(false, 300);
    let with = held_cost(true, 300);
    println!(
        "1,000 held applications x 10 asks: {without:.3} ms CPU per pass without a check, {with:.3} ms with one"
    );
}
