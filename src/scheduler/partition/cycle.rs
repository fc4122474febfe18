//! The scheduling pass (spec 8): reserved asks first, then queues in fair
//! order, applications in their queue's policy order, asks by priority and
//! age, nodes in the partition's policy order.
//!
//! Unlike the reference, one pass makes many decisions; each one is taken
//! on the state the previous one left. What fails within a pass keeps
//! failing until the pass ends (free capacity only shrinks inside a pass),
//! so [`PassState`] lets later decisions skip it.

use std::sync::Arc;
use std::time::Instant;

use super::explain::UnfitShape;
use super::preempt::Trigger;
use super::*;
use crate::events::Record;
use crate::scheduler::objects::pending::{Cause, NodeCounts, PreemptOutcome};
use crate::scheduler::order::RmOrder;
use crate::scheduler::port::RmPort;
use crate::scheduler::resync::ResyncBarrier;
use crate::scheduler::ugm::Fit;

/// What the search found for one ask.
enum NodeChoice {
    /// Allocate on this node.
    Allocate(NodeSlot),
    /// Nothing fits now; hold this node for the ask.
    Reserve(NodeSlot),
    /// Nothing to do: no node took the ask.
    Nothing(Unfit),
}

/// How the nodes' verdict on an ask that found none is kept.
enum Unfit {
    /// In the pass's cache of unfit shapes (the map for asks that may
    /// reserve or not), with the id of its cause.
    Shape { id: u64, reserving: bool },
    /// Only in the counts the search filled.
    Counted,
}

/// The next thing the pass does.
enum Decision {
    Allocate {
        app: Slot,
        ask: Slot,
        node: NodeSlot,
    },
    Reserve {
        app: Arc<str>,
        key: Arc<str>,
        node: NodeSlot,
    },
    /// Release victims and reserve a node for a preemptor (preempt/).
    Preempt(super::preempt::PreemptionPlan),
    /// A required-node ask takes its node (preempt/required.rs).
    Required(super::preempt::RequiredStep),
    /// A user/group check needs the pass's allocations at the levels
    /// (`Fit::Unsure`): flush them and search again, from the same place.
    FlushLimits,
    /// The next step may ask the RM a preemption check while the barrier
    /// is dormant (see `ResyncBarrier`): wake it and search again, from
    /// the same place.
    WakeBarrier,
}

/// How well an ask uses a node's free resource (spec 8.7); lower is better.
fn fit_score(ask: &Resource, available: &Resource) -> f64 {
    available
        .iter()
        .filter(|(_, avail)| *avail > 0)
        .map(|(t, avail)| {
            let want = ask.get(t);
            if want <= 0 {
                1.0
            } else if avail > want {
                (avail - want) as f64 / avail as f64
            } else {
                0.0
            }
        })
        .sum()
}

impl Partition {
    /// Runs one scheduling pass: up to `budget` allocations. Returns the
    /// number of decisions taken (allocations and reservations).
    pub fn schedule(&mut self, cb: Option<&RmOrder>, budget: usize, out: &mut Outcomes) -> usize {
        // With a Predicates callback, decisions reach the RM's cache before
        // each predicate call (see `ResyncBarrier`); without one, nothing
        // is asked and the dispatcher sends the ReSync as before.
        // An SI v1.x RM's PreemptionPredicates needs the same ordering
        // (preemption.md 9.2): a barrier then, even without Predicates,
        // dormant (costing nothing) until a step may ask a check.
        let preempt_on = self.preemption_on();
        let barrier = cb
            .filter(|c| c.has_predicates() || (preempt_on && c.has_preemption_predicates()))
            .map(ResyncBarrier::new);
        self.allocations.batch_inserts();
        let made = self.run_pass(cb, barrier.as_ref(), preempt_on, budget, out);
        self.compact_placed();
        self.allocations.file_unfiled();
        // What the pass decided after its last check goes with its
        // announcement, from the dispatcher.
        if let Some(b) = barrier {
            b.finish(out);
        }
        made
    }

