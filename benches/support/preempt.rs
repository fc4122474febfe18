//! The preemption case of the bench (`-- --preemption-decision [NODES
//! ALLOCS]`): how long one guarantee-preemption decision takes on a full
//! cluster. `root.a` fills every node (`ALLOCS` allocations of `{memory:
//! 10, vcore: 1}`, ten per node); then, one at a time, a request of the same
//! size arrives in `root.b` (below its guarantee, `preemption.delay: 1ms`).
//! The request's first pass finds it too young to preempt; 5 ms later an
//! empty `UpdateAllocation` wakes the core for one pass, which walks the
//! nodes (none has room), finds the potential victims (every allocation of
//! `root.a`), builds a victim list per node, checks one node with the RM
//! (`Predicates{allocate: false}` with `--predicates`) and releases the
//! victim. Timed from that wake-up until the RM holds the
//! `PREEMPTED_BY_SCHEDULER` release; the RM then confirms and the
//! preemptor is allocated, so the next decision starts from a full cluster
//! again.

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prost::Message;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;
use sicore_c_rm::{
    get, new_scheduler, register, table, wait_until, Counters, Installed, Rm, UpdateFn,
};

const CONFIG: &str = "
partitions:
  - name: default
    preemption: {enabled: true}
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources: {guaranteed: {memory: 1000, vcore: 100}}
            properties: {application.sort.policy: fifo}
          - name: b
            resources: {guaranteed: {memory: 100000000, vcore: 10000000}}
            properties: {application.sort.policy: fifo, preemption.delay: 1ms}
";

#[derive(Default)]
pub struct PreemptRm {
    sched: AtomicPtr<sicore_scheduler>,
    pub counters: Counters,
    /// Victims released to the RM: application, UUID, when they arrived.
    pub victims: Mutex<Vec<(String, String, Instant)>>,
}

impl Rm for PreemptRm {
    fn update_allocation(&self, m: si::AllocationResponse) -> Result<(), String> {
        let now = Instant::now();
        let preempted = si::TerminationType::PreemptedByScheduler as i32;
        {
            let mut v = self.victims.lock().unwrap();
            for r in m
                .released
                .iter()
                .filter(|r| r.termination_type == preempted)
            {
                v.push((r.application_id.clone(), r.uuid.clone(), now));
            }
        }
        self.counters.allocation(&m);
        Ok(())
    }
    fn update_application(&self, m: si::ApplicationResponse) -> Result<(), String> {
        self.counters.application(&m);
        Ok(())
    }
    fn update_node(&self, m: si::NodeResponse) -> Result<(), String> {
        self.counters.node(&m);
        Ok(())
    }
    fn predicates(&self, _m: si::PredicatesArgs) -> Result<(), String> {
        self.counters.predicate();
        Ok(())
    }
}

