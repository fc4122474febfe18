//! Making an allocation the pass decided on, and bringing the pass's
//! allocations to the user and group levels.

use super::*;
use crate::scheduler::edition::Edition;
use crate::scheduler::objects::slot_index::KeyHash;
use crate::scheduler::resync::ResyncBarrier;

impl Partition {
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
        // SI v1.x: the key's hash in the allocation index, taken at intake
        // (v0.12 mints a UUID that names its slot: no hash).
        let hash = match self.edition {
            Edition::V1 => self.apps[app_slot].asks.whole_at(ask_slot),
            Edition::V012 => None,
        };
        let hash = hash.and_then(|a| a.alloc_hash).map(KeyHash::from);
        let (record, remaining) = self.mint(app_slot, ask_slot, node_id);
        let placeholder = record.placeholder;
        let app = self.apps.at_mut(app_slot);
        if remaining <= 0 && !placeholder {
            let ask_seq = app.asks[ask_slot].seq();
            self.placed_whole
                .push((app_slot, app.seq, ask_slot, ask_seq));
        }
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
        if self.tracing_allocations() {
            self.trace_allocated(&record, out);
        }
        // Only a placeholder needs these afterwards (its gang books).
        let gang = placeholder.then(|| {
            (
                record.uuid.clone(),
                record.task_group().clone(),
                record.resource.clone(),
            )
        });
        self.allocations.insert_hashed(
            Allocation { record, queue },
            &mut self.apps.at_mut(app_slot).allocations,
            &mut self.nodes.at_mut(node_slot).allocations,
            hash,
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
}
