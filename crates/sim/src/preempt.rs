//! `--workload preemption`: guarantee preemption (docs/preemption.md).
//!
//! `root.batch` fills the whole cluster, then `root.prod`, below its
//! guarantee, submits exactly its guarantee's worth of asks. With
//! `preemption.enabled` and a `preemption.delay` of 1 s on `root.prod`,
//! the core releases batch allocations with `PREEMPTED_BY_SCHEDULER`; the
//! simulated RM confirms each victim from the callback that released it,
//! as a shim does once the pod is gone (SI v0.12: the release sent back,
//! which the core echoes; SI v1.x: the release sent back is the
//! confirmation). The core asks the RM about each candidate node first:
//! `Predicates{allocate: false}` in v0.12, `PreemptionPredicates` in v1.8;
//! the simulated RM accepts every node.
//!
//! Then quota-change preemption (YuniKorn v1.9): the operator lowers
//! `root.batch`'s max below what it holds. After the queue's
//! `quota.preemption.delay` (1 s) the core releases the excess, newest
//! first, and an SI v1.9 RM gets one `QUEUE_PREEMPTION` record that sums
//! the run up (SI v0.12 has no such record).
//!
//! Preemption runs on the core's clock: the delays and the spacing of
//! attempts are real time, so the run takes a little over the delays.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::cli::Args;
use crate::html::fmt_num;
use crate::workload::{app, ask, nodes, Driver};

const CONFIG: &str = "\
# sicore-sim --workload preemption (crates/sim/src/preempt.rs)
partitions:
  - name: default
    preemption: {enabled: true, quotapreemptionenabled: true}
    placementrules:
      - name: provided
        create: false
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: batch
            resources: {guaranteed: {memory: 20000, vcore: 20}}
            properties: {application.sort.policy: fifo, quota.preemption.delay: 1s}
          - name: prod
            resources: {guaranteed: {memory: 40000, vcore: 40}}
            properties: {application.sort.policy: fifo, preemption.delay: 1s}
";

/// `root.batch`'s max after the operator's edit, under what it holds once
/// `root.prod` has its guarantee.
const BATCH_MAX: (i64, i64) = (30_000, 30);

/// [`CONFIG`] with `root.batch` capped at [`BATCH_MAX`].
fn lowered_config() -> String {
    CONFIG.replacen(
        "resources: {guaranteed: {memory: 20000, vcore: 20}}",
        &format!(
            "resources: {{guaranteed: {{memory: 20000, vcore: 20}}, max: {{memory: {}, vcore: {}}}}}",
            BATCH_MAX.0, BATCH_MAX.1
        ),
        1,
    )
}

const NODES: usize = 40;
const NODE: (i64, i64) = (2000, 2);
/// What `root.prod` asks for in all: its guarantee.
const PROD: (i64, i64) = (40_000, 40);

