//! Gang scheduling in the partition (spec 9): admission, placeholder
//! bookkeeping, the replacement step of the scheduling pass (8.2 step b),
//! the RM's confirmation, undoing a swap, node removal during a swap
//! (11.5) and the placeholder timeout (9.4).
//!
//! A swap in flight: the placeholder stays an allocation of the application
//! (on its node, in queue usage) until the RM confirms it gone. The real
//! allocation is held here, outside the application. On the placeholder's
//! own node it takes over the placeholder's space (node usage unchanged);
//! on another node it occupies space there (node usage grows, queue usage
//! does not) and is listed among that node's allocations.

use std::sync::Arc;
use std::time::Instant;

use super::*;
use crate::events;
use crate::scheduler::gang::{INFO_RESERVATION_TIMEOUT, MSG_ASK_TIMEOUT, MSG_PLACEHOLDER_TIMEOUT};
use crate::scheduler::outcome::TimerKind;
use crate::scheduler::resync::ResyncBarrier;

use si::event_record::Type as EventType;

/// One swap in flight: the real allocation that replaces a placeholder.
#[derive(Debug, Clone)]
pub struct Swap {
    /// The real allocation, reported to the RM on confirmation.
    pub real: Arc<NewAllocation>,
    /// Whether it sits on the placeholder's node, in its space.
    pub same_node: bool,
    /// On another node: its entry in the partition's allocation table,
    /// listed by that node only until the swap is confirmed.
    pub real_slot: Option<AllocSlot>,
    /// What the real allocation needs beyond the placeholder, per type:
    /// counted in queue usage from the decision on, so that the queue's
    /// max holds when the swap is confirmed.
    pub excess: Resource,
}

/// The partition's gang books.
#[derive(Debug, Default)]
pub struct GangBook {
    /// Swaps in flight by placeholder UUID.
    pub swaps: FastMap<Arc<str>, Swap>,
    /// Placeholder UUID by real UUID, for real allocations placed on
    /// another node than their placeholder (they sit in that node's list).
    pub by_real: FastMap<Arc<str>, Arc<str>>,
    /// Placeholders the core released with `TIMEOUT`, awaiting the RM.
    pub releasing: FastSet<Arc<str>>,
    /// Placeholders whose swap was undone after the RM was told of it: a
    /// late confirmation removes them like a normal release (spec 11.5).
    pub unlinked: FastSet<Arc<str>>,
    /// Applications holding at least one free placeholder.
    pub holders: FastSet<Arc<str>>,
    /// Real allocations of confirmed swaps, reported at the start of the
    /// next pass (through its ReSync barrier).
    pub confirmed: Vec<Arc<NewAllocation>>,
}

/// A replacement the search found.
struct Plan {
    app: Arc<str>,
    key: Arc<str>,
    placeholder: Arc<str>,
    node: Arc<str>,
    same_node: bool,
}

/// Whether an ask is a real member of a task group (replaces placeholders).
fn is_real_member(ask: &Ask) -> bool {
    !ask.placeholder && !ask.task_group.is_empty()
}

impl Partition {
    /// Admission of an application with a non-zero `placeholderAsk` to leaf
    /// `q` (spec 9.2); `leaf_max`, when given, stands for the leaf's own
    /// max (the one the application's quota tag is about to set).
    pub(super) fn admit_gang(
        &self,
        q: QueueId,
        app_id: &str,
        ask: &Resource,
        leaf_max: Option<&Resource>,
    ) -> Result<(), String> {
        let leaf = self.queues.get(q);
        if ask.has_negative() {
            return Err(format!(
                "application {app_id}: placeholderAsk {ask} has a negative quantity"
            ));
        }
        if leaf.sort_policy == AppSortPolicy::Fair {
            return Err(format!(
                "queue {} cannot run application {app_id} with task group request: unsupported sort type",
                leaf.path
            ));
        }
        // The max queue set: configured maxes below root, per type the
        // smallest; types no queue sets are unlimited.
        let mut max: Option<Resource> = None;
        let mut cur = Some(q);
        while let Some(c) = cur {
            let queue = self.queues.get(c);
            if queue.parent.is_none() {
                break;
            }
            let own = if c == q {
                leaf_max.or(queue.max.as_ref())
            } else {
                queue.max.as_ref()
            };
            if let Some(m) = own {
                max = Some(match max {
                    None => m.clone(),
                    Some(mut merged) => {
                        for (t, v) in m.iter() {
                            let v = merged.lookup(t).map_or(v, |prev| prev.min(v));
                            merged.set(t, v);
                        }
                        merged
                    }
                });
            }
            cur = queue.parent;
        }
        if let Some(max) = max {
            if !ask.fits_in_max_undef(&max) {
                return Err(format!(
                    "queue {} cannot fit application {app_id}: task group request {ask} larger than max queue allocation {max}",
                    leaf.path
                ));
            }
        }
        Ok(())
    }

