//! Asks: adding, replacing and releasing (spec 7).

use std::ops::ControlFlow;
use std::sync::Arc;

use super::*;
use crate::scheduler::edition::Edition;
use crate::scheduler::request::AskRequest;

impl Partition {
    /// Adds or replaces an ask (spec 7.1); `Err` is the rejection reason.
    /// In SI v1.x the key is merged instead when it is allocated (see
    /// `merge.rs`), and a request asks for exactly one allocation.
    pub fn add_ask(&mut self, ask: &AskRequest, out: &mut Outcomes) -> Result<(), String> {
        let added = self.take_ask(ask, out);
        self.settle_queues();
        added
    }

    /// [`Self::add_ask`], leaving the queues' re-filing to
    /// [`Self::settle_queues`], which must come before the next pass: a
    /// request's asks then re-file each queue once (queue/unfiled.rs).
    pub fn take_ask(&mut self, ask: &AskRequest, out: &mut Outcomes) -> Result<(), String> {
        let app_id = &*ask.app;
        let key = &*ask.key;
        // The id is resolved once; the rest goes by slot.
        let Some(slot) = self.apps.slot_of(app_id) else {
            return Err(format!(
                "failed to find application {app_id}, for allocation ask {key}"
            ));
        };
        let state = self.apps[slot].state;
        if key.is_empty() {
            return Err(format!(
                "invalid ask added to app {app_id}: empty allocation key"
            ));
        }
        if ask.placeholder && ask.task_group.is_empty() {
            return Err(format!(
                "invalid ask added to app {app_id}: placeholder ask {key} has no taskGroupName"
            ));
        }
        let resource = ask.resource.clone()?;
        if ask.max_allocations <= 0 || !resource.is_strictly_positive() {
            return Err(format!(
                "invalid ask added to app {app_id}: ask {key} has resource {resource} and maxAllocations {} (need a positive resource and maxAllocations > 0)",
                ask.max_allocations
            ));
        }
        // SI v1.x: one request, one allocation, merged by key.
        let mut alloc_hash = None;
        if self.edition == Edition::V1 {
            if ask.max_allocations != 1 {
                return Err(format!(
                    "invalid ask added to app {app_id}: ask {key} has maxAllocations {} (SI v1.x: one allocation per request)",
                    ask.max_allocations
                ));
            }
            match self.merge_known_key(slot, ask, &resource) {
                ControlFlow::Break(done) => return done,
                ControlFlow::Continue(h) => alloc_hash = h.kept(),
            }
        }
        // Pending totals are subtracted from later: refuse what they
        // cannot hold exactly.
        // One allocation (every SI v1.x ask, most v0.12 ones) demands the
        // resource itself: no product to check.
        let demand = if ask.max_allocations == 1 {
            resource.clone()
        } else {
            resource.checked_mul(ask.max_allocations as i64).ok_or_else(|| {
                format!(
                    "invalid ask added to app {app_id}: ask {key}: resource {resource} times maxAllocations {} overflows a 64-bit quantity",
                    ask.max_allocations
                )
            })?
        };
        {
            let app = &self.apps[slot];
            if !app.pending.can_add(&demand) {
                return Err(format!(
                    "ask {key}: its demand {demand} would overflow the pending total {} of application {app_id}",
                    app.pending
                ));
            }
            self.queues
                .check_add(app.queue, &demand, false)
                .map_err(|e| format!("ask {key} of application {app_id}: {e}"))?;
        }
        if matches!(state, AppState::New | AppState::Completing) {
            self.fire(app_id, AppEvent::Run, None, out);
        }
        let seq = self.next_seq();
        let new = Ask {
            key: ask.key.clone(),
            resource,
            pending_repeat: ask.max_allocations,
            priority: ask.priority,
            seq,
            created: self.clock.now(),
            required_node: ask.required_node.as_deref().map(Arc::from),
            tags: ask.tags.clone(),
            task_group: ask.task_group.clone(),
            placeholder: ask.placeholder,
            preempt_other: ask.preempt_other,
            preempt_self: ask.preempt_self,
            originator: ask.originator,
            alloc_hash,
            pending: None,
        };
        let app = self.apps.at_mut(slot);
        let order = new.order_key();
        let member = explain::is_gang_member(&new);
        // An ask with the same key is replaced (spec 7.1), in its slot.
        let (slot, replaced) = app.asks.insert(ask.key.clone(), new.into());
        if app.ask_order.insert(order, slot).is_none() {
            self.waiting_asks += 1;
        }
        app.sync_priority(&mut self.queues);
        app.pending.add_assign(&demand);
        let q = app.queue;
        self.queues.add_pending_unfiled(q, &demand);
        let watch = match app.held_watch {
            None => !app.counted_active || member,
            Some(gang) => member && !gang,
        };
        let watch = watch.then(|| app.id.clone());
        if let Some(old) = replaced {
            self.forget_ask(app_id, &ask.key, old);
        }
        // It may wait for a cause no pass finds (held.rs).
        if let Some(id) = watch {
            self.watch_held(&id, member);
        }
        Ok(())
    }

