//! The simulated RM: what it has been told (counters, timing, rejection
//! reasons, report samples), its answers in both editions, and the
//! scheduler handle it drives.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use prost::Message;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::si18::v1 as si18;
use sicore_c_rm::v1::RmV1;
use sicore_c_rm::{take_string, Rm, UpdateFn};

use crate::{report, workload};

/// What the simulated RM has been told: the shared counters, and the
/// timing, the first rejection reasons and the `--html` samples.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) base: sicore_c_rm::Counters,
    pub(crate) first_alloc_ns: AtomicU64,
    pub(crate) last_alloc_ns: AtomicU64,
    pub(crate) start: Mutex<Option<Instant>>,
    pub(crate) rejections: Mutex<Vec<String>>,
    /// Samples for `--html`; unset (and free) otherwise.
    pub(crate) report: OnceLock<report::Recorder>,
    /// `--edition v1 --html`: each application's queue, since a v1
    /// allocation does not name its queue and the report charts by queue.
    pub(crate) queue_of: OnceLock<foldhash::HashMap<String, String>>,
    /// The policy workloads (workload.rs): what the RM holds and how it
    /// answers a preemption; unset for the default workload.
    pub(crate) policy: OnceLock<workload::RmState>,
}

impl std::ops::Deref for Counters {
    type Target = sicore_c_rm::Counters;
    fn deref(&self) -> &Self::Target {
        &self.base
    }
}

impl Counters {
    /// Notes the time of the latest (and the first) allocation.
    pub(crate) fn note_allocation_time(&self) {
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
    pub(crate) fn keep_rejections(&self, reasons: impl Iterator<Item = String>) {
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
pub(crate) fn v012_allocations(
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

/// The same counting and recording over the SI v1.x family.
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

    fn send_event(&self, m: sicore::proto::si18::sicore::si18::EventRecords) {
        if let Some(p) = self.policy.get() {
            p.on_records(&m);
        }
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

/// The release the simulated SI v1 RM registers as, as the k8shim sends
/// its own: the core gives an RM of 1.9 or later the v1.9 behaviour where
/// the releases differ (docs/si-v1.md), such as `QUEUE_PREEMPTION` records.
pub(crate) const SI_V1_RELEASE: &str = "1.9.0";

/// The version of the library the simulator runs on (`sicore_version()`).
pub(crate) fn library_version() -> String {
    // SAFETY: sicore_version returns a static NUL-terminated string.
    unsafe { std::ffi::CStr::from_ptr(sicore_version()) }
        .to_string_lossy()
        .into_owned()
}

/// Registers the simulated RM `sim` (policy group `queues`) with `table`.
pub(crate) fn register_sim(
    sched: *mut sicore_scheduler,
    table: &sicore_callbacks,
) -> Result<(), String> {
    let version = library_version();
    sicore_c_rm::check(
        "RegisterResourceManager",
        sicore_c_rm::register(sched, "sim", "queues", &version, table),
    )
}

pub(crate) fn check(what: &str, st: sicore_status, err: sicore_buffer) -> Result<(), String> {
    sicore_c_rm::check(what, (st, take_string(err)))
}

pub(crate) struct Sim {
    pub(crate) sched: *mut sicore_scheduler,
    pub(crate) counters: Arc<Counters>,
}

impl Sim {
    pub(crate) fn call(&self, what: &str, f: UpdateFn, msg: &impl Message) -> Result<(), String> {
        let bytes = msg.encode_to_vec();
        let mut err = sicore_buffer::empty();
        let st = f(self.sched, bytes.as_ptr(), bytes.len(), &mut err);
        check(what, st, err)
    }

    pub(crate) fn wait_for(
        &self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&Counters) -> bool,
    ) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        let (mut seen, mut moved) = (
            self.counters.allocations.load(Ordering::SeqCst),
            Instant::now(),
        );
        while !done(&self.counters) {
            if Instant::now() > deadline {
                return Err(format!("timed out waiting for {what}"));
            }
            let n = self.counters.allocations.load(Ordering::SeqCst);
            if n != seen {
                (seen, moved) = (n, Instant::now());
            }
            self.sample_waiting(moved.elapsed() < report::QUIET);
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    pub(crate) fn dump(&self) -> Result<serde_json::Value, String> {
        sicore_c_rm::dump(self.sched)
    }

    /// `--html`: samples why asks wait, when a sample is due (called from
    /// the loops that wait for the workload, `busy` while allocations are
    /// moving; free without `--html`).
    pub(crate) fn sample_waiting(&self, busy: bool) {
        if let Some(r) = self.counters.report.get() {
            r.sample_waiting(busy, || self.dump());
        }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        sicore_free(self.sched);
    }
}