    /// Keeps `gang.holders` in line with the application's free placeholders.
    fn sync_holder(&mut self, app_id: &str) {
        match self.apps.get(app_id) {
            Some(app) if app.gang.free > 0 => {
                if !self.gang.holders.contains(app_id) {
                    self.gang.holders.insert(app.id.clone());
                }
            }
            _ => {
                self.gang.holders.remove(app_id);
            }
        }
    }

    /// A placeholder allocation joined its application (new or recovered):
    /// book it, arm the placeholder timer on the first one while
    /// `Accepted`, and start the application once the placeholders add up
    /// to `placeholderAsk` (spec 6.3, 9.5).
    pub(super) fn placeholder_added(
        &mut self,
        app_id: &Arc<str>,
        uuid: &Arc<str>,
        group: &Arc<str>,
        resource: &Resource,
        out: &mut Outcomes,
    ) {
        let default_timeout = self.timeouts.placeholder;
        let epoch = self.next_seq();
        let Some(app) = self.apps.get_mut(app_id) else {
            return;
        };
        app.gang.add_placeholder(group, uuid, resource);
        let accepted = app.state == AppState::Accepted;
        if accepted && app.gang.timer_epoch == 0 {
            app.gang.timer_epoch = epoch;
            let d = app.gang.timeout(default_timeout);
            let now = Instant::now();
            // An absurd timeout falls back to the default (spec 6.4).
            let at = now.checked_add(d).unwrap_or_else(|| now + default_timeout);
            out.timers.push(AppTimer {
                at,
                partition: self.key.clone(),
                app: app_id.clone(),
                epoch,
                kind: TimerKind::Placeholder,
            });
        }
        let complete = accepted
            && app
                .placeholder_ask
                .as_ref()
                .is_some_and(|want| *want == app.gang.placeholder_allocated);
        self.sync_holder(app_id);
        if complete {
            self.fire(app_id, AppEvent::Run, None, out);
        }
    }

    /// A placeholder allocation `a` is leaving its application (release,
    /// node removal, application removal): undo a swap in flight, unbook it.
    pub(super) fn placeholder_leaving(&mut self, a: &Allocation) {
        self.unlink(&a.uuid, true);
        self.gang.unlinked.remove(&*a.uuid);
        self.gang.releasing.remove(&*a.uuid);
        if let Some(app) = self.apps.get_mut(&a.app) {
            app.gang
                .remove_placeholder(&a.task_group, &a.uuid, &a.resource);
            if app.gang.placeholders == 0 {
                app.gang.timer_epoch = 0; // cancels the placeholder timer
            }
        }
        self.sync_holder(&a.app);
    }

