//! The ReSync barrier: what keeps an RM's `Predicates` answers current.
//!
//! An RM answers `Predicates` from its own cache, and that cache learns of
//! the scheduler's decisions only through `ReSyncSchedulerCache` (assumed
//! allocations; an SI v1.x RM through `new`). One scheduling pass makes
//! many decisions, so when the RM has a `Predicates` callback the pass
//! goes through a [`ResyncBarrier`]:
//!
//! - every allocation the pass decides is recorded as pending;
//! - before each `Predicates` call, the pending allocations reach the RM
//!   in one `ReSyncSchedulerCache` call, on the core thread, through the
//!   RM's order ([`super::order`]), which first delivers whatever is still
//!   queued for the RM (decisions with no check between them stay in one
//!   batch);
//! - when the pass ends, what is still pending needs no barrier: it goes
//!   as data ([`OutMsg::Assume`]) right before the `UpdateAllocation` that
//!   announces it ([`OutMsg::NewAllocationsResynced`]), and the dispatcher
//!   delivers both. The next check of the RM, in a later pass, finds them
//!   delivered or delivers them first.
//!
//! Order. What the barrier delivers on the core thread must not overtake
//! anything made before it for the same RM. Messages of earlier steps are
//! queued in the RM's order, which delivers them first. Messages made
//! earlier in the same pass (an application's state change, a
//! preemption's release, another partition's allocations) are still in
//! the pass's [`Outcomes`], so when [`ResyncBarrier::record`] finds some
//! behind the allocations it holds, it delivers those allocations and
//! hands the messages to the RM's order (the dispatcher sends them
//! meanwhile; the next delivery on the core thread sends first what is
//! left) and marks them handed over ([`Outcomes::delivered`]) so that the
//! core does not post them again. A partition stepped by a test goes
//! through the same order, with no dispatcher.
//!
//! Without a `Predicates` callback there is no barrier: the dispatcher
//! sends the ReSync right before the `UpdateAllocation`, off the core
//! thread, as before. The exception is an SI v1.x RM with
//! `PreemptionPredicates` while preemption is on: its checks need the same
//! ordering, so its passes get a barrier that asks no `Predicates`. Such a
//! barrier starts *dormant*: it records allocations as a pass without a
//! barrier does, and keeps nothing of its own, since most passes ask no
//! preemption check. The pass wakes it ([`ResyncBarrier::wake`]) before
//! the first step that may ask one; waking hands every message of the pass
//! not handed over yet to the RM's order, so the check that follows
//! delivers them first, and from there on it works as above.
//!
//! Whatever else places an allocation during a pass (a placeholder
//! replacement, say) must go through [`ResyncBarrier::record`] too.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use super::order::{Queued, RmOrder};
use super::outcome::{NewAllocation, OutMsg, Outcomes, MAX_BATCH};
use super::port::PredicateCheck;
use crate::proto::si::v1 as si;

/// Holds the allocations of one pass that the RM has not been told of yet,
/// and delivers them before the RM is asked anything (see the module doc).
/// One barrier serves one partition's pass for the partition's own RM, so
/// an RM only ever hears of its own allocations.
pub struct ResyncBarrier<'a> {
    order: &'a RmOrder,
    /// Whether the RM has `Predicates` (a barrier may exist for
    /// `PreemptionPredicates` alone: then every node passes unasked).
    asks_predicates: bool,
    /// Decided, not yet announced through `ReSyncSchedulerCache`. The
    /// search reads the partition through shared references, hence a cell.
    pending: RefCell<Vec<Arc<NewAllocation>>>,
    /// How far [`Self::record`] has looked through the pass's messages for
    /// ones made after the allocations it holds.
    scanned: Cell<usize>,
    /// A `PreemptionPredicates`-only barrier not woken yet: it keeps
    /// nothing, and the pass's allocations go as if there were no barrier.
    dormant: Cell<bool>,
}

