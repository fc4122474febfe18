//! SI v1.x: allocations merged by key (the model behind the v1 edge).
//!
//! In a partition whose [`Edition`] is `V1` the allocation key is the only
//! handle: one request gives at most one allocation, whose UUID is the key
//! (`Partition::mint`). The v1 edge translates each `Allocation` of an
//! `AllocationRequest` into one of three shapes, and the RM re-sends the
//! same message on any change, so each merge is idempotent:
//!
//! - an ask (no node; `AskRequest`, `max_allocations` 1): unknown key →
//!   pending request; pending key → the request is replaced (resized);
//!   allocated key → the allocation is resized when the resource differs
//!   ([`Partition::resize_allocation`]), else nothing;
//! - a placed allocation (`PlacedAllocation`, with a node):
//!   [`Partition::add_placed`];
//! - a foreign allocation (`ForeignAllocation`): [`Partition::set_foreign`].
//!
//! Failures are the reasons the core answers in `rejected` (the edge's
//! `rejectedAllocations`). v0.12 partitions never come here.

use std::ops::ControlFlow;
use std::sync::Arc;

use super::nodes::Adopted;
use super::*;
use crate::scheduler::edition::Edition;
use crate::scheduler::objects::allocs::AllocSlot;
use crate::scheduler::objects::slot_index::KeyHash;
use crate::scheduler::request::{AskRequest, ForeignAllocation, PlacedAllocation};

impl Partition {
    /// SI v1.x: an ask or placed allocation for a key the partition may
    /// hold already. `Break` when the key is allocated (or is the real
    /// allocation of a gang swap in flight) and the merge is done: a
    /// resize, nothing, or a rejection. `Continue` when the key is new or
    /// only pending, for the caller to handle, with the key's hash in the
    /// allocation index ([`Ask::alloc_hash`]).
    ///
    /// Inline (always: as a call its prologue and epilogue were a fifth of
    /// its cost): every SI v1.x ask comes here, nearly always with a new
    /// key, which the probe alone settles.
    #[inline(always)]
    pub(super) fn merge_known_key(
        &mut self,
        app_slot: Slot,
        ask: &AskRequest,
        resource: &Resource,
    ) -> ControlFlow<Result<(), String>, KeyHash> {
        debug_assert_eq!(self.edition, Edition::V1);
        let key = &*ask.key;
        let (found, hash) = self.allocations.probe(key);
        if found.is_none() && self.gang.swaps.is_empty() && self.nodes.foreign_node(key).is_none() {
            return ControlFlow::Continue(hash);
        }
        match self.merge_known_slot(app_slot, ask, resource, found) {
            Some(done) => ControlFlow::Break(done),
            None => ControlFlow::Continue(hash),
        }
    }

    /// [`Self::merge_known_key`] of a key that names a foreign allocation,
    /// is allocated (in `found`), or may be a swap's real allocation.
    fn merge_known_slot(
        &mut self,
        app_slot: Slot,
        ask: &AskRequest,
        resource: &Resource,
        found: Option<AllocSlot>,
    ) -> Option<Result<(), String>> {
        let key = &*ask.key;
        if self.nodes.foreign_node(key).is_some() {
            return Some(Err(format!(
                "allocation {key} of application {}: the key names a foreign allocation",
                ask.app
            )));
        }
        let app = &self.apps[app_slot];
        if let Some(a) = found.map(|s| self.allocations.at(s)) {
            if **a.app() != *app.id {
                return Some(Err(format!(
                    "allocation {key} of application {}: the key is allocated to application {}",
                    ask.app,
                    a.app()
                )));
            }
            if a.resource == *resource {
                return Some(Ok(()));
            }
            return Some(self.resize_allocation(key, resource));
        }
        // Allocated, but as the real allocation of a swap not yet
        // confirmed: it joins the application on confirmation.
        let taken = !self.gang.swaps.is_empty()
            && app.asks.get(key).is_some_and(|a| a.pending_repeat() <= 0);
        if taken && self.gang.swaps.values().any(|s| *s.real.key == *key) {
            log::debug!(
                "allocation {key} of {}: replacing a placeholder, unchanged",
                ask.app
            );
            return Some(Ok(()));
        }
        None
    }

