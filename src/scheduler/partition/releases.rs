//! Allocation bookkeeping and RM-initiated releases (spec 10).

use std::sync::Arc;

use super::*;
use crate::events::Detail;
use crate::scheduler::alloc_uuid::{AllocUuid, AsUuidRef};
use crate::scheduler::edition::Edition;

impl Partition {
    /// Removes an allocation from node, queue, application and partition.
    pub(crate) fn remove_allocation<Q: AsUuidRef + ?Sized>(
        &mut self,
        uuid: &Q,
    ) -> Option<Allocation> {
        let slot = self.allocations.slot_of(uuid)?;
        let a = self.allocations.at(slot).clone();
        if a.placeholder {
            self.placeholder_leaving(&a);
        }
        let node_slot = self.nodes.slot_of(&a.node);
        let app_slot = self.apps.slot_of(a.app());
        self.allocations.remove(
            slot,
            app_slot.map(|s| &mut self.apps.at_mut(s).allocations),
            node_slot.map(|s| &mut self.nodes.at_mut(s).allocations),
        );
        if let Some(s) = node_slot {
            self.nodes.release(s, &a.resource);
        }
        self.queues.sub_allocated(a.queue, &a.resource);
        self.preemption_released(&a.uuid);
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
        if self.edition == Edition::V1 {
            return self.release_by_key(rel, out);
        }
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
        let uuids: Vec<AllocUuid> = if rel.uuid.is_empty() {
            self.allocations.uuids(&app.allocations).cloned().collect()
        } else {
            self.allocations
                .get(&rel.uuid)
                .filter(|a| **a.app() == *app.id)
                .map(|a| a.uuid.clone())
                .into_iter()
                .collect()
        };
        let all = rel.uuid.is_empty();
        let (mut real, mut placeholders) = (false, false);
        let mut released = Vec::new();
        for u in uuids {
            let victim = self.tracing() && self.preempt.is_victim(&u);
            if let Some(a) = self.remove_allocation(&u) {
                real |= !a.placeholder;
                placeholders |= a.placeholder;
                if victim {
                    self.trace_victim_gone(&a, rel.termination_type, out);
                } else if self.tracing_allocations() {
                    self.trace_removed(&a, Detail::AllocCancel, "released by the RM", out);
                }
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

impl Partition {
    /// SI v1.x releases (`uuid` is the allocation key):
    ///
    /// - no application: foreign allocation `uuid` goes, silently;
    /// - `PLACEHOLDER_REPLACED`: confirms a gang swap (the real allocation
    ///   is reported in `new`), as in v0.12;
    /// - `TIMEOUT` or `PREEMPTED_BY_SCHEDULER` of an allocation the core
    ///   itself released: the RM confirms it gone; it is removed with no
    ///   further message. Naming another application than the owner is
    ///   refused (a `ReleaseRefused` request record) and changes nothing;
    /// - otherwise (`STOPPED_BY_RM`): the request and the allocation of
    ///   that key go (every request and allocation of the application for
    ///   an empty key), each allocation echoed in `released` with
    ///   `STOPPED_BY_RM`. A key with nothing left (the confirmation of a
    ///   pending placeholder's `TIMEOUT`, say) changes nothing.
    fn release_by_key(&mut self, rel: &si::AllocationRelease, out: &mut Outcomes) {
        let app_id = rel.application_id.as_str();
        let key = rel.uuid.as_str();
        if app_id.is_empty() {
            if !key.is_empty() {
                self.release_foreign(key);
            }
            return;
        }
        if !self.apps.contains_key(app_id) {
            return;
        }
        let t = rel.termination_type;
        use si::TerminationType as T;
        if !key.is_empty()
            && t == T::PlaceholderReplaced as i32
            && self.confirm_replacement(rel, out)
        {
            return;
        }
        let held = self.allocations.get(key).map(|a| a.uuid.clone());
        let confirms = (t == T::Timeout as i32 || t == T::PreemptedByScheduler as i32)
            && held
                .as_ref()
                .is_some_and(|u| self.gang.releasing.contains(u) || self.preempt.is_victim(u));
        if !key.is_empty() && confirms {
            // As the ordinary path: only the owner's confirmation counts.
            if let Some(owner) = self.allocations.get(key).map(|a| a.app().clone()) {
                if *owner != *app_id {
                    log::warn!(
                        "release of {key} by application {app_id} refused: it belongs to {owner}"
                    );
                    out.event(crate::events::record(
                        si::event_record::Type::Request,
                        key,
                        app_id,
                        "ReleaseRefused",
                        format!("allocation {key} belongs to application {owner}, not {app_id}: the release changes nothing"),
                    ));
                    return;
                }
            }
            self.remove_ask(app_id, key);
            let victim = self.tracing() && held.as_ref().is_some_and(|u| self.preempt.is_victim(u));
            if let Some(a) = self.remove_allocation(key) {
                if victim {
                    self.trace_victim_gone(&a, t, out);
                }
                self.after_allocations_removed(app_id, !a.placeholder, a.placeholder, false, out);
            }
            return;
        }
        let all = key.is_empty();
        let app = &self.apps[app_id];
        let (keys, uuids): (Vec<Arc<str>>, Vec<AllocUuid>) = if all {
            (
                app.asks.keys().cloned().collect(),
                self.allocations.uuids(&app.allocations).cloned().collect(),
            )
        } else {
            let owned = self
                .allocations
                .get(key)
                .filter(|a| **a.app() == *app.id)
                .map(|a| a.uuid.clone());
            (vec![Arc::from(key)], owned.into_iter().collect())
        };
        if !all {
            self.drop_swap_of_real(app_id, key);
        }
        let mut asks_removed = false;
        for k in &keys {
            asks_removed |= self.remove_ask(app_id, k);
        }
        let (mut real, mut placeholders) = (false, false);
        let mut released = Vec::new();
        for u in uuids {
            let victim = self.tracing() && self.preempt.is_victim(&u);
            if let Some(a) = self.remove_allocation(&u) {
                real |= !a.placeholder;
                placeholders |= a.placeholder;
                if victim {
                    self.trace_victim_gone(&a, t, out);
                } else if self.tracing_allocations() {
                    self.trace_removed(&a, Detail::AllocCancel, "released by the RM", out);
                }
                released.push(si::AllocationRelease {
                    partition_name: self.name.clone(),
                    application_id: app_id.to_string(),
                    uuid: a.uuid.to_string(),
                    termination_type: T::StoppedByRm as i32,
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
        } else if asks_removed {
            self.check_completion(app_id, out);
        }
    }

    /// SI v1.x: the RM stopped `key`, the real allocation of a gang swap in
    /// flight (not confirmed yet). The swap is undone; the placeholder,
    /// which the RM was told is being replaced, is not offered again: its
    /// confirmation removes it like a normal release.
    fn drop_swap_of_real(&mut self, app_id: &str, key: &str) {
        if self.gang.swaps.is_empty() {
            return;
        }
        let Some(ph) = self
            .gang
            .swaps
            .iter()
            .find(|(_, s)| *s.real.key == *key && **s.real.app() == *app_id)
            .map(|(ph, _)| ph.clone())
        else {
            return;
        };
        self.unlink(&ph, false);
        if let Some(a) = self.allocations.get(&ph) {
            let group = a.task_group().clone();
            if let Some(app) = self.apps.get_mut(app_id) {
                app.gang.take_free(&group, &ph);
            }
        }
        self.sync_holder(app_id);
    }
}
