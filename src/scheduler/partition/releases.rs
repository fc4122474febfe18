//! Allocation bookkeeping and RM-initiated releases (spec 10).

use std::sync::Arc;

use super::*;

impl Partition {
    /// Removes an allocation from node, queue, application and partition.
    pub(crate) fn remove_allocation(&mut self, uuid: &str) -> Option<Allocation> {
        let slot = self.allocations.slot_of(uuid)?;
        let a = self.allocations.at(slot).clone();
        if a.placeholder {
            self.placeholder_leaving(&a);
        }
        let node_slot = self.nodes.slot_of(&a.node);
        let app_slot = self.apps.slot_of(&a.app);
        self.allocations.remove(
            slot,
            app_slot.map(|s| &mut self.apps.at_mut(s).allocations),
            node_slot.map(|s| &mut self.nodes.at_mut(s).allocations),
        );
        if let Some(s) = node_slot {
            self.nodes.release(s, &a.resource);
        }
        self.queues.sub_allocated(a.queue, &a.resource);
        if let Some(s) = app_slot {
            let app = self.apps.at_mut(s);
            if !a.placeholder {
                app.release(&a.resource, self.queues.get_mut(app.queue));
            }
            apps::sync_active(app, &mut self.queues, &mut self.ugm);
        }
        Some(a)
    }

    /// RM-initiated allocation releases (spec 10.2): each removed allocation
    /// is echoed with `STOPPED_BY_RM` and its key forgotten through
    /// `ReSyncSchedulerCache`. A `PLACEHOLDER_REPLACED` release of one
    /// allocation confirms a gang swap instead (spec 9.3, `gang/swap.rs`).
    pub fn release_allocations(&mut self, rel: &si::AllocationRelease, out: &mut Outcomes) {
        let app_id = rel.application_id.as_str();
        if !self.apps.contains_key(app_id) {
            return;
        }
        // A replacement confirmation (spec 9.3), unless it is to be
        // handled as a normal release (gang/swap.rs).
        if !rel.uuid.is_empty()
            && rel.termination_type == si::TerminationType::PlaceholderReplaced as i32
            && self.confirm_replacement(rel, out)
        {
            return;
        }
        let app = &self.apps[app_id];
        let uuids: Vec<Arc<str>> = if rel.uuid.is_empty() {
            self.allocations.uuids(&app.allocations).cloned().collect()
        } else if self
            .allocations
            .get(&rel.uuid)
            .is_some_and(|a| *a.app == *app.id)
        {
            vec![Arc::from(rel.uuid.as_str())]
        } else {
            Vec::new()
        };
        let all = rel.uuid.is_empty();
        let (mut real, mut placeholders) = (false, false);
        let mut released = Vec::new();
        for u in uuids {
            if let Some(a) = self.remove_allocation(&u) {
                real |= !a.placeholder;
                placeholders |= a.placeholder;
                out.forget.push(si::ForgotAllocation {
                    allocation_key: a.key.to_string(),
                });
                released.push(si::AllocationRelease {
                    partition_name: self.name.clone(),
                    application_id: app_id.to_string(),
                    uuid: a.uuid.to_string(),
                    termination_type: si::TerminationType::StoppedByRm as i32,
                    message: "allocation remove as per RM request".into(),
                });
            }
        }
        if !released.is_empty() {
            out.new_allocation_message(si::AllocationResponse {
                released,
                ..Default::default()
            });
            self.after_allocations_removed(app_id, real, placeholders, all, out);
        }
    }
}
