//! The default workload: nodes, applications over the queues and a batch
//! of asks of common container shapes, then a report of what happened.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1::SchedulerOptions;
use sicore_c_rm::convert::{v1_node, v1_request};
use sicore_c_rm::{table, Installed, UpdateFn};

use crate::cli::{Args, Edition};
use crate::rm::{library_version, register_sim, Counters, Sim, SI_V1_RELEASE};
use crate::shapes::{node_attributes, pod_tags, resource};
use crate::{html, report, serve};

fn pct(used: f64, total: f64) -> f64 {
    if total > 0.0 {
        100.0 * used / total
    } else {
        0.0
    }
}

fn print_queue(q: &serde_json::Value, depth: usize) {
    let get = |k: &str, r: &str| q[k][r].as_i64().unwrap_or(0);
    println!(
        "  {:<28} {:>6} apps  allocated memory {:>12} vcore {:>8}  pending memory {:>10}",
        format!(
            "{}{}",
            "  ".repeat(depth),
            q["path"].as_str().unwrap_or("?")
        ),
        q["total_applications"].as_u64().unwrap_or(0),
        get("allocated", "memory"),
        get("allocated", "vcore"),
        get("pending", "memory"),
    );
    for c in q["children"].as_array().into_iter().flatten() {
        print_queue(c, depth + 1);
    }
}

pub(crate) fn run(args: Args) -> Result<(), String> {
    let mut rng = fastrand::Rng::with_seed(args.seed);
    let edition = args.edition;
    let (sim, calls, config_name) = start(&args)?;
    let (update_node, update_application, update_allocation) = calls;
    let mark = |label: &str| {
        if let Some(r) = sim.counters.report.get() {
            r.mark(label);
        }
    };

    // Nodes: memory around 400,000 and 250 vcores, so the default workload
    // (about 32M memory and 20k vcores in all) fits with room to spare.
    let nodes: Vec<si::NodeInfo> = (0..args.nodes)
        .map(|i| {
            let node_id = format!("node-{i:05}");
            si::NodeInfo {
                attributes: node_attributes(i, &node_id),
                node_id,
                action: si::node_info::ActionFromRm::Create as i32,
                schedulable_resource: resource(rng.i64(350_000..=450_000), rng.i64(200..=300)),
                ..Default::default()
            }
        })
        .collect();
    mark("nodes submitted");
    match edition {
        Edition::V012 => sim.call(
            "UpdateNode",
            update_node,
            &si::NodeRequest {
                nodes,
                rm_id: "sim".into(),
            },
        )?,
        // CREATE, schedulable at once (the k8shim's CREATE_DRAIN and later
        // DRAIN_TO_SCHEDULABLE would only add a round trip).
        Edition::V1 => sim.call(
            "UpdateNode",
            update_node,
            &si18::NodeRequest {
                nodes: nodes.into_iter().map(v1_node).collect(),
                rm_id: "sim".into(),
            },
        )?,
    }
    sim.wait_for("nodes", Duration::from_secs(30), |c| {
        c.nodes_accepted.load(Ordering::SeqCst) + c.nodes_rejected.load(Ordering::SeqCst)
            == args.nodes
    })?;

    let queues: Vec<&str> = args
        .queues
        .split(',')
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .collect();
    if queues.is_empty() || args.apps == 0 {
        return Err("need at least one queue and one application".into());
    }
    let apps: Vec<si::AddApplicationRequest> = (0..args.apps)
        .map(|i| si::AddApplicationRequest {
            application_id: format!("app-{i}"),
            queue_name: queues[i % queues.len()].to_string(),
            partition_name: "default".into(),
            ugi: Some(si::UserGroupInformation {
                user: format!("user-{}", i % 3),
                groups: vec![],
            }),
            ..Default::default()
        })
        .collect();
    if edition == Edition::V1 && args.html.is_some() {
        let _ = sim.counters.queue_of.set(
            apps.iter()
                .map(|a| (a.application_id.clone(), a.queue_name.clone()))
                .collect(),
        );
    }
    mark("applications submitted");
    // The application messages are the same wire in both editions.
    sim.call(
        "UpdateApplication",
        update_application,
        &si::ApplicationRequest {
            new: apps,
            rm_id: "sim".into(),
            ..Default::default()
        },
    )?;
    sim.wait_for("applications", Duration::from_secs(30), |c| {
        c.apps_accepted.load(Ordering::SeqCst) + c.apps_rejected.load(Ordering::SeqCst) == args.apps
    })?;
    let accepted_apps = sim.counters.apps_accepted.load(Ordering::SeqCst);
    if accepted_apps == 0 {
        return Err(format!(
            "no application was accepted: {:?}",
            sim.counters.rejections.lock().unwrap()
        ));
    }

    // Asks of a few common container shapes, submitted in batches.
    let shapes = [(512, 1), (1024, 1), (2048, 2), (4096, 2), (8192, 4)];
    let asks: Vec<si::AllocationAsk> = (0..args.asks)
        .map(|i| {
            let (m, v) = shapes[rng.usize(..shapes.len())];
            let app = i % accepted_apps;
            si::AllocationAsk {
                allocation_key: format!("ask-{i}"),
                application_id: format!("app-{app}"),
                tags: pod_tags("sim", &format!("app-{app}-pod-{i}")),
                partition_name: "default".into(),
                resource_ask: resource(m, v),
                max_allocations: 1,
                ..Default::default()
            }
        })
        .collect();
    mark("asks submitted");
    *sim.counters.start.lock().unwrap() = Some(Instant::now());
    let started = Instant::now();
    for chunk in asks.chunks(1000) {
        match edition {
            Edition::V012 => sim.call(
                "UpdateAllocation",
                update_allocation,
                &si::AllocationRequest {
                    asks: chunk.to_vec(),
                    rm_id: "sim".into(),
                    ..Default::default()
                },
            )?,
            // Each ask is for one allocation, so it maps to one v1 request.
            Edition::V1 => sim.call(
                "UpdateAllocation",
                update_allocation,
                &si18::AllocationRequest {
                    allocations: chunk.iter().map(v1_request).collect(),
                    rm_id: "sim".into(),
                    ..Default::default()
                },
            )?,
        }
    }

    wait_for_allocations(&sim, &args, started);
    mark("workload done");
    print_report(&args, &config_name, &sim, accepted_apps)?;
    if args.serve.is_some() {
        serve::until_interrupted(sim.sched)?;
    }
    Ok(())
}

