//! The replacement step of the scheduling pass (spec 8.2 step b, 9.3) and
//! the RM's confirmation of a swap.

use crate::scheduler::alloc_uuid::AllocUuid;
use std::sync::Arc;

use crate::events;
use crate::proto::si::v1 as si;
use crate::scheduler::objects::allocs::Allocation;
use crate::scheduler::objects::application::{AppEvent, AppState, Ask};
use crate::scheduler::objects::reservation::ReservedAsk;
use crate::scheduler::outcome::{NewAllocation, Outcomes};
use crate::scheduler::partition::{apps, Partition};
use crate::scheduler::resync::ResyncBarrier;

use super::book::{is_real_member, Swap};
use si::event_record::Type as EventType;

/// A replacement the search found.
struct Plan {
    app: Arc<str>,
    key: Arc<str>,
    placeholder: AllocUuid,
    node: Arc<str>,
    same_node: bool,
}

impl Partition {
    /// Step b of a pass (spec 8.2, 9.3): real task-group asks replace
    /// placeholders, applications in queue order. Returns the swaps made.
    pub(crate) fn replacement_pass(
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
            .filter(|a| {
                a.ask_order
                    .values()
                    .any(|k| a.asks.whole_at(k).is_some_and(is_real_member))
            })
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
                let mut events = Vec::new();
                let plan = self.find_swap(&app_id, cb, &mut events);
                out.events
                    .extend(events.into_iter().map(crate::events::Record::from));
                let Some(plan) = plan else {
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
        let mut first: Option<(&Ask, &AllocUuid)> = None;
        for key in app.ask_order.values() {
            let Some(ask) = app.asks.whole_at(key) else {
                continue;
            };
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
        let excess = ask.resource.sub_clamped(&self.allocations[ph].resource);
        if !excess.is_zero()
            && !self
                .queues
                .headroom(app.queue)
                .is_none_or(|h| excess.fits_in_max_undef(&h))
        {
            return None;
        }
        // And the user's and group's headroom, as the queue's: the excess of
        // this application's swaps still in flight is not in the trackers
        // yet, so it counts here (docs/limits.md). Unsure waits too.
        if !excess.is_zero() && self.ugm.enabled() {
            let mut wanted = excess.clone();
            for s in self
                .gang
                .swaps
                .values()
                .filter(|s| **s.real.app() == *app.id)
            {
                wanted.add_assign(&s.excess);
            }
            if self.ugm.fits(app, &wanted) != crate::scheduler::ugm::Fit::Fits {
                return None;
            }
        }
        let me = (!self.reservations.is_empty()).then(|| ReservedAsk {
            app: app.id.clone(),
            key: ask.key.clone(),
        });
        let n = self.first_fit(app_id, ask, me.as_ref(), cb, events, |_, _| {})?;
        Some(Plan {
            app: app.id.clone(),
            key: ask.key.clone(),
            placeholder: ph.clone(),
            node: n.id.clone(),
            same_node: false,
        })
    }

    /// Makes a swap: the real allocation is created and linked, the
    /// placeholder marked as being replaced. Returns the release entry for
    /// the placeholder that tells the RM (spec 9.3 step 3).
    fn make_swap(&mut self, plan: Plan, out: &mut Outcomes) -> si::AllocationRelease {
        let ph = &self.allocations[&plan.placeholder];
        let (ph_resource, ph_key, ph_node) = (ph.resource.clone(), ph.key.clone(), ph.node.clone());
        let app_slot = self.apps.slot_of(&plan.app).expect("found by the search");
        let ask_slot = self.apps[app_slot].asks.slot_of(&plan.key);
        let ask_slot = ask_slot.expect("found by the search");
        let ask_seq = self.apps[app_slot].asks[ask_slot].seq();
        // A real member is no placeholder: `real` is a real allocation.
        let (real, remaining) = self.mint(app_slot, ask_slot, plan.node.clone());
        let uuid = real.uuid.clone();
        let app = self.apps.at_mut(app_slot);
        app.gang.take_free(real.task_group(), &plan.placeholder);
        let q = app.queue;
        let queue_path = self.queues.get(q).path.clone();
        self.queues.sub_pending(q, &real.resource);
        let excess = real.resource.sub_clamped(&ph_resource);
        if !excess.is_zero() {
            self.queues.add_allocated(q, &excess);
        }
        let mut real_slot = None;
        if !plan.same_node {
            let s = self.nodes.slot_of(&plan.node).expect("found by the search");
            self.nodes.allocate(s, &real.resource);
            let entry = Allocation {
                record: real.clone(),
                queue: q,
            };
            let list = &mut self.nodes.at_mut(s).allocations;
            real_slot = Some(self.allocations.insert_in_flight(entry, list));
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
            self.gang.unlinked.remove(&plan.placeholder);
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
                ask_seq,
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
    pub(crate) fn confirm_replacement(
        &mut self,
        rel: &si::AllocationRelease,
        out: &mut Outcomes,
    ) -> bool {
        let owned = self
            .allocations
            .get(&rel.uuid)
            .filter(|a| **a.app() == *rel.application_id)
            .map(|a| a.uuid.clone());
        let Some(uuid) = &owned else {
            log::debug!(
                "replacement confirmation for unknown allocation {} of {} ignored",
                rel.uuid,
                rel.application_id
            );
            return true;
        };
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
    pub(super) fn emit_new_allocation(&mut self, real: Arc<NewAllocation>, _out: &mut Outcomes) {
        self.gang.confirmed.push(real);
    }

    /// Reports the real allocations of swaps confirmed since the last pass.
    /// Returns whether there were any.
    pub(crate) fn emit_confirmed(
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
    pub(super) fn complete_swap(
        &mut self,
        ph: &AllocUuid,
        out: &mut Outcomes,
    ) -> Option<Arc<NewAllocation>> {
        let swap = self.gang.swaps.remove(ph)?;
        let real = swap.real;
        let ph_slot = self.allocations.slot_of(ph)?;
        let a = self.allocations.at(ph_slot).clone();
        let node_slot = self.nodes.slot_of(&a.node);
        let app_slot = self.apps.slot_of(a.app());
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
        if let Some(s) = node_slot {
            // The usual swap (same node, same size) leaves usage as it is.
            if !swap.same_node {
                self.nodes.release(s, &a.resource);
            } else if real.resource != a.resource {
                self.nodes.resize(s, &a.resource, &real.resource);
            }
        }
        if !swap.same_node {
            self.gang.by_real.remove(&real.uuid);
        }
        // Queue usage follows the real size (the spec's recommended fix);
        // an excess was counted at the decision already.
        if real.resource != a.resource {
            self.queues
                .sub_allocated(a.queue, &a.resource.add(&swap.excess));
            self.queues.add_allocated(a.queue, &real.resource);
        }
        let app = self.apps.get_mut(a.app())?;
        app.gang
            .remove_placeholder(a.task_group(), &a.uuid, &a.resource);
        if let Some(g) = app.gang.groups.get_mut(real.task_group()) {
            g.real += 1;
        }
        // The first replacement does not move the state on: the last
        // placeholder did already (spec 6.3). An application that went
        // `Completing` meanwhile runs again: it holds a real allocation.
        let first = app.allocated().is_zero() && app.state != AppState::Completing;
        app.allocate(&real.resource, self.queues.get_mut(app.queue));
        app.started = true;
        if app.gang.placeholders == 0 {
            app.gang.timer_epoch = 0;
        }
        apps::sync_active(app, &mut self.queues, &mut self.ugm);
        let queue_path = self.queues.get(app.queue).path.clone();
        self.allocation_count += 1;
        self.sync_holder(a.app());
        if self.timeouts.events.allows(EventType::App as i32) {
            out.event(events::record(
                EventType::App,
                a.app(),
                &queue_path,
                "PlaceholderReplaced",
                format!(
                    "Application {}: placeholder {ph} replaced by {} on node {}",
                    a.app(),
                    real.uuid,
                    real.node
                ),
            ));
        }
        if !first {
            self.fire(a.app(), AppEvent::Run, None, out);
        }
        Some(real)
    }

    /// After a confirmed swap: the last placeholder gone moves a
    /// `Completing`, `Failing` or `Resuming` application on (spec 6.3).
    pub(super) fn after_swap_confirmed(&mut self, app_id: &str, out: &mut Outcomes) {
        self.after_allocations_removed(app_id, false, true, false, out);
    }
}
