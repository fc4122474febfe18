//! One resource manager over the C ABI, shared by the integration tests
//! (`tests/it/common`), the bench (`benches/`) and the simulator
//! (`crates/sim`): the `extern "C"` trampolines of a callback table, the
//! registration, the calls into the library and the messages of a set-up
//! (nodes, applications, asks), plus the counters the bench and the
//! simulator read.
//!
//! A user implements [`Rm`] on its own state (decoded messages in, an
//! error reason out) and gets a table with [`table`]; the library's
//! `release` drops the `Arc` the table holds.

pub mod convert;
mod trampoline;
pub mod v1;

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use prost::Message;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1 as sicore_pb;
use trampoline::{
    decode, notify_trampoline, reclaimed, register_with, reply_with, rm, status_trampoline,
};

/// What the RM does with each callback, decoded. An `Err` is the reason
/// the callback reports (non-zero, with the reason in the reply).
pub trait Rm: Send + Sync + 'static {
    /// New, released and rejected allocations (`update_allocation`).
    fn update_allocation(&self, _m: si::AllocationResponse) -> Result<(), String> {
        Ok(())
    }
    /// Accepted, rejected and updated applications (`update_application`).
    fn update_application(&self, _m: si::ApplicationResponse) -> Result<(), String> {
        Ok(())
    }
    /// Accepted, rejected and updated nodes (`update_node`).
    fn update_node(&self, _m: si::NodeResponse) -> Result<(), String> {
        Ok(())
    }
    /// May the allocation go on the node? `Err` says no (`predicates`).
    fn predicates(&self, _m: si::PredicatesArgs) -> Result<(), String> {
        Ok(())
    }
    /// The scheduler's decisions before a `predicates` call (`resync_scheduler_cache`).
    fn resync_scheduler_cache(&self, _m: si::ReSyncSchedulerCacheArgs) -> Result<(), String> {
        Ok(())
    }
    /// A batch of event records (`send_event`).
    fn send_event(&self, _m: sicore_pb::EventRecords) {}
    /// An ask's scheduling state (`update_container_scheduling_state`).
    fn update_container_scheduling_state(&self, _m: si::UpdateContainerSchedulingStateRequest) {}
    /// The library asks for the configuration (`update_configuration`); the
    /// default answers success with no change.
    fn update_configuration(
        &self,
        _m: si::UpdateConfigurationRequest,
    ) -> si::UpdateConfigurationResponse {
        si::UpdateConfigurationResponse {
            success: true,
            ..Default::default()
        }
    }
    /// The library is done with the table (its `release`).
    fn released(&self) {}
}

/// Which of the optional callbacks the table installs (the three
/// response callbacks and `release` always are).
#[derive(Clone, Copy, Debug, Default)]
pub struct Installed {
    /// `predicates`.
    pub predicates: bool,
    /// `resync_scheduler_cache`.
    pub resync_scheduler_cache: bool,
    /// `send_event`.
    pub send_event: bool,
    /// `update_container_scheduling_state`.
    pub update_container_scheduling_state: bool,
    /// `update_configuration`.
    pub update_configuration: bool,
}

impl Installed {
    /// Every callback.
    pub fn all() -> Self {
        Installed {
            predicates: true,
            resync_scheduler_cache: true,
            send_event: true,
            update_container_scheduling_state: true,
            update_configuration: true,
        }
    }
}

status_trampoline!(Rm, on_allocation, update_allocation, si::AllocationResponse);
status_trampoline!(
    Rm,
    on_application,
    update_application,
    si::ApplicationResponse
);
status_trampoline!(Rm, on_node, update_node, si::NodeResponse);
status_trampoline!(Rm, on_predicates, predicates, si::PredicatesArgs);
status_trampoline!(
    Rm,
    on_resync,
    resync_scheduler_cache,
    si::ReSyncSchedulerCacheArgs
);
notify_trampoline!(Rm, on_event, send_event);
notify_trampoline!(Rm, on_container_state, update_container_scheduling_state);

unsafe extern "C" fn on_update_configuration<R: Rm>(
    ud: *mut c_void,
    p: *const u8,
    len: usize,
    reply: *mut sicore_reply,
) {
    reply_with(reply, &rm::<R>(ud).update_configuration(decode(p, len)));
}

unsafe extern "C" fn on_release<R: Rm>(ud: *mut c_void) {
    // SAFETY: the Arc leaked by `table`; the library releases it once.
    unsafe { reclaimed::<R>(ud) }.released();
}

