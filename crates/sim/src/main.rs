//! `sicore-sim`: a simulated resource manager that drives the scheduler
//! through the same `extern "C"` functions a C resource manager uses, with
//! its own callback table, and reports what the scheduler did.
//!
//! With no arguments it runs the built-in workload on the embedded default
//! configuration: 100 nodes, 4 applications in 3 queues, 10,000 asks.
//! `--html FILE` also writes a visual report of the run (see `report.rs`);
//! `--serve ADDR` keeps the scheduler and its REST service up afterwards.
//! `--edition v1` runs the same workload through the SI v1.8 family
//! (`sicore_v1_*`) instead of v0.12 (see docs/simulator.md).

mod html;
mod preempt;
mod report;
mod serve;
mod tenants;
mod workload;

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
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1::SchedulerOptions;
use sicore_c_rm::v1::RmV1;
use sicore_c_rm::{table, take_string, Installed, Rm, UpdateFn};

/// The SI edition the simulated RM registers through.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Edition {
    /// SI v0.12: `sicore_*`, queues from the scheduler's options.
    #[value(name = "v0.12")]
    V012,
    /// SI v1.8: `sicore_v1_*`, queues in the registration's `config`, one
    /// request per allocation (v1 has no repeat count).
    #[value(name = "v1")]
    V1,
}

impl Edition {
    /// How the reports name the edition.
    fn label(self) -> &'static str {
        match self {
            Edition::V012 => "SI v0.12",
            Edition::V1 => "SI v1.8",
        }
    }
}

/// The workload a run drives.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Workload {
    /// `--nodes` nodes, `--apps` applications over `--queues`, `--asks` asks.
    Default,
    /// Users and groups under `limits` at several queue levels, with mixed
    /// priorities; the reports check every tenant against its caps.
    Tenants,
    /// One queue fills the cluster, then a queue below its guarantee
    /// submits work and gets its share back by preemption.
    Preemption,
}

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
    /// Bearer token that PUT requests to the --serve REST service must
    /// carry; beyond loopback, without one, changes are refused (see
    /// docs/rest-access.md).
    #[arg(long, value_name = "TOKEN", requires = "serve")]
    rest_token: Option<String>,
    /// A Host header value the --serve REST service accepts besides
    /// localhost and its address ("name", "name:port", "name:*",
    /// "*.domain"); repeatable (see docs/rest-access.md).
    #[arg(long, value_name = "HOST", requires = "serve")]
    rest_allowed_host: Vec<String>,
    /// The SI edition the RM speaks: v0.12 (`sicore_*`) or v1 (SI v1.8,
    /// `sicore_v1_*`). The gang workload needs v0.12.
    #[arg(long, value_enum, default_value = "v0.12")]
    edition: Edition,
    /// The workload: default (the flags above), tenants (user and group
    /// limits, mixed priorities) or preemption (a guaranteed queue takes
    /// its share back); see docs/simulator.md.
    #[arg(long, value_enum, default_value = "default")]
    workload: Workload,
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
    /// `--edition v1 --html`: each application's queue, since a v1
    /// allocation does not name its queue and the report charts by queue.
    queue_of: OnceLock<foldhash::HashMap<String, String>>,
    /// The policy workloads (workload.rs): what the RM holds and how it
    /// answers a preemption; unset for the default workload.
    policy: OnceLock<workload::RmState>,
}

impl std::ops::Deref for Counters {
    type Target = sicore_c_rm::Counters;
    fn deref(&self) -> &Self::Target {
        &self.base
    }
}

impl Counters {
    /// Notes the time of the latest (and the first) allocation.
    fn note_allocation_time(&self) {
        let since = self
            .start
            .lock()
            .unwrap()
            .map_or(0, |s| s.elapsed().as_nanos() as u64);
        let _ = self
            .first_alloc_ns
            .compare_exchange(0, since, Ordering::SeqCst, Ordering::SeqCst);
        self.last_alloc_ns.store(since, Ordering::SeqCst);
    }

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
        if let Some(p) = self.policy.get() {
            p.on_allocation(&m, self.report.get());
        }
        if !m.new.is_empty() {
            self.note_allocation_time();
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

    fn predicates(&self, m: si::PredicatesArgs) -> Result<(), String> {
        self.base.predicate();
        if let Some(p) = self.policy.get() {
            p.on_predicates(m.allocate);
        }
        Ok(())
    }

    fn resync_scheduler_cache(&self, m: si::ReSyncSchedulerCacheArgs) -> Result<(), String> {
        self.base.resync(&m);
        Ok(())
    }
}

/// The v0.12 form of a v1 allocation response, for the `--html` recorder:
/// the key stands for the UUID, and the queue is the application's.
fn v012_allocations(
    m: &si18::AllocationResponse,
    queue_of: Option<&foldhash::HashMap<String, String>>,
) -> si::AllocationResponse {
    let resource = |r: &Option<si18::Resource>| {
        r.as_ref().map(|r| si::Resource {
            resources: r
                .resources
                .iter()
                .map(|(k, q)| (k.clone(), si::Quantity { value: q.value }))
                .collect(),
        })
    };
    si::AllocationResponse {
        new: m
            .new
            .iter()
            .map(|a| si::Allocation {
                uuid: a.allocation_key.clone(),
                allocation_key: a.allocation_key.clone(),
                node_id: a.node_id.clone(),
                application_id: a.application_id.clone(),
                queue_name: queue_of
                    .and_then(|q| q.get(&a.application_id))
                    .cloned()
                    .unwrap_or_default(),
                resource_per_alloc: resource(&a.resource_per_alloc),
                ..Default::default()
            })
            .collect(),
        released: m
            .released
            .iter()
            .map(|r| si::AllocationRelease {
                uuid: r.allocation_key.clone(),
                application_id: r.application_id.clone(),
                partition_name: r.partition_name.clone(),
                termination_type: r.termination_type,
                message: r.message.clone(),
            })
            .collect(),
        rejected: m
            .rejected_allocations
            .iter()
            .map(|r| si::RejectedAllocationAsk {
                allocation_key: r.allocation_key.clone(),
                application_id: r.application_id.clone(),
                reason: r.reason.clone(),
            })
            .collect(),
        ..Default::default()
    }
}

/// The same counting and recording over the SI v1.8 family.
impl RmV1 for Counters {
    fn update_allocation(&self, m: si18::AllocationResponse) -> Result<(), String> {
        if let Some(r) = self.report.get() {
            r.on_allocation(&v012_allocations(&m, self.queue_of.get()));
        }
        if let Some(p) = self.policy.get() {
            p.on_allocation_v1(&m, self.report.get());
        }
        if !m.new.is_empty() {
            self.note_allocation_time();
        }
        self.base.allocation_v1(&m);
        self.keep_rejections(
            m.rejected_allocations
                .iter()
                .map(|x| format!("ask {}: {}", x.allocation_key, x.reason)),
        );
        Ok(())
    }

