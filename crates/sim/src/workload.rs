//! What the policy workloads (`--workload tenants`, `--workload
//! preemption`) share: a driver that speaks either SI edition, and the
//! RM's own state (the allocations it holds, which it releases later, and
//! its answer to a preemption: confirm each victim as a shim does once the
//! pod is gone).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prost::Message;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1::SchedulerOptions;
use sicore_c_rm::{table, Installed, UpdateFn};

use sicore_c_rm::convert::{v1_node, v1_request};

use crate::cli::{Args, Edition};
use crate::report;
use crate::rm::{library_version, register_sim, Counters, Sim, SI_V1_RELEASE};

/// One allocation the RM holds.
#[derive(Clone, Debug)]
pub struct Held {
    pub app: String,
    pub key: String,
}

/// The RM's side of a policy workload.
#[derive(Default)]
pub struct RmState {
    sched: AtomicPtr<sicore_scheduler>,
    /// Confirm victims from the callback that releases them.
    pub confirm_victims: AtomicBool,
    /// Allocations held, by UUID (the key in SI v1.x).
    pub held: Mutex<BTreeMap<String, Held>>,
    /// Victims released to the RM with `PREEMPTED_BY_SCHEDULER`.
    pub victims: AtomicUsize,
    /// Victims the RM confirmed.
    pub confirmed: AtomicUsize,
    /// Confirmations the library refused.
    pub confirm_failures: AtomicUsize,
    /// Releases the RM was told of (any termination type).
    pub released: AtomicUsize,
    /// `Predicates{allocate: false}` (the v0.12 preemption check) and
    /// `PreemptionPredicates` calls.
    pub preemption_checks: AtomicUsize,
    /// SI v1.9 `QUEUE_PREEMPTION` summaries received: (queue, message).
    pub quota_summaries: Mutex<Vec<(String, String)>>,
}