    /// Re-files the queues whose demand grew through [`Self::take_ask`].
    pub fn settle_queues(&mut self) {
        self.queues.settle_unfiled();
    }

    /// Removes one ask and its outstanding demand. Returns whether it existed.
    pub(crate) fn remove_ask(&mut self, app_id: &str, key: &str) -> bool {
        let Some((key_shared, old)) = self
            .apps
            .get_mut(app_id)
            .and_then(|app| app.asks.remove_entry(key))
        else {
            return false;
        };
        self.forget_ask(app_id, &key_shared, old);
        self.preemption_ask_gone(app_id, key);
        true
    }

    /// Takes an ask that left its application's map out of the order, the
    /// reservations and the pending demand.
    fn forget_ask(&mut self, app_id: &str, key: &Arc<str>, old: AskEntry) {
        let app = self.apps.get_mut(app_id).expect("the ask's application");
        if app.ask_order.remove(&old.order_key()).is_some() {
            self.waiting_asks = self.waiting_asks.saturating_sub(1);
            // A replaced ask's old priority may have been the maximum.
            app.sync_priority(&mut self.queues);
        }
        // A removed or replaced ask gives up its reservations (spec 8.9).
        self.reservations.cancel_ask(&ReservedAsk {
            app: app.id.clone(),
            key: key.clone(),
        });
        let demand = old.demand();
        app.pending.sub_clamped_assign(&demand);
        // Held by a user/group maxapplications, it waited for its demand;
        // with none left it waits for nothing (no record: it did not become
        // runnable). New demand is judged afresh by the next pass.
        if !self.ugm.held.is_empty() && app.pending.is_zero() {
            self.ugm.held.remove(&app.seq);
        }
        // Its "user quota failed" state goes with it: no "fits again"
        // record is owed for a request that is gone, and one that comes
        // with the same key is judged afresh (upstream: a new ask object).
        if !self.ugm.quota_failed.is_empty() {
            self.ugm.quota_failed.remove(&(app.seq, key.clone()));
        }
        let q = app.queue;
        self.queues.sub_pending(q, &demand);
    }

    /// Whether adding ask `key` of `app_id` would add a waiting ask (what
    /// the per-RM limit counts): not when it replaces a waiting one, nor,
    /// in SI v1.x, when the key is allocated (a resize).
    pub fn adds_waiting(&self, app_id: &str, key: &str) -> bool {
        let resize = self.edition == Edition::V1
            && self
                .allocations
                .get(key)
                .is_some_and(|a| **a.app() == *app_id);
        !(resize || self.is_waiting(app_id, key))
    }

    /// Whether `app_id` has ask `key` waiting (allocations still to make):
    /// replacing it does not add a waiting ask.
    pub fn is_waiting(&self, app_id: &str, key: &str) -> bool {
        self.apps
            .get(app_id)
            .and_then(|a| a.asks.get(key))
            .is_some_and(|a| a.pending_repeat() > 0)
    }

    /// Releases asks (spec 7.4). Nothing is sent back.
    pub fn release_asks(&mut self, rel: &si::AllocationAskRelease, out: &mut Outcomes) {
        if rel.termination_type == si::TerminationType::Timeout as i32 {
            return;
        }
        let app_id = rel.application_id.as_str();
        let Some(app) = self.apps.get(app_id) else {
            return;
        };
        let keys: Vec<Arc<str>> = if rel.allocationkey.is_empty() {
            app.asks.keys().cloned().collect()
        } else {
            vec![Arc::from(rel.allocationkey.as_str())]
        };
        let mut removed = false;
        for k in keys {
            removed |= self.remove_ask(app_id, &k);
        }
        if removed {
            self.check_completion(app_id, out);
        }
    }
}