/// A callback table whose `user_data` holds a reference to `rm`, given
/// back by the library's `release`. When the library refuses the table
/// without taking it (a `struct_size` too small), reclaim it with
/// [`reclaim`].
pub fn table<R: Rm>(rm: &Arc<R>, installed: Installed) -> sicore_callbacks {
    sicore_callbacks {
        user_data: Arc::into_raw(rm.clone()) as *mut c_void,
        update_allocation: Some(on_allocation::<R>),
        update_application: Some(on_application::<R>),
        update_node: Some(on_node::<R>),
        predicates: installed.predicates.then_some(on_predicates::<R> as _),
        resync_scheduler_cache: installed
            .resync_scheduler_cache
            .then_some(on_resync::<R> as _),
        send_event: installed.send_event.then_some(on_event::<R> as _),
        update_container_scheduling_state: installed
            .update_container_scheduling_state
            .then_some(on_container_state::<R> as _),
        update_configuration: installed
            .update_configuration
            .then_some(on_update_configuration::<R> as _),
        release: Some(on_release::<R>),
        ..Default::default()
    }
}

/// Drops the reference a table made by [`table`] holds, for a table the
/// library did not take.
///
/// # Safety
/// `table.user_data` is the pointer [`table`] made for an `R`, and the
/// library has not taken (and so will not release) the table.
pub unsafe fn reclaim<R: Rm>(table: &sicore_callbacks) {
    // SAFETY: as the caller promises.
    drop(unsafe { Arc::from_raw(table.user_data as *const R) });
}

/// One of the asynchronous `sicore_update_*` entry points.
pub type UpdateFn =
    extern "C" fn(*mut sicore_scheduler, *const u8, usize, *mut sicore_buffer) -> sicore_status;

/// The text of a buffer the library returned, which it frees.
pub fn take_string(buf: sicore_buffer) -> String {
    if buf.data.is_null() {
        return String::new();
    }
    // SAFETY: a buffer the library returned, read once before it is freed.
    let s = String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(buf.data, buf.len) })
        .into_owned();
    sicore_buffer_free(buf);
    s
}

/// `Ok` for `SICORE_OK`, else the status and the library's message.
pub fn check(what: &str, (st, msg): (sicore_status, String)) -> Result<(), String> {
    if st == sicore_status::SICORE_OK {
        Ok(())
    } else {
        Err(format!("{what} failed with {st:?}: {msg}"))
    }
}

/// `sicore_new` with these options.
pub fn new_scheduler(
    options: &sicore_pb::SchedulerOptions,
) -> Result<*mut sicore_scheduler, String> {
    let bytes = options.encode_to_vec();
    let mut sched = std::ptr::null_mut();
    let mut err = sicore_buffer::empty();
    let st = sicore_new(bytes.as_ptr(), bytes.len(), &mut sched, &mut err);
    check("sicore_new", (st, take_string(err)))?;
    Ok(sched)
}

/// Registers RM `rm_id` with `policy_group` and `table`: the status and
/// the library's message.
pub fn register(
    s: *mut sicore_scheduler,
    rm_id: &str,
    policy_group: &str,
    version: &str,
    table: *const sicore_callbacks,
) -> (sicore_status, String) {
    let req = si::RegisterResourceManagerRequest {
        rm_id: rm_id.into(),
        version: version.into(),
        policy_group: policy_group.into(),
    };
    register_with(sicore_register_resource_manager, s, &req, table)
}

/// Calls an update entry point with raw bytes.
pub fn raw(s: *mut sicore_scheduler, f: UpdateFn, bytes: &[u8]) -> (sicore_status, String) {
    let mut err = sicore_buffer::empty();
    let st = f(s, bytes.as_ptr(), bytes.len(), &mut err);
    (st, take_string(err))
}

/// Calls an update entry point with an encoded message.
pub fn call(s: *mut sicore_scheduler, f: UpdateFn, m: &impl Message) -> (sicore_status, String) {
    raw(s, f, &m.encode_to_vec())
}

/// `sicore_update_configuration` for `rm_id`.
pub fn reload(s: *mut sicore_scheduler, rm_id: &str) -> (sicore_status, String) {
    let mut err = sicore_buffer::empty();
    let st = sicore_update_configuration(s, rm_id.as_ptr(), rm_id.len(), &mut err);
    (st, take_string(err))
}

