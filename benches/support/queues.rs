//! Preemption among many leaf queues (`-- --preemption-queues [NODES
//! ALLOCS LEAVES]`, default 5,000 nodes, 50,000 allocations, 400 leaves):
//! the leaves sit twenty to a parent (`root.p00.q00` ...), and the
//! allocations fill every node, spread evenly over the leaves that run
//! them. Every other running leaf is exactly at its guarantee; the others
//! are a fifth above it. Two measures, each the core thread's CPU time:
//!
//! - one guarantee-preemption decision: the last leaf runs nothing and has
//!   a large guarantee; a request of one allocation arrives there, and a
//!   decision walks the leaves above their guarantee for victims (as in
//!   `preempt.rs`: timed from the wake-up until the RM holds the victim);
//! - one quota-change run (YuniKorn v1.9): every leaf runs allocations and
//!   a reload lowers the max of `root.all`, the parent of every leaf, by a
//!   hundredth of its usage, and
//!   the run splits that amount over the leaves above their guarantee and
//!   picks their victims. Timed from 50 ms after the reload's return
//!   (its own work done) until the RM holds the first victim, the run
//!   starting 200 ms after the reload.

use std::time::{Duration, Instant};

use sicore::ffi::*;
use sicore_c_rm::get;

use crate::preempt::{core_cpu, wait, Cluster};

/// A leaf's path: twenty leaves to a parent.
fn leaf_path(i: usize) -> String {
    format!("root.all.p{:02}.q{:02}", i / 20, i % 20)
}

/// The configuration and the running leaves' (application, queue,
/// allocations). `ask_leaf`: the last leaf runs nothing and takes the
/// preemptor; `quota`: quota-change preemption on, with a delay on
/// `root.all`, and guarantee preemption off.
fn layout(
    allocs: usize,
    leaves: usize,
    ask_leaf: bool,
    quota: bool,
    max: Option<usize>,
) -> (String, Vec<(String, String, usize)>) {
    let running = if ask_leaf { leaves - 1 } else { leaves };
    let mut fill = Vec::new();
    let mut yaml = String::from("partitions:\n  - name: default\n");
    yaml.push_str(if quota {
        "    preemption: {enabled: false, quotapreemptionenabled: true}\n"
    } else {
        "    preemption: {enabled: true}\n"
    });
    yaml.push_str("    queues:\n      - name: root\n        submitacl: '*'\n        queues:\n");
    yaml.push_str("          - name: all\n");
    if quota {
        yaml.push_str("            properties: {quota.preemption.delay: 200ms}\n");
        if let Some(m) = max {
            yaml.push_str(&format!(
                "            resources: {{max: {{memory: {}, vcore: {m}}}}}\n",
                10 * m
            ));
        }
    }
    yaml.push_str("            queues:\n");
    for i in 0..leaves {
        if i % 20 == 0 {
            yaml.push_str(&format!("              - name: p{:02}\n", i / 20));
            yaml.push_str("                queues:\n");
        }
        yaml.push_str(&format!("                  - name: q{:02}\n", i % 20));
        if i < running {
            let n = allocs / running + usize::from(i < allocs % running);
            // Every other leaf at its guarantee, the rest a fifth above.
            let g = if i % 2 == 0 { n } else { n - n / 5 };
            yaml.push_str(&format!(
                "                    resources: {{guaranteed: {{memory: {}, vcore: {g}}}}}\n",
                10 * g
            ));
            yaml.push_str("                    properties: {application.sort.policy: fifo}\n");
            fill.push((format!("app-{i:03}"), leaf_path(i), n));
        } else {
            yaml.push_str(
                "                    resources: {guaranteed: {memory: 100000000, vcore: 10000000}}\n",
            );
            yaml.push_str(
                "                    properties: {application.sort.policy: fifo, preemption.delay: 1ms}\n",
            );
        }
    }
    (yaml, fill)
}

/// Starts the cluster of `layout` and fills every node.
fn filled(config: &str, nodes: usize, allocs: usize, fill: &[(String, String, usize)]) -> Cluster {
    assert!(allocs % nodes == 0, "ALLOCS must be a multiple of NODES");
    let c = Cluster::start(config, nodes, (allocs / nodes) as i64, false);
    let apps: Vec<(String, String)> = fill
        .iter()
        .map(|(a, q, _)| (a.clone(), q.clone()))
        .collect();
    c.apps(&apps);
    let asks = fill
        .iter()
        .map(|(a, _, n)| Cluster::ask(a, "fill".into(), *n as i32))
        .collect();
    c.request(asks, vec![]);
    wait("the cluster full", || {
        get(&c.state.counters.allocations) == allocs
    });
    c
}