impl<'a> ResyncBarrier<'a> {
    /// A barrier for a pass of the RM whose order is `order`, which has a
    /// `Predicates` callback, or a `PreemptionPredicates` one while
    /// preemption is on.
    pub fn new(order: &'a RmOrder) -> Self {
        use super::port::RmPort;
        let asks_predicates = order.has_predicates();
        ResyncBarrier {
            order,
            asks_predicates,
            pending: RefCell::new(Vec::new()),
            scanned: Cell::new(0),
            dormant: Cell::new(!asks_predicates),
        }
    }

    /// Whether the barrier keeps nothing yet: the pass must
    /// [`Self::wake`] it before a step that may ask a preemption check.
    pub fn is_dormant(&self) -> bool {
        self.dormant.get()
    }

    /// Makes a dormant barrier work from here on: every message of the
    /// pass not handed over yet (the allocations recorded while dormant
    /// among them) goes to the RM's order, which delivers it before the
    /// next check. Nothing when awake already.
    pub fn wake(&self, out: &mut Outcomes) {
        if self.dormant.replace(false) {
            self.deliver_earlier(out);
            self.scanned.set(out.messages.len());
        }
    }

    /// Records a decided allocation: pending for the next ReSync, and
    /// queued as an `UpdateAllocation` that sends no ReSync of its own
    /// (this barrier, or the [`OutMsg::Assume`] of [`Self::finish`], does).
    /// Messages made since the last allocation it recorded reach the RM
    /// first, so that this allocation's ReSync cannot overtake them.
    ///
    /// Dormant, it records as a pass without a barrier does; that check is
    /// inlined into the commit, which then makes no call.
    #[inline]
    pub fn record(&self, allocation: Arc<NewAllocation>, out: &mut Outcomes) {
        if self.dormant.get() {
            out.new_allocation(allocation);
        } else {
            self.record_awake(allocation, out);
        }
    }

    /// [`Self::record`] on a barrier that works.
    fn record_awake(&self, allocation: Arc<NewAllocation>, out: &mut Outcomes) {
        if self.made_since(out) {
            self.deliver_earlier(out);
        }
        // A batch handed over already is closed.
        let open = out.messages.len() > out.delivered;
        match out.messages.last_mut() {
            Some(OutMsg::NewAllocationsResynced(v)) if open && v.len() < MAX_BATCH => {
                v.push(allocation.clone())
            }
            last => {
                // A full batch closes: what it announces reaches the RM's
                // cache now (at most a batch), so that what is pending is
                // always in the last open batch (see `finish`).
                if matches!(last, Some(OutMsg::NewAllocationsResynced(_))) && open {
                    self.deliver();
                }
                out.messages
                    .push(OutMsg::NewAllocationsResynced(vec![allocation.clone()]))
            }
        }
        self.pending.borrow_mut().push(allocation);
        self.scanned.set(out.messages.len());
    }

    /// Whether the pass made a message other than this barrier's batches
    /// that has not reached the RM (each message is looked at once).
    fn made_since(&self, out: &Outcomes) -> bool {
        let from = self.scanned.get().max(out.delivered);
        self.scanned.set(out.messages.len());
        out.messages.get(from..).is_some_and(|tail| {
            tail.iter()
                .any(|m| !matches!(m, OutMsg::NewAllocationsResynced(_)))
        })
    }

    /// Delivers the pending allocations, then hands every message of the
    /// pass not handed over yet (the announcements of batches included)
    /// and the forgotten allocations to the RM's order, behind them: the
    /// dispatcher sends them, unless the next delivery on the core thread
    /// finds them still queued.
    fn deliver_earlier(&self, out: &mut Outcomes) {
        self.deliver();
        for msg in out.messages.get(out.delivered..).unwrap_or_default() {
            self.order.hand_over(Queued::Message(msg.clone()));
        }
        out.delivered = out.messages.len();
        // Released allocations are forgotten after their echo (spec 10.2),
        // which was just handed over.
        if !out.forget.is_empty() {
            self.order
                .hand_over(Queued::Resync(si::ReSyncSchedulerCacheArgs {
                    assumed_allocations: Vec::new(),
                    forget_allocations: std::mem::take(&mut out.forget),
                }));
        }
    }

    /// Whether the RM has a `Predicates` callback to ask.
    pub fn asks_predicates(&self) -> bool {
        self.asks_predicates
    }

