//! One RM's order: the messages the core made for it and nobody delivered
//! yet, the rules of when they go, and its callbacks one at a time.
//!
//! What the core produces is data ([`Outbound`], addressed by [`RmKey`]).
//! Whoever delivers it resolves the key to the RM's [`RmOrder`] and posts
//! it there: the service thread (for the dispatcher) or a test stepping
//! the core ([`deliver_posted`] then runs on the test's thread). From the
//! order, messages go out in the order they were made, at one of three
//! moments:
//!
//! - from the dispatcher (`rmproxy::dispatch`), woken once per message;
//! - before the RM is asked anything that depends on what it knows
//!   (`Predicates`, `PreemptionPredicates`): the core thread first
//!   delivers, itself, whatever is still queued;
//! - before a decision is announced to the RM's cache on the core thread
//!   (the ReSync barrier of a pass that asks between decisions,
//!   [`super::resync`]): the same, then the announcement.
//!
//! So an RM's answers are always current, and no delivery overtakes an
//! earlier one whichever thread makes it. Every callback of one RM runs
//! under the order's call lock: the core thread waits for that RM's
//! callback in flight only, never for the dispatcher or another RM.
//!
//! Container-state reports are not ordered (the dispatcher coalesces them
//! in a lane of their own), but they take the call lock too.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Weak};

use crossbeam_channel::Sender;
use parking_lot::Mutex;

use super::outcome::{NewAllocation, OutMsg, Outbound, RmKey};
use super::port::{same_registration, PredicateCheck, RmPort};
use crate::proto::si::v1 as si;

/// An ordered message waiting in an RM's queue.
pub(crate) enum Queued {
    Message(OutMsg),
    Resync(si::ReSyncSchedulerCacheArgs),
    Events(Vec<crate::events::Record>),
}

/// What the dispatcher is woken with: the next message of an RM's queue
/// (one wake-up per message queued; the core thread may have delivered the
/// message by then), or a container-state report.
pub enum Posted {
    /// Deliver the oldest message queued for this RM, if any is left.
    Next(Arc<RmOrder>),
    /// A container-state report (the dispatcher's coalesced lane).
    Report(Arc<RmOrder>, si::UpdateContainerSchedulingStateRequest),
}

/// Delivers what was posted, on the calling thread, with what is queued
/// before it: a step-driven test's delivery, where no dispatcher is woken
/// for what a pass handed over.
pub fn deliver_posted(posted: Posted) {
    match posted {
        Posted::Next(order) => while order.deliver_next() {},
        Posted::Report(order, req) => order.report(&req),
    }
}

/// One registered RM's callbacks, its undelivered messages and the lock
/// its callbacks run under (see the module doc). The core holds one per
/// registration.
pub struct RmOrder {
    key: RmKey,
    callback: Arc<dyn RmPort>,
    queue: Mutex<VecDeque<Queued>>,
    calls: Mutex<()>,
    /// The dispatcher's inbox (none for a core stepped by a test), and
    /// this order, to wake the dispatcher for what a pass hands over
    /// ([`RmOrder::hand_over`]).
    wake: Option<Sender<Posted>>,
    me: Weak<RmOrder>,
}

impl std::fmt::Debug for RmOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RmOrder")
            .field("key", &self.key)
            .field("queued", &self.queue.lock().len())
            .finish()
    }
}

impl RmOrder {
    /// The order of registration `key`, whose callbacks are `callback`,
    /// with nothing queued; it wakes the dispatcher through `wake` for
    /// what a pass hands over.
    pub fn new(key: RmKey, callback: Arc<dyn RmPort>, wake: Option<Sender<Posted>>) -> Arc<Self> {
        Arc::new_cyclic(|me| RmOrder {
            key,
            callback,
            queue: Mutex::new(VecDeque::new()),
            calls: Mutex::new(()),
            wake,
            me: me.clone(),
        })
    }