    /// SI v1.x: the RM resized allocation `uuid` (its key): node, queue
    /// chain and application usage move from the old size to `new`. A
    /// grow is counted even past a capacity or a max (the RM runs it
    /// already); `Err` (nothing changed) only when a usage total would not
    /// fit an i64.
    pub fn resize_allocation(&mut self, uuid: &str, new: &Resource) -> Result<(), String> {
        let Some(slot) = self.allocations.slot_of(uuid) else {
            return Err(format!("allocation {uuid} not found"));
        };
        let a = self.allocations.at(slot).clone();
        let old = &a.resource;
        let node_slot = self.nodes.slot_of(&a.node);
        let app_slot = self.apps.slot_of(a.app());
        let overflow = |what: &str| {
            format!(
                "allocation {uuid} of application {}: resizing from {old} to {new} would overflow the {what}",
                a.app()
            )
        };
        // Every check before the first change.
        let grow = new.sub_clamped(old);
        if node_slot.is_some_and(|s| !self.nodes.can_resize(s, old, new)) {
            return Err(overflow(&format!("allocated total of node {}", a.node)));
        }
        self.queues
            .check_add(a.queue, &grow, true)
            .map_err(|e| overflow(&format!("queue usage: {e}")))?;
        if let Some(s) = app_slot {
            let app = &self.apps[s];
            let total = if a.placeholder {
                &app.gang.placeholder_allocated
            } else {
                app.allocated()
            };
            if !total.can_add(&grow) {
                return Err(overflow("application's usage"));
            }
        }
        let record = Arc::new(NewAllocation {
            resource: new.clone(),
            ..(*a.record).clone()
        });
        self.allocations.replace(
            slot,
            Allocation {
                record,
                queue: a.queue,
            },
        );
        if let Some(s) = node_slot {
            self.nodes.resize(s, old, new);
        }
        self.queues.sub_allocated(a.queue, old);
        self.queues.add_allocated(a.queue, new);
        if let Some(s) = app_slot {
            let app = self.apps.at_mut(s);
            if a.placeholder {
                app.gang.placeholder_allocated.sub_clamped_assign(old);
                app.gang.placeholder_allocated.add_assign(new);
            } else {
                let leaf = self.queues.get_mut(app.queue);
                app.release(old, leaf);
                app.allocate(new, leaf);
            }
            // The stand-in ask follows (a swap undone gives back its size).
            if let Some(k) = app.asks.slot_of(&a.key) {
                let listed = place::pending_lists(&self.queues, app.queue, &app.pending, new);
                app.asks.at_mut(k).resize_placed(new, listed);
            }
            // After every change of an application's allocations (what
            // other trackers of its usage hook into).
            apps::sync_active(app, &mut self.queues, &mut self.ugm);
        }
        // Either way: a queue still above its max is armed (v1.9, 5.3).
        self.quota_arm_on_growth(a.queue);
        log::debug!(
            "allocation {uuid} of {} on {} resized from {old} to {new}",
            a.app(),
            a.node
        );
        Ok(())
    }