impl RmState {
    fn note_new<'a>(&self, new: impl Iterator<Item = (&'a str, &'a str, &'a str)>) {
        let mut held = self.held.lock().unwrap();
        for (uuid, app, key) in new {
            held.insert(
                uuid.to_string(),
                Held {
                    app: app.to_string(),
                    key: key.to_string(),
                },
            );
        }
    }

    fn note_released<'a>(&self, gone: impl Iterator<Item = &'a str>) {
        let mut held = self.held.lock().unwrap();
        for uuid in gone {
            held.remove(uuid);
            self.released.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// SI v0.12: a victim is confirmed with its release sent back; the core
    /// then echoes it with `STOPPED_BY_RM`, which frees it in the report.
    pub fn on_allocation(&self, m: &si::AllocationResponse, _rec: Option<&report::Recorder>) {
        self.note_new(m.new.iter().map(|a| {
            (
                a.uuid.as_str(),
                a.application_id.as_str(),
                a.allocation_key.as_str(),
            )
        }));
        self.note_released(m.released.iter().map(|r| r.uuid.as_str()));
        let victims: Vec<si::AllocationRelease> = m
            .released
            .iter()
            .filter(|r| r.termination_type == si::TerminationType::PreemptedByScheduler as i32)
            .cloned()
            .collect();
        if victims.is_empty() {
            return;
        }
        self.victims.fetch_add(victims.len(), Ordering::SeqCst);
        if !self.confirm_victims.load(Ordering::SeqCst) {
            return;
        }
        let n = victims.len();
        let req = si::AllocationRequest {
            rm_id: "sim".into(),
            releases: Some(si::AllocationReleasesRequest {
                allocations_to_release: victims
                    .into_iter()
                    .map(|r| si::AllocationRelease {
                        message: "pod preempted".into(),
                        ..r
                    })
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        };
        self.send(sicore_update_allocation, &req, n);
    }

    /// SI v1.x: the RM's `PREEMPTED_BY_SCHEDULER` release is the
    /// confirmation (the core sends no echo), so the report frees the
    /// victim when the RM confirms it.
    pub fn on_allocation_v1(&self, m: &si18::AllocationResponse, rec: Option<&report::Recorder>) {
        self.note_new(m.new.iter().map(|a| {
            (
                a.allocation_key.as_str(),
                a.application_id.as_str(),
                a.allocation_key.as_str(),
            )
        }));
        self.note_released(m.released.iter().map(|r| r.allocation_key.as_str()));
        let victims: Vec<si18::AllocationRelease> = m
            .released
            .iter()
            .filter(|r| r.termination_type == si18::TerminationType::PreemptedByScheduler as i32)
            .cloned()
            .collect();
        if victims.is_empty() {
            return;
        }
        self.victims.fetch_add(victims.len(), Ordering::SeqCst);
        if !self.confirm_victims.load(Ordering::SeqCst) {
            return;
        }
        let keys: Vec<String> = victims.iter().map(|v| v.allocation_key.clone()).collect();
        let n = victims.len();
        let req = si18::AllocationRequest {
            rm_id: "sim".into(),
            releases: Some(si18::AllocationReleasesRequest {
                allocations_to_release: victims
                    .into_iter()
                    .map(|r| si18::AllocationRelease {
                        message: "pod preempted".into(),
                        ..r
                    })
                    .collect(),
            }),
            ..Default::default()
        };
        if self.send(sicore_v1_update_allocation, &req, n) {
            if let Some(rec) = rec {
                for k in &keys {
                    rec.on_confirmed(k);
                }
            }
        }
    }

    fn send(&self, f: UpdateFn, req: &impl Message, n: usize) -> bool {
        let s = self.sched.load(Ordering::SeqCst);
        let bytes = req.encode_to_vec();
        let st = f(s, bytes.as_ptr(), bytes.len(), std::ptr::null_mut());
        if st == sicore_status::SICORE_OK {
            self.confirmed.fetch_add(n, Ordering::SeqCst);
            true
        } else {
            self.confirm_failures.fetch_add(1, Ordering::SeqCst);
            false
        }
    }

    /// A v0.12 `Predicates` call: `allocate: false` is a preemption check.
    pub fn on_predicates(&self, allocate: bool) {
        if !allocate {
            self.preemption_checks.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// SI v1.x `PreemptionPredicates`: every node fits once the victims
    /// up to the core's start index are gone.
    pub fn preemption_predicates(
        &self,
        m: &si18::PreemptionPredicatesArgs,
    ) -> si18::PreemptionPredicatesResponse {
        self.preemption_checks.fetch_add(1, Ordering::SeqCst);
        si18::PreemptionPredicatesResponse {
            success: true,
            index: m.start_index,
        }
    }

    /// Keeps the SI v1.9 `QUEUE_PREEMPTION` summaries (change detail 407,
    /// which the SI v1.x enum does not name) of a batch of records.
    pub fn on_records(&self, m: &sicore::proto::si18::sicore::si18::EventRecords) {
        const QUEUE_PREEMPTION: i32 = 407;
        let mut kept = self.quota_summaries.lock().unwrap();
        for r in &m.events {
            if r.event_change_detail == QUEUE_PREEMPTION {
                kept.push((r.object_id.clone(), r.message.clone()));
            }
        }
    }
}

/// A scheduler with the simulated RM registered in one edition, and the
/// calls of a workload in that edition's messages.
pub struct Driver {
    pub sim: Sim,
    pub edition: Edition,
    update_node: UpdateFn,
    update_application: UpdateFn,
    update_allocation: UpdateFn,
}

impl Driver {
    /// Registers with `config` (the queues) through `args.edition`; a
    /// `Predicates` callback (accepting every node) is installed when
    /// `predicates`. The recorder always runs: the text report's checks
    /// are made from it too.
    /// `events` are the record types the RM takes (`event_types`).
    pub fn start(
        args: &Args,
        config: &str,
        predicates: bool,
        events: &[&str],
    ) -> Result<Driver, String> {
        let mut options = SchedulerOptions {
            event_types: events.iter().map(|e| e.to_string()).collect(),
            ..Default::default()
        };
        let edition = args.edition;
        if edition == Edition::V012 {
            options
                .policy_configs
                .insert("queues".into(), config.to_string());
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
        let state = RmState::default();
        state.sched.store(sched, Ordering::SeqCst);
        let _ = sim.counters.policy.set(state);
        if let Some(path) = &args.html {
            std::fs::write(path, "").map_err(|e| format!("--html {}: {e}", path.display()))?;
        }
        let _ = sim.counters.report.set(report::Recorder::detailed(1024));
        let fns: (UpdateFn, UpdateFn, UpdateFn) = match edition {
            Edition::V012 => {
                let t = table(
                    &sim.counters,
                    Installed {
                        predicates,
                        resync_scheduler_cache: true,
                        ..Default::default()
                    },
                );
                register_sim(sim.sched, &t)?;
                (
                    sicore_update_node,
                    sicore_update_application,
                    sicore_update_allocation,
                )
            }
            Edition::V1 => {
                let t = sicore_c_rm::v1::table(&sim.counters, predicates);
                let req = si18::RegisterResourceManagerRequest {
                    rm_id: "sim".into(),
                    policy_group: "queues".into(),
                    version: SI_V1_RELEASE.into(),
                    config: v1_config(config),
                    ..Default::default()
                };
                sicore_c_rm::check(
                    "RegisterResourceManager (v1)",
                    sicore_c_rm::v1::register(sim.sched, &req, &t),
                )?;
                (
                    sicore_v1_update_node,
                    sicore_v1_update_application,
                    sicore_v1_update_allocation,
                )
            }
        };
        Ok(Driver {
            sim,
            edition,
            update_node: fns.0,
            update_application: fns.1,
            update_allocation: fns.2,
        })
    }

    pub fn rm(&self) -> &RmState {
        self.sim.counters.policy.get().expect("set at start")
    }

    pub fn counters(&self) -> &Counters {
        &self.sim.counters
    }

    /// Replaces the queues configuration as an operator's edit does: the
    /// policy group's text for SI v0.12, `UpdateConfiguration` (as the
    /// k8shim sends it when its ConfigMap changes) for SI v1.
    pub fn reload(&self, config: &str) -> Result<(), String> {
        match self.edition {
            Edition::V012 => {
                let group = "queues";
                let mut err = sicore_buffer::empty();
                let st = sicore_set_policy_config(
                    self.sim.sched,
                    group.as_ptr(),
                    group.len(),
                    config.as_ptr(),
                    config.len(),
                    &mut err,
                );
                crate::rm::check("set_policy_config", st, err)
            }
            Edition::V1 => self.sim.call(
                "UpdateConfiguration (v1)",
                sicore_v1_update_configuration,
                &si18::UpdateConfigurationRequest {
                    rm_id: "sim".into(),
                    policy_group: "queues".into(),
                    config: v1_config(config),
                    ..Default::default()
                },
            ),
        }
    }

    pub fn mark(&self, label: &str) {
        if let Some(r) = self.sim.counters.report.get() {
            r.mark(label);
        }
    }

    /// Creates the nodes and waits for the answer.
    pub fn nodes(&self, nodes: Vec<si::NodeInfo>) -> Result<(), String> {
        let n = nodes.len();
        match self.edition {
            Edition::V012 => self.sim.call(
                "UpdateNode",
                self.update_node,
                &si::NodeRequest {
                    nodes,
                    rm_id: "sim".into(),
                },
            )?,
            Edition::V1 => self.sim.call(
                "UpdateNode",
                self.update_node,
                &si18::NodeRequest {
                    nodes: nodes.into_iter().map(v1_node).collect(),
                    rm_id: "sim".into(),
                },
            )?,
        }
        self.sim.wait_for("nodes", Duration::from_secs(30), |c| {
            c.nodes_accepted.load(Ordering::SeqCst) + c.nodes_rejected.load(Ordering::SeqCst) >= n
        })?;
        match self.counters().nodes_rejected.load(Ordering::SeqCst) {
            0 => Ok(()),
            r => Err(format!("{r} nodes rejected")),
        }
    }

    /// Names every application's queue up front (SI v1.x allocations do
    /// not carry it, and the report charts by queue); call once, before
    /// the first [`Driver::apps`].
    pub fn declare(&self, apps: &[si::AddApplicationRequest]) {
        if self.edition == Edition::V1 {
            let _ = self.sim.counters.queue_of.set(
                apps.iter()
                    .map(|a| (a.application_id.clone(), a.queue_name.clone()))
                    .collect(),
            );
        }
    }

    /// Submits the applications (the same wire in both editions) and waits
    /// until each is accepted.
    pub fn apps(&self, apps: Vec<si::AddApplicationRequest>) -> Result<(), String> {
        let before = self.counters().apps_accepted.load(Ordering::SeqCst);
        let n = apps.len();
        self.sim.call(
            "UpdateApplication",
            self.update_application,
            &si::ApplicationRequest {
                new: apps,
                rm_id: "sim".into(),
                ..Default::default()
            },
        )?;
        self.sim
            .wait_for("applications", Duration::from_secs(30), |c| {
                c.apps_accepted.load(Ordering::SeqCst) + c.apps_rejected.load(Ordering::SeqCst)
                    >= before + n
            })?;
        match self.counters().apps_rejected.load(Ordering::SeqCst) {
            0 => Ok(()),
            r => Err(format!(
                "{r} applications rejected: {:?}",
                self.counters().rejections.lock().unwrap()
            )),
        }
    }

    /// Submits one-allocation asks, with their priorities. In SI v1.x each
    /// carries `preemptionPolicy` with `allowPreemptSelf: true` and
    /// `allowPreemptOther: preempt_other`; v0.12 has no such field (every
    /// ask may preempt and be preempted).
    pub fn asks(&self, asks: &[si::AllocationAsk], preempt_other: bool) -> Result<(), String> {
        match self.edition {
            Edition::V012 => self.sim.call(
                "UpdateAllocation",
                self.update_allocation,
                &si::AllocationRequest {
                    asks: asks.to_vec(),
                    rm_id: "sim".into(),
                    ..Default::default()
                },
            ),
            Edition::V1 => self.sim.call(
                "UpdateAllocation",
                self.update_allocation,
                &si18::AllocationRequest {
                    allocations: asks
                        .iter()
                        .map(|a| si18::Allocation {
                            priority: match a.priority.as_ref().and_then(|p| p.priority.as_ref()) {
                                Some(si::priority::Priority::PriorityValue(v)) => *v,
                                _ => 0,
                            },
                            // As a k8shim sends it: every pod may be a
                            // victim, only some may preempt.
                            preemption_policy: Some(si18::PreemptionPolicy {
                                allow_preempt_self: true,
                                allow_preempt_other: preempt_other,
                            }),
                            ..v1_request(a)
                        })
                        .collect(),
                    rm_id: "sim".into(),
                    ..Default::default()
                },
            ),
        }
    }

    /// The RM stops these allocations (pods finished): `(application, UUID)`,
    /// the UUID being the key in SI v1.x; and withdraws these pending asks,
    /// `(application, key)`. One message, so that no pass runs between the
    /// two.
    pub fn release(
        &self,
        allocations: &[(String, String)],
        asks: &[(String, String)],
    ) -> Result<(), String> {
        // The pods are gone from the RM's side now, whatever order the
        // core's answers come in.
        for (_, uuid) in allocations {
            self.recorder().on_rm_release(uuid);
        }
        match self.edition {
            Edition::V012 => self.sim.call(
                "UpdateAllocation",
                self.update_allocation,
                &si::AllocationRequest {
                    rm_id: "sim".into(),
                    releases: Some(si::AllocationReleasesRequest {
                        allocations_to_release: allocations
                            .iter()
                            .map(|(app, uuid)| si::AllocationRelease {
                                partition_name: "default".into(),
                                application_id: app.clone(),
                                uuid: uuid.clone(),
                                termination_type: si::TerminationType::StoppedByRm as i32,
                                message: "pod finished".into(),
                            })
                            .collect(),
                        allocation_asks_to_release: asks
                            .iter()
                            .map(|(app, key)| si::AllocationAskRelease {
                                partition_name: "default".into(),
                                application_id: app.clone(),
                                allocationkey: key.clone(),
                                termination_type: si::TerminationType::StoppedByRm as i32,
                                message: "pod deleted".into(),
                            })
                            .collect(),
                    }),
                    ..Default::default()
                },
            ),
            Edition::V1 => self.sim.call(
                "UpdateAllocation",
                self.update_allocation,
                &si18::AllocationRequest {
                    rm_id: "sim".into(),
                    releases: Some(si18::AllocationReleasesRequest {
                        // A release by key takes a pending request too.
                        allocations_to_release: allocations
                            .iter()
                            .chain(asks)
                            .map(|(app, key)| si18::AllocationRelease {
                                partition_name: "default".into(),
                                application_id: app.clone(),
                                allocation_key: key.clone(),
                                termination_type: si18::TerminationType::StoppedByRm as i32,
                                message: "pod finished".into(),
                            })
                            .collect(),
                    }),
                    ..Default::default()
                },
            ),
        }
    }

    /// Waits until neither allocations nor releases have moved for
    /// `quiet`; fails after `timeout`.
    pub fn settle(&self, quiet: Duration, timeout: Duration) -> Result<(), String> {
        let count = || {
            self.counters().allocations.load(Ordering::SeqCst)
                + self.rm().released.load(Ordering::SeqCst)
        };
        let started = Instant::now();
        let (mut last, mut moved) = (count(), Instant::now());
        loop {
            self.sim.sample_waiting(moved.elapsed() < report::QUIET);
            std::thread::sleep(Duration::from_millis(5));
            let n = count();
            if n != last {
                (last, moved) = (n, Instant::now());
            } else if moved.elapsed() >= quiet {
                return Ok(());
            }
            if started.elapsed() > timeout {
                return Err(format!("the run did not settle within {timeout:?}"));
            }
        }
    }

    pub fn dump(&self) -> Result<serde_json::Value, String> {
        self.sim.dump()
    }

    pub fn recorder(&self) -> &report::Recorder {
        self.sim.counters.report.get().expect("set at start")
    }

    /// The report's header lines every workload has.
    pub fn meta(&self, args: &Args, workload: &str, config: &str) -> Vec<(String, String)> {
        vec![
            ("library".into(), format!("sicore {}", library_version())),
            ("edition".into(), self.edition.label().to_string()),
            ("workload".into(), workload.to_string()),
            ("configuration".into(), config.to_string()),
            ("seed".into(), args.seed.to_string()),
        ]
    }

    /// Writes `--html` (when asked) and serves `--serve` (when asked).
    pub fn finish(&self, args: &Args, report: &report::Report) -> Result<(), String> {
        if let Some(path) = &args.html {
            println!(
                "\nhtml report        {}",
                crate::html::write_report(path, report)?
            );
        }
        if args.serve.is_some() {
            crate::serve::until_interrupted(self.sim.sched)?;
        }
        Ok(())
    }
}

/// A one-allocation ask with a priority, tagged as a shim's pod.
pub fn ask(app: &str, key: &str, memory: i64, vcore: i64, priority: i32) -> si::AllocationAsk {
    si::AllocationAsk {
        allocation_key: key.into(),
        application_id: app.into(),
        tags: crate::shapes::pod_tags("sim", key),
        partition_name: "default".into(),
        resource_ask: crate::shapes::resource(memory, vcore),
        max_allocations: 1,
        priority: Some(si::Priority {
            priority: Some(si::priority::Priority::PriorityValue(priority)),
        }),
        ..Default::default()
    }
}

/// An application of `user` (in `groups`) in `queue`.
pub fn app(id: &str, queue: &str, user: &str, groups: &[&str]) -> si::AddApplicationRequest {
    si::AddApplicationRequest {
        application_id: id.into(),
        queue_name: queue.into(),
        partition_name: "default".into(),
        ugi: Some(si::UserGroupInformation {
            user: user.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }),
        ..Default::default()
    }
}

/// `count` nodes of this size, with a shim's host and rack attributes.
pub fn nodes(count: usize, memory: i64, vcore: i64) -> Vec<si::NodeInfo> {
    (0..count)
        .map(|i| {
            let node_id = format!("node-{i:05}");
            si::NodeInfo {
                attributes: crate::shapes::node_attributes(i, &node_id),
                node_id,
                action: si::node_info::ActionFromRm::Create as i32,
                schedulable_resource: crate::shapes::resource(memory, vcore),
                ..Default::default()
            }
        })
        .collect()
}

/// A built-in configuration as an SI v1 RM writes it. The simulator's RM
/// sends the same vcore numbers in both editions, so that both run the same
/// workload; a v1.x configuration reads a bare `vcore` in cores (stored in
/// millicores), so each `vcore: N` becomes `vcore: Nm`, the same stored N.
fn v1_config(config: &str) -> String {
    let mut out = String::with_capacity(config.len() + 16);
    let mut rest = config;
    while let Some(at) = rest.find("vcore: ") {
        let (head, tail) = rest.split_at(at + "vcore: ".len());
        out.push_str(head);
        let digits = tail.len() - tail.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        out.push_str(&tail[..digits]);
        if digits > 0 {
            out.push('m');
        }
        rest = &tail[digits..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod v1_config_tests {
    #[test]
    fn vcore_in_millicores() {
        assert_eq!(
            super::v1_config("a: {memory: 20, vcore: 20}\nb: {vcore: 4, memory: 1}"),
            "a: {memory: 20, vcore: 20m}\nb: {vcore: 4m, memory: 1}"
        );
        assert_eq!(super::v1_config("vcore: x"), "vcore: x");
    }
}