/// The state dump, parsed.
pub fn dump(s: *mut sicore_scheduler) -> Result<serde_json::Value, String> {
    let mut json = sicore_buffer::empty();
    let mut err = sicore_buffer::empty();
    let st = sicore_state_dump(s, &mut json, &mut err);
    check("state dump", (st, take_string(err)))?;
    serde_json::from_str(&take_string(json)).map_err(|e| e.to_string())
}

/// Frees the scheduler when dropped, however a run ends.
pub struct Handle(pub *mut sicore_scheduler);

impl Drop for Handle {
    fn drop(&mut self) {
        sicore_free(self.0);
    }
}

// ---- Messages of a set-up ----

/// A resource of `(name, quantity)` pairs.
pub fn res(pairs: &[(&str, i64)]) -> Option<si::Resource> {
    Some(si::Resource {
        resources: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), si::Quantity { value: *v }))
            .collect(),
    })
}

/// A node to create with this memory and vcore.
pub fn node(id: &str, memory: i64, vcore: i64) -> si::NodeInfo {
    si::NodeInfo {
        node_id: id.into(),
        action: si::node_info::ActionFromRm::Create as i32,
        schedulable_resource: res(&[("memory", memory), ("vcore", vcore)]),
        ..Default::default()
    }
}

/// An application of `user` in `queue` of partition `default`.
pub fn app(id: &str, queue: &str, user: &str) -> si::AddApplicationRequest {
    si::AddApplicationRequest {
        application_id: id.into(),
        queue_name: queue.into(),
        partition_name: "default".into(),
        ugi: Some(si::UserGroupInformation {
            user: user.into(),
            groups: vec![],
        }),
        ..Default::default()
    }
}

/// An ask of `repeat` allocations of this memory and vcore.
pub fn ask(app: &str, key: &str, memory: i64, vcore: i64, repeat: i32) -> si::AllocationAsk {
    si::AllocationAsk {
        allocation_key: key.into(),
        application_id: app.into(),
        partition_name: "default".into(),
        resource_ask: res(&[("memory", memory), ("vcore", vcore)]),
        max_allocations: repeat,
        ..Default::default()
    }
}

/// Confirms, from inside `update_allocation`, the placeholders the core
/// released for replacement (a `PLACEHOLDER_REPLACED` release back), as a
/// shim does once it has stopped the placeholder pods. Returns how many it
/// confirmed and the status of the call (`None` when there were none).
pub fn confirm_replacements(
    s: *mut sicore_scheduler,
    rm_id: &str,
    released: &[si::AllocationRelease],
) -> Option<(usize, sicore_status)> {
    let confirm: Vec<si::AllocationRelease> = released
        .iter()
        .filter(|r| r.termination_type == si::TerminationType::PlaceholderReplaced as i32)
        .map(|r| si::AllocationRelease {
            message: String::new(),
            ..r.clone()
        })
        .collect();
    if confirm.is_empty() {
        return None;
    }
    let n = confirm.len();
    let req = si::AllocationRequest {
        rm_id: rm_id.into(),
        releases: Some(si::AllocationReleasesRequest {
            allocations_to_release: confirm,
            ..Default::default()
        }),
        ..Default::default()
    };
    let bytes = req.encode_to_vec();
    let st = sicore_update_allocation(s, bytes.as_ptr(), bytes.len(), std::ptr::null_mut());
    Some((n, st))
}

// ---- Counters, for the bench and the simulator ----

/// What an RM that only counts has been told. Every update wakes the
/// thread set with [`Counters::set_waiter`], so a waiter parks instead of
/// spinning; allocation updates wake it only once the count reaches the
/// bound set with [`Counters::wake_at_allocations`], if one is set.
#[derive(Default)]
pub struct Counters {
    /// New allocations, placeholders included.
    pub allocations: AtomicUsize,
    /// New allocations that are gang placeholders.
    pub placeholders: AtomicUsize,
    /// New allocations that are not placeholders.
    pub real: AtomicUsize,
    /// Asks the scheduler rejected.
    pub asks_rejected: AtomicUsize,
    /// Nodes accepted.
    pub nodes_accepted: AtomicUsize,
    /// Nodes rejected.
    pub nodes_rejected: AtomicUsize,
    /// Applications accepted.
    pub apps_accepted: AtomicUsize,
    /// Applications rejected.
    pub apps_rejected: AtomicUsize,
    /// Allocations reported to `resync_scheduler_cache` as assumed.
    pub assumed: AtomicUsize,
    /// Calls of `predicates`.
    pub predicate_calls: AtomicUsize,
    waiter: OnceLock<std::thread::Thread>,
    /// Allocation updates below this count wake no one (0: every one does).
    wake_at: AtomicUsize,
}