    /// The body of [`Self::schedule`].
    fn run_pass(
        &mut self,
        cb: Option<&RmOrder>,
        barrier: Option<&ResyncBarrier>,
        preempt_on: bool,
        budget: usize,
        out: &mut Outcomes,
    ) -> usize {
        // Gang swaps confirmed since the last pass land first (gang/swap.rs).
        self.emit_confirmed(barrier, out);
        // Quota-change preemption first, pending work or not (preempt/quota.rs).
        let quota_runs = self.quota_step(out);
        let root = self.queues.get(ROOT);
        let track_tried = cb.is_some_and(|c| c.has_container_state());
        // No max on root means no nodes, or an unlimited node (spec 11.6;
        // v0.12 could not allocate there, sicore does). Without nodes the
        // pass only finds which asks wait (the outstanding check, for an
        // autoscaler): not worth it when nobody takes the reports.
        if (root.max.is_none() && !self.has_unlimited_node() && !track_tried)
            || !root.pending.is_strictly_positive()
        {
            return quota_runs;
        }
        let cb = barrier;
        let now = self.clock.now(); // one read per pass
                                    // One pass per check interval notes what it tries (each later pass
                                    // would note the same asks again); without nodes every pass does,
                                    // since passes run there only when the RM sent something.
        let note = track_tried && (self.tried.armed || self.nodes.is_empty());
        if !self.preempt.victims.is_empty() {
            self.preemption_sweep();
        }
        let mut pass = PassState {
            track_tried: note,
            preempt_on,
            // The last pass's buffer, empty: a pass where nothing fits notes
            // every ask it tries, and growing the list anew each pass costs
            // fresh pages.
            reasons: std::mem::take(&mut self.reason_buffer),
            cause_ids: std::mem::take(&mut self.cause_ids),
            now_ns: self.clock.unix_nanos(),
            records: self
                .timeouts
                .events
                .allows(si::event_record::Type::Request as i32),
            ..Default::default()
        };
        let mut made = quota_runs;
        if !self.reservations.is_empty() {
            made += self.reserved_pass(cb, budget, preempt_on, now, out);
        }
        // Step b: gang placeholder replacement (spec 8.2, 9.3).
        made += self.replacement_pass(cb, budget.saturating_sub(made), out);
        while made < budget {
            match self.find_in_queue(ROOT, cb, &mut pass, now) {
                Some(Decision::Allocate { app, ask, node }) => self.commit(app, ask, node, cb, out),
                Some(Decision::Reserve { app, key, node }) => {
                    log::debug!(
                        "reserving node {} for ask {key} of {app}",
                        self.nodes[node].id
                    );
                    self.reservations
                        .reserve(node, ReservedAsk { app, key }, now);
                }
                Some(Decision::Preempt(plan)) => {
                    self.cancel_stale_reservations(&mut pass.preempt_stale);
                    self.commit_preemption(plan, out)
                }
                Some(Decision::Required(step)) => self.commit_required_step(step, cb, out),
                Some(Decision::WakeBarrier) => {
                    // Not a decision either; once awake it is not asked for
                    // again.
                    match barrier {
                        Some(b) if b.is_dormant() => b.wake(out),
                        _ => break,
                    }
                    continue;
                }
                Some(Decision::FlushLimits) => {
                    // Not a decision; the next search sees exact levels
                    // (and so cannot ask again).
                    if !self.ugm.is_dirty() {
                        break;
                    }
                    self.flush_limits();
                    continue;
                }
                None => break,
            }
            made += 1;
        }
        // The pass's allocations reach the user and group levels.
        self.flush_limits();
        if note {
            self.tried.armed = false;
            for (app, key) in pass.tried.drain(..) {
                self.tried.note(app, key);
            }
        }
        for (seq, key, entered) in pass.quota_flips.drain(..) {
            if entered {
                self.ugm.quota_failed.insert((seq, key));
            } else {
                self.ugm.quota_failed.remove(&(seq, key));
            }
        }
        for (seq, (held, id)) in pass.held_flips.drain() {
            if !held {
                self.ugm.held.remove(&seq);
            } else if self.apps.get(&id).is_some_and(|a| a.seq == seq) {
                self.ugm.held.insert(seq);
                self.watch_held(&id, false);
            }
        }
        if pass.preempt_on {
            self.cancel_stale_reservations(&mut pass.preempt_stale);
            self.preemption_pass_done(&mut pass, now);
        }
        // Why the asks tried and not placed wait.
        self.apply_reasons(&mut pass.reasons, pass.now_ns, &mut pass.events);
        self.reason_buffer = std::mem::take(&mut pass.reasons);
        self.cause_ids = std::mem::take(&mut pass.cause_ids);
        // Why the held applications' asks wait, when due (held.rs).
        self.held_reasons(&mut pass.events);
        // The REQUEST events of the pass.
        out.events.extend(pass.events.drain(..).map(Record::from));
        made
    }

