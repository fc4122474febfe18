//! One RM's line from the core: its messages in the order the core made
//! them, and its callbacks one at a time.
//!
//! Two threads call an RM: the dispatcher, which delivers what the core
//! hands over after each step, and the core thread, whose `new` barrier
//! ([`super::resync`]) delivers a pass's decisions before the next
//! `Predicates` (and asks `Predicates` itself). So that the barrier's
//! delivery cannot overtake a message made before it, the core thread
//! hands each RM's messages to that RM's [`RmLink`] queue, and the
//! dispatcher takes them from there. The barrier goes through the link's
//! [`RmPort`] side, which first delivers, itself, what is
//! still queued for the same RM. Every callback of one RM runs under the
//! link's call lock, whichever thread makes it: the barrier waits for that
//! RM's callback in flight only, never for the dispatcher or another RM.
//!
//! Container-state reports are not ordered (the dispatcher coalesces them
//! in a lane of their own), but they take the call lock too.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Weak};

use crossbeam_channel::Sender;
use parking_lot::Mutex;

use super::outcome::{NewAllocation, OutMsg, Outbound};
use super::port::{same_registration, RmPort};
use crate::proto::si::v1 as si;

/// An ordered message waiting in an RM's queue.
pub(crate) enum Queued {
    Message(OutMsg),
    Resync(si::ReSyncSchedulerCacheArgs),
    Events(Vec<crate::events::Record>),
}

/// What the core thread hands the dispatcher: a wake-up for the next
/// message of an RM's queue (there is one per message queued; the barrier
/// may have delivered the message by then), or a container-state report.
pub enum Posted {
    /// Deliver the oldest message queued for this RM, if any is left.
    Next(Arc<RmLink>),
    /// A container-state report (the dispatcher's coalesced lane).
    Report(Arc<RmLink>, si::UpdateContainerSchedulingStateRequest),
}

/// One registered RM's callbacks, the messages the core handed over for
/// it and nobody delivered yet, and the lock its callbacks run under (see
/// the module doc). The core holds one per registration.
pub struct RmLink {
    callback: Arc<dyn RmPort>,
    queue: Mutex<VecDeque<Queued>>,
    calls: Mutex<()>,
    /// The dispatcher's inbox (none for a core stepped by a test), and
    /// this link, to wake the dispatcher for what the barrier hands over
    /// in the middle of a pass ([`RmLink::hand_over`]).
    wake: Option<Sender<Posted>>,
    me: Weak<RmLink>,
}

impl std::fmt::Debug for RmLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RmLink")
            .field("queued", &self.queue.lock().len())
            .finish()
    }
}

impl RmLink {
    /// A link to `callback`, with nothing queued, that wakes the
    /// dispatcher through `wake` for what it is handed mid-pass.
    pub fn new(callback: Arc<dyn RmPort>, wake: Option<Sender<Posted>>) -> Arc<Self> {
        Arc::new_cyclic(|me| RmLink {
            callback,
            queue: Mutex::new(VecDeque::new()),
            calls: Mutex::new(()),
            wake,
            me: me.clone(),
        })
    }

    /// Queues a message the core made in the middle of a pass, ahead of
    /// the decisions the barrier is about to deliver (`super::resync`),
    /// and wakes the dispatcher for it: it goes out off the core thread
    /// unless the barrier's next delivery finds it still queued (it is
    /// then delivered first, on the core thread).
    pub(crate) fn hand_over(&self, item: Queued) {
        self.queue.lock().push_back(item);
        if let (Some(wake), Some(me)) = (&self.wake, self.me.upgrade()) {
            let _ = wake.send(Posted::Next(me));
        }
    }

    /// Queues what the core produced for its RM (on the core thread, in the
    /// order produced) and says what to wake the dispatcher with.
    pub fn post(item: Outbound) -> Posted {
        let (link, queued) = match item {
            Outbound::ContainerState(link, req) => return Posted::Report(link, req),
            Outbound::Message(link, m) => (link, Queued::Message(m)),
            Outbound::Resync(link, args) => (link, Queued::Resync(args)),
            Outbound::Events(link, records) => (link, Queued::Events(records)),
        };
        link.queue.lock().push_back(queued);
        Posted::Next(link)
    }

    /// The dispatcher's delivery: the oldest queued message, unless the core
    /// thread delivered it already. Waits for this RM's callback in flight.
    pub fn deliver_next(&self) {
        let _one = self.calls.lock();
        let next = self.queue.lock().pop_front();
        if let Some(item) = next {
            deliver(&*self.callback, item);
        }
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

    /// Whether `registration` is this link's RM: its callback object as
    /// the RM registered it, or this link (what the core hands out).
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

    /// Runs a delivering callback under the call lock, after what is still
    /// queued for this RM (made earlier) has been delivered, in order.
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
        Queued::Message(m) => guarded(callback_name(&m), || cb.deliver(&m)),
        Queued::Resync(args) => guarded("ReSyncSchedulerCache", || cb.resync(&args)),
        Queued::Events(records) => guarded("SendEvent", || {
            cb.records(&records);
            Ok(())
        }),
    }
}

/// The SI callback a message goes to, for logs.
pub(crate) fn callback_name(m: &OutMsg) -> &'static str {
    match m {
        OutMsg::Application(_) => "UpdateApplication",
        OutMsg::Node(_) => "UpdateNode",
        _ => "UpdateAllocation",
    }
}

/// The core thread's side of the RM: what it delivers (the barrier) comes
/// after everything queued for the RM before it, and every call waits for
/// the RM's callback in flight on the dispatcher.
impl RmPort for RmLink {
    fn deliver(&self, msg: &OutMsg) -> Result<(), String> {
        self.in_order(|cb| cb.deliver(msg))
    }

    fn assume(&self, allocations: &[Arc<NewAllocation>]) -> Result<(), String> {
        self.in_order(|cb| cb.assume(allocations))
    }

    fn resync(&self, args: &si::ReSyncSchedulerCacheArgs) -> Result<(), String> {
        self.in_order(|cb| cb.resync(args))
    }

    fn predicates(&self, args: &si::PredicatesArgs) -> Result<(), String> {
        self.one_at_a_time(|cb| cb.predicates(args))
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
        self.one_at_a_time(|cb| cb.preemption_predicates(ask, node, victims, start_index))
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
