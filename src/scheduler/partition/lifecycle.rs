//! The application state machine, its timers, completion and removal
//! (spec 6.2-6.7).
//!
//! Placeholders (gang scheduling, `gang/`) do not count as real usage in
//! the completion checks, the completing timer releases leftover ones with
//! `TIMEOUT`, and removing the last one moves a `Completing`, `Failing` or
//! `Resuming` application on.
//!
//! SI v1.x partitions have no `Starting`: the event that would enter it
//! enters `Running`, and no start timer runs.

use std::sync::Arc;

use super::*;
use crate::events;
use crate::scheduler::edition::Edition;
use crate::scheduler::outcome::TimerKind;

use si::event_record::Type as EventType;

/// Info passed with `failApplication` when a partition goes away.
pub const INFO_PARTITION_REMOVED: &str = "PartitionRemoved";
/// `state_epoch` of a `Completing` application whose timer fired while it
/// still held placeholders: no state timer runs for it any more. Real
/// epochs come from the partition's sequence, which starts at 1.
const TIMER_SPENT: u64 = 0;
/// Message of placeholder releases by the completing timer.
pub const MSG_PLACEHOLDERS_ON_COMPLETE: &str = "releasing placeholders on app complete";

impl Partition {
    /// Fires an application event and reports a real change (spec 6.2).
    pub fn fire(&mut self, app_id: &str, event: AppEvent, info: Option<&str>, out: &mut Outcomes) {
        let Some(app) = self.apps.get(app_id) else {
            return;
        };
        let from = app.state;
        let Some(mut to) = transition(from, event) else {
            log::warn!(
                "application {app_id}: event {} is not valid in state {}",
                event.as_str(),
                from.as_str()
            );
            return;
        };
        // SI v1.x has no `Starting`: the first allocation runs the
        // application (no start timer).
        if to == AppState::Starting && self.edition == Edition::V1 {
            to = AppState::Running;
        }
        if to == from {
            return;
        }
        // Epochs are unique in the partition, so a timer of an earlier
        // application with the same id never matches a later one.
        let epoch = self.next_seq();
        let app = self.apps.get_mut(app_id).expect("looked up above");
        app.state = to;
        app.state_epoch = epoch;
        app.log_state(to, self.clock.unix_nanos());
        // The leaf counts its Starting applications for the stateaware order.
        let leaf = self.queues.get_mut(app.queue);
        if from == AppState::Starting {
            leaf.starting_apps = leaf.starting_apps.saturating_sub(1);
        }
        if to == AppState::Starting {
            leaf.starting_apps += 1;
        }
        apps::sync_active(app, &mut self.queues, &mut self.ugm);
        let skip_start = app.stateaware_disabled();
        let id = app.id.clone();
        let queue = self.queues.get(app.queue).path.clone();
        let message = info.unwrap_or(event.as_str());
        self.report_state(&id, &queue, from, to, message, out);
        let partition = self.key.clone();
        let timer = |at, kind| AppTimer {
            at,
            partition: partition.clone(),
            app: id.clone(),
            epoch,
            kind,
        };
        match to {
            AppState::Starting if skip_start || self.timeouts.start.is_zero() => {
                self.fire(app_id, AppEvent::Run, None, out)
            }
            AppState::Starting => out.timers.push(timer(
                self.clock.now() + self.timeouts.start,
                TimerKind::State,
            )),
            AppState::Completing => out.timers.push(timer(
                self.clock.now() + self.timeouts.completing,
                TimerKind::State,
            )),
            AppState::Completed | AppState::Failed => {
                self.release_on_termination(app_id, to, out);
                let after = self.timeouts.terminated;
                let finished = self.terminate(app_id);
                let at = self.clock.now() + after;
                out.timers.push(timer(at, TimerKind::Expire(finished)));
            }
            _ => {}
        }
    }