/// The three update calls of the edition the RM registered through.
type Calls = (UpdateFn, UpdateFn, UpdateFn);

/// Makes the scheduler with the options the flags ask for and registers
/// the RM in the chosen edition; the configuration's name is for the report.
fn start(args: &Args) -> Result<(Sim, Calls, String), String> {
    let mut options = SchedulerOptions::default();
    let edition = args.edition;
    // v0.12 takes the queues from the scheduler's options, v1 from the
    // registration; v1 gets the v0.12 default (a `provided` rule) when no
    // file is given, so both editions run the same workload.
    let (config_name, config_text) = match &args.config {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            (path.display().to_string(), text)
        }
        None => (
            "embedded default".to_string(),
            sicore::config::DEFAULT_CONFIG.to_string(),
        ),
    };
    if edition == Edition::V012 && args.config.is_some() {
        options
            .policy_configs
            .insert("queues".into(), config_text.clone());
    }
    if let Some(addr) = &args.serve {
        options.rest_address = addr.clone();
        if let Some(token) = &args.rest_token {
            options.rest.get_or_insert_with(Default::default).token = token.clone();
        }
        if !args.rest_allowed_host.is_empty() {
            options
                .rest
                .get_or_insert_with(Default::default)
                .allowed_hosts = args.rest_allowed_host.clone();
        }
    }
    let sched = sicore_c_rm::new_scheduler(&options)?;
    let sim = Sim {
        sched,
        counters: Arc::new(Counters::default()),
    };
    if let Some(path) = &args.html {
        // A path that cannot be written fails now, not after the run.
        std::fs::write(path, "").map_err(|e| format!("--html {}: {e}", path.display()))?;
        let _ = sim.counters.report.set(report::Recorder::new(args.asks));
    }
    let calls: Calls = match edition {
        Edition::V012 => {
            let table = table(
                &sim.counters,
                Installed {
                    predicates: args.predicates,
                    resync_scheduler_cache: true,
                    ..Default::default()
                },
            );
            register_sim(sim.sched, &table)?;
            (
                sicore_update_node,
                sicore_update_application,
                sicore_update_allocation,
            )
        }
        Edition::V1 => {
            let table = sicore_c_rm::v1::table(&sim.counters, args.predicates);
            let req = si18::RegisterResourceManagerRequest {
                rm_id: "sim".into(),
                policy_group: "queues".into(),
                version: SI_V1_RELEASE.into(),
                config: config_text.clone(),
                ..Default::default()
            };
            sicore_c_rm::check(
                "RegisterResourceManager (v1)",
                sicore_c_rm::v1::register(sim.sched, &req, &table),
            )?;
            (
                sicore_v1_update_node,
                sicore_v1_update_application,
                sicore_v1_update_allocation,
            )
        }
    };
    Ok((sim, calls, config_name))
}

/// Waits until every ask is allocated or rejected, or nothing moved for
/// `--stall-seconds`, with a progress bar on a terminal.
fn wait_for_allocations(sim: &Sim, args: &Args, started: Instant) {
    let tty = std::io::stderr().is_terminal();
    let mut last_count = 0;
    let mut last_progress = Instant::now();
    loop {
        let n = sim.counters.allocations.load(Ordering::SeqCst);
        let rejected = sim.counters.asks_rejected.load(Ordering::SeqCst);
        if tty {
            let width = 40;
            let filled = (n * width) / args.asks.max(1);
            eprint!(
                "\r[{}{}] {n}/{} allocations  {:.1}s ",
                "=".repeat(filled.min(width)),
                " ".repeat(width - filled.min(width)),
                args.asks,
                started.elapsed().as_secs_f64()
            );
            let _ = std::io::stderr().flush();
        }
        if n + rejected >= args.asks {
            break;
        }
        if n != last_count {
            last_count = n;
            last_progress = Instant::now();
        } else if last_progress.elapsed() > Duration::from_secs(args.stall_seconds) {
            break;
        }
        // Busy until the first allocation too: the pass may be about to start.
        sim.sample_waiting(n == 0 || last_progress.elapsed() < report::QUIET);
        std::thread::sleep(Duration::from_millis(if tty { 50 } else { 5 }));
    }
    if tty {
        eprintln!();
    }
}