    /// The RM's `Predicates` answer, asked only after everything decided
    /// so far has reached the RM; success, unasked, when the RM has none.
    pub fn predicates(&self, args: &PredicateCheck<'_>) -> Result<(), String> {
        if !self.asks_predicates {
            return Ok(());
        }
        self.deliver();
        self.order.ask_predicates(args)
    }

    /// The RM's `PreemptionPredicates` answer (see
    /// [`super::port::RmPort::preemption_predicates`]), asked only after
    /// everything decided so far has reached the RM. A panicking callback
    /// counts as a refusal.
    pub fn preemption_predicates(
        &self,
        ask: &str,
        node: &str,
        victims: &[String],
        start_index: i32,
    ) -> Option<Option<i32>> {
        if self.dormant.get() {
            // A step that asks must wake the barrier first: asking now
            // could overtake what the pass recorded.
            #[cfg(test)]
            panic!("preemption check of ask {ask} on a dormant barrier");
            #[cfg(not(test))]
            log::error!("preemption check of ask {ask} asked on a dormant barrier");
        }
        self.deliver();
        self.order
            .ask_preemption_predicates(ask, node, victims, start_index)
    }

    /// Sends the pending allocations in one `ReSyncSchedulerCache` call on
    /// this (the core) thread, after what is queued for the RM.
    fn deliver(&self) {
        let mut batch = std::mem::take(&mut *self.pending.borrow_mut());
        if batch.is_empty() {
            return;
        }
        self.order.assume_now(&batch);
        // The buffer goes back for the next decisions: a pass that asks
        // `Predicates` delivers after each one, and would otherwise
        // allocate a buffer per allocation. (Taken out first, so that a
        // callback that panics leaves nothing to deliver twice.)
        batch.clear();
        let mut pending = self.pending.borrow_mut();
        if pending.is_empty() {
            *pending = batch;
        }
    }

    /// Ends the pass: what is still pending needs no barrier, since nothing
    /// more is asked in this pass. It goes as an [`OutMsg::Assume`] right
    /// before the batch that announces it, for the dispatcher.
    pub fn finish(self, out: &mut Outcomes) {
        let batch = std::mem::take(&mut *self.pending.borrow_mut());
        if batch.is_empty() {
            return;
        }
        // Every pending allocation is in the last open batch: a message
        // made after a batch closes it at the next record.
        let from = out.delivered.min(out.messages.len());
        let at = out.messages[from..]
            .iter()
            .rposition(|m| matches!(m, OutMsg::NewAllocationsResynced(_)))
            .map_or(out.messages.len(), |i| from + i);
        out.messages.insert(at, OutMsg::Assume(batch));
    }
}