/// CPU time of the core thread (`sicore-core-*`), from the scheduler's
/// own statistics in /proc (nanoseconds, unlike the 10 ms ticks of `stat`).
pub fn core_cpu() -> Duration {
    let mut total = 0u64;
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for t in dir.flatten() {
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            if comm.starts_with("sicore-core") {
                let stat = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
                total += stat
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    Duration::from_nanos(total)
}

pub fn wait(what: &str, done: impl Fn() -> bool) {
    wait_until(what, Duration::from_secs(600), done).unwrap_or_else(|e| panic!("{e}"));
}

fn call(s: *mut sicore_scheduler, f: UpdateFn, m: &impl Message) {
    let (st, msg) = sicore_c_rm::call(s, f, m);
    assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
}

fn res(memory: i64, vcore: i64) -> Option<si::Resource> {
    sicore_c_rm::res(&[("memory", memory), ("vcore", vcore)])
}

/// A started scheduler with its RM registered and `nodes` nodes of
/// `per_node` allocations of `{memory: 10, vcore: 1}` each.
pub struct Cluster {
    pub s: *mut sicore_scheduler,
    pub state: Arc<PreemptRm>,
}

impl Cluster {
    pub fn start(config: &str, nodes: usize, per_node: i64, predicates: bool) -> Cluster {
        let mut opts = SchedulerOptions {
            disable_events: true,
            log_level: "warn".into(),
            // No retry pass of the waiting request between decisions: only
            // the wake-up runs one.
            scheduling_interval_ms: 600_000,
            outstanding_check_interval_ms: 3_600_000,
            ..Default::default()
        };
        opts.policy_configs.insert("bench".into(), config.into());
        let s = new_scheduler(&opts).unwrap_or_else(|e| panic!("{e}"));
        let state = Arc::new(PreemptRm::default());
        state.sched.store(s, Ordering::Release);
        state.counters.set_waiter(std::thread::current());
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
        for chunk in (0..nodes).collect::<Vec<_>>().chunks(10_000) {
            let list = chunk
                .iter()
                .map(|i| si::NodeInfo {
                    node_id: format!("node-{i:06}"),
                    action: si::node_info::ActionFromRm::Create as i32,
                    schedulable_resource: res(10 * per_node, per_node),
                    ..Default::default()
                })
                .collect();
            call(
                s,
                sicore_update_node,
                &si::NodeRequest {
                    nodes: list,
                    rm_id: "rm".into(),
                },
            );
        }
        wait("nodes", || get(&state.counters.nodes_accepted) == nodes);
        Cluster { s, state }
    }

    /// Adds applications (id, queue).
    pub fn apps(&self, apps: &[(String, String)]) {
        let before = get(&self.state.counters.apps_accepted);
        let new = apps
            .iter()
            .map(|(id, q)| si::AddApplicationRequest {
                application_id: id.clone(),
                queue_name: q.clone(),
                partition_name: "default".into(),
                ugi: Some(si::UserGroupInformation {
                    user: "bench".into(),
                    groups: vec![],
                }),
                ..Default::default()
            })
            .collect();
        call(
            self.s,
            sicore_update_application,
            &si::ApplicationRequest {
                new,
                rm_id: "rm".into(),
                ..Default::default()
            },
        );
        wait("apps", || {
            get(&self.state.counters.apps_accepted) == before + apps.len()
        });
    }

    /// An ask of `{memory: 10, vcore: 1}` repeated `repeat` times.
    pub fn ask(app: &str, key: String, repeat: i32) -> si::AllocationAsk {
        si::AllocationAsk {
            allocation_key: key,
            application_id: app.into(),
            partition_name: "default".into(),
            resource_ask: res(10, 1),
            max_allocations: repeat,
            ..Default::default()
        }
    }

    pub fn request(&self, asks: Vec<si::AllocationAsk>, releases: Vec<si::AllocationRelease>) {
        call(
            self.s,
            sicore_update_allocation,
            &si::AllocationRequest {
                asks,
                releases: (!releases.is_empty()).then_some(si::AllocationReleasesRequest {
                    allocations_to_release: releases,
                    ..Default::default()
                }),
                rm_id: "rm".into(),
            },
        )
    }

    /// Confirms the release of victims `from..` of the RM's list.
    pub fn confirm(&self, from: usize) {
        let releases: Vec<si::AllocationRelease> = self.state.victims.lock().unwrap()[from..]
            .iter()
            .map(|(app, uuid, _)| si::AllocationRelease {
                partition_name: "default".into(),
                application_id: app.clone(),
                uuid: uuid.clone(),
                termination_type: si::TerminationType::PreemptedByScheduler as i32,
                ..Default::default()
            })
            .collect();
        self.request(vec![], releases);
    }

    /// `decisions` decisions, each for a new request of `ask_app` in a
    /// full cluster of `allocs` allocations: each one's wall time and the
    /// core thread's CPU time over it.
    ///
    /// A decision is timed from the wake-up that follows the request's 1 ms
    /// delay. On a slow run (under valgrind, a loaded machine) the
    /// request's own pass can reach the ask after its delay and decide
    /// there, before the wake-up; that decision is timed from the request
    /// instead (its decoding and the pass over it included), and the count
    /// of such decisions is printed.
    pub fn decisions(
        &self,
        ask_app: &str,
        allocs: usize,
        decisions: usize,
    ) -> Vec<(Duration, Duration)> {
        let state = &self.state;
        let mut times = Vec::with_capacity(decisions);
        let mut early = 0;
        for i in 0..decisions {
            let asked_cpu = core_cpu();
            let asked = Instant::now();
            self.request(vec![Self::ask(ask_app, format!("b-{i}"), 1)], vec![]);
            // Past the 1 ms delay; then one pass.
            std::thread::sleep(Duration::from_millis(5));
            let woken_cpu = core_cpu();
            let woken = Instant::now();
            self.request(vec![], vec![]);
            wait("a victim", || state.victims.lock().unwrap().len() > i);
            let cpu = core_cpu();
            let at = state.victims.lock().unwrap()[i].2;
            if at >= woken {
                times.push((at - woken, cpu.saturating_sub(woken_cpu)));
            } else {
                early += 1;
                times.push((
                    at.saturating_duration_since(asked),
                    cpu.saturating_sub(asked_cpu),
                ));
            }
            self.confirm(i);
            wait("the preemptor's allocation", || {
                get(&state.counters.allocations) == allocs + i + 1
            });
        }
        assert_eq!(state.victims.lock().unwrap().len(), decisions);
        if early > 0 {
            eprintln!(
                "{early} of {decisions} decisions were made in their request's own pass, \
                 before the wake-up (a slow run): timed from the request"
            );
        }
        times
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        sicore_free(self.s);
    }
}

/// `decisions` preemption decisions on `nodes` nodes holding `allocs`
/// allocations; returns each decision's wall time and the core thread's
/// CPU time over it (the pass, and what the core did right after it
/// before the RM's thread woke).
pub fn run(
    nodes: usize,
    allocs: usize,
    decisions: usize,
    predicates: bool,
) -> Vec<(Duration, Duration)> {
    assert!(allocs % nodes == 0, "ALLOCS must be a multiple of NODES");
    let per_node = (allocs / nodes) as i64;
    let c = Cluster::start(CONFIG, nodes, per_node, predicates);
    c.apps(&[
        ("app-a".into(), "root.a".into()),
        ("app-b".into(), "root.b".into()),
    ]);
    c.request(
        vec![Cluster::ask("app-a", "fill".into(), allocs as i32)],
        vec![],
    );
    wait("the cluster full", || {
        get(&c.state.counters.allocations) == allocs
    });
    c.decisions("app-b", allocs, decisions)
}
