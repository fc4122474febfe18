//! YuniKorn core's `BenchmarkScheduling` scenario, driven through the C ABI
//! with a resource manager that decodes every callback message, as a real
//! one would.
//!
//! Queues `root.a` (guaranteed memory 100000, vcore 10000) and `root.b`
//! (guaranteed memory 1000000, vcore 10000), one application in each, nodes
//! of `{memory: 10*k, vcore: k}` with `k = asks/nodes + 1`, asks of
//! `{memory: 10, vcore: 1}` split between the two applications; timed from
//! submitting the asks until the RM holds every allocation.
//!
//! Two request shapes: one ask per allocation (`maxAllocations` 1, in
//! requests of 5,000 asks), and the reference's own, one ask per application
//! with `maxAllocations` half the allocations, one request per application.
//!
//! `cargo bench --bench scheduling` runs 500/1000/2000/5000 nodes with
//! 10,000 allocations in both shapes; `-- --large` adds 50,000 nodes with
//! 500,000. `-- NODES ASKS` runs one custom size once (one ask per
//! allocation unless `--shape apps`); `--shape asks|apps` picks one shape;
//! `scripts/callgrind.sh` runs custom sizes under callgrind.
//!
//! `--limits loose` adds user limits that never bind (a wildcard user cap
//! at root, a named cap on `root.a`); `--limits users` spreads the asks
//! over 1,000 applications of 1,000 users in 10 groups under user and
//! group caps, `--limits users-uncapped` the same without limits
//! (docs/limits.md has the figures).
//!
//! `--resources k8s` gives the nodes the six resource types the k8shim
//! reports for a Kubernetes node (two of them zero) and the asks a pod's
//! three, where the default (`two`) is the reference's memory and vcore.
//!
//! `--asks k8s` keys the single asks by a pod UID and gives them the tags
//! the k8shim makes from a pod (namespace, name, labels, creation time),
//! where the default is the reference's short keys and no tags.
//!
//! `--edition v1` runs the same nodes, applications and one-allocation
//! requests through the SI v1.x family (`sicore_v1_*`; nodes `CREATE`,
//! the queues in the registration); the default is `--edition v0.12`.
//!
//! `--rounds N` runs each size N times in one process and prints every
//! round's rate (the default is five for the standard sizes, once for a
//! custom or the large one). With `SICORE_BENCH_THREADS` set, each run
//! prints every thread's CPU and the part the kernel spent for it.
//!
//! `--max-asks-per-rm N` sets `SchedulerOptions.max_asks_per_rm` (default
//! 500,000): a run of more asks needs it raised. A run whose asks the
//! scheduler rejects stops at once with the reason.
//!
//! `--events REQUEST,NODE,USERGROUP` turns events on with those record
//! types: records are made, stored and flushed to the RM, which drops
//! them (the cost of making them); without it events are off.
//!
//! `--preemption` turns guarantee preemption on in the bench's partition
//! (its queues have guarantees; nothing is ever preempted): the cost of the
//! switch on the common path (`scripts/callgrind.sh --preemption`);
//! `--quota-preemption` adds v1.9 quota-change preemption, on with delays
//! and maxes that are never reached (nothing armed). `--no-preemption`
//! turns it off (SI v1.x has it on by default).
//! `-- --preemption-decision [NODES ALLOCS]` times single preemption
//! decisions on a full cluster instead (`support/preempt.rs`; default
//! 5,000 nodes, 50,000 allocations; with `--predicates` the RM checks the
//! node). `-- --preemption-queues [NODES ALLOCS LEAVES]` times one
//! guarantee-preemption decision and one quota-change run among many leaf
//! queues (`support/queues.rs`; default 5,000 nodes, 50,000 allocations,
//! 400 leaves); the default run ends with it.
//!
//! Then the gang case (`support/gang.rs`): 1,000 applications with one task
//! group of 10 members on 5,000 nodes, placeholders first, then the real
//! members; replacements per second until the RM holds every real
//! allocation. `-- --gang` runs only the gang case.

#[path = "support/gang.rs"]
mod gang;
#[path = "support/preempt.rs"]
mod preempt;
#[path = "support/proc.rs"]
mod proc;
#[path = "support/queues.rs"]
mod queues;
#[path = "support/requests.rs"]
mod requests;