    /// The registration this order serves.
    pub fn key(&self) -> RmKey {
        self.key
    }

    /// Queues a message a pass made ahead of what the core thread is about
    /// to deliver, and wakes the dispatcher for it: it goes out off the
    /// core thread unless the core thread's next delivery to this RM finds
    /// it still queued (it is then delivered first, there).
    pub(crate) fn hand_over(&self, item: Queued) {
        self.queue.lock().push_back(item);
        if let (Some(wake), Some(me)) = (&self.wake, self.me.upgrade()) {
            let _ = wake.send(Posted::Next(me));
        }
    }

    /// Queues what the core produced for this RM (the caller resolved its
    /// key to this order), in the order produced, and says what to wake
    /// the dispatcher with.
    pub fn post(self: &Arc<Self>, item: Outbound) -> Posted {
        let queued = match item {
            Outbound::ContainerState(_, req) => return Posted::Report(self.clone(), req),
            Outbound::Message(_, m) => Queued::Message(m),
            Outbound::Resync(_, args) => Queued::Resync(args),
            Outbound::Events(_, records) => Queued::Events(records),
        };
        self.queue.lock().push_back(queued);
        Posted::Next(self.clone())
    }

    /// The dispatcher's delivery: the oldest queued message, unless the core
    /// thread delivered it already. Waits for this RM's callback in flight.
    /// Returns whether there was one.
    pub fn deliver_next(&self) -> bool {
        let _one = self.calls.lock();
        let next = self.queue.lock().pop_front();
        let found = next.is_some();
        if let Some(item) = next {
            deliver(&*self.callback, item);
        }
        found
    }

    /// Drops what is queued unsent (shutdown abandons pending work).
    pub fn discard(&self) {
        self.queue.lock().clear();
    }

    /// Delivers one container-state report, one callback at a time.
    pub fn report(&self, req: &si::UpdateContainerSchedulingStateRequest) {
        self.one_at_a_time(|cb| {
            guarded("UpdateContainerSchedulingState", || {
                cb.container_state(req);
                Ok(())
            })
        });
    }

    /// Tells the RM's cache of `batch` on this (the core) thread, after
    /// what is still queued for it. A failing or panicking callback is
    /// logged and the pass goes on: the decisions stand, and their
    /// announcement still goes.
    pub fn assume_now(&self, batch: &[Arc<NewAllocation>]) {
        if batch.is_empty() {
            return;
        }
        self.in_order(|cb| {
            guarded("ReSyncSchedulerCache", || cb.assume(batch));
        });
    }

    /// The RM's `Predicates` answer, asked after everything queued for it
    /// has been delivered: an answer from a cache that knows every earlier
    /// decision.
    pub fn ask_predicates(&self, args: &PredicateCheck<'_>) -> Result<(), String> {
        self.in_order(|cb| cb.predicates(args))
    }

    /// The RM's `PreemptionPredicates` answer (see
    /// [`RmPort::preemption_predicates`]), asked as [`Self::ask_predicates`]
    /// is. A panicking callback counts as a refusal.
    pub fn ask_preemption_predicates(
        &self,
        ask: &str,
        node: &str,
        victims: &[String],
        start_index: i32,
    ) -> Option<Option<i32>> {
        self.in_order(|cb| {
            catch_unwind(AssertUnwindSafe(|| {
                cb.preemption_predicates(ask, node, victims, start_index)
            }))
            .unwrap_or(Some(None))
        })
    }

    /// Whether `registration` is this order's RM: its callback object as
    /// the RM registered it, or this order (what the core hands out).
    pub fn is_registration(&self, registration: &Arc<dyn RmPort>) -> bool {
        same_registration(&self.callback, registration)
            || std::ptr::eq(
                (self as *const Self).cast::<()>(),
                Arc::as_ptr(registration).cast::<()>(),
            )
    }