    /// Depth-first search for the next decision in fair queue order.
    fn find_in_queue(
        &self,
        q: QueueId,
        cb: Option<&ResyncBarrier>,
        pass: &mut PassState,
        now: Instant,
    ) -> Option<Decision> {
        let queue = self.queues.get(q);
        if !queue.leaf {
            for child in self.queues.sorted_children(q) {
                if pass.exhausted_queues.contains(&child) {
                    continue;
                }
                if let Some(found) = self.find_in_queue(child, cb, pass, now) {
                    return Some(found);
                }
            }
            pass.exhausted_queues.insert(q);
            return None;
        }
        // Out of the pass state while the leaf is searched (the search
        // borrows the state), and back after.
        let mut buf = std::mem::take(&mut pass.headroom);
        let headroom = self.queues.headroom_into(q, &mut buf).then_some(&buf);
        let try_app = |(slot, app): (Slot, &Application), pass: &mut PassState| {
            if pass.exhausted_apps.contains(&app.seq) {
                return None;
            }
            let found = self.find_for_app(slot, app, headroom, cb, pass, now);
            if found.is_none() {
                pass.exhausted_apps.insert(app.seq);
            }
            found
        };
        // The user and group maxapplications are checked here, where their
        // transitions are recorded (limits.md 4.1); without such caps the
        // search is the plain one.
        let found = if self.ugm.admission_active() {
            let mut flips = std::mem::take(&mut pass.held_flips);
            let mut app_events = Vec::new();
            let found = self.pick_in_leaf(
                q,
                pass,
                |a| self.admitted_by_limits(a, &mut flips, &mut app_events),
                try_app,
            );
            pass.held_flips = flips;
            pass.events.append(&mut app_events);
            found
        } else {
            self.pick_in_leaf(q, pass, |_| true, try_app)
        };
        pass.headroom = buf;
        if found.is_none() {
            pass.exhausted_queues.insert(q);
        }
        found
    }

    /// The first decision among the applications of leaf `q` with demand
    /// that `admit` lets through, in the leaf's order; both orders skip
    /// applications held back by the queues' maxapplications (apps.rs).
    fn pick_in_leaf(
        &self,
        q: QueueId,
        pass: &mut PassState,
        mut admit: impl FnMut(&Application) -> bool,
        mut try_app: impl FnMut((Slot, &Application), &mut PassState) -> Option<Decision>,
    ) -> Option<Decision> {
        let queue = self.queues.get(q);
        let apps = self.leaf_apps(q);
        match queue.sort_policy {
            // Both orders are kept by the leaf: no list to build or sort.
            AppSortPolicy::Fifo => apps
                .filter(|(_, a)| a.has_pending() && admit(a))
                .find_map(|a| try_app(a, pass)),
            AppSortPolicy::Fair => self
                .fair_leaf_apps(q)
                .filter(|(_, a)| a.has_pending() && admit(a))
                .find_map(|a| try_app(a, pass)),
            AppSortPolicy::StateAware => {
                // Only the oldest Accepted application with demand may
                // start, and only while no application is Starting.
                let mut accepted_allowed = queue.starting_apps == 0;
                apps.filter(|(_, a)| a.has_pending() && admit(a))
                    .filter(|(_, a)| {
                        if a.state != AppState::Accepted {
                            return true;
                        }
                        std::mem::replace(&mut accepted_allowed, false)
                    })
                    .find_map(|a| try_app(a, pass))
            }
        }
    }