    /// Undoes the swap of placeholder `ph`, if one is in flight: the real
    /// allocation leaves its node, and with `restore_ask` the real ask gets
    /// its repeat back to be scheduled again. The placeholder becomes free
    /// again; the RM is told nothing new (spec 11.5).
    pub(super) fn unlink(&mut self, ph: &str, restore_ask: bool) {
        let Some(swap) = self.gang.swaps.remove(ph) else {
            return;
        };
        let real = swap.real;
        if !swap.excess.is_zero() {
            if let Some(app) = self.apps.get(&real.app) {
                let q = app.queue;
                self.queues.sub_allocated(q, &swap.excess);
            }
        }
        if !swap.same_node {
            self.gang.by_real.remove(&*real.uuid);
            let node_slot = self.nodes.slot_of(&real.node);
            if let Some(s) = swap.real_slot {
                self.allocations.remove(
                    s,
                    None,
                    node_slot.map(|n| &mut self.nodes.at_mut(n).allocations),
                );
            }
            if let Some(s) = node_slot {
                self.nodes
                    .at_mut(s)
                    .allocated
                    .sub_clamped_assign(&real.resource);
                self.nodes.refresh(s, &self.node_policy);
            }
        }
        let Some(app) = self.apps.get_mut(&real.app) else {
            return;
        };
        if restore_ask {
            if let Some(slot) = app.asks.slot_of(&real.key) {
                let ask = app.asks.at_mut(slot);
                if ask.pending_repeat <= 0 && app.ask_order.insert(ask.order_key(), slot).is_none()
                {
                    self.waiting_asks += 1;
                }
                ask.pending_repeat += 1;
                app.pending.add_assign(&real.resource);
                let q = app.queue;
                self.queues.add_pending(q, &real.resource);
            }
        }
        let app = self.apps.get_mut(&real.app).expect("looked up above");
        if let Some((uuid, _)) = self.allocations.get_key_value(ph) {
            if !self.gang.releasing.contains(ph) {
                app.gang.give_back(&real.task_group, uuid);
            }
            self.gang.unlinked.insert(uuid.clone());
        }
        self.sync_holder(&real.app);
    }

    /// Step b of a pass (spec 8.2, 9.3): real task-group asks replace
    /// placeholders, applications in queue order. Returns the swaps made.
    pub(super) fn replacement_pass(
        &mut self,
        cb: Option<&ResyncBarrier>,
        budget: usize,
        out: &mut Outcomes,
    ) -> usize {
        if self.gang.holders.is_empty() || budget == 0 {
            return 0;
        }
        let mut candidates: Vec<(u64, Arc<str>)> = self
            .gang
            .holders
            .iter()
            .filter_map(|id| self.apps.get(id))
            .filter(|a| a.ask_order.values().any(|k| is_real_member(&a.asks[*k])))
            .map(|a| (a.seq, a.id.clone()))
            .collect();
        if candidates.is_empty() {
            return 0;
        }
        // Queue order first (leaves depth-first in fair order), then the
        // leaf's order: gang applications only live in fifo or stateaware
        // leaves, both by submission.
        let ranks = self.leaf_ranks();
        candidates.sort_by_cached_key(|(seq, id)| {
            let rank = self
                .apps
                .get(id)
                .and_then(|a| ranks.get(&a.queue).copied())
                .unwrap_or(usize::MAX);
            (rank, *seq)
        });
        let mut made = 0;
        let mut released = Vec::new();
        for (_, app_id) in candidates {
            while made < budget {
                let Some(plan) = self.find_swap(&app_id, cb, &mut out.events) else {
                    break;
                };
                released.push(self.make_swap(plan, out));
                made += 1;
            }
            if made >= budget {
                break;
            }
        }
        if !released.is_empty() {
            out.new_allocation_message(si::AllocationResponse {
                released,
                ..Default::default()
            });
        }
        made
    }

    /// Leaves with demand in the order the regular search visits them.
    fn leaf_ranks(&self) -> FastMap<QueueId, usize> {
        let mut ranks = FastMap::default();
        let mut stack = vec![ROOT];
        while let Some(q) = stack.pop() {
            if self.queues.get(q).leaf {
                let rank = ranks.len();
                ranks.insert(q, rank);
            } else {
                let children: Vec<QueueId> = self.queues.sorted_children(q).collect();
                stack.extend(children.into_iter().rev());
            }
        }
        ranks
    }