    /// SI v1.x: an allocation the RM sent with a node ID. Unknown key:
    /// placed by the RM (recovery, or bound outside the core), added to
    /// node, queue and application at once with no capacity check and
    /// echoed in `new`. Pending key: the RM placed that request; it becomes
    /// the allocation, echoed in `new`. Allocated key: resized when the
    /// resource differs, else nothing (the node is not moved). A
    /// placeholder without task group is dropped silently, as recovery
    /// drops it. `Err` is the rejection reason; nothing changed.
    pub fn add_placed(&mut self, p: &PlacedAllocation, out: &mut Outcomes) -> Result<(), String> {
        let ask = &p.ask;
        let (app_id, key) = (&*ask.app, &*ask.key);
        if self.edition != Edition::V1 {
            return Err(format!(
                "allocation {key} of application {app_id}: placed allocations are SI v1.x, partition {} is {}",
                self.internal_name,
                self.edition.name()
            ));
        }
        let Some(app_slot) = self.apps.slot_of(app_id) else {
            return Err(format!(
                "failed to find application {app_id}, for allocation {key}"
            ));
        };
        if key.is_empty() {
            return Err(format!(
                "invalid allocation added to app {app_id}: empty allocation key"
            ));
        }
        if ask.placeholder && ask.task_group.is_empty() {
            log::debug!("placeholder {key} of {app_id} without task group dropped");
            return Ok(());
        }
        let resource = ask.resource.clone()?;
        if !resource.is_strictly_positive() {
            return Err(format!(
                "invalid allocation added to app {app_id}: allocation {key} has resource {resource} (need a positive resource)"
            ));
        }
        let Some(node_slot) = self.nodes.slot_of(&p.node) else {
            return Err(format!(
                "failed to find node {} for allocation {key} of application {app_id}",
                p.node
            ));
        };
        if let ControlFlow::Break(done) = self.merge_known_key(app_slot, ask, &resource) {
            return done;
        }
        // Usage totals are subtracted from later: they must stay exact.
        let app = &self.apps[app_slot];
        let overflow = |what: String| {
            format!("allocation {key} of application {app_id}: {resource} would overflow {what}")
        };
        let node = &self.nodes[node_slot];
        if !node.allocated().can_add(&resource) {
            return Err(overflow(format!("the allocated total of node {}", node.id)));
        }
        let app_total = if ask.placeholder {
            &app.gang.placeholder_allocated
        } else {
            app.allocated()
        };
        if !app_total.can_add(&resource) {
            return Err(overflow("the application's usage".into()));
        }
        self.queues
            .check_add(app.queue, &resource, true)
            .map_err(|e| overflow(format!("queue usage: {e}")))?;
        let node_id = node.id.clone();
        let app_id = app.id.clone();
        // A pending request of that key is what the RM placed: its demand
        // goes, the allocation takes its place (as the RM sent it).
        self.remove_ask(&app_id, key);
        let record = self.adopt_allocation(
            &node_id,
            Adopted {
                key: ask.key.clone(),
                uuid: crate::scheduler::alloc_uuid::AllocUuid::from_shared(&ask.key),
                app: &app_id,
                resource,
                priority: ask.priority,
                tags: ask.tags.clone(),
                task_group: ask.task_group.clone(),
                placeholder: ask.placeholder,
                preempt_self: ask.preempt_self,
                preempt_other: ask.preempt_other,
                originator: ask.originator,
            },
            out,
        );
        out.new_allocation(record);
        Ok(())
    }

    /// SI v1.x: sets a foreign allocation (one the core did not schedule)
    /// on its node: the node's occupied resource is the sum of its foreign
    /// allocations, so its free resource and its place in the node order
    /// follow. Re-sending the key resizes it (or moves it to the node
    /// named). Never echoed. `Err` is the rejection reason; nothing
    /// changed.
    pub fn set_foreign(&mut self, f: &ForeignAllocation) -> Result<(), String> {
        let key = &f.key;
        if self.edition != Edition::V1 {
            return Err(format!(
                "foreign allocation {key}: foreign allocations are SI v1.x, partition {} is {}",
                self.internal_name,
                self.edition.name()
            ));
        }
        if key.is_empty() {
            return Err("foreign allocation with an empty allocation key".into());
        }
        if f.node.is_empty() {
            return Err(format!("foreign allocation {key} has no node ID"));
        }
        let resource = f.resource.clone()?;
        if resource.has_negative() {
            return Err(format!(
                "foreign allocation {key} has a negative resource {resource}"
            ));
        }
        let Some(slot) = self.nodes.slot_of(&f.node) else {
            return Err(format!(
                "failed to find node {} for foreign allocation {key}",
                f.node
            ));
        };
        if let Some(a) = self.allocations.get(key) {
            return Err(format!(
                "foreign allocation {key}: the key is allocated to application {}",
                a.app()
            ));
        }
        self.nodes.set_foreign(slot, key, resource)
    }

    /// SI v1.x: the RM released foreign allocation `key` (a release with
    /// no application). Nothing is sent back; an unknown key is ignored.
    pub fn release_foreign(&mut self, key: &str) {
        if self.nodes.remove_foreign(key).is_none() {
            log::debug!("release of unknown foreign allocation {key} ignored");
        }
    }
}