    /// Tries the asks of one application in order (spec 8.5). Each ask
    /// tried and not placed gets its reason (explain.rs).
    fn find_for_app(
        &self,
        app_slot: Slot,
        app: &Application,
        headroom: Option<&Resource>,
        cb: Option<&ResyncBarrier>,
        pass: &mut PassState,
        now: Instant,
    ) -> Option<Decision> {
        let limits = self.ugm.active();
        let asks = match pass.ask_cursor.get(&app.seq) {
            Some(k) => app.ask_order.iter_after(k),
            None => app.ask_order.iter(),
        };
        for (okey, ask_slot) in asks {
            let Some(ask) = app.asks.whole_at(ask_slot) else {
                continue; // an ask of the order is whole
            };
            let at = (app_slot, app.seq, ask_slot, ask.seq);
            if Self::served_by_replacement(app, ask) {
                pass.ask_cursor.insert(app.seq, okey);
                continue;
            }
            // User and group headroom first (limits.md 4.2): an ask over it
            // is skipped, not tried (no autoscaler signal, no preemption).
            // Each allocation of the pass already counts in the trackers.
            if limits {
                match self.user_quota_check(app, ask, pass) {
                    Fit::Fits => {}
                    Fit::Over => {
                        let counts = self.reservations.is_empty();
                        pass.note_cause(ask, at, self.limit_cause(app, ask), None, counts);
                        pass.ask_cursor.insert(app.seq, okey);
                        continue;
                    }
                    // Back here once the pass's allocations are flushed.
                    Fit::Unsure => return Some(Decision::FlushLimits),
                }
            }
            // An allocated ask keeps its place (its order key does not
            // change); a failed or reserving one moves the cursor past it.
            let fits_queue = headroom.is_none_or(|h| ask.resource.fits_in_max_undef(h));
            if fits_queue && pass.preempt_on && ask.required_node.is_some() {
                // Required-node preemption's path (preempt/required.rs).
                let step =
                    self.required_node_step(app_slot, app, ask_slot, ask, cb, &mut pass.events);
                if let Some(step) = step {
                    if !step.allocates() {
                        pass.ask_cursor.insert(app.seq, okey);
                        if pass.track_tried {
                            pass.tried.push((app.id.clone(), ask.key.clone()));
                        }
                    }
                    return Some(Decision::Required(step));
                }
            } else if fits_queue {
                let mut counts = NodeCounts::default();
                match self.find_node(app, ask, cb, pass, now, &mut counts) {
                    NodeChoice::Allocate(node) => {
                        return Some(Decision::Allocate {
                            app: app_slot,
                            ask: ask_slot,
                            node,
                        })
                    }
                    NodeChoice::Reserve(node) => {
                        pass.ask_cursor.insert(app.seq, okey);
                        if pass.track_tried {
                            // Holds a node, still waits for room on it.
                            pass.tried.push((app.id.clone(), ask.key.clone()));
                        }
                        pass.note_cause(ask, at, self.reserved_cause(node), None, false);
                        return Some(Decision::Reserve {
                            app: app.id.clone(),
                            key: ask.key.clone(),
                            node,
                        });
                    }
                    NodeChoice::Nothing(unfit) => {
                        // T2 (preemption.md 2.2): no node took it.
                        let (plan, outcome) =
                            self.try_preempt(app, ask, Trigger::NodeBound, cb, pass, now);
                        if std::mem::take(&mut pass.wake_barrier) {
                            return Some(Decision::WakeBarrier);
                        }
                        match unfit {
                            // Its shape's cause, made once for the pass
                            // (find_node put it in the cache before saying
                            // so); the ask holds no reservation (cacheable).
                            Unfit::Shape { id, reserving } => {
                                pass.note(ask, at, id, outcome, true, |p| {
                                    p.unfit_shapes[usize::from(reserving)]
                                        .get(&ask.resource)
                                        .map(|u| u.cause.clone())
                                        .unwrap_or_else(|| Cause::Nodes(NodeCounts::default()))
                                })
                            }
                            Unfit::Counted => {
                                let may_count = self.reservations.is_empty();
                                let cause = self.nodes_cause(counts);
                                pass.note_cause(ask, at, cause, outcome, may_count);
                            }
                        }
                        if let Some(plan) = plan {
                            pass.ask_cursor.insert(app.seq, okey);
                            return Some(Decision::Preempt(plan));
                        }
                    }
                }
            } else {
                // T1 (preemption.md 2.2): the queue's headroom is the obstacle.
                let (plan, outcome) =
                    self.try_preempt(app, ask, Trigger::QueueBound, cb, pass, now);
                if std::mem::take(&mut pass.wake_barrier) {
                    return Some(Decision::WakeBarrier);
                }
                let may_count = self.reservations.is_empty();
                pass.note_cause(
                    ask,
                    at,
                    self.queue_cause(app.queue, ask),
                    outcome,
                    may_count,
                );
                if let Some(plan) = plan {
                    pass.ask_cursor.insert(app.seq, okey);
                    return Some(Decision::Preempt(plan));
                }
                // Skipped for queue headroom: a REQUEST event (spec 13.2).
                pass.events.push(self.queue_headroom_event(app, ask));
            }
            // Tried and not placed: outstanding, if it fits the queue's
            // configured limits (checked when reported).
            if pass.track_tried {
                pass.tried.push((app.id.clone(), ask.key.clone()));
            }
            pass.ask_cursor.insert(app.seq, okey);
        }
        None
    }