    /// The next swap of one application (spec 9.3 steps 1-2).
    fn find_swap(
        &self,
        app_id: &str,
        cb: Option<&ResyncBarrier>,
        events: &mut Vec<si::EventRecord>,
    ) -> Option<Plan> {
        let app = self.apps.get(app_id)?;
        if app.gang.free == 0 {
            return None;
        }
        let mut first: Option<(&Ask, &Arc<str>)> = None;
        for key in app.ask_order.values() {
            let ask = &app.asks[*key];
            if !is_real_member(ask) {
                continue;
            }
            let Some(group) = app.gang.groups.get(&ask.task_group) else {
                continue;
            };
            for ph in &group.free {
                let Some(a) = self.allocations.get(ph) else {
                    continue;
                };
                first.get_or_insert((ask, ph));
                let Some(node) = self.nodes.get(&a.node) else {
                    continue;
                };
                // The real allocation takes the placeholder's space: it has
                // to fit in it (a bigger one needs room: step 2).
                if !ask.resource.fits_in(&a.resource) {
                    continue;
                }
                if self.try_node(app_id, ask, node, cb, false, events) {
                    return Some(Plan {
                        app: app.id.clone(),
                        key: ask.key.clone(),
                        placeholder: ph.clone(),
                        node: node.id.clone(),
                        same_node: true,
                    });
                }
            }
        }
        let (ask, ph) = first?;
        // A real allocation bigger than its placeholder needs the queue's
        // headroom for the difference.
        let excess = ask.resource.sub_clamped(&self.allocations[&**ph].resource);
        if !excess.is_zero()
            && !self
                .queues
                .headroom(app.queue)
                .is_none_or(|h| excess.fits_in_max_undef(&h))
        {
            return None;
        }
        let mut pinned = None;
        let mut ordered = None;
        match &ask.required_node {
            Some(required) => pinned = self.nodes.get(required.as_str()),
            None => ordered = Some(self.nodes.ordered()),
        }
        let mut next_node = || -> Option<&Node> {
            match ordered.as_mut() {
                Some(nodes) => nodes.find(|n| n.schedulable),
                None => pinned.take(),
            }
        };
        let me = ReservedAsk {
            app: app.id.clone(),
            key: ask.key.clone(),
        };
        while let Some(n) = next_node() {
            if !n.fits_capacity(&ask.resource) {
                continue;
            }
            if self
                .reservations
                .on_node(n.key().slot())
                .is_some_and(|r| *r != me)
            {
                continue;
            }
            if self.try_node(app_id, ask, n, cb, true, events) {
                return Some(Plan {
                    app: app.id.clone(),
                    key: ask.key.clone(),
                    placeholder: ph.clone(),
                    node: n.id.clone(),
                    same_node: false,
                });
            }
        }
        None
    }