    /// One `UpdatedApplication` for the RM (spec 6.5) and an `APP` event.
    fn report_state(
        &self,
        app_id: &str,
        queue: &str,
        from: AppState,
        to: AppState,
        message: &str,
        out: &mut Outcomes,
    ) {
        out.app_updated(si::UpdatedApplication {
            application_id: app_id.to_string(),
            state: to.as_str().to_string(),
            state_transition_timestamp: self.clock.unix_nanos(),
            message: message.to_string(),
        });
        out.event(events::record(
            EventType::App,
            app_id,
            queue,
            to.as_str(),
            format!(
                "Application {app_id} changed state from {} to {} ({message})",
                from.as_str(),
                to.as_str()
            ),
        ));
    }

    /// Whether `t` would still act when it fires (the same checks as
    /// [`Partition::on_timer`] and the placeholder timeout make).
    pub fn timer_is_live(&self, t: &AppTimer) -> bool {
        match t.kind {
            TimerKind::Expire(finished_ns) => self.finished.iter().any(|f| {
                *f.id == *t.app
                    && f.finished_ns == finished_ns
                    && matches!(f.state, AppState::Completed | AppState::Failed)
            }),
            TimerKind::Placeholder => self
                .apps
                .get(&t.app)
                .is_some_and(|a| a.gang.timer_epoch == t.epoch && a.gang.placeholders > 0),
            TimerKind::State => self.apps.get(&t.app).is_some_and(|a| {
                a.state_epoch == t.epoch
                    && matches!(a.state, AppState::Starting | AppState::Completing)
            }),
        }
    }

    /// An application timer fired. A state timer acts only if the
    /// application is still in the state it was set for.
    pub fn on_timer(&mut self, t: &AppTimer, out: &mut Outcomes) {
        if let TimerKind::Expire(finished_ns) = t.kind {
            self.expire(&t.app, finished_ns, out);
            return;
        }
        if t.kind == TimerKind::Placeholder {
            return self.placeholder_timeout(t, out);
        }
        let Some(app) = self.apps.get(&t.app) else {
            return;
        };
        if app.state_epoch != t.epoch {
            return;
        }
        match app.state {
            AppState::Starting => self.fire(&t.app, AppEvent::Run, None, out),
            AppState::Completing => {
                if app.gang.placeholders == 0 {
                    self.fire(&t.app, AppEvent::Complete, None, out);
                    return;
                }
                // The timer is now spent; completion follows when the RM
                // confirms the last placeholder gone (spec 6.2). Those
                // already being replaced or released are not released again.
                self.apps
                    .get_mut(&t.app)
                    .expect("looked up above")
                    .state_epoch = TIMER_SPENT;
                let released = self.release_free_placeholders(&t.app, MSG_PLACEHOLDERS_ON_COMPLETE);
                if !released.is_empty() {
                    out.new_allocation_message(si::AllocationResponse {
                        released,
                        ..Default::default()
                    });
                }
            }
            _ => {}
        }
    }

    /// An application terminating with allocations left (a hard gang that
    /// failed while holding real allocations, say) releases them to the RM
    /// instead of dropping them silently: the RM must stop them.
    fn release_on_termination(&mut self, app_id: &str, to: AppState, out: &mut Outcomes) {
        let Some(app) = self.apps.get(app_id) else {
            return;
        };
        if app.allocations.is_empty() {
            return;
        }
        let mut uuids: Vec<crate::scheduler::alloc_uuid::AllocUuid> =
            self.allocations.uuids(&app.allocations).cloned().collect();
        uuids.sort();
        let mut released = Vec::new();
        for u in uuids {
            if let Some(a) = self.remove_allocation(&u) {
                let message = format!("Application {app_id} {}", to.as_str());
                if self.tracing_allocations() {
                    self.trace_removed(&a, crate::events::Detail::AllocCancel, &message, out);
                }
                released.push(si::AllocationRelease {
                    partition_name: self.name.clone(),
                    application_id: app_id.to_string(),
                    uuid: a.uuid.to_string(),
                    termination_type: si::TerminationType::StoppedByRm as i32,
                    message,
                });
            }
        }
        out.new_allocation_message(si::AllocationResponse {
            released,
            ..Default::default()
        });
    }