pub fn run(args: &Args) -> Result<(), String> {
    let mut rng = fastrand::Rng::with_seed(args.seed);
    let d = Driver::start(args, CONFIG, true, &["REQUEST", "NODE", "QUEUE"])?;
    d.rm().confirm_victims.store(true, Ordering::SeqCst);

    d.mark("nodes submitted");
    d.nodes(nodes(NODES, NODE.0, NODE.1))?;
    let apps = vec![
        app("batch-1", "root.batch", "batch", &[]),
        app("batch-2", "root.batch", "batch", &[]),
        app("prod-1", "root.prod", "prod", &[]),
    ];
    d.declare(&apps);
    d.apps(apps[..2].to_vec())?;

    // Batch: one-unit pods, exactly the cluster's size, at priority 0.
    let fill = NODES * NODE.0 as usize / 1000;
    let batch: Vec<_> = (0..fill)
        .map(|i| {
            let a = if i % 2 == 0 { "batch-1" } else { "batch-2" };
            ask(a, &format!("{a}-pod-{i}"), 1000, 1, 0)
        })
        .collect();
    d.mark("batch submits");
    d.asks(&batch, false)?;
    let timeout = Duration::from_secs(args.stall_seconds.max(1) * 6);
    d.sim.wait_for("batch to fill the cluster", timeout, |c| {
        c.allocations.load(Ordering::SeqCst) >= fill
    })?;
    d.mark("cluster full");

    // Prod: pods of one or two units (seeded) up to its guarantee, each
    // allowed to preempt (SI v1.x `allowPreemptOther`; v0.12 has no such
    // field, so every ask may).
    let mut prod = Vec::new();
    let mut left = PROD.0;
    while left > 0 {
        let units = if left >= 2000 && rng.bool() { 2 } else { 1 };
        let i = prod.len();
        prod.push(ask(
            "prod-1",
            &format!("prod-1-pod-{i}"),
            1000 * units,
            units,
            0,
        ));
        left -= 1000 * units;
    }
    d.apps(apps[2..].to_vec())?;
    d.mark("prod submits");
    let submitted = Instant::now();
    d.asks(&prod, true)?;
    let want = fill + prod.len();
    // The delay, then one attempt per ask at most every 15 s: give it two.
    let wait = Duration::from_secs(32).max(timeout);
    let outcome = d.sim.wait_for("prod's allocations", wait, |c| {
        c.allocations.load(Ordering::SeqCst) >= want
    });
    let took = submitted.elapsed();
    d.settle(Duration::from_millis(300), timeout)?;
    let quota = quota_change(&d, timeout)?;
    d.mark("workload done");
    let dump = d.dump()?;

    let c = d.counters();
    let rm = d.rm();
    let made = c.allocations.load(Ordering::SeqCst);
    let mut meta = d.meta(args, "preemption", "built-in (preemption)");
    meta.extend([
        (
            "nodes".into(),
            format!("{NODES} of memory {}, vcore {}", NODE.0, NODE.1),
        ),
        (
            "asks submitted".into(),
            format!(
                "{} by root.batch, then {} by root.prod",
                batch.len(),
                prod.len()
            ),
        ),
        ("allocations made".into(), made.to_string()),
    ]);
    let report = d.recorder().finish(&dump, meta);

    println!("sicore-sim report");
    for (k, v) in &report.meta {
        println!("  {k:<18} {v}");
    }
    println!("  preemption delay   1s (root.prod)");
    println!(
        "  victims            {} released with PREEMPTED_BY_SCHEDULER, {} confirmed by the RM, {} confirmations refused",
        rm.victims.load(Ordering::SeqCst),
        rm.confirmed.load(Ordering::SeqCst),
        rm.confirm_failures.load(Ordering::SeqCst)
    );
    println!(
        "  preemption checks  {} ({})",
        rm.preemption_checks.load(Ordering::SeqCst),
        match d.edition {
            crate::cli::Edition::V012 => "Predicates{allocate: false}",
            crate::cli::Edition::V1 => "PreemptionPredicates",
        }
    );
    let first_mark = |label: &str| {
        report
            .marks
            .iter()
            .find(|m| m.1 == label)
            .map_or(0, |m| m.0)
    };
    let prod_at = first_mark("prod submits");
    if let Some(p) = report.preemptions.first() {
        println!(
            "  first preemption   {:.2} s after root.prod submitted",
            p.t_ns.saturating_sub(prod_at) as f64 / 1e9
        );
    }
    println!(
        "  prod allocated     {} of {} asks, {:.2} s after submission",
        made.saturating_sub(fill),
        prod.len(),
        took.as_secs_f64()
    );
    let queue = |path: &str| {
        let q = find(&dump["partitions"][0]["root"], path);
        let f = |k: &str, r: &str| q.map_or(0, |q| q[k][r].as_i64().unwrap_or(0));
        format!(
            "memory {} vcore {} (guaranteed memory {} vcore {})",
            fmt_num(f("allocated", "memory") as f64),
            f("allocated", "vcore"),
            fmt_num(f("guaranteed", "memory") as f64),
            f("guaranteed", "vcore")
        )
    };
    println!("  root.batch at end  {}", queue("root.batch"));
    println!("  root.prod at end   {}", queue("root.prod"));
    for g in &report.guarantees {
        println!(
            "  guarantee          {} {}",
            g.queue,
            match g.reached_ns {
                Some(t) => format!(
                    "reached {:.2} s after root.prod submitted",
                    t.saturating_sub(prod_at) as f64 / 1e9
                ),
                None => "not reached".into(),
            }
        );
    }
    println!(
        "  guarantee reached  {}",
        if !report.guarantees.is_empty() && report.guarantees.iter().all(|g| g.reached_ns.is_some())
        {
            "yes"
        } else {
            "no"
        }
    );
    println!(
        "  quota change       root.batch max lowered to memory {} vcore {} (quota.preemption.delay 1s)",
        fmt_num(BATCH_MAX.0 as f64),
        BATCH_MAX.1
    );
    println!(
        "  quota run          {} victims released, root.batch from memory {} to {}, {:.2} s after the change",
        quota.victims,
        fmt_num(quota.before as f64),
        fmt_num(quota.after as f64),
        quota.took.as_secs_f64()
    );
    match d.edition {
        crate::cli::Edition::V012 => {
            println!("  summary record     none (SI v0.12 has no QUEUE_PREEMPTION)")
        }
        crate::cli::Edition::V1 => {
            let kept = rm.quota_summaries.lock().unwrap();
            if kept.is_empty() {
                println!("  summary record     none received");
            }
            for (queue, message) in kept.iter() {
                println!("  summary record     QUEUE_PREEMPTION {queue}: {message}");
            }
        }
    }
    println!(
        "  state dump         {}",
        if report.mismatches.is_empty() {
            "matches the recorded usage".to_string()
        } else {
            report.mismatches.join("; ")
        }
    );
    d.finish(args, &report)?;
    outcome
}