impl Drop for ResyncBarrier<'_> {
    /// A pass that ends early (a panic caught by the core) still delivers
    /// what it decided before its `UpdateAllocation` can go out.
    fn drop(&mut self) {
        self.deliver();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::scheduler::outcome::{Outbound, RmKey};
    use crate::scheduler::port::RmPort;

    fn order_of(rm: &Arc<Log>) -> Arc<RmOrder> {
        RmOrder::new(RmKey(1), rm.clone(), None)
    }

    /// Records the order of what the barrier asks of the RM.
    #[derive(Default)]
    struct Log {
        calls: Mutex<Vec<String>>,
        panic_on_resync: bool,
    }

    impl Log {
        fn push(&self, line: String) {
            self.calls.lock().unwrap().push(line);
        }

        fn update(&self, keys: impl Iterator<Item = String>) {
            self.push(format!("update {}", keys.collect::<Vec<_>>().join(",")));
        }
    }

    impl RmPort for Log {
        fn predicates(&self, args: &PredicateCheck<'_>) -> Result<(), String> {
            self.push(format!("predicates {}", args.allocation_key));
            Ok(())
        }

        fn assume(&self, allocations: &[Arc<NewAllocation>]) -> Result<(), String> {
            if self.panic_on_resync {
                panic!("the RM's cache broke");
            }
            let keys: Vec<&str> = allocations.iter().map(|a| &*a.key).collect();
            self.push(format!("resync {}", keys.join(",")));
            Ok(())
        }

        fn resync(&self, args: &si::ReSyncSchedulerCacheArgs) -> Result<(), String> {
            if self.panic_on_resync {
                panic!("the RM's cache broke");
            }
            let keys: Vec<&str> = args
                .forget_allocations
                .iter()
                .map(|f| f.allocation_key.as_str())
                .collect();
            self.push(format!("forget {}", keys.join(",")));
            Ok(())
        }

        fn deliver(&self, msg: &OutMsg) -> Result<(), String> {
            match msg {
                OutMsg::NewAllocations(v) | OutMsg::NewAllocationsResynced(v) => {
                    self.update(v.iter().map(|a| a.key.to_string()))
                }
                OutMsg::Allocation(r) => self.update(
                    r.new
                        .iter()
                        .map(|a| a.allocation_key.clone())
                        .chain(r.released.iter().map(|a| a.uuid.clone())),
                ),
                OutMsg::Application(r) => {
                    let apps: Vec<&str> = r.updated.iter().map(|a| a.state.as_str()).collect();
                    self.push(format!("app {}", apps.join(",")));
                }
                OutMsg::Node(_) | OutMsg::Assume(_) => {}
            }
            Ok(())
        }
    }

    fn alloc(key: &str) -> Arc<NewAllocation> {
        Arc::new(NewAllocation::for_test(
            key,
            &format!("uuid-{key}"),
            "n1",
            "app",
        ))
    }

    fn ask(key: &str) -> PredicateCheck<'_> {
        PredicateCheck {
            allocation_key: key,
            node_id: "n1",
            allocate: true,
        }
    }

    #[test]
    fn pending_allocations_reach_the_rm_in_one_batch_before_a_predicate_call() {
        let rm = Arc::new(Log::default());
        let order = order_of(&rm);
        let mut out = Outcomes::default();
        {
            let b = ResyncBarrier::new(&order);
            b.predicates(&ask("k1")).unwrap();
            b.record(alloc("k1"), &mut out);
            b.record(alloc("k2"), &mut out);
            b.predicates(&ask("k3")).unwrap();
            b.predicates(&ask("k3")).unwrap();
            b.record(alloc("k3"), &mut out);
            b.deliver();
            b.deliver();
        }
        assert_eq!(
            *rm.calls.lock().unwrap(),
            [
                "predicates k1",
                "resync k1,k2",
                "predicates k3",
                "predicates k3",
                "resync k3"
            ]
        );
        // One UpdateAllocation for the dispatcher, marked as resynced.
        match out.messages.as_slice() {
            [OutMsg::NewAllocationsResynced(v)] => assert_eq!(v.len(), 3),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn messages_made_between_decisions_reach_the_rm_between_them() {
        let rm = Arc::new(Log::default());
        let order = order_of(&rm);
        let mut out = Outcomes::default();
        {
            let b = ResyncBarrier::new(&order);
            b.record(alloc("k1"), &mut out);
            b.record(alloc("k2"), &mut out);
            out.app_updated(si::UpdatedApplication {
                state: "Running".into(),
                ..Default::default()
            });
            out.new_allocation_message(si::AllocationResponse {
                released: vec![si::AllocationRelease {
                    uuid: "v1".into(),
                    ..Default::default()
                }],
                ..Default::default()
            });
            out.forget.push(si::ForgotAllocation {
                allocation_key: "v1".into(),
            });
            b.predicates(&ask("k3")).unwrap();
            b.record(alloc("k3"), &mut out);
            out.app_updated(si::UpdatedApplication {
                state: "Completing".into(),
                ..Default::default()
            });
        }
        assert_eq!(
            *rm.calls.lock().unwrap(),
            [
                "resync k1,k2",
                "predicates k3",
                // Before k3: what was made after k1 and k2, their
                // announcement first.
                "update k1,k2",
                "app Running",
                "update v1",
                "forget v1",
                "resync k3",
            ]
        );
        // The dispatcher gets the rest: k3's announcement, the last change.
        assert_eq!(out.delivered, 3);
        assert!(out.forget.is_empty());
        match &out.messages[out.delivered..] {
            [OutMsg::NewAllocationsResynced(v), OutMsg::Application(_)] => {
                assert_eq!(&*v[0].key, "k3")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_barrier_dropped_early_still_delivers() {
        let rm = Arc::new(Log::default());
        let order = order_of(&rm);
        let mut out = Outcomes::default();
        let b = ResyncBarrier::new(&order);
        b.record(alloc("k1"), &mut out);
        drop(b);
        assert_eq!(*rm.calls.lock().unwrap(), ["resync k1"]);
    }

    #[test]
    fn a_panicking_resync_callback_does_not_stop_the_pass() {
        let rm = Arc::new(Log {
            panic_on_resync: true,
            ..Default::default()
        });
        let order = order_of(&rm);
        let mut out = Outcomes::default();
        let b = ResyncBarrier::new(&order);
        b.record(alloc("k1"), &mut out);
        assert_eq!(b.predicates(&ask("k2")), Ok(()));
        assert_eq!(*rm.calls.lock().unwrap(), ["predicates k2"]);
    }

    #[test]
    fn what_a_pass_decided_after_its_last_check_goes_as_data() {
        let rm = Arc::new(Log::default());
        let order = order_of(&rm);
        let mut out = Outcomes::default();
        let b = ResyncBarrier::new(&order);
        b.predicates(&ask("k1")).unwrap();
        b.record(alloc("k1"), &mut out);
        b.predicates(&ask("k2")).unwrap();
        b.record(alloc("k2"), &mut out);
        b.record(alloc("k3"), &mut out);
        out.app_updated(si::UpdatedApplication {
            state: "Running".into(),
            ..Default::default()
        });
        b.finish(&mut out);
        // Nothing after the last check reached the RM on this thread.
        assert_eq!(
            *rm.calls.lock().unwrap(),
            ["predicates k1", "resync k1", "predicates k2"]
        );
        // The rest waits for the dispatcher, the cache's half first.
        match out.messages.as_slice() {
            [OutMsg::Assume(a), OutMsg::NewAllocationsResynced(v), OutMsg::Application(_)] => {
                assert_eq!(a.len(), 2);
                assert_eq!(v.len(), 3);
            }
            other => panic!("{other:?}"),
        }
        // Queued and not delivered yet when the next pass asks: delivered
        // first, in order, by the core thread.
        let key = order.key();
        for m in out.messages.drain(..) {
            let _ = order.post(Outbound::Message(key, m));
        }
        let next = ResyncBarrier::new(&order);
        next.predicates(&ask("k4")).unwrap();
        assert_eq!(
            rm.calls.lock().unwrap()[3..],
            [
                "resync k2,k3",
                "update k1,k2,k3",
                "app Running",
                "predicates k4"
            ]
        );
    }

    #[test]
    fn a_full_announcement_closes_and_what_it_announces_reaches_the_cache_first() {
        let rm = Arc::new(Log::default());
        let order = order_of(&rm);
        let mut out = Outcomes::default();
        let b = ResyncBarrier::new(&order);
        let n = MAX_BATCH + 3;
        let keys: Vec<String> = (0..n).map(|i| format!("k{i}")).collect();
        for k in &keys {
            b.record(alloc(k), &mut out);
        }
        b.finish(&mut out);
        // When the first batch closed, what it announces (no more than a
        // batch) reached the cache, on this thread.
        let calls = rm.calls.lock().unwrap().clone();
        assert_eq!(calls, [format!("resync {}", keys[..MAX_BATCH].join(","))]);
        // The rest goes as data, its cache half right before the batch
        // that announces it.
        match out.messages.as_slice() {
            [OutMsg::NewAllocationsResynced(first), OutMsg::Assume(a), OutMsg::NewAllocationsResynced(last)] =>
            {
                assert_eq!(first.len(), MAX_BATCH);
                assert_eq!(last.len(), 3);
                let assumed: Vec<&str> = a.iter().map(|x| &*x.key).collect();
                assert_eq!(assumed, keys[MAX_BATCH..]);
            }
            other => panic!("{other:?}"),
        }
    }
}