    /// `Completed`/`Failed` -> `Expired` for a history entry (spec 6.4).
    fn expire(&mut self, app_id: &str, finished_ns: i64, out: &mut Outcomes) {
        let Some(entry) = self.finished.iter_mut().find(|f| {
            &*f.id == app_id
                && f.finished_ns == finished_ns
                && matches!(f.state, AppState::Completed | AppState::Failed)
        }) else {
            // Fallen out of the bounded history already.
            return;
        };
        let from = entry.state;
        entry.state = AppState::Expired;
        let queue = entry.queue.clone();
        self.report_state(
            app_id,
            &queue,
            from,
            AppState::Expired,
            AppEvent::Expire.as_str(),
            out,
        );
    }

    /// The application leaves the partition (spec 6.6). Returns the time it
    /// terminated, which identifies its history entry.
    pub(crate) fn terminate(&mut self, app_id: &str) -> i64 {
        let finished_ns = self.clock.unix_nanos();
        let Some(app) = self.apps.get(app_id) else {
            return finished_ns;
        };
        // Nothing should be left at this point; if something is, it must not
        // stay on its node after the application is gone.
        let leftover: Vec<crate::scheduler::alloc_uuid::AllocUuid> =
            self.allocations.uuids(&app.allocations).cloned().collect();
        for u in leftover {
            log::warn!("application {app_id} terminated holding allocation {u}; removed");
            self.remove_allocation(&u);
        }
        if let Some(slot) = self.apps.slot_of(app_id) {
            self.forget_ctx(slot);
        }
        let app = self.apps.remove(app_id).expect("looked up above");
        if app.held_watch.is_some() {
            self.held_watch.remove(app_id);
        }
        self.preemption_app_gone(&app);
        self.ugm.unlink(&app);
        self.waiting_asks = self.waiting_asks.saturating_sub(app.ask_order.len());
        if app.counted_active {
            self.queues.adjust_active_apps(app.queue, false);
        }
        self.reservations.cancel_app(app_id);
        self.queues.sub_pending(app.queue, &app.pending);
        self.queues.sub_allocated(app.queue, app.allocated());
        app.leave(&mut self.queues);
        if self.queues.journal_on() {
            let path = self.queues.get(app.queue).path.clone();
            let id = app.id.clone();
            self.queues
                .note(|| crate::scheduler::objects::queue::QueueChange::App {
                    path,
                    app: id,
                    added: false,
                });
        }
        if self.finished.len() >= COMPLETED_HISTORY {
            self.finished.pop_front();
        }
        self.finished.push_back(FinishedApp {
            id: app.id.clone(),
            queue: self.queues.get(app.queue).path.to_string(),
            state: app.state,
            finished_ns,
            user: app.user.user.clone(),
            groups: app.user.groups.clone(),
            submitted_ns: app.submitted_ns,
            state_log: app.state_log.clone(),
            message: String::new(),
        });
        let q = app.queue;
        if !self.queues.get(q).managed {
            self.cleanup_queue(q);
        }
        finished_ns
    }

    /// Removes empty dynamic queues from `q` upwards. Managed queues, and
    /// draining ones among them, are left to the queue cleaner
    /// ([`Self::clean_queues`]).
    pub(crate) fn cleanup_queue(&mut self, q: QueueId) {
        let mut cur = Some(q);
        while let Some(c) = cur {
            if self.queues.get(c).managed {
                break;
            }
            let parent = self.queues.get(c).parent;
            if !self.queues.remove_if_unused(c) {
                break;
            }
            cur = parent;
        }
    }