    /// Makes a swap: the real allocation is created and linked, the
    /// placeholder marked as being replaced. Returns the release entry for
    /// the placeholder that tells the RM (spec 9.3 step 3).
    fn make_swap(&mut self, plan: Plan, out: &mut Outcomes) -> si::AllocationRelease {
        let ph = &self.allocations[&*plan.placeholder];
        let (ph_resource, ph_key, ph_node) = (ph.resource.clone(), ph.key.clone(), ph.node.clone());
        let app = self.apps.get_mut(&plan.app).expect("found by the search");
        let ask = app.asks.get_mut(&plan.key).expect("found by the search");
        ask.pending_repeat -= 1;
        if ask.pending_repeat <= 0 && app.ask_order.remove(&ask.order_key()).is_some() {
            self.waiting_asks = self.waiting_asks.saturating_sub(1);
        }
        let remaining = ask.pending_repeat;
        let mut buf = uuid::Uuid::encode_buffer();
        let uuid: Arc<str> = Arc::from(&*uuid::Uuid::new_v4().hyphenated().encode_lower(&mut buf));
        let real = Arc::new(NewAllocation {
            key: ask.key.clone(),
            uuid: uuid.clone(),
            node: plan.node.clone(),
            app: plan.app.clone(),
            queue: self.queues.get(app.queue).path.clone(),
            partition: self.name_shared.clone(),
            resource: ask.resource.clone(),
            priority: ask.priority,
            tags: ask.tags.clone(),
            task_group: ask.task_group.clone(),
            placeholder: false,
        });
        app.pending.sub_clamped_assign(&real.resource);
        app.gang.take_free(&real.task_group, &plan.placeholder);
        let q = app.queue;
        let queue_path = self.queues.get(q).path.clone();
        self.queues.sub_pending(q, &real.resource);
        let excess = real.resource.sub_clamped(&ph_resource);
        if !excess.is_zero() {
            self.queues.add_allocated(q, &excess);
        }
        let mut real_slot = None;
        if !plan.same_node {
            let n = self.nodes.get_mut(&plan.node).expect("found by the search");
            n.allocated.add_assign(&real.resource);
            let entry = Allocation {
                record: real.clone(),
                queue: q,
            };
            real_slot = Some(self.allocations.insert_in_flight(entry, &mut n.allocations));
            self.reposition_node(&plan.node);
            self.gang
                .by_real
                .insert(uuid.clone(), plan.placeholder.clone());
        }
        if remaining <= 0 && !self.reservations.is_empty() {
            self.reservations.cancel_ask(&ReservedAsk {
                app: plan.app.clone(),
                key: plan.key.clone(),
            });
        }
        if !self.gang.unlinked.is_empty() {
            self.gang.unlinked.remove(&*plan.placeholder);
        }
        self.sync_holder(&plan.app);
        if self.timeouts.events.allows(EventType::Request as i32)
            && plan.same_node
            && real.resource != ph_resource
        {
            // The swap proceeds; the RM hears of the mismatch (spec 13.2).
            out.event(events::record(
                EventType::Request,
                &real.key,
                &plan.app,
                "Resource Allocation Mismatch between real and placeholder",
                format!(
                    "Real Pod {} allocation {} is not matching with placeholder {ph_key} allocation {ph_resource} in application {}",
                    real.key, real.resource, plan.app
                ),
            ));
        }
        if self.timeouts.events.allows(EventType::App as i32) {
            out.event(events::record(
            EventType::App,
            &plan.app,
            &queue_path,
            "PlaceholderReplacing",
            format!(
                "Application {}: real allocation {uuid} ({}) replaces placeholder {} on node {} (placeholder on {ph_node})",
                plan.app, real.key, plan.placeholder, plan.node
            ),
        ));
        }
        self.gang.swaps.insert(
            plan.placeholder.clone(),
            Swap {
                real,
                same_node: plan.same_node,
                real_slot,
                excess,
            },
        );
        si::AllocationRelease {
            partition_name: self.name.clone(),
            application_id: plan.app.to_string(),
            uuid: plan.placeholder.to_string(),
            termination_type: si::TerminationType::PlaceholderReplaced as i32,
            message: format!("replacing UUID: {uuid}"),
        }
    }

    /// A `PLACEHOLDER_REPLACED` release from the RM (spec 9.3, 10.2 step 3).
    /// Returns false when the release is to be handled as a normal one: the
    /// placeholder's swap was undone, or the core is releasing it (the RM
    /// stopped it either way). Anything else unknown changes nothing.
    pub(super) fn confirm_replacement(
        &mut self,
        rel: &si::AllocationRelease,
        out: &mut Outcomes,
    ) -> bool {
        let uuid = rel.uuid.as_str();
        let owned = self
            .allocations
            .get(uuid)
            .is_some_and(|a| *a.app == *rel.application_id);
        if !owned {
            log::debug!(
                "replacement confirmation for unknown allocation {uuid} of {} ignored",
                rel.application_id
            );
            return true;
        }
        if !self.gang.swaps.contains_key(uuid) {
            if self.gang.unlinked.contains(uuid) || self.gang.releasing.contains(uuid) {
                return false;
            }
            log::debug!(
                "replacement confirmation for {uuid}, which is not being replaced, ignored"
            );
            return true;
        }
        if let Some(real) = self.complete_swap(uuid, out) {
            self.emit_new_allocation(real, out);
        }
        let app_id = rel.application_id.clone();
        self.after_swap_confirmed(&app_id, out);
        true
    }