/// `decisions` guarantee-preemption decisions: wall and core CPU time.
pub fn decisions(
    nodes: usize,
    allocs: usize,
    leaves: usize,
    decisions: usize,
) -> Vec<(Duration, Duration)> {
    let (config, fill) = layout(allocs, leaves, true, false, None);
    let c = filled(&config, nodes, allocs, &fill);
    let ask_leaf = leaf_path(leaves - 1);
    c.apps(&[("app-b".into(), ask_leaf)]);
    c.decisions("app-b", allocs, decisions)
}

/// `runs` quota-change runs, each lowering `root.all`'s max by a hundredth
/// of the allocations: each run's wall and core CPU time (from the
/// reload's return to the first victim) and its victims.
pub fn quota_runs(
    nodes: usize,
    allocs: usize,
    leaves: usize,
    runs: usize,
) -> Vec<(Duration, Duration, usize)> {
    let (config, fill) = layout(allocs, leaves, false, true, None);
    let c = filled(&config, nodes, allocs, &fill);
    let mut out = Vec::with_capacity(runs);
    let mut max = allocs;
    for _ in 0..runs {
        max -= allocs / 100;
        let (config, _) = layout(allocs, leaves, false, true, Some(max));
        let before = c.state.victims.lock().unwrap().len();
        let group = "bench";
        let mut err = sicore_buffer::empty();
        let st = sicore_set_policy_config(
            c.s,
            group.as_ptr(),
            group.len(),
            config.as_ptr(),
            config.len(),
            &mut err,
        );
        assert_eq!(
            st,
            sicore_status::SICORE_OK,
            "{}",
            sicore_c_rm::take_string(err)
        );
        // The reload's own work done, well before the run's start.
        std::thread::sleep(Duration::from_millis(50));
        let cpu = core_cpu();
        let start = Instant::now();
        wait("a victim", || {
            c.state.victims.lock().unwrap().len() > before
        });
        let cpu = core_cpu().saturating_sub(cpu);
        let at = c.state.victims.lock().unwrap()[before].2;
        // Every release of the run, then confirmed.
        std::thread::sleep(Duration::from_millis(200));
        let taken = c.state.victims.lock().unwrap().len() - before;
        out.push((at.saturating_duration_since(start), cpu, taken));
        c.confirm(before);
        std::thread::sleep(Duration::from_millis(100));
    }
    out
}

/// `-- --preemption-queues`: one guarantee-preemption decision and one
/// quota-change run among `leaves` leaf queues, printed.
pub fn report(nodes: usize, allocs: usize, leaves: usize) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    // The quota runs first, in a process that has done nothing else yet.
    let runs = 9;
    let quota = quota_runs(nodes, allocs, leaves, runs);
    let count = 20;
    let times = decisions(nodes, allocs, leaves, count);
    let mut cpu: Vec<Duration> = times.iter().map(|t| t.1).collect();
    let mut wall: Vec<Duration> = times.iter().map(|t| t.0).collect();
    cpu.sort();
    wall.sort();
    println!(
        "Preemption among {leaves} leaf queues through the C ABI: {nodes} nodes, {allocs} allocations"
    );
    println!(
        "{:>22} {:>6} {:>10} {:>14} {:>12} {:>12}",
        "", "runs", "median ms", "median CPU ms", "best CPU ms", "victims"
    );
    println!(
        "{:>22} {count:>6} {:>10.2} {:>14.2} {:>12.2} {:>12}",
        "guarantee decision",
        ms(wall[count / 2]),
        ms(cpu[count / 2]),
        ms(cpu[0]),
        1
    );
    let mut cpu: Vec<Duration> = quota.iter().map(|t| t.1).collect();
    let mut wall: Vec<Duration> = quota.iter().map(|t| t.0).collect();
    let mut taken: Vec<usize> = quota.iter().map(|t| t.2).collect();
    cpu.sort();
    wall.sort();
    taken.sort();
    println!(
        "{:>22} {runs:>6} {:>10.2} {:>14.2} {:>12.2} {:>12}",
        "quota-change run",
        ms(wall[runs / 2]),
        ms(cpu[runs / 2]),
        ms(cpu[0]),
        taken[runs / 2]
    );
}
