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

use super::preempt::ReservedRequired;
use super::preempt::Trigger;
use super::*;
use crate::events::Record;
use crate::scheduler::objects::queue::AppKey;
use crate::scheduler::resync::ResyncBarrier;
use crate::scheduler::ugm::{Fit, APP_CANNOTRUN_QUOTA, APP_RUNNABLE_QUOTA};

/// Reserved nodes and the asks holding them.
type HeldNodes = Vec<(NodeSlot, ReservedAsk)>;

/// What the search found for one ask.
enum NodeChoice {
    /// Allocate on this node.
    Allocate(NodeSlot),
    /// Nothing fits now; hold this node for the ask.
    Reserve(NodeSlot),
    /// Nothing to do.
    Nothing,
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
    pub fn schedule(
        &mut self,
        cb: Option<&dyn RmPort>,
        budget: usize,
        out: &mut Outcomes,
    ) -> usize {
        // With a Predicates callback, decisions reach the RM's cache before
        // each predicate call (see `ResyncBarrier`); without one, nothing
        // is asked and the dispatcher sends the ReSync as before.
        // An SI v1.8 RM's PreemptionPredicates needs the same ordering
        // (preemption.md 9.2): a barrier then, even without Predicates.
        let preempt_on = self.preemption_on();
        let barrier = cb
            .filter(|c| c.has_predicates() || (preempt_on && c.has_preemption_predicates()))
            .map(ResyncBarrier::new);
        // Gang swaps confirmed since the last pass land first (gang/swap.rs).
        if self.emit_confirmed(barrier.as_ref(), out) {
            if let Some(b) = &barrier {
                b.deliver();
            }
        }
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
        let cb = barrier.as_ref();
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
            }
        }
        if pass.preempt_on {
            self.cancel_stale_reservations(&mut pass.preempt_stale);
            self.preemption_pass_done(&mut pass, now);
        }
        // The REQUEST events of the pass.
        out.events.extend(pass.events.drain(..).map(Record::from));
        // The rest of the pass's decisions reach the RM's cache now, before
        // the core hands their UpdateAllocation to the dispatcher.
        if let Some(b) = &barrier {
            b.deliver();
        }
        made
    }

    /// Reservations grouped by application, the applications in the order
    /// the regular search visits them (spec 8.10): leaves in depth-first
    /// fair order, then each leaf's application order (`stateaware` as
    /// `fifo`, without its filter); within an application, its asks in
    /// scheduling order. One walk over the reservations.
    fn reserved_apps_in_order(&self) -> Vec<HeldNodes> {
        let leaf_rank = self.leaf_ranks();
        let mut apps: Vec<((usize, AppKey), HeldNodes)> = Vec::new();
        let mut index: FastMap<&str, usize> = FastMap::default();
        // In node id order, as the walk has always gone.
        let mut all: Vec<(&str, NodeSlot, &ReservedAsk)> = self
            .reservations
            .iter()
            .map(|(n, r)| (&*self.nodes[n].id, n, r))
            .collect();
        all.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (_, node, r) in all {
            if let Some(i) = index.get(&*r.app) {
                apps[*i].1.push((node, r.clone()));
                continue;
            }
            index.insert(&*r.app, apps.len());
            let order = match self.apps.get(&r.app) {
                // Gone: sorted last, where its reservations are cancelled.
                None => (usize::MAX, AppKey::default()),
                Some(app) => (
                    // A leaf without demand is not walked: after every other.
                    leaf_rank.get(&app.queue).copied().unwrap_or(usize::MAX - 1),
                    app.leaf_key().clone(),
                ),
            };
            apps.push((order, vec![(node, r.clone())]));
        }
        apps.sort_by(|a, b| a.0.cmp(&b.0));
        apps.into_iter()
            .map(|(_, mut held)| {
                let app = held.first().and_then(|(_, r)| self.apps.get(&r.app));
                if let Some(app) = app {
                    held.sort_by_cached_key(|(n, r)| {
                        (
                            app.asks.get(&r.key).map(Ask::order_key),
                            self.nodes[*n].id.clone(),
                        )
                    });
                }
                held
            })
            .collect()
    }

    /// The reserved pass (spec 8.10): applications in queue order; each
    /// first tries its reserved asks on their reserved nodes, then on any
    /// other free node. Stale reservations are cancelled on the way.
    fn reserved_pass(
        &mut self,
        cb: Option<&ResyncBarrier>,
        budget: usize,
        preempt_on: bool,
        now: Instant,
        out: &mut Outcomes,
    ) -> usize {
        let mut made = 0;
        for held in self.reserved_apps_in_order() {
            if made >= budget {
                break;
            }
            let mut unsatisfied = Vec::new();
            for (slot, r) in held {
                if made >= budget {
                    break;
                }
                if self.reservations.on_node(slot) != Some(&r) {
                    continue;
                }
                // The user/group check below wants exact levels.
                self.flush_limits();
                let Some(fits_queue) = self.reserved_ask_usable(slot, &r) else {
                    // Stale: the ask is gone or satisfied, or the node is
                    // draining (the reference kept those; the spec recommends not).
                    self.reservations.cancel_node(slot);
                    continue;
                };
                if !fits_queue {
                    self.expire_reservation(slot, &r, now); // YuniKorn v1.9, 7.1
                    continue;
                }
                // Required-node preemption (preempt/required.rs).
                if preempt_on {
                    match self.reserved_required_node(slot, &r, cb, now, out) {
                        ReservedRequired::Ordinary => {}
                        ReservedRequired::Waits => continue,
                        ReservedRequired::Preempted => {
                            made += 1;
                            continue;
                        }
                    }
                }
                let ask = &self.apps[&r.app].asks[&r.key];
                let node = &self.nodes[slot];
                let mut events = Vec::new();
                let placed = self.try_node(&r.app, ask, node, cb, true, &mut events);
                out.events.extend(events.into_iter().map(Record::from));
                if placed {
                    let (a, k) = self.ask_slots(&r);
                    self.commit(a, k, slot, cb, out);
                    made += 1;
                } else {
                    unsatisfied.push((slot, r));
                }
            }
            // Then each still-held reservation on another node (the reserved
            // node is freed when that works).
            for (slot, r) in unsatisfied {
                if made >= budget {
                    break;
                }
                self.flush_limits();
                if self.reservations.on_node(slot) != Some(&r)
                    || self.reserved_ask_usable(slot, &r) != Some(true)
                {
                    continue;
                }
                let ask = &self.apps[&r.app].asks[&r.key];
                if ask.required_node.is_some() {
                    continue; // its own node only (spec 8.7 step 1)
                }
                let mut events = Vec::new();
                let target = self
                    .nodes
                    .ordered()
                    .filter(|n| {
                        n.schedulable && self.reservations.on_node(n.key().slot()).is_none()
                    })
                    .filter(|n| n.fits_capacity(&ask.resource))
                    .find(|n| self.try_node(&r.app, ask, n, cb, true, &mut events))
                    .map(|n| n.key().slot());
                out.events.extend(events.into_iter().map(Record::from));
                if let Some(target) = target {
                    self.reservations.cancel_node(slot);
                    let (a, k) = self.ask_slots(&r);
                    self.commit(a, k, target, cb, out);
                    made += 1;
                }
            }
        }
        made
    }

    /// Whether a reservation can still be served: `None` when it is stale
    /// (ask gone or satisfied, node gone or draining), else whether the ask
    /// may be allocated now: it fits the queue's headroom, and the
    /// application is not held back by `maxapplications`.
    fn reserved_ask_usable(&self, node: NodeSlot, r: &ReservedAsk) -> Option<bool> {
        let app = self.apps.get(&r.app)?;
        let ask = app.asks.get(&r.key).filter(|a| a.pending_repeat > 0)?;
        self.nodes.at(node).filter(|n| n.schedulable)?;
        let held_back = (!app.counted_active && self.app_limit_reached(app.queue))
            || Self::served_by_replacement(app, ask)
            || (self.ugm.enabled()
                && (!self.runnable_by_limits(app)
                    || self.ugm.fits(app, &ask.resource) != Fit::Fits));
        Some(
            !held_back
                && self
                    .queues
                    .headroom(app.queue)
                    .is_none_or(|h| ask.resource.fits_in_max_undef(&h)),
        )
    }

    /// The slots of a reserved ask that [`Self::reserved_ask_usable`] found.
    fn ask_slots(&self, r: &ReservedAsk) -> (Slot, Slot) {
        let app = self.apps.slot_of(&r.app).expect("checked usable");
        let ask = self.apps[app].asks.slot_of(&r.key).expect("checked usable");
        (app, ask)
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
        let headroom = self.queues.headroom(q);
        let try_app = |(slot, app): (Slot, &Application), pass: &mut PassState| {
            if pass.exhausted_apps.contains(&app.seq) {
                return None;
            }
            let found = self.find_for_app(slot, app, headroom.as_ref(), cb, pass, now);
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

    /// Tries the asks of one application in order (spec 8.5).
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
        let start = match pass.ask_cursor.get(&app.seq) {
            Some(k) => Bound::Excluded(*k),
            None => Bound::Unbounded,
        };
        for (okey, ask_slot) in app.ask_order.range((start, Bound::Unbounded)) {
            let ask = &app.asks[*ask_slot];
            if Self::served_by_replacement(app, ask) {
                pass.ask_cursor.insert(app.seq, *okey);
                continue;
            }
            // User and group headroom first (limits.md 4.2): an ask over it
            // is skipped, not tried (no autoscaler signal, no preemption).
            // Each allocation of the pass already counts in the trackers.
            if limits {
                match self.user_quota_check(app, ask, pass) {
                    Fit::Fits => {}
                    Fit::Over => {
                        pass.ask_cursor.insert(app.seq, *okey);
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
                    self.required_node_step(app_slot, app, *ask_slot, ask, cb, &mut pass.events);
                if let Some(step) = step {
                    if !step.allocates() {
                        pass.ask_cursor.insert(app.seq, *okey);
                        if pass.track_tried {
                            pass.tried.push((app.id.clone(), ask.key.clone()));
                        }
                    }
                    return Some(Decision::Required(step));
                }
            } else if fits_queue {
                match self.find_node(app, ask, cb, pass, now) {
                    NodeChoice::Allocate(node) => {
                        return Some(Decision::Allocate {
                            app: app_slot,
                            ask: *ask_slot,
                            node,
                        })
                    }
                    NodeChoice::Reserve(node) => {
                        pass.ask_cursor.insert(app.seq, *okey);
                        if pass.track_tried {
                            // Holds a node, still waits for room on it.
                            pass.tried.push((app.id.clone(), ask.key.clone()));
                        }
                        return Some(Decision::Reserve {
                            app: app.id.clone(),
                            key: ask.key.clone(),
                            node,
                        });
                    }
                    NodeChoice::Nothing => {
                        // T2 (preemption.md 2.2): no node took it.
                        if let Some(plan) =
                            self.try_preempt(app, ask, Trigger::NodeBound, cb, pass, now)
                        {
                            pass.ask_cursor.insert(app.seq, *okey);
                            return Some(Decision::Preempt(plan));
                        }
                    }
                }
            } else if let Some(plan) =
                self.try_preempt(app, ask, Trigger::QueueBound, cb, pass, now)
            {
                // T1 (preemption.md 2.2): the queue's headroom is the obstacle.
                pass.ask_cursor.insert(app.seq, *okey);
                return Some(Decision::Preempt(plan));
            } else {
                // Skipped for queue headroom: a REQUEST event (spec 13.2).
                pass.events.push(self.queue_headroom_event(app, ask));
            }
            // Tried and not placed: outstanding, if it fits the queue's
            // configured limits (checked when reported).
            if pass.track_tried {
                pass.tried.push((app.id.clone(), ask.key.clone()));
            }
            pass.ask_cursor.insert(app.seq, *okey);
        }
        None
    }

    /// A preemption attempt for an ask the pass could not place: one
    /// boolean when preemption is off, one cached walk per leaf when no
    /// guarantee is in reach.
    fn try_preempt(
        &self,
        app: &Application,
        ask: &Ask,
        trigger: Trigger,
        cb: Option<&ResyncBarrier>,
        pass: &mut PassState,
        now: Instant,
    ) -> Option<super::preempt::PreemptionPlan> {
        if !pass.preempt_on || !self.preemption_possible(app.queue, pass) {
            return None;
        }
        self.plan_preemption(app, ask, trigger, cb, pass, now)
    }

    /// The first usable node in policy order, else a node to reserve (spec 8.7).
    fn find_node<'a>(
        &'a self,
        app: &Application,
        ask: &Ask,
        cb: Option<&ResyncBarrier>,
        pass: &mut PassState,
        now: Instant,
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
        if cacheable && pass.unfit_shapes[may_reserve as usize].contains(&ask.resource) {
            return NodeChoice::Nothing;
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
        if let Some(n) = self.first_fit(&app.id, ask, me.as_ref(), cb, &mut pass.events, missed) {
            return NodeChoice::Allocate(n.key().slot());
        }
        if let Some((_, n)) = candidate {
            if self.try_node(&app.id, ask, n, cb, false, &mut pass.events) {
                return NodeChoice::Reserve(n.key().slot());
            }
        }
        if cacheable {
            pass.unfit_shapes[may_reserve as usize].insert(ask.resource.clone());
        }
        NodeChoice::Nothing
    }

    /// Makes the allocation (spec 8.7 step 3 and 8.8), settles the ask's
    /// reservations and queues the report to the RM (through the barrier
    /// when the RM has predicates).
    pub(crate) fn commit(
        &mut self,
        app_slot: Slot,
        ask_slot: Slot,
        node_slot: NodeSlot,
        barrier: Option<&ResyncBarrier>,
        out: &mut Outcomes,
    ) {
        let node_id = self.nodes[node_slot].id.clone();
        let (record, remaining) = self.mint(app_slot, ask_slot, node_id);
        let placeholder = record.placeholder;
        let app = self.apps.at_mut(app_slot);
        let app_id = &app.id.clone();
        if !placeholder {
            app.allocate(&record.resource, self.queues.get_mut(app.queue));
        }
        app.started = true;
        // A running application stays running: no state machine call.
        let progresses = !placeholder && app.state != AppState::Running;
        let queue = app.queue;
        self.queues.pending_to_allocated(queue, &record.resource);
        self.nodes.allocate(node_slot, &record.resource);
        self.allocation_count += 1;
        // The user's and the group's headroom shrink now, before the next
        // decision of this pass (no overshoot within a batch). Charged from
        // the record before it moves: no copy of the resource.
        if self.ugm.has_links() {
            if let Some(app) = self.apps.at(app_slot) {
                self.ugm.charge(app, &record.resource);
            }
        }

        if !self.reservations.is_empty() {
            let me = ReservedAsk {
                app: app_id.clone(),
                key: record.key.clone(),
            };
            if self.reservations.on_node(node_slot) == Some(&me) {
                self.reservations.cancel_node(node_slot);
            } else if let Some(other) = self.reservations.nodes_of(&me).first().copied() {
                self.reservations.cancel_node(other);
            }
            if remaining == 0 {
                self.reservations.cancel_ask(&me);
            }
        }

        match barrier {
            Some(b) => b.record(record.clone(), out),
            None => out.new_allocation(record.clone()),
        }
        // Only a placeholder needs these afterwards (its gang books).
        let gang = placeholder.then(|| {
            (
                record.uuid.clone(),
                record.task_group.clone(),
                record.resource.clone(),
            )
        });
        self.allocations.insert(
            Allocation { record, queue },
            &mut self.apps.at_mut(app_slot).allocations,
            &mut self.nodes.at_mut(node_slot).allocations,
        );
        // After the insert: whether it counts as running depends on it.
        let app = self.apps.at_mut(app_slot);
        apps::sync_queue_active(app, &mut self.queues);
        if let Some((uuid, group, resource)) = gang {
            self.placeholder_added(app_id, &uuid, &group, &resource, out);
            // Placeholders count against the user and group too (3.2).
            if let Some(app) = self.apps.at(app_slot) {
                self.ugm.sync(app);
            }
        }
        if progresses {
            self.fire(app_id, AppEvent::Run, None, out);
        }
    }

    /// The pass's allocations reach the levels of the user and group
    /// trackers, and the touched links' cached slack is made again.
    pub(crate) fn flush_limits(&mut self) {
        if !self.ugm.is_dirty() {
            return;
        }
        let dirty = self.ugm.take_dirty();
        let apps = &self.apps;
        self.ugm
            .flush(dirty.into_iter().map(|(id, slot)| (id, apps.at(slot))));
    }

    /// User/group `maxapplications` admission of an application with
    /// demand (limits.md 4.1): whether it may be tried. A change of its
    /// "held" state gives one APP record (6.2), noted in `flips` (applied
    /// when the pass ends; later visits of the pass read it there).
    fn admitted_by_limits(
        &self,
        a: &Application,
        flips: &mut FastMap<u64, (bool, Arc<str>)>,
        events: &mut Vec<si::EventRecord>,
    ) -> bool {
        let runnable = self.runnable_by_limits(a);
        if runnable && self.ugm.held.is_empty() && flips.is_empty() {
            return true;
        }
        let held = match flips.get(&a.seq) {
            Some((h, _)) => *h,
            None => self.ugm.held.contains(&a.seq),
        };
        if held == runnable {
            flips.insert(a.seq, (!runnable, a.id.clone()));
            let (reason, message) = if runnable {
                (
                    APP_RUNNABLE_QUOTA,
                    format!("Application {} is runnable: its user and group are within their maxapplications limits", a.id),
                )
            } else {
                (
                    APP_CANNOTRUN_QUOTA,
                    format!("Application {} cannot run: its user or group is at its maxapplications limit", a.id),
                )
            };
            events.push(crate::events::record(
                si::event_record::Type::App,
                &a.id,
                "",
                reason,
                message,
            ));
        }
        runnable
    }

    /// The user/group headroom check of one ask (limits.md 4.2). A
    /// transition into or out of "user quota failed" gives one REQUEST
    /// event (6.1) and is applied when the pass ends.
    fn user_quota_check(&self, app: &Application, ask: &Ask, pass: &mut PassState) -> Fit {
        let fit = self.ugm.fits(app, &ask.resource);
        if fit == Fit::Unsure {
            return fit;
        }
        let fits = fit == Fit::Fits;
        let failed = !self.ugm.quota_failed.is_empty()
            && self.ugm.quota_failed.contains(&(app.seq, ask.key.clone()));
        if fits == failed {
            let message = if fits {
                format!("Request '{}' fits in the available user quota", ask.key)
            } else {
                let available = self.ugm.headroom(app).unwrap_or_default();
                format!(
                    "Request '{}' exceeds the available user quota (requested {}, available {available})",
                    ask.key, ask.resource
                )
            };
            let reason = if fits {
                "UserQuotaAvailable"
            } else {
                "UserQuotaExceeded"
            };
            pass.events.push(crate::events::record(
                si::event_record::Type::Request,
                &ask.key,
                &app.id,
                reason,
                message,
            ));
            pass.quota_flips.push((app.seq, ask.key.clone(), !fits));
        }
        fit
    }

    /// Whether any queue in this partition has demand.
    pub fn has_pending(&self) -> bool {
        self.queues.get(ROOT).pending.is_strictly_positive() && !self.nodes.is_empty()
    }
}