    /// The one place where the real allocation of a confirmed swap is
    /// queued for the RM: it is reported (`ReSyncSchedulerCache`, then
    /// `new`) by [`Self::emit_confirmed`] at the start of the next pass, the
    /// same core step, so that with a `Predicates` callback its ReSync goes
    /// through the pass's barrier like every other decision.
    fn emit_new_allocation(&mut self, real: Arc<NewAllocation>, _out: &mut Outcomes) {
        self.gang.confirmed.push(real);
    }

    /// Reports the real allocations of swaps confirmed since the last pass.
    /// Returns whether there were any.
    pub(super) fn emit_confirmed(
        &mut self,
        barrier: Option<&ResyncBarrier>,
        out: &mut Outcomes,
    ) -> bool {
        if self.gang.confirmed.is_empty() {
            return false;
        }
        for real in std::mem::take(&mut self.gang.confirmed) {
            match barrier {
                Some(b) => b.record(real, out),
                None => out.new_allocation(real),
            }
        }
        true
    }

    /// Moves a swap's real allocation into its application in place of
    /// placeholder `ph`. Returns the real allocation to report. State
    /// transitions follow in [`Self::after_swap_confirmed`].
    fn complete_swap(&mut self, ph: &str, out: &mut Outcomes) -> Option<Arc<NewAllocation>> {
        let swap = self.gang.swaps.remove(ph)?;
        let real = swap.real;
        let ph_slot = self.allocations.slot_of(ph)?;
        let a = self.allocations.at(ph_slot).clone();
        let node_slot = self.nodes.slot_of(&a.node);
        let app_slot = self.apps.slot_of(&a.app);
        let entry = Allocation {
            record: real.clone(),
            queue: a.queue,
        };
        match (swap.same_node, app_slot) {
            // The real allocation takes the placeholder's entry: same
            // application, same node, same places in their lists.
            (true, Some(_)) => {
                self.allocations.replace(ph_slot, entry);
            }
            _ => {
                self.allocations.remove(
                    ph_slot,
                    app_slot.map(|s| &mut self.apps.at_mut(s).allocations),
                    node_slot.map(|s| &mut self.nodes.at_mut(s).allocations),
                );
                if let Some(rs) = swap.real_slot {
                    match app_slot {
                        Some(s) => {
                            self.allocations
                                .adopt(rs, entry, &mut self.apps.at_mut(s).allocations)
                        }
                        None => {
                            let on = self.nodes.slot_of(&real.node);
                            self.allocations.remove(
                                rs,
                                None,
                                on.map(|s| &mut self.nodes.at_mut(s).allocations),
                            );
                        }
                    }
                }
            }
        }
        if !self.gang.unlinked.is_empty() {
            self.gang.unlinked.remove(ph);
        }
        if !self.gang.releasing.is_empty() {
            self.gang.releasing.remove(ph);
        }
        // Node: the placeholder's entry goes; on the same node the real one
        // takes it, sized as the real allocation.
        if let Some(n) = self.nodes.get_mut(&a.node) {
            // The usual swap (same node, same size) leaves usage as it is.
            if !swap.same_node || real.resource != a.resource {
                n.allocated.sub_clamped_assign(&a.resource);
                if swap.same_node {
                    n.allocated.add_assign(&real.resource);
                }
                let id = n.id.clone();
                self.reposition_node(&id);
            }
        }
        if !swap.same_node {
            self.gang.by_real.remove(&*real.uuid);
        }
        // Queue usage follows the real size (the spec's recommended fix);
        // an excess was counted at the decision already.
        if real.resource != a.resource {
            self.queues
                .sub_allocated(a.queue, &a.resource.add(&swap.excess));
            self.queues.add_allocated(a.queue, &real.resource);
        }
        let app = self.apps.get_mut(&a.app)?;
        app.gang
            .remove_placeholder(&a.task_group, &a.uuid, &a.resource);
        if let Some(g) = app.gang.groups.get_mut(&real.task_group) {
            g.real += 1;
        }
        // The first replacement does not move the state on: the last
        // placeholder did already (spec 6.3). An application that went
        // `Completing` meanwhile runs again: it holds a real allocation.
        let first = app.allocated.is_zero() && app.state != AppState::Completing;
        app.allocated.add_assign(&real.resource);
        app.started = true;
        if app.gang.placeholders == 0 {
            app.gang.timer_epoch = 0;
        }
        apps::sync_active(app, &mut self.queues);
        let queue_path = self.queues.get(app.queue).path.clone();
        self.allocation_count += 1;
        self.rekey_app(&a.app);
        self.sync_holder(&a.app);
        if self.timeouts.events.allows(EventType::App as i32) {
            out.event(events::record(
                EventType::App,
                &a.app,
                &queue_path,
                "PlaceholderReplaced",
                format!(
                    "Application {}: placeholder {ph} replaced by {} on node {}",
                    a.app, real.uuid, real.node
                ),
            ));
        }
        if !first {
            self.fire(&a.app, AppEvent::Run, None, out);
        }
        Some(real)
    }

