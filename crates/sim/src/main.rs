//! `sicore-sim`: a simulated resource manager that drives the scheduler
//! through the same `extern "C"` functions a C resource manager uses, with
//! its own callback table, and reports what the scheduler did.
//!
//! With no arguments it runs the built-in workload on the embedded default
//! configuration: 100 nodes, 4 applications in 3 queues, 10,000 asks.
//! `--html FILE` also writes a visual report of the run (see `report.rs`);
//! `--serve ADDR` keeps the scheduler and its REST service up afterwards.

mod html;
mod report;
mod serve;

use std::collections::BTreeMap;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

mod gang;

use clap::Parser;
use prost::Message;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;
use sicore_c_rm::{table, take_string, Installed, Rm, UpdateFn};

#[derive(Parser, Debug)]
#[command(
    version,
    about = "Simulated resource manager driving libsicore through its C ABI"
)]
struct Args {
    /// Number of nodes.
    #[arg(long, default_value_t = 100)]
    nodes: usize,
    /// Number of asks (each for one allocation).
    #[arg(long, default_value_t = 10_000)]
    asks: usize,
    /// Number of applications, spread over the queues.
    #[arg(long, default_value_t = 4)]
    apps: usize,
    /// Comma-separated queues the applications go to.
    #[arg(long, default_value = "root.team-a,root.team-b,root.batch")]
    queues: String,
    /// A queues.yaml to use instead of the embedded default.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Random seed for node sizes and ask shapes.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Install a Predicates callback (accepts every node) to include its cost.
    #[arg(long)]
    predicates: bool,
    /// Give up waiting when no allocation arrives for this many seconds.
    #[arg(long, default_value_t = 5)]
    stall_seconds: u64,
    /// Run the gang workload instead (gang.rs): placeholders first, then
    /// real asks that replace them; reports replacements per second.
    #[arg(long)]
    gang: bool,
    /// Gang workload: applications, one task group each.
    #[arg(long, default_value_t = 1000)]
    gang_apps: usize,
    /// Gang workload: members per task group.
    #[arg(long, default_value_t = 10)]
    gang_members: usize,
    /// Gang workload: nodes.
    #[arg(long, default_value_t = 5000)]
    gang_nodes: usize,
    /// Also write a self-contained HTML report (inline SVG, no network
    /// needed): allocations per second, queue usage against guaranteed and
    /// max, a node utilisation heat map and application states over time.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// After the workload, keep the scheduler and its REST service on ADDR
    /// (host:port, e.g. 127.0.0.1:9080) up until Ctrl-C.
    #[arg(long, value_name = "ADDR")]
    serve: Option<String>,
}

/// What the simulated RM has been told: the shared counters, and the
/// timing, the first rejection reasons and the `--html` samples.
#[derive(Default)]
struct Counters {
    base: sicore_c_rm::Counters,
    first_alloc_ns: AtomicU64,
    last_alloc_ns: AtomicU64,
    start: Mutex<Option<Instant>>,
    rejections: Mutex<Vec<String>>,
    /// Samples for `--html`; unset (and free) otherwise.
    report: OnceLock<report::Recorder>,
}

impl std::ops::Deref for Counters {
    type Target = sicore_c_rm::Counters;
    fn deref(&self) -> &Self::Target {
        &self.base
    }
}

impl Counters {
    /// Keeps the first few rejection reasons for the report.
    fn keep_rejections(&self, reasons: impl Iterator<Item = String>) {
        let mut kept = self.rejections.lock().unwrap();
        let room = 20usize.saturating_sub(kept.len());
        kept.extend(reasons.take(room));
    }
}

impl Rm for Counters {
    fn update_allocation(&self, m: si::AllocationResponse) -> Result<(), String> {
        if let Some(r) = self.report.get() {
            r.on_allocation(&m);
        }
        if !m.new.is_empty() {
            let since = self
                .start
                .lock()
                .unwrap()
                .map_or(0, |s| s.elapsed().as_nanos() as u64);
            let _ =
                self.first_alloc_ns
                    .compare_exchange(0, since, Ordering::SeqCst, Ordering::SeqCst);
            self.last_alloc_ns.store(since, Ordering::SeqCst);
        }
        self.base.allocation(&m);
        self.keep_rejections(
            m.rejected
                .iter()
                .map(|x| format!("ask {}: {}", x.allocation_key, x.reason)),
        );
        Ok(())
    }

    fn update_application(&self, m: si::ApplicationResponse) -> Result<(), String> {
        if let Some(r) = self.report.get() {
            r.on_application(&m);
        }
        self.base.application(&m);
        self.keep_rejections(
            m.rejected
                .iter()
                .map(|x| format!("application {}: {}", x.application_id, x.reason)),
        );
        Ok(())
    }

    fn update_node(&self, m: si::NodeResponse) -> Result<(), String> {
        self.base.node(&m);
        self.keep_rejections(
            m.rejected
                .iter()
                .map(|x| format!("node {}: {}", x.node_id, x.reason)),
        );
        Ok(())
    }

    fn predicates(&self, _m: si::PredicatesArgs) -> Result<(), String> {
        self.base.predicate();
        Ok(())
    }

