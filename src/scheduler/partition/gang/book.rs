//! The partition's gang books (spec 9): admission, the swaps in flight and
//! the placeholders each application holds.
//!
//! A swap in flight: the placeholder stays an allocation of the application
//! (on its node, in queue usage) until the RM confirms it gone. The real
//! allocation is held here, outside the application. On the placeholder's
//! own node it takes over the placeholder's space (node usage unchanged);
//! on another node it occupies space there (node usage grows, queue usage
//! does not) and is listed among that node's allocations.

use std::sync::Arc;

use crate::scheduler::objects::allocs::{AllocSlot, Allocation};
use crate::scheduler::objects::application::{AppEvent, AppState, Application, Ask};
use crate::scheduler::objects::queue::QueueId;
use crate::scheduler::outcome::{AppTimer, NewAllocation, Outcomes, TimerKind};
use crate::scheduler::partition::Partition;
use crate::scheduler::policies::AppSortPolicy;
use crate::scheduler::resource::Resource;
use crate::scheduler::{FastMap, FastSet};

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
    /// The `seq` of the ask whose repeat it took: an undone swap gives
    /// the repeat back only to that ask, not to one the RM sent in its
    /// place meanwhile (which carries its own repeats).
    pub ask_seq: u64,
}

/// The partition's gang books.
#[derive(Debug, Default)]
pub struct GangBook {
    /// Swaps in flight by placeholder UUID.
    pub swaps: FastMap<crate::scheduler::alloc_uuid::AllocUuid, Swap>,
    /// Placeholder UUID by real UUID, for real allocations placed on
    /// another node than their placeholder (they sit in that node's list).
    pub by_real:
        FastMap<crate::scheduler::alloc_uuid::AllocUuid, crate::scheduler::alloc_uuid::AllocUuid>,
    /// Placeholders the core released with `TIMEOUT`, awaiting the RM.
    pub releasing: FastSet<crate::scheduler::alloc_uuid::AllocUuid>,
    /// Placeholders whose swap was undone after the RM was told of it: a
    /// late confirmation removes them like a normal release (spec 11.5).
    pub unlinked: FastSet<crate::scheduler::alloc_uuid::AllocUuid>,
    /// Applications holding at least one free placeholder.
    pub holders: FastSet<Arc<str>>,
    /// Real allocations of confirmed swaps, reported at the start of the
    /// next pass (through its ReSync barrier).
    pub confirmed: Vec<Arc<NewAllocation>>,
}

impl GangBook {
    /// Whether placeholder `uuid` is on its way out: released on timeout,
    /// or being swapped for its real allocation. Such a placeholder is
    /// never a preemption victim: its resources are already spoken for.
    pub fn placeholder_leaving(&self, uuid: &crate::scheduler::alloc_uuid::AllocUuid) -> bool {
        self.releasing.contains(uuid) || self.swaps.contains_key(uuid)
    }
}

/// Whether an ask is a real member of a task group (replaces placeholders).
pub(super) fn is_real_member(ask: &Ask) -> bool {
    !ask.placeholder && !ask.task_group.is_empty()
}

impl Partition {
    /// Admission of an application with a non-zero `placeholderAsk` to leaf
    /// `q` (spec 9.2); `leaf_max`, when given, stands for the leaf's own
    /// max (the one the application's quota tag is about to set).
    pub(crate) fn admit_gang(
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
    pub(crate) fn sync_holder(&mut self, app_id: &str) {
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
    pub(crate) fn placeholder_added(
        &mut self,
        app_id: &Arc<str>,
        uuid: &crate::scheduler::alloc_uuid::AllocUuid,
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
            let now = self.clock.now();
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
    pub(crate) fn placeholder_leaving(&mut self, a: &Allocation) {
        self.unlink(&a.uuid, true);
        self.gang.unlinked.remove(&a.uuid);
        self.gang.releasing.remove(&a.uuid);
        if let Some(app) = self.apps.get_mut(a.app()) {
            app.gang
                .remove_placeholder(a.task_group(), &a.uuid, &a.resource);
            if app.gang.placeholders == 0 {
                app.gang.timer_epoch = 0; // cancels the placeholder timer
            }
        }
        self.sync_holder(a.app());
    }

    /// Undoes the swap of placeholder `ph`, if one is in flight: the real
    /// allocation leaves its node, and with `restore_ask` the real ask gets
    /// its repeat back to be scheduled again. The placeholder becomes free
    /// again; the RM is told nothing new (spec 11.5).
    pub(crate) fn unlink(
        &mut self,
        ph: &crate::scheduler::alloc_uuid::AllocUuid,
        restore_ask: bool,
    ) {
        let Some(swap) = self.gang.swaps.remove(ph) else {
            return;
        };
        let real = swap.real;
        if !swap.excess.is_zero() {
            if let Some(app) = self.apps.get(real.app()) {
                let q = app.queue;
                self.queues.sub_allocated(q, &swap.excess);
            }
        }
        if !swap.same_node {
            self.gang.by_real.remove(&real.uuid);
            let node_slot = self.nodes.slot_of(&real.node);
            if let Some(s) = swap.real_slot {
                self.allocations.remove(
                    s,
                    None,
                    node_slot.map(|n| &mut self.nodes.at_mut(n).allocations),
                );
            }
            if let Some(s) = node_slot {
                self.nodes.release(s, &real.resource);
            }
        }
        let Some(app) = self.apps.get_mut(real.app()) else {
            return;
        };
        if restore_ask {
            let same_ask = app
                .asks
                .slot_of(&real.key)
                .filter(|s| app.asks[*s].seq() == swap.ask_seq);
            // A swap's real ask stays whole (it is never compacted).
            if let Some((slot, ask)) = same_ask.and_then(|s| Some((s, app.asks.whole_at_mut(s)?))) {
                if ask.pending_repeat <= 0 && app.ask_order.insert(ask.order_key(), slot).is_none()
                {
                    self.waiting_asks += 1;
                }
                ask.pending_repeat += 1;
                app.sync_priority(&mut self.queues);
                app.pending.add_assign(&real.resource);
                let q = app.queue;
                self.queues.add_pending(q, &real.resource);
                // Waits for a placeholder again (partition/held.rs).
                self.watch_held(real.app(), true);
            }
        }
        let app = self.apps.get_mut(real.app()).expect("looked up above");
        if let Some(uuid) = self.allocations.get(ph).map(|a| &a.uuid) {
            if !self.gang.releasing.contains(ph) {
                app.gang.give_back(real.task_group(), uuid);
            }
            self.gang.unlinked.insert(uuid.clone());
        }
        self.sync_holder(real.app());
    }

    /// Whether the regular search skips this ask: a real task-group ask
    /// while its application holds placeholders (spec 8.5 step 1).
    pub(crate) fn served_by_replacement(app: &Application, ask: &Ask) -> bool {
        app.gang.placeholders > 0 && is_real_member(ask)
    }
}