/// What the quota-change run did.
struct QuotaRun {
    victims: usize,
    /// `root.batch`'s allocated memory before the change and at the end.
    before: i64,
    after: i64,
    took: Duration,
}

/// Lowers `root.batch`'s max and waits until the core has brought the
/// queue under it (the RM confirming each victim).
fn quota_change(d: &Driver, timeout: Duration) -> Result<QuotaRun, String> {
    let batch_memory = |dump: &serde_json::Value| {
        find(&dump["partitions"][0]["root"], "root.batch")
            .and_then(|q| q["allocated"]["memory"].as_i64())
            .unwrap_or(0)
    };
    let before = batch_memory(&d.dump()?);
    let victims = d.rm().victims.load(Ordering::SeqCst);
    d.mark("batch max lowered");
    let changed = Instant::now();
    d.reload(&lowered_config())?;
    // The delay, then the run: a victim per unit of memory over the max.
    let excess = usize::try_from((before - BATCH_MAX.0).max(0) / 1000).unwrap_or(0);
    d.sim.wait_for(
        "the quota-change run",
        timeout + Duration::from_secs(2),
        |_| {
            d.rm().confirmed.load(Ordering::SeqCst) >= victims + excess
                && d.rm().victims.load(Ordering::SeqCst) >= victims + excess
        },
    )?;
    let took = changed.elapsed();
    if d.edition == crate::cli::Edition::V1 {
        // Records go out with the next event flush (every 2 s).
        d.sim
            .wait_for("the QUEUE_PREEMPTION record", timeout, |_| {
                !d.rm().quota_summaries.lock().unwrap().is_empty()
            })?;
    }
    d.settle(Duration::from_millis(300), timeout)?;
    Ok(QuotaRun {
        victims: d.rm().victims.load(Ordering::SeqCst) - victims,
        before,
        after: batch_memory(&d.dump()?),
        took,
    })
}

fn find<'a>(q: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
    if q["path"] == path {
        return Some(q);
    }
    q["children"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|c| find(c, path))
}