    /// A preemption attempt for an ask the pass could not place: one
    /// boolean when preemption is off, one cached walk per leaf when no
    /// guarantee is in reach. Also says how an attempt made ended.
    #[inline]
    fn try_preempt(
        &self,
        app: &Application,
        ask: &Ask,
        trigger: Trigger,
        cb: Option<&ResyncBarrier>,
        pass: &mut PassState,
        now: Instant,
    ) -> (
        Option<super::preempt::PreemptionPlan>,
        Option<PreemptOutcome>,
    ) {
        // Asked for every ask no node took: the common "off" stays inline.
        if !pass.preempt_on {
            return (None, None);
        }
        self.attempt_preemption(app, ask, trigger, cb, pass, now)
    }

    /// [`Self::try_preempt`] with preemption on.
    #[inline(never)]
    fn attempt_preemption(
        &self,
        app: &Application,
        ask: &Ask,
        trigger: Trigger,
        cb: Option<&ResyncBarrier>,
        pass: &mut PassState,
        now: Instant,
    ) -> (
        Option<super::preempt::PreemptionPlan>,
        Option<PreemptOutcome>,
    ) {
        if !self.preemption_possible(app.queue, pass) {
            return (None, None);
        }
        // An attempt may ask the RM: a dormant barrier must wake first, and
        // the search comes back to this ask (nothing of the pass changed).
        if cb.is_some_and(ResyncBarrier::is_dormant) && self.attempt_due(app, ask, pass, now) {
            pass.wake_barrier = true;
            return (None, None);
        }
        // The attempt's counters say how it ended: a copy of a few integers.
        let before = pass.preempt_counts;
        let plan = self.plan_preemption(app, ask, trigger, cb, pass, now);
        let outcome =
            self.preempt_outcome(app.queue, &before, &pass.preempt_counts, plan.is_some());
        (plan, outcome)
    }

    /// The first usable node in policy order, else a node to reserve (spec
    /// 8.7). `counts` gets why the nodes tried turned the ask down.
    fn find_node<'a>(
        &'a self,
        app: &Application,
        ask: &Ask,
        cb: Option<&ResyncBarrier>,
        pass: &mut PassState,
        now: Instant,
        counts: &mut NodeCounts,
    ) -> NodeChoice {
        let any_reserved = !self.reservations.is_empty();
        // Only built when reservations exist: it costs two shared-string clones.
        let me = any_reserved.then(|| ReservedAsk {
            app: app.id.clone(),
            key: ask.key.clone(),
        });
        let held = me.as_ref().map_or(0, |me| self.reservations.count_for(me));
        let may_reserve = self
            .timeouts
            .reservation_delay
            .is_some_and(|d| now.saturating_duration_since(ask.created) >= d)
            && held < ask.pending_repeat.max(0) as usize;
        let cacheable = cb.is_none_or(|b| !b.asks_predicates()) && held == 0;
        if cacheable {
            // The same shape failed before in this pass: its counts stand.
            if let Some(u) = pass.unfit_shapes[usize::from(may_reserve)].get(&ask.resource) {
                return NodeChoice::Nothing(Unfit::Shape {
                    id: u.id,
                    reserving: may_reserve,
                });
            }
        }
        let mut candidate: Option<(f64, &'a Node)> = None;
        let missed = |n: &'a Node, reserved_by: Option<&ReservedAsk>| {
            if may_reserve
                && reserved_by.is_none()
                && !self.reservations.app_holds_node(&app.id, n.key().slot())
            {
                let score = fit_score(&ask.resource, n.available());
                if candidate.is_none_or(|(best, _)| score < best) {
                    candidate = Some((score, n));
                }
            }
        };
        let found = self.first_fit_counted(
            &app.id,
            ask,
            me.as_ref(),
            cb,
            &mut pass.events,
            counts,
            missed,
        );
        if let Some(n) = found {
            return NodeChoice::Allocate(n.key().slot());
        }
        if let Some((_, n)) = candidate {
            if self.try_node(&app.id, ask, n, cb, false, &mut pass.events) {
                return NodeChoice::Reserve(n.key().slot());
            }
        }
        if cacheable {
            let cause = self.nodes_cause(std::mem::take(counts));
            let id = pass.cause_ids.id_of(&cause);
            pass.unfit_shapes[usize::from(may_reserve)]
                .insert(ask.resource.clone(), UnfitShape { id, cause });
            return NodeChoice::Nothing(Unfit::Shape {
                id,
                reserving: may_reserve,
            });
        }
        NodeChoice::Nothing(Unfit::Counted)
    }
}