    /// After a confirmed swap: the last placeholder gone moves a
    /// `Completing`, `Failing` or `Resuming` application on (spec 6.3).
    fn after_swap_confirmed(&mut self, app_id: &str, out: &mut Outcomes) {
        self.after_allocations_removed(app_id, false, true, false, out);
    }

    /// Releases the application's free placeholders with `TIMEOUT` (they
    /// stay until the RM confirms). Returns the release entries.
    pub(super) fn release_free_placeholders(
        &mut self,
        app_id: &str,
        message: &str,
    ) -> Vec<si::AllocationRelease> {
        let Some(app) = self.apps.get_mut(app_id) else {
            return Vec::new();
        };
        let mut released = Vec::new();
        for g in app.gang.groups.values_mut() {
            for u in std::mem::take(&mut g.free) {
                app.gang.free -= 1;
                released.push(si::AllocationRelease {
                    partition_name: self.name.clone(),
                    application_id: app_id.to_string(),
                    uuid: u.to_string(),
                    termination_type: si::TerminationType::Timeout as i32,
                    message: message.to_string(),
                });
                self.gang.releasing.insert(u);
            }
        }
        self.sync_holder(app_id);
        released
    }

    /// The placeholder timer fired (spec 9.4).
    pub(super) fn placeholder_timeout(&mut self, t: &AppTimer, out: &mut Outcomes) {
        let Some(app) = self.apps.get_mut(&t.app) else {
            return;
        };
        if app.gang.timer_epoch != t.epoch || app.gang.placeholders == 0 {
            return;
        }
        app.gang.timer_epoch = 0;
        let (state, style) = (app.state, app.gang.style);
        let queue_path = self.queues.get(app.queue).path.clone();
        let app_id = t.app.clone();
        if matches!(
            state,
            AppState::Running | AppState::Starting | AppState::Completing
        ) {
            // The gang started; what was not used goes back.
            let released = self.release_free_placeholders(&app_id, MSG_PLACEHOLDER_TIMEOUT);
            out.event(events::record(
                EventType::App,
                &app_id,
                &queue_path,
                "PlaceholderTimeout",
                format!(
                    "Application {app_id}: placeholder timeout, {} unused placeholder(s) released",
                    released.len()
                ),
            ));
            if !released.is_empty() {
                out.new_allocation_message(si::AllocationResponse {
                    released,
                    ..Default::default()
                });
            }
            return;
        }
        // The gang never assembled.
        let event = match style {
            GangStyle::Soft => AppEvent::Resume,
            GangStyle::Hard => AppEvent::Fail,
        };
        out.event(events::record(
            EventType::App,
            &app_id,
            &queue_path,
            "PlaceholderTimeout",
            format!(
                "Application {app_id} ({} gang): placeholder timeout in state {}",
                style.as_str(),
                state.as_str()
            ),
        ));
        self.fire(&app_id, event, Some(INFO_RESERVATION_TIMEOUT), out);
        let app = &self.apps[&*app_id];
        let mut keys: Vec<(AskOrderKey, Arc<str>)> = app
            .asks
            .values()
            .map(|a| (a.order_key(), a.key.clone()))
            .collect();
        keys.sort();
        let released_asks: Vec<si::AllocationAskRelease> = keys
            .iter()
            .map(|(_, k)| si::AllocationAskRelease {
                partition_name: self.internal_name.clone(),
                application_id: app_id.to_string(),
                allocationkey: k.to_string(),
                termination_type: si::TerminationType::Timeout as i32,
                message: MSG_ASK_TIMEOUT.into(),
            })
            .collect();
        for (_, k) in &keys {
            self.remove_ask(&app_id, k);
        }
        // Swaps in flight are undone (their real asks are gone): every
        // placeholder goes back.
        let placeholders: Vec<Arc<str>> = self
            .allocations
            .uuids(&self.apps[&*app_id].allocations)
            .filter(|u| self.allocations.get(u).is_some_and(|a| a.placeholder))
            .cloned()
            .collect();
        for u in &placeholders {
            self.unlink(u, false);
            self.gang.unlinked.remove(&**u);
        }
        let mut released: Vec<si::AllocationRelease> = Vec::new();
        let app = self.apps.get_mut(&app_id).expect("looked up above");
        for u in placeholders {
            if let Some(a) = self.allocations.get(&u) {
                app.gang.take_free(&a.task_group, &u);
            }
            released.push(si::AllocationRelease {
                partition_name: self.name.clone(),
                application_id: app_id.to_string(),
                uuid: u.to_string(),
                termination_type: si::TerminationType::Timeout as i32,
                message: MSG_PLACEHOLDER_TIMEOUT.into(),
            });
            self.gang.releasing.insert(u);
        }
        released.sort_by(|a, b| a.uuid.cmp(&b.uuid));
        self.sync_holder(&app_id);
        if !released_asks.is_empty() {
            out.new_allocation_message(si::AllocationResponse {
                released_asks,
                ..Default::default()
            });
        }
        if !released.is_empty() {
            out.new_allocation_message(si::AllocationResponse {
                released,
                ..Default::default()
            });
        }
    }