impl Counters {
    /// Wake this thread on every update.
    pub fn set_waiter(&self, t: std::thread::Thread) {
        let _ = self.waiter.set(t);
    }

    /// Allocation updates wake the waiter only once `allocations` reaches
    /// `n`. A benchmark waiting for its last allocation sets this: an SI
    /// v1.8 RM with Predicates is told of each decision in its own call on
    /// the core thread, and an unpark per call (a futex wake whenever the
    /// waiter is parked) would be timed as the scheduler's cost.
    pub fn wake_at_allocations(&self, n: usize) {
        self.wake_at.store(n, Ordering::Release);
    }

    /// Wakes the waiter if the allocation count has reached the bound.
    pub(crate) fn wake_for_allocations(&self) {
        if get(&self.allocations) >= self.wake_at.load(Ordering::Acquire) {
            self.wake();
        }
    }

    pub(crate) fn wake(&self) {
        if let Some(t) = self.waiter.get() {
            t.unpark();
        }
    }

    /// Counts the new (placeholder and real) allocations and the rejected asks.
    pub fn allocation(&self, m: &si::AllocationResponse) {
        let placeholders = m.new.iter().filter(|a| a.placeholder).count();
        self.placeholders.fetch_add(placeholders, Ordering::AcqRel);
        self.real
            .fetch_add(m.new.len() - placeholders, Ordering::AcqRel);
        self.allocations.fetch_add(m.new.len(), Ordering::AcqRel);
        self.asks_rejected
            .fetch_add(m.rejected.len(), Ordering::AcqRel);
        if m.rejected.is_empty() {
            self.wake_for_allocations();
        } else {
            // A waiter for allocations must learn that some never come.
            self.wake();
        }
    }

    /// Counts accepted and rejected applications.
    pub fn application(&self, m: &si::ApplicationResponse) {
        self.apps_accepted
            .fetch_add(m.accepted.len(), Ordering::AcqRel);
        self.apps_rejected
            .fetch_add(m.rejected.len(), Ordering::AcqRel);
        self.wake();
    }

    /// Counts accepted and rejected nodes.
    pub fn node(&self, m: &si::NodeResponse) {
        self.nodes_accepted
            .fetch_add(m.accepted.len(), Ordering::AcqRel);
        self.nodes_rejected
            .fetch_add(m.rejected.len(), Ordering::AcqRel);
        self.wake();
    }

    /// Counts one predicates call.
    pub fn predicate(&self) {
        self.predicate_calls.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts the assumed allocations of a ReSync.
    pub fn resync(&self, m: &si::ReSyncSchedulerCacheArgs) {
        self.assumed
            .fetch_add(m.assumed_allocations.len(), Ordering::Relaxed);
    }
}

/// An RM that only counts, deciding nothing (every node fits).
impl Rm for Counters {
    fn update_allocation(&self, m: si::AllocationResponse) -> Result<(), String> {
        self.allocation(&m);
        Ok(())
    }
    fn update_application(&self, m: si::ApplicationResponse) -> Result<(), String> {
        self.application(&m);
        Ok(())
    }
    fn update_node(&self, m: si::NodeResponse) -> Result<(), String> {
        self.node(&m);
        Ok(())
    }
    fn predicates(&self, _m: si::PredicatesArgs) -> Result<(), String> {
        self.predicate();
        Ok(())
    }
    fn resync_scheduler_cache(&self, m: si::ReSyncSchedulerCacheArgs) -> Result<(), String> {
        self.resync(&m);
        Ok(())
    }
}

/// Reads a counter.
pub fn get(c: &AtomicUsize) -> usize {
    c.load(Ordering::Acquire)
}

/// Waits (parked, woken by the counters' updates) until `done` holds, for
/// at most `timeout`.
pub fn wait_until(what: &str, timeout: Duration, done: impl Fn() -> bool) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    while !done() {
        if Instant::now() > deadline {
            return Err(format!("timed out waiting for {what}"));
        }
        std::thread::park_timeout(Duration::from_millis(5));
    }
    Ok(())
}