use proc::{peak_rss_mib, process_cpu_ns, rss_mib, thread_cpu_ms};
use requests::{app_asks, single_asks, single_asks_over, single_asks_v1, Edition, Limits, Shape};

use std::sync::Arc;
use std::time::{Duration, Instant};

use prost::Message;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1::SchedulerOptions;
use sicore_c_rm::{get, new_scheduler, register, table, wait_until, Counters, Installed, UpdateFn};

const CONFIG: &str = "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources:
              guaranteed: {memory: 100000, vcore: 10000}
          - name: b
            resources:
              guaranteed: {memory: 1000000, vcore: 10000}
";

fn wait(what: &str, done: impl Fn() -> bool) {
    wait_until(what, Duration::from_secs(600), done).unwrap_or_else(|e| panic!("{e}"));
}

fn call(s: *mut sicore_scheduler, f: UpdateFn, m: &impl Message) {
    let (st, msg) = sicore_c_rm::call(s, f, m);
    assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
}

/// `--events TYPES` (comma-separated `SchedulerOptions.event_types`):
/// events on with those record types, to measure what making them costs;
/// without it events are off.
static EVENTS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

#[derive(Clone, Copy)]
struct Flags {
    edition: Edition,
    predicates: bool,
    limits: Limits,
    shape: Shape,
    /// `preemption: {enabled: true}` in the partition.
    preemption: bool,
    /// `--no-preemption`: `preemption: {enabled: false}` in the partition
    /// (SI v1.x has preemption on by default): what the switch costs a
    /// pass with nothing to preempt.
    no_preemption: bool,
    /// `--quota-preemption`: v1.9 quota-change preemption on too, each
    /// queue with a delay and a max it never reaches, so nothing is ever
    /// armed: what the feature costs a pass that has nothing to do.
    quota: bool,
    /// The outstanding-request check (every second by default) reports each
    /// waiting ask, so its cost grows with the seconds a run lasts, not with
    /// the allocations; `--no-outstanding-check` (scripts/callgrind.sh,
    /// where a run lasts ~50x longer) leaves it out.
    outstanding_check: bool,
    /// `SchedulerOptions.max_asks_per_rm` (`--max-asks-per-rm`); `None`:
    /// the library's default.
    max_asks_per_rm: Option<u64>,
}

/// With `SICORE_BENCH_RSS` set: the resident memory after a phase.
fn rss_phase(what: &str) {
    if std::env::var_os("SICORE_BENCH_RSS").is_some() {
        eprintln!(
            "  rss after {what}: {:.1} MiB (peak {:.1})",
            rss_mib(),
            peak_rss_mib()
        );
    }
}