    /// Node removal with swaps in flight (spec 11.5 step 2). Called for
    /// every UUID on the node before normal removal; returns what it did.
    pub(super) fn node_removal_swap(&mut self, uuid: &str, out: &mut Outcomes) -> NodeSwapAction {
        if let Some(ph) = self.gang.by_real.get(uuid).cloned() {
            // The real allocation of a cross-node swap sits here: undo.
            self.unlink(&ph, true);
            return NodeSwapAction::Handled;
        }
        let Some(swap) = self.gang.swaps.get(uuid) else {
            return NodeSwapAction::None;
        };
        if swap.same_node {
            // Both here: undo, then the placeholder goes normally.
            self.unlink(uuid, true);
            return NodeSwapAction::None;
        }
        // The real allocation is elsewhere: it lands (confirmed now); the
        // placeholder counts as released, and is reported so with the node.
        match self.complete_swap(uuid, out) {
            Some(real) => NodeSwapAction::Confirmed(real),
            None => NodeSwapAction::Handled,
        }
    }

    /// Reports the swaps node removal confirmed, after its release list.
    pub(super) fn node_removal_confirmed(
        &mut self,
        confirmed: Vec<Arc<NewAllocation>>,
        out: &mut Outcomes,
    ) {
        for real in confirmed {
            let app = real.app.clone();
            self.emit_new_allocation(real, out);
            self.after_swap_confirmed(&app, out);
        }
    }

    /// Whether the regular search skips this ask: a real task-group ask
    /// while its application holds placeholders (spec 8.5 step 1).
    pub(super) fn served_by_replacement(app: &Application, ask: &Ask) -> bool {
        app.gang.placeholders > 0 && is_real_member(ask)
    }
}

/// What node removal did with one allocation of the node.
pub(super) enum NodeSwapAction {
    /// Not part of a swap (or the swap was undone): remove it normally.
    None,
    /// Dealt with; nothing to remove or report.
    Handled,
    /// The swap was confirmed: report the placeholder released and its real allocation.
    Confirmed(Arc<NewAllocation>),
}

use crate::scheduler::gang::GangStyle;