/// Prints what the RM observed and the state dump's queues, nodes and
/// applications; writes the `--html` report.
fn print_report(
    args: &Args,
    config_name: &str,
    sim: &Sim,
    accepted_apps: usize,
) -> Result<(), String> {
    let edition = args.edition;
    let c = &sim.counters;
    let made = c.allocations.load(Ordering::SeqCst);
    let first = c.first_alloc_ns.load(Ordering::SeqCst) as f64 / 1e9;
    let last = c.last_alloc_ns.load(Ordering::SeqCst) as f64 / 1e9;
    let dump = sim.dump()?;
    println!("sicore-sim report");
    println!("  library            sicore {}", library_version());
    println!("  edition            {}", edition.label());
    println!("  configuration      {config_name}");
    println!("  seed               {}", args.seed);
    println!(
        "  nodes              {} accepted, {} rejected",
        c.nodes_accepted.load(Ordering::SeqCst),
        c.nodes_rejected.load(Ordering::SeqCst)
    );
    println!(
        "  applications       {} accepted, {} rejected",
        accepted_apps,
        c.apps_rejected.load(Ordering::SeqCst)
    );
    println!("  asks submitted     {}", args.asks);
    println!(
        "  asks rejected      {}",
        c.asks_rejected.load(Ordering::SeqCst)
    );
    println!("  allocations made   {made}");
    println!(
        "  left pending       {}",
        args.asks
            .saturating_sub(made + c.asks_rejected.load(Ordering::SeqCst))
    );
    println!(
        "  first allocation   {:.3} ms after submission",
        first * 1e3
    );
    println!("  last allocation    {:.3} ms after submission", last * 1e3);
    if last > 0.0 {
        println!(
            "  throughput         {:.0} allocations/s (submission to last allocation)",
            made as f64 / last
        );
    }
    if args.predicates {
        println!(
            "  predicate calls    {}",
            c.predicate_calls.load(Ordering::Relaxed)
        );
    }
    if edition == Edition::V012 {
        println!("  assumed (ReSync)   {}", c.assumed.load(Ordering::Relaxed));
    }
    for r in c.rejections.lock().unwrap().iter().take(10) {
        println!("  rejection          {r}");
    }

    let partition = &dump["partitions"][0];
    println!("\nqueues");
    print_queue(&partition["root"], 0);

    println!("\nnodes (memory used %, vcore used %)");
    let mut utils: Vec<(String, f64, f64)> = partition["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| {
            let f = |k: &str, r: &str| n[k][r].as_f64().unwrap_or(0.0);
            (
                n["id"].as_str().unwrap_or("?").to_string(),
                pct(f("allocated", "memory"), f("capacity", "memory")),
                pct(f("allocated", "vcore"), f("capacity", "vcore")),
            )
        })
        .collect();
    for row in utils.chunks(4) {
        let cells: Vec<String> = row
            .iter()
            .map(|(id, m, v)| format!("{id} {m:5.1}% {v:5.1}%"))
            .collect();
        println!("  {}", cells.join("   "));
    }
    utils.sort_by(|a, b| a.1.total_cmp(&b.1));
    if let (Some(lo), Some(hi)) = (utils.first(), utils.last()) {
        let mean = utils.iter().map(|u| u.1).sum::<f64>() / utils.len() as f64;
        println!(
            "  memory used: min {:.1}% ({}), mean {mean:.1}%, max {:.1}% ({})",
            lo.1, lo.0, hi.1, hi.0
        );
    }
    let by_state: BTreeMap<String, usize> = partition["applications"]
        .as_array()
        .into_iter()
        .flatten()
        .fold(BTreeMap::new(), |mut m, a| {
            *m.entry(a["state"].as_str().unwrap_or("?").to_string())
                .or_default() += 1;
            m
        });
    println!("\napplication states  {by_state:?}");
    if let (Some(path), Some(rec)) = (&args.html, c.report.get()) {
        let meta = vec![
            ("library".into(), format!("sicore {}", library_version())),
            ("edition".into(), edition.label().to_string()),
            ("configuration".into(), config_name.to_string()),
            ("seed".into(), args.seed.to_string()),
            ("nodes".into(), args.nodes.to_string()),
            (
                "applications".into(),
                format!("{} in {}", args.apps, args.queues),
            ),
            ("asks submitted".into(), args.asks.to_string()),
            ("allocations made".into(), made.to_string()),
            (
                "throughput".into(),
                format!(
                    "{:.0} allocations/s, asks submitted to last allocation",
                    made as f64 / last.max(1e-9)
                ),
            ),
        ];
        println!(
            "\nhtml report        {}",
            html::write(path, rec, &dump, meta)?
        );
    }
    Ok(())
}