    /// The queue cleaner (the reference's partition manager, spec 3.7):
    /// empty draining queues, and empty dynamic ones, go, children first. A
    /// queue a reload took out of the configuration stays `Draining` (and
    /// refuses new applications) until this runs.
    pub fn clean_queues(&mut self) {
        self.queues.remove_unused();
    }

    /// Whether the application holds no real (non-placeholder) allocation:
    /// none of its own, and none in flight in a swap (made for it, waiting
    /// for the RM to confirm the placeholder gone). An application that
    /// holds one is not done, whatever became of its asks.
    fn no_real_allocations(&self, app: &Application) -> bool {
        app.allocations.len() <= app.gang.placeholders
            && (app.gang.free == app.gang.placeholders
                || !self.gang.swaps.values().any(|s| *s.real.app() == app.id))
    }

    /// Completion check after asks were removed (spec 6.3): no demand and
    /// no real allocation left, unless `Failing` or `Completing`.
    pub(crate) fn check_completion(&mut self, app_id: &str, out: &mut Outcomes) {
        let idle = self.apps.get(app_id).is_some_and(|a| {
            a.pending.is_zero()
                && self.no_real_allocations(a)
                && matches!(
                    a.state,
                    AppState::Accepted | AppState::Starting | AppState::Running
                )
        });
        if idle {
            self.fire(app_id, AppEvent::Complete, None, out);
        }
    }

    /// Transitions after allocations were removed (spec 6.3). `real` and
    /// `placeholders` say what kind was removed; `all` that every allocation
    /// of the application went at once.
    pub(crate) fn after_allocations_removed(
        &mut self,
        app_id: &str,
        real: bool,
        placeholders: bool,
        all: bool,
        out: &mut Outcomes,
    ) {
        let Some(app) = self.apps.get(app_id) else {
            return;
        };
        let state = app.state;
        let no_real = self.no_real_allocations(app);
        let no_placeholders = app.gang.placeholders == 0;
        if placeholders && no_placeholders {
            match state {
                // Only once the completing timer is spent: while it runs,
                // the application may still get new asks (spec 6.3), and
                // the timer completes it.
                AppState::Completing if no_real && app.state_epoch == TIMER_SPENT => {
                    return self.fire(app_id, AppEvent::Complete, None, out);
                }
                AppState::Completing => return,
                AppState::Failing => return self.fire(app_id, AppEvent::Fail, None, out),
                AppState::Resuming => return self.fire(app_id, AppEvent::Run, None, out),
                _ => {}
            }
        }
        let idle = app.pending.is_zero() && no_real;
        if (real || all)
            && idle
            && state != AppState::Completing
            && transition(state, AppEvent::Complete).is_some()
        {
            self.fire(app_id, AppEvent::Complete, None, out);
        }
    }

    /// Removes an application with everything it holds (spec 6.7).
    pub fn remove_application(&mut self, app_id: &str, out: &mut Outcomes) {
        let Some(app) = self.apps.get(app_id) else {
            return;
        };
        let keys: Vec<Arc<str>> = app.asks.keys().cloned().collect();
        let uuids: Vec<crate::scheduler::alloc_uuid::AllocUuid> =
            self.allocations.uuids(&app.allocations).cloned().collect();
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
        // leaving it in Completing (the reference's quirk, 6.7). An
        // application still `New` reports nothing.
        match self.apps.get(app_id).map(|a| a.state) {
            Some(AppState::Accepted | AppState::Starting | AppState::Running) => {
                self.fire(app_id, AppEvent::Complete, None, out);
                self.fire(app_id, AppEvent::Complete, None, out);
            }
            Some(AppState::Completing) => self.fire(app_id, AppEvent::Complete, None, out),
            Some(AppState::Failing) => self.fire(app_id, AppEvent::Fail, None, out),
            _ => {}
        }
        if self.apps.contains_key(app_id) {
            self.terminate(app_id);
        }
    }
}