    fn resync_scheduler_cache(&self, m: si::ReSyncSchedulerCacheArgs) -> Result<(), String> {
        self.base.resync(&m);
        Ok(())
    }
}

/// The version of the library the simulator runs on (`sicore_version()`).
fn library_version() -> String {
    // SAFETY: sicore_version returns a static NUL-terminated string.
    unsafe { std::ffi::CStr::from_ptr(sicore_version()) }
        .to_string_lossy()
        .into_owned()
}

/// Registers the simulated RM `sim` (policy group `queues`) with `table`.
fn register_sim(sched: *mut sicore_scheduler, table: &sicore_callbacks) -> Result<(), String> {
    let version = library_version();
    sicore_c_rm::check(
        "RegisterResourceManager",
        sicore_c_rm::register(sched, "sim", "queues", &version, table),
    )
}

fn check(what: &str, st: sicore_status, err: sicore_buffer) -> Result<(), String> {
    sicore_c_rm::check(what, (st, take_string(err)))
}

fn resource(memory: i64, vcore: i64) -> Option<si::Resource> {
    sicore_c_rm::res(&[("memory", memory), ("vcore", vcore)])
}

struct Sim {
    sched: *mut sicore_scheduler,
    counters: Arc<Counters>,
}

impl Sim {
    fn call(&self, what: &str, f: UpdateFn, msg: &impl Message) -> Result<(), String> {
        let bytes = msg.encode_to_vec();
        let mut err = sicore_buffer::empty();
        let st = f(self.sched, bytes.as_ptr(), bytes.len(), &mut err);
        check(what, st, err)
    }

    fn wait_for(
        &self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&Counters) -> bool,
    ) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        while !done(&self.counters) {
            if Instant::now() > deadline {
                return Err(format!("timed out waiting for {what}"));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    fn dump(&self) -> Result<serde_json::Value, String> {
        sicore_c_rm::dump(self.sched)
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        sicore_free(self.sched);
    }
}

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

fn run(args: Args) -> Result<(), String> {
    let mut rng = fastrand::Rng::with_seed(args.seed);
    let mut options = SchedulerOptions::default();
    let config_name = match &args.config {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            options.policy_configs.insert("queues".into(), text);
            path.display().to_string()
        }
        None => "embedded default".to_string(),
    };
    if let Some(addr) = &args.serve {
        options.rest_address = addr.clone();
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
    let mark = |label: &str| {
        if let Some(r) = sim.counters.report.get() {
            r.mark(label);
        }
    };

    let table = table(
        &sim.counters,
        Installed {
            predicates: args.predicates,
            resync_scheduler_cache: true,
            ..Default::default()
        },
    );
    register_sim(sim.sched, &table)?;

    // Nodes: memory around 400,000 and 250 vcores, so the default workload
    // (about 32M memory and 20k vcores in all) fits with room to spare.
    let nodes: Vec<si::NodeInfo> = (0..args.nodes)
        .map(|i| si::NodeInfo {
            node_id: format!("node-{i:05}"),
            action: si::node_info::ActionFromRm::Create as i32,
            schedulable_resource: resource(rng.i64(350_000..=450_000), rng.i64(200..=300)),
            ..Default::default()
        })
        .collect();
    mark("nodes submitted");
    sim.call(
        "UpdateNode",
        sicore_update_node,
        &si::NodeRequest {
            nodes,
            rm_id: "sim".into(),
        },
    )?;
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
    mark("applications submitted");
    sim.call(
        "UpdateApplication",
        sicore_update_application,
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
            si::AllocationAsk {
                allocation_key: format!("ask-{i}"),
                application_id: format!("app-{}", i % accepted_apps),
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
        sim.call(
            "UpdateAllocation",
            sicore_update_allocation,
            &si::AllocationRequest {
                asks: chunk.to_vec(),
                rm_id: "sim".into(),
                ..Default::default()
            },
        )?;
    }

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
        std::thread::sleep(Duration::from_millis(if tty { 50 } else { 5 }));
    }
    if tty {
        eprintln!();
    }
    mark("workload done");

    let c = &sim.counters;
    let made = c.allocations.load(Ordering::SeqCst);
    let first = c.first_alloc_ns.load(Ordering::SeqCst) as f64 / 1e9;
    let last = c.last_alloc_ns.load(Ordering::SeqCst) as f64 / 1e9;
    let dump = sim.dump()?;
    println!("sicore-sim report");
    println!("  library            sicore {}", library_version());
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
    println!("  assumed (ReSync)   {}", c.assumed.load(Ordering::Relaxed));
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
            ("configuration".into(), config_name.clone()),
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
    if args.serve.is_some() {
        serve::until_interrupted(sim.sched)?;
    }
    Ok(())
}

fn main() {
    let args = Args::parse();
    if args.gang && args.html.is_some() {
        eprintln!("sicore-sim: --html does not apply to --gang");
        std::process::exit(2);
    }
    let result = if args.gang {
        gang::run(gang::GangArgs {
            apps: args.gang_apps,
            members: args.gang_members,
            nodes: args.gang_nodes,
            predicates: args.predicates,
            stall_seconds: args.stall_seconds,
        })
    } else {
        run(args)
    };
    if let Err(e) = result {
        eprintln!("sicore-sim: {e}");
        std::process::exit(1);
    }
}