    fn update_application(&self, m: si18::ApplicationResponse) -> Result<(), String> {
        if let Some(r) = self.report.get() {
            // The application messages are field for field the same wire in
            // both editions.
            if let Ok(old) = si::ApplicationResponse::decode(m.encode_to_vec().as_slice()) {
                r.on_application(&old);
            }
        }
        self.base.application_v1(&m);
        self.keep_rejections(
            m.rejected
                .iter()
                .map(|x| format!("application {}: {}", x.application_id, x.reason)),
        );
        Ok(())
    }

    fn update_node(&self, m: si18::NodeResponse) -> Result<(), String> {
        self.base.node_v1(&m);
        self.keep_rejections(
            m.rejected
                .iter()
                .map(|x| format!("node {}: {}", x.node_id, x.reason)),
        );
        Ok(())
    }

    fn predicates(&self, _m: si18::PredicatesArgs) -> Result<(), String> {
        self.base.predicate();
        Ok(())
    }

    fn preemption_predicates(
        &self,
        m: si18::PreemptionPredicatesArgs,
    ) -> si18::PreemptionPredicatesResponse {
        match self.policy.get() {
            Some(p) => p.preemption_predicates(&m),
            None => si18::PreemptionPredicatesResponse {
                success: false,
                index: -1,
            },
        }
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

/// A v0.12 node of the workload as the v1 RM sends it.
fn v1_node(n: si::NodeInfo) -> si18::NodeInfo {
    si18::NodeInfo {
        node_id: n.node_id,
        attributes: n.attributes,
        action: si18::node_info::ActionFromRm::Create as i32,
        schedulable_resource: n.schedulable_resource.map(v1_resource),
    }
}

fn v1_resource(r: si::Resource) -> si18::Resource {
    si18::Resource {
        resources: r
            .resources
            .into_iter()
            .map(|(k, q)| (k, si18::Quantity { value: q.value }))
            .collect(),
    }
}

/// A one-allocation ask of the workload as a v1 request.
fn v1_request(a: &si::AllocationAsk) -> si18::Allocation {
    si18::Allocation {
        allocation_key: a.allocation_key.clone(),
        application_id: a.application_id.clone(),
        allocation_tags: a.tags.clone(),
        partition_name: a.partition_name.clone(),
        resource_per_alloc: a.resource_ask.clone().map(v1_resource),
        ..Default::default()
    }
}

fn check(what: &str, st: sicore_status, err: sicore_buffer) -> Result<(), String> {
    sicore_c_rm::check(what, (st, take_string(err)))
}

/// Nodes per simulated rack.
const NODES_PER_RACK: usize = 20;

/// The host and rack attributes a Kubernetes shim sends, which the REST
/// service reports as `hostName` and `rackName` (web UI: node list).
fn node_attributes(index: usize, node_id: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("si.io/hostname".to_string(), node_id.to_string()),
        (
            "si.io/rackname".to_string(),
            format!("/rack-{:03}", index / NODES_PER_RACK),
        ),
    ])
}

/// The namespace and pod-name tags a Kubernetes shim puts on an ask; the
/// web UI shows `<namespace>/<podName>` as the allocation's display name.
fn pod_tags(namespace: &str, pod: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "kubernetes.io/meta/namespace".to_string(),
            namespace.to_string(),
        ),
        ("kubernetes.io/meta/podName".to_string(), pod.to_string()),
    ])
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
    let mark = |label: &str| {
        if let Some(r) = sim.counters.report.get() {
            r.mark(label);
        }
    };

    let (update_node, update_application, update_allocation): (UpdateFn, UpdateFn, UpdateFn) =
        match edition {
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
                    version: library_version(),
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
    if args.gang && args.edition != Edition::V012 {
        // gang.rs builds v0.12 task groups and placeholder replacement
        // through the v0.12 family; running it here would not be v1.
        eprintln!(
            "sicore-sim: --gang runs over SI v0.12 only; --edition {} is not supported for it",
            match args.edition {
                Edition::V012 => "v0.12",
                Edition::V1 => "v1",
            }
        );
        std::process::exit(2);
    }
    if args.workload != Workload::Default && args.gang {
        eprintln!(
            "sicore-sim: --gang is a workload of its own; it does not combine with --workload"
        );
        std::process::exit(2);
    }
    let result = if args.workload == Workload::Tenants {
        tenants::run(&args)
    } else if args.workload == Workload::Preemption {
        preempt::run(&args)
    } else if args.gang {
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
