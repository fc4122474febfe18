//! The placeholder timeout (spec 9.4) and node removal during a swap
//! (spec 11.5).

use std::sync::Arc;

use crate::events;
use crate::proto::si::v1 as si;
use crate::scheduler::edition::Edition;
use crate::scheduler::objects::application::{AppEvent, AppState, AskOrderKey};
use crate::scheduler::outcome::{AppTimer, NewAllocation, Outcomes};
use crate::scheduler::partition::Partition;

use crate::scheduler::gang::{
    GangStyle, INFO_RESERVATION_TIMEOUT, MSG_ASK_TIMEOUT, MSG_PLACEHOLDER_TIMEOUT,
};
use si::event_record::Type as EventType;

impl Partition {
    /// Keeps when the placeholder timeout fired and what it did.
    fn note_gang_timeout(&mut self, app_id: &str, what: &'static str) {
        let now = self.clock.unix_nanos();
        if let Some(app) = self.apps.get_mut(app_id) {
            app.gang.timed_out = Some((now, what));
        }
    }

    /// Releases the application's free placeholders with `TIMEOUT` (they
    /// stay until the RM confirms). Returns the release entries.
    pub(crate) fn release_free_placeholders(
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
    pub(crate) fn placeholder_timeout(&mut self, t: &AppTimer, out: &mut Outcomes) {
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
            self.note_gang_timeout(&app_id, "unused placeholders released");
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
        self.note_gang_timeout(
            &app_id,
            match style {
                GangStyle::Soft => "gang not assembled: resumed without placeholders",
                GangStyle::Hard => "gang not assembled: application failed",
            },
        );
        self.fire(&app_id, event, Some(INFO_RESERVATION_TIMEOUT), out);
        let app = &self.apps[&*app_id];
        let mut keys: Vec<(AskOrderKey, Arc<str>)> = app
            .asks
            .iter()
            .map(|(k, a)| (a.order_key(), k.clone()))
            .collect();
        keys.sort();
        // SI v1.x: one release per key. An allocated key hears of its
        // allocation's release below; the ask release is for the others
        // (pending requests, real requests of swaps in flight).
        let v1 = self.edition == Edition::V1;
        let released_asks: Vec<si::AllocationAskRelease> = keys
            .iter()
            .filter(|(_, k)| !v1 || !self.allocations.contains_key(k))
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
        // placeholder goes back, except a preemption victim, whose
        // PREEMPTED_BY_SCHEDULER release is already with the RM (11.6).
        let placeholders: Vec<crate::scheduler::alloc_uuid::AllocUuid> = self
            .allocations
            .uuids(&self.apps[&*app_id].allocations)
            .filter(|u| self.allocations.get(u).is_some_and(|a| a.placeholder))
            .filter(|u| !self.preempt.is_victim(u))
            .cloned()
            .collect();
        for u in &placeholders {
            self.unlink(u, false);
            self.gang.unlinked.remove(u);
        }
        let mut released: Vec<si::AllocationRelease> = Vec::new();
        let app = self.apps.get_mut(&app_id).expect("looked up above");
        for u in placeholders {
            if let Some(a) = self.allocations.get(&u) {
                app.gang.take_free(a.task_group(), &u);
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
    pub(crate) fn node_removal_swap(
        &mut self,
        uuid: &crate::scheduler::alloc_uuid::AllocUuid,
        out: &mut Outcomes,
    ) -> NodeSwapAction {
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
    pub(crate) fn node_removal_confirmed(
        &mut self,
        confirmed: Vec<Arc<NewAllocation>>,
        out: &mut Outcomes,
    ) {
        for real in confirmed {
            let app = real.app().clone();
            self.emit_new_allocation(real, out);
            self.after_swap_confirmed(&app, out);
        }
    }
}

/// What node removal did with one allocation of the node.
pub(crate) enum NodeSwapAction {
    /// Not part of a swap (or the swap was undone): remove it normally.
    None,
    /// Dealt with; nothing to remove or report.
    Handled,
    /// The swap was confirmed: report the placeholder released and its real allocation.
    Confirmed(Arc<NewAllocation>),
}
