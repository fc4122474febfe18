//! The application state machine, its timers, completion and removal
//! (spec 6.2-6.7).

use std::sync::Arc;
use std::time::Instant;

use super::*;

impl Partition {
    /// Fires an application event and reports a real change (spec 6.2).
    pub fn fire(&mut self, app_id: &str, event: AppEvent, info: Option<&str>, out: &mut Outcomes) {
        let Some(app) = self.apps.get_mut(app_id) else {
            return;
        };
        let from = app.state;
        let Some(to) = transition(from, event) else {
            log::warn!(
                "application {app_id}: event {} is not valid in state {}",
                event.as_str(),
                from.as_str()
            );
            return;
        };
        if to == from {
            return;
        }
        app.state = to;
        app.state_epoch += 1;
        let epoch = app.state_epoch;
        let skip_start = app.stateaware_disabled();
        let id = app.id.clone();
        out.app_updated(si::UpdatedApplication {
            application_id: app_id.to_string(),
            state: to.as_str().to_string(),
            state_transition_timestamp: now_ns(),
            message: info.unwrap_or(event.as_str()).to_string(),
        });
        let timer = |d| AppTimer {
            at: Instant::now() + d,
            partition: self.internal_name.clone(),
            app: id.clone(),
            epoch,
        };
        match to {
            AppState::Starting if skip_start || self.timeouts.start.is_zero() => {
                self.fire(app_id, AppEvent::Run, None, out)
            }
            AppState::Starting => out.timers.push(timer(self.timeouts.start)),
            AppState::Completing => out.timers.push(timer(self.timeouts.completing)),
            AppState::Completed | AppState::Failed => self.terminate(app_id),
            _ => {}
        }
    }

    /// A state timer fired: acts only if the application is still in the
    /// state the timer was set for.
    pub fn on_timer(&mut self, app_id: &str, epoch: u64, out: &mut Outcomes) {
        let Some(app) = self.apps.get(app_id) else {
            return;
        };
        if app.state_epoch != epoch {
            return;
        }
        match app.state {
            AppState::Starting => self.fire(app_id, AppEvent::Run, None, out),
            AppState::Completing => self.fire(app_id, AppEvent::Complete, None, out),
            _ => {}
        }
    }

    /// The application leaves the partition (spec 6.6).
    pub(super) fn terminate(&mut self, app_id: &str) {
        let Some(app) = self.apps.remove(app_id) else {
            return;
        };
        self.reservations.cancel_app(app_id);
        self.queues.sub_pending(app.queue, &app.pending);
        self.queues.sub_allocated(app.queue, &app.allocated);
        self.queues.get_mut(app.queue).apps.remove(&app.seq);
        if self.finished.len() >= COMPLETED_HISTORY {
            self.finished.pop_front();
        }
        self.finished.push_back(FinishedApp {
            id: app.id.clone(),
            queue: self.queues.get(app.queue).path.clone(),
            state: app.state,
            finished_ns: now_ns(),
        });
        let q = app.queue;
        if !self.queues.get(q).managed || self.queues.is_draining(q) {
            self.cleanup_queue(q); // queues: also removes emptied draining queues
        }
    }

    /// Removes empty dynamic queues from `q` upwards.
    pub(super) fn cleanup_queue(&mut self, q: QueueId) {
        let mut cur = Some(q);
        while let Some(c) = cur {
            let parent = self.queues.get(c).parent;
            if !self.queues.remove_if_unused(c) {
                break;
            }
            cur = parent;
        }
    }

    /// Runs the completion check of spec 6.3 after demand or usage dropped.
    pub(super) fn check_completion(&mut self, app_id: &str, out: &mut Outcomes) {
        let idle = self.apps.get(app_id).is_some_and(|a| {
            a.pending.is_zero()
                && a.allocations.is_empty()
                && !matches!(a.state, AppState::Failing | AppState::Completing)
        });
        if idle {
            self.fire(app_id, AppEvent::Complete, None, out);
        }
    }

    /// Removes an application with everything it holds (spec 6.7).
    pub fn remove_application(&mut self, app_id: &str, out: &mut Outcomes) {
        let Some(app) = self.apps.get(app_id) else {
            return;
        };
        let keys: Vec<Arc<str>> = app.asks.keys().cloned().collect();
        let uuids: Vec<Arc<str>> = app.allocations.iter().cloned().collect();
        let had_work = !keys.is_empty() || !uuids.is_empty();
        for k in keys {
            self.remove_ask(app_id, &k);
        }
        let mut released = Vec::new();
        for u in uuids {
            if let Some(a) = self.remove_allocation(&u) {
                released.push(si::AllocationRelease {
                    partition_name: self.name.clone(),
                    application_id: app_id.to_string(),
                    uuid: a.uuid.to_string(),
                    termination_type: si::TerminationType::StoppedByRm as i32,
                    message: format!("Application {app_id} Removed"),
                });
            }
        }
        if !released.is_empty() {
            out.new_allocation_message(si::AllocationResponse {
                released,
                ..Default::default()
            });
        }
        // The RM asked for removal: finish the application rather than
        // leaving it in Completing (the reference's quirk, 6.7).
        if had_work {
            self.fire(app_id, AppEvent::Complete, None, out);
            self.fire(app_id, AppEvent::Complete, None, out);
        }
        self.terminate(app_id);
    }
}