/// Runs one size; returns (allocations per second, seconds, CPU
/// nanoseconds per allocation of the whole process).
fn run(nodes: usize, asks: usize, flags: Flags) -> (f64, f64, f64) {
    let Flags {
        edition,
        predicates,
        limits,
        shape,
        preemption,
        no_preemption,
        quota,
        outstanding_check,
        max_asks_per_rm,
    } = flags;
    let mut opts = SchedulerOptions {
        max_asks_per_rm,
        ..Default::default()
    };
    if !outstanding_check {
        // Once an hour: see `Flags::outstanding_check`.
        opts.outstanding_check_interval_ms = 3_600_000;
    }
    let config = if quota {
        limits
            .config()
            .replacen(
                "  - name: default\n",
                "  - name: default\n    preemption: {enabled: true, quotapreemptionenabled: true}\n",
                1,
            )
            .replace(
                "            resources:\n",
                "            properties: {quota.preemption.delay: 1s}\n            resources:\n              max: {memory: 1000000000000000, vcore: 1000000000000}\n",
            )
    } else if preemption {
        limits.config().replacen(
            "  - name: default\n",
            "  - name: default\n    preemption: {enabled: true}\n",
            1,
        )
    } else if no_preemption {
        limits.config().replacen(
            "  - name: default\n",
            "  - name: default\n    preemption: {enabled: false}\n",
            1,
        )
    } else {
        limits.config()
    };
    opts.policy_configs.insert("bench".into(), config.clone());
    match EVENTS.get() {
        Some(types) => opts.event_types = types.clone(),
        None => opts.disable_events = true,
    }
    opts.log_level = "warn".into();
    let s = new_scheduler(&opts).unwrap_or_else(|e| panic!("{e}"));
    // The RM only counts; the shared trampolines decode every message, and
    // its Predicates lets every node pass after decoding the question: the
    // cost of the Predicates path itself (one call per node tried, and the
    // ReSync that must reach the RM before each call).
    let state = Arc::new(Counters::default());
    state.set_waiter(std::thread::current());
    let (update_node, update_application, update_allocation): (UpdateFn, UpdateFn, UpdateFn) =
        if edition == Edition::V1 {
            // The v1 RM sends its queues in the registration.
            let cb = sicore_c_rm::v1::table(&state, predicates);
            let (st, msg) = sicore_c_rm::v1::register(
                s,
                &si18::RegisterResourceManagerRequest {
                    rm_id: "rm".into(),
                    version: "bench".into(),
                    policy_group: "bench".into(),
                    config,
                    ..Default::default()
                },
                &cb,
            );
            assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
            (
                sicore_v1_update_node,
                sicore_v1_update_application,
                sicore_v1_update_allocation,
            )
        } else {
            let cb = table(
                &state,
                Installed {
                    predicates,
                    resync_scheduler_cache: true,
                    ..Default::default()
                },
            );
            let (st, msg) = register(s, "rm", "bench", "bench", &cb);
            assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
            (
                sicore_update_node,
                sicore_update_application,
                sicore_update_allocation,
            )
        };

    let k = (asks / nodes + 1) as i64;
    for chunk in (0..nodes).collect::<Vec<_>>().chunks(10_000) {
        if edition == Edition::V1 {
            // CREATE (schedulable at once), where the k8shim sends
            // CREATE_DRAIN and a DRAIN_TO_SCHEDULABLE later.
            let list = chunk
                .iter()
                .map(|i| si18::NodeInfo {
                    node_id: format!("node-{i:06}"),
                    action: si18::node_info::ActionFromRm::Create as i32,
                    schedulable_resource: sicore_c_rm::v1::res(&requests::node_resource(k)),
                    ..Default::default()
                })
                .collect();
            call(
                s,
                update_node,
                &si18::NodeRequest {
                    nodes: list,
                    rm_id: "rm".into(),
                },
            );
            continue;
        }
        let list = chunk
            .iter()
            .map(|i| si::NodeInfo {
                node_id: format!("node-{i:06}"),
                action: si::node_info::ActionFromRm::Create as i32,
                schedulable_resource: sicore_c_rm::res(&requests::node_resource(k)),
                ..Default::default()
            })
            .collect();
        call(
            s,
            update_node,
            &si::NodeRequest {
                nodes: list,
                rm_id: "rm".into(),
            },
        );
    }
    wait("nodes", || get(&state.nodes_accepted) == nodes);
    rss_phase("nodes");
    let napps = limits.apps();
    let apps = (0..napps)
        .map(|i| si::AddApplicationRequest {
            application_id: format!("app-{i}"),
            queue_name: ["root.a", "root.b"][i % 2].to_string(),
            partition_name: "default".into(),
            ugi: Some(si::UserGroupInformation {
                user: if napps == 2 {
                    "bench".into()
                } else {
                    format!("user-{i}")
                },
                groups: if napps == 2 {
                    vec![]
                } else {
                    vec![format!("g{}", i % 10)]
                },
            }),
            ..Default::default()
        })
        .collect();
    // The same ApplicationRequest wire in both editions.
    call(
        s,
        update_application,
        &si::ApplicationRequest {
            new: apps,
            rm_id: "rm".into(),
            ..Default::default()
        },
    );
    wait("apps", || get(&state.apps_accepted) == napps);

    let requests = match shape {
        _ if edition == Edition::V1 => single_asks_v1(asks, napps),
        Shape::Asks if napps != 2 => single_asks_over(asks, napps),
        Shape::Asks => single_asks(asks),
        Shape::Apps => app_asks(asks),
    };
    rss_phase("requests built");
    state.wake_at_allocations(asks);
    // `SICORE_BENCH_RSS`: the resident memory every 250 ms while the
    // asks are placed (where the peak comes from).
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = std::env::var_os("SICORE_BENCH_RSS").map(|_| {
        let (state, done) = (state.clone(), done.clone());
        let t0 = Instant::now();
        std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                eprintln!(
                    "  rss {:>6.2} s {:>8.1} MiB, {:>8} allocations",
                    t0.elapsed().as_secs_f64(),
                    rss_mib(),
                    get(&state.allocations)
                );
                std::thread::sleep(Duration::from_millis(250));
            }
        })
    });
    let cpu_before = thread_cpu_ms();
    let process_before = process_cpu_ns();
    let start = Instant::now();
    // Each request is dropped once sent, as an RM would: the library
    // holds what it decoded, the bench nothing of it (with the 1M asks of
    // the largest run, ~60 MB of encoded requests kept to the end were
    // part of the peak).
    for r in requests {
        assert_eq!(
            update_allocation(s, r.as_ptr(), r.len(), std::ptr::null_mut()),
            sicore_status::SICORE_OK
        );
    }
    rss_phase("requests sent");
    // A rejected ask never gets its allocation: stop at once, naming the
    // limit that most likely rejected it.
    wait("allocations", || {
        get(&state.allocations) == asks || get(&state.asks_rejected) > 0
    });
    let rejected = get(&state.asks_rejected);
    if rejected > 0 {
        let limit = max_asks_per_rm.unwrap_or(sicore::options::DEFAULT_MAX_ASKS_PER_RM);
        let why = if asks as u64 > limit {
            format!(
                "{asks} asks are more than SchedulerOptions.max_asks_per_rm ({limit}) lets one RM hold: pass --max-asks-per-rm {asks}"
            )
        } else {
            "see the scheduler's log".to_string()
        };
        eprintln!("bench: the scheduler rejected {rejected} asks; {why}");
        std::process::exit(2);
    }
    let secs = start.elapsed().as_secs_f64();
    done.store(true, std::sync::atomic::Ordering::Release);
    if let Some(t) = sampler {
        let _ = t.join();
    }
    rss_phase("all allocated");
    let cpu_ns = process_cpu_ns().saturating_sub(process_before) as f64 / asks as f64;
    if std::env::var_os("SICORE_BENCH_THREADS").is_some() {
        let after = thread_cpu_ms();
        for (name, (user, sys)) in &after {
            let (user0, sys0) = cpu_before.get(name).copied().unwrap_or((0.0, 0.0));
            let (user, sys) = (user - user0, sys - sys0);
            eprintln!(
                "  thread {name:<20} {:>8.0} ms CPU ({sys:.0} system) of {:.0} ms",
                user + sys,
                secs * 1000.0
            );
        }
    }
    sicore_free(s);
    (asks as f64 / secs, secs, cpu_ns)
}