    /// Runs one callback under the call lock.
    fn one_at_a_time<T>(&self, f: impl FnOnce(&dyn RmPort) -> T) -> T {
        let _one = self.calls.lock();
        f(&*self.callback)
    }

    /// Runs a callback under the call lock, after what is still queued for
    /// this RM (made earlier) has been delivered, in order.
    fn in_order<T>(&self, f: impl FnOnce(&dyn RmPort) -> T) -> T {
        let _one = self.calls.lock();
        // Only the core thread queues, and it is here: the queue cannot
        // grow meanwhile. One check when empty, the common case.
        loop {
            let next = self.queue.lock().pop_front();
            let Some(item) = next else { break };
            deliver(&*self.callback, item);
        }
        f(&*self.callback)
    }
}

/// Runs a delivery, logging an error it returns or a panic.
fn guarded(what: &str, f: impl FnOnce() -> Result<(), String>) {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => log::warn!("RM callback {what} returned an error: {e}"),
        Err(_) => log::error!("RM callback {what} panicked; the message was dropped"),
    }
}

/// Delivers one queued message to its RM's callback.
fn deliver(cb: &dyn RmPort, item: Queued) {
    match item {
        Queued::Message(OutMsg::Assume(v)) => guarded("ReSyncSchedulerCache", || cb.assume(&v)),
        Queued::Message(m) => guarded(callback_name(&m), || cb.deliver(&m)),
        Queued::Resync(args) => guarded("ReSyncSchedulerCache", || cb.resync(&args)),
        Queued::Events(records) => guarded("SendEvent", || {
            cb.records(&records);
            Ok(())
        }),
    }
}

/// The SI callback a message goes to, for logs.
fn callback_name(m: &OutMsg) -> &'static str {
    match m {
        OutMsg::Application(_) => "UpdateApplication",
        OutMsg::Node(_) => "UpdateNode",
        OutMsg::Assume(_) => "ReSyncSchedulerCache",
        _ => "UpdateAllocation",
    }
}

/// The RM as the core hands it out (the REST service's dump and
/// configuration calls): every call waits for the RM's callback in flight,
/// and what delivers comes after everything queued for the RM.
impl RmPort for RmOrder {
    fn deliver(&self, msg: &OutMsg) -> Result<(), String> {
        self.in_order(|cb| cb.deliver(msg))
    }

    fn assume(&self, allocations: &[Arc<NewAllocation>]) -> Result<(), String> {
        self.in_order(|cb| cb.assume(allocations))
    }

    fn resync(&self, args: &si::ReSyncSchedulerCacheArgs) -> Result<(), String> {
        self.in_order(|cb| cb.resync(args))
    }

    fn predicates(&self, args: &PredicateCheck<'_>) -> Result<(), String> {
        self.ask_predicates(args)
    }

    fn has_predicates(&self) -> bool {
        self.callback.has_predicates()
    }

    fn preemption_predicates(
        &self,
        ask: &str,
        node: &str,
        victims: &[String],
        start_index: i32,
    ) -> Option<Option<i32>> {
        self.in_order(|cb| cb.preemption_predicates(ask, node, victims, start_index))
    }

    fn has_preemption_predicates(&self) -> bool {
        self.callback.has_preemption_predicates()
    }

    fn records(&self, records: &[crate::events::Record]) {
        self.in_order(|cb| cb.records(records))
    }

    fn container_state(&self, r: &si::UpdateContainerSchedulingStateRequest) {
        self.one_at_a_time(|cb| cb.container_state(r))
    }

    fn has_container_state(&self) -> bool {
        self.callback.has_container_state()
    }

    fn state_dump(&self) -> Option<Result<String, String>> {
        self.one_at_a_time(|cb| cb.state_dump())
    }

    fn update_configuration(
        &self,
        request: &si::UpdateConfigurationRequest,
    ) -> si::UpdateConfigurationResponse {
        self.one_at_a_time(|cb| cb.update_configuration(request))
    }
}