fn main() {
    // A C host's first call into the library comes before the library's
    // allocator maps its first arena, and the entry points turn mimalloc's
    // huge-page advice off before that (src/ffi/allocator.rs). Here Rust's
    // runtime allocates before `main`, so the arena is mapped already: the
    // bench starts itself again with the advice off from the start
    // (mimalloc reads the variable when the process starts), unless the
    // variable is set.
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        let exe = std::env::current_exe().expect("the bench's own path");
        let status = std::process::Command::new(exe)
            .args(std::env::args_os().skip(1))
            .env("MIMALLOC_ALLOW_THP", "0")
            .status()
            .expect("start the bench again");
        std::process::exit(status.code().unwrap_or(1));
    }
    let all: Vec<String> = std::env::args().skip(1).collect();
    // `--predicates` registers a Predicates callback (the path a Kubernetes
    // RM takes).
    let predicates = all.iter().any(|a| a == "--predicates");
    let outstanding_check = !all.iter().any(|a| a == "--no-outstanding-check");
    let preemption = all.iter().any(|a| a == "--preemption");
    let no_preemption = all.iter().any(|a| a == "--no-preemption");
    let quota = all.iter().any(|a| a == "--quota-preemption");
    // `--max-asks-per-rm N`: SchedulerOptions.max_asks_per_rm (default
    // 500,000: a larger run needs it raised).
    let max_asks_per_rm = all.iter().position(|a| a == "--max-asks-per-rm").map(|i| {
        all.get(i + 1)
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|v| *v > 0)
            .unwrap_or_else(|| panic!("--max-asks-per-rm takes a positive number"))
    });
    // `--rounds N`: runs each size N times in this process (default: five
    // for the small sizes, once for a custom or the large one).
    let rounds = all.iter().position(|a| a == "--rounds").map(|i| {
        all.get(i + 1)
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|v| *v > 0)
            .unwrap_or_else(|| panic!("--rounds takes a positive number"))
    });
    if let Some(i) = all.iter().position(|a| a == "--preemption-queues") {
        let size: Vec<usize> = all[i + 1..]
            .iter()
            .map_while(|a| a.parse().ok())
            .take(3)
            .collect();
        let (nodes, allocs, leaves) = match size.as_slice() {
            [n, a, l] => (*n, *a, *l),
            [n, a] => (*n, *a, 400),
            _ => (5000, 50_000, 400),
        };
        queues::report(nodes, allocs, leaves);
        return;
    }
    if let Some(i) = all.iter().position(|a| a == "--preemption-decision") {
        let size: Vec<usize> = all[i + 1..]
            .iter()
            .map_while(|a| a.parse().ok())
            .take(2)
            .collect();
        let (nodes, allocs) = match size.as_slice() {
            [n, a] => (*n, *a),
            _ => (5000, 50_000),
        };
        let decisions = 20;
        let times = preempt::run(nodes, allocs, decisions, predicates);
        let mut wall: Vec<Duration> = times.iter().map(|t| t.0).collect();
        let mut cpu: Vec<Duration> = times.iter().map(|t| t.1).collect();
        wall.sort();
        cpu.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "One guarantee-preemption decision through the C ABI{}: {nodes} nodes, {allocs} allocations",
            if predicates { ", with a Predicates callback" } else { "" }
        );
        println!(
            "{:>10} {:>10} {:>10} {:>10} {:>14} {:>12}",
            "decisions", "median ms", "best ms", "worst ms", "median CPU ms", "best CPU ms"
        );
        println!(
            "{decisions:>10} {:>10.2} {:>10.2} {:>10.2} {:>14.2} {:>12.2}",
            ms(wall[decisions / 2]),
            ms(wall[0]),
            ms(wall[decisions - 1]),
            ms(cpu[decisions / 2]),
            ms(cpu[0])
        );
        return;
    }
    // `--limits none|loose|users`: user/group limits in the configuration.
    // `--edition v0.12|v1`: the SI edition the RM registers through.
    let edition = Edition::parse(
        all.iter()
            .position(|a| a == "--edition")
            .and_then(|i| all.get(i + 1))
            .map(String::as_str),
    );
    let limits = Limits::parse(
        all.iter()
            .position(|a| a == "--limits")
            .and_then(|i| all.get(i + 1))
            .map(String::as_str),
    );
    if let Some(types) = all
        .iter()
        .position(|a| a == "--events")
        .and_then(|i| all.get(i + 1))
    {
        let _ = EVENTS.set(types.split(',').map(str::to_string).collect());
    }
    // `--resources k8s` (default `two`): the types a Kubernetes node and pod
    // have (support/requests.rs).
    match all
        .iter()
        .position(|a| a == "--resources")
        .map(|i| all.get(i + 1).map(String::as_str))
    {
        None | Some(Some("two")) => {}
        Some(Some("k8s")) => {
            requests::K8S_RESOURCES.store(true, std::sync::atomic::Ordering::Relaxed)
        }
        Some(other) => panic!("--resources takes two or k8s, not {other:?}"),
    }
    // `--asks k8s` (default `short`): asks keyed and tagged as the k8shim's
    // pods (support/requests.rs).
    match all
        .iter()
        .position(|a| a == "--asks")
        .map(|i| all.get(i + 1).map(String::as_str))
    {
        None | Some(Some("short")) => {}
        Some(Some("k8s")) => requests::K8S_ASKS.store(true, std::sync::atomic::Ordering::Relaxed),
        Some(other) => panic!("--asks takes short or k8s, not {other:?}"),
    }
    // `--shape asks|apps` runs one request shape only (default: both).
    let shape_arg =
        all.iter()
            .position(|a| a == "--shape")
            .map(|i| match all.get(i + 1).map(String::as_str) {
                Some("asks") => Shape::Asks,
                Some("apps") => Shape::Apps,
                other => panic!("--shape takes asks or apps, not {other:?}"),
            });
    let mut args: Vec<String> = Vec::new();
    let mut skip = false;
    for a in all {
        if std::mem::take(&mut skip) {
            continue;
        }
        match a.as_str() {
            "--bench"
            | "--predicates"
            | "--no-outstanding-check"
            | "--preemption"
            | "--no-preemption"
            | "--quota-preemption" => {}
            "--shape" | "--limits" | "--edition" | "--events" | "--max-asks-per-rm"
            | "--rounds" | "--resources" | "--asks" => skip = true,
            _ => args.push(a),
        }
    }
    let custom = args.len() == 2 && args[0].parse::<usize>().is_ok();
    let sizes: Vec<(usize, usize)> = match args.as_slice() {
        [n, a] if n.parse::<usize>().is_ok() => {
            vec![(n.parse().unwrap(), a.parse().expect("ASKS"))]
        }
        a if a.iter().any(|x| x == "--large") => {
            vec![
                (500, 10_000),
                (1000, 10_000),
                (2000, 10_000),
                (5000, 10_000),
                (50_000, 500_000),
            ]
        }
        _ => vec![
            (500, 10_000),
            (1000, 10_000),
            (2000, 10_000),
            (5000, 10_000),
        ],
    };
    let gang_only = args.iter().any(|x| x == "--gang");
    let sizes = if gang_only { Vec::new() } else { sizes };
    let shapes = match shape_arg {
        // v1 has no maxAllocations: one request per allocation only.
        _ if edition == Edition::V1 => vec![Shape::Asks],
        Some(s) => vec![s],
        // A custom size measures one shape: the single asks unless told.
        None if custom => vec![Shape::Asks],
        None => vec![Shape::Asks, Shape::Apps],
    };
    for shape in shapes {
        if sizes.is_empty() {
            break;
        }
        println!(
            "BenchmarkScheduling through the C ABI, {} (callbacks decode every message){}{}",
            edition.label(),
            if predicates {
                ", with a Predicates callback"
            } else {
                ""
            },
            match shape {
                Shape::Asks => ", one ask per allocation",
                Shape::Apps =>
                    ", one ask per application (maxAllocations asks/2, the reference's shape)",
            }
        );
        println!(
            "{:>8} {:>9} {:>16} {:>14} {:>16} {:>14} {:>14}",
            "nodes",
            "allocs",
            "median allocs/s",
            "best allocs/s",
            "median seconds",
            "peak RSS MiB",
            "CPU ns/alloc"
        );
        for &(nodes, asks) in &sizes {
            // Wall clock on a small shared machine varies from run to run:
            // the small sizes run five times and report the median and the
            // best; the large one (and a custom size) runs once.
            let runs = rounds.unwrap_or(if asks > 100_000 || custom { 1 } else { 5 });
            let mut results: Vec<(f64, f64, f64)> = (0..runs)
                .map(|_| {
                    let flags = Flags {
                        edition,
                        predicates,
                        limits,
                        shape,
                        preemption,
                        no_preemption,
                        quota,
                        outstanding_check,
                        max_asks_per_rm,
                    };
                    let r = run(nodes, asks, flags);
                    if runs > 1 {
                        eprintln!("  round: {:.0} allocations/s", r.0);
                    }
                    r
                })
                .collect();
            results.sort_by(|a, b| a.0.total_cmp(&b.0));
            let median = results[results.len() / 2];
            let best = results[results.len() - 1];
            println!(
                "{nodes:>8} {asks:>9} {:>16.0} {:>14.0} {:>16.3} {:>14.1} {:>14.0}",
                median.0,
                best.0,
                median.1,
                peak_rss_mib(),
                median.2
            );
        }
        println!();
    }
    if custom || edition == Edition::V1 {
        // The gang case speaks v0.12 (support/gang.rs).
        return;
    }
    // Gang: 5,000 nodes, 1,000 applications x 10 members, five runs.
    println!("Gang scheduling through the C ABI (the RM confirms every replacement)");
    println!(
        "{:>8} {:>6} {:>8} {:>22} {:>20} {:>16}",
        "nodes",
        "apps",
        "members",
        "median replacements/s",
        "best replacements/s",
        "median seconds"
    );
    let (nodes, apps, members) = (5000, 1000, 10);
    let mut results: Vec<(f64, f64)> = (0..5).map(|_| gang::run(nodes, apps, members)).collect();
    results.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (median, best) = (results[2], results[4]);
    println!(
        "{nodes:>8} {apps:>6} {members:>8} {:>22.0} {:>20.0} {:>16.3}",
        median.0, best.0, median.1
    );
    if !gang_only {
        // Preemption among 400 leaf queues, 50,000 allocations.
        println!();
        queues::report(5000, 50_000, 400);
    }
}
