//! Applications: adding, placement, the state machine and removal (spec 5, 6).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Instant;

use super::*;

impl Partition {
    /// Adds one application (spec 6.1); `Err` is the rejection reason.
    pub fn add_application(&mut self, req: &si::AddApplicationRequest) -> Result<(), String> {
        let app_id = req.application_id.as_str();
        if app_id.is_empty() {
            return Err("application ID must not be empty".into());
        }
        let ugi = req.ugi.clone().unwrap_or_default();
        let user = resolve_user(&ugi.user, &ugi.groups)?;
        if self.apps.contains_key(app_id) {
            return Err(format!(
                "adding application {app_id} to partition {}, but application already existed",
                self.internal_name
            ));
        }
        let placeholder_ask = Resource::from_proto_opt(req.placeholder_ask.as_ref())?;
        let queue = self.place(app_id, &req.queue_name, &user, &req.tags)?;
        if self.queues.get(queue).state == QueueState::Draining {
            return Err(format!(
                "queue {} is draining, it does not accept new application {app_id}",
                self.queues.get(queue).path
            ));
        }
        let seq = self.next_seq();
        let id: Arc<str> = Arc::from(app_id);
        self.queues.get_mut(queue).apps.insert(seq, id.clone());
        self.apps.insert(
            id.clone(),
            Application {
                id,
                queue,
                user,
                tags: req.tags.clone(),
                state: AppState::New,
                seq,
                submitted: Instant::now(),
                asks: HashMap::new(),
                ask_order: BTreeSet::new(),
                pending: Resource::new(),
                allocated: Resource::new(),
                allocations: BTreeSet::new(),
                state_epoch: 0,
                placeholder_ask,
            },
        );
        Ok(())
    }

    /// Placement (spec 5): returns the leaf queue, creating it if a rule allows.
    pub(super) fn place(
        &mut self,
        app_id: &str,
        requested: &str,
        user: &UserGroup,
        tags: &HashMap<String, String>,
    ) -> Result<QueueId, String> {
        let path = if self.placement.is_empty() {
            match self.queues.lookup(requested) {
                Some(_) => requested.to_ascii_lowercase(),
                None => {
                    return Err(format!(
                        "application '{app_id}' rejected, cannot create queue '{requested}' without placement rules"
                    ))
                }
            }
        } else {
            let placed =
                self.placement
                    .place(app_id, requested, user, tags, &TreeView(&self.queues))?;
            if self.queues.lookup(&placed).is_none() {
                self.queues.create_dynamic(&placed, user).map_err(|e| {
                    log::info!("queue creation for {app_id} failed: {e}");
                    format!("failed to create rule based queue {placed} for application {app_id}")
                })?;
            }
            placed
        };
        match self.queues.lookup(&path) {
            Some(q) if self.queues.get(q).leaf && self.queues.can_submit(q, user) => Ok(q),
            _ => Err(format!(
                "failed to find queue {path} for application {app_id}"
            )),
        }
    }

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
        if !self.queues.get(q).managed {
            self.cleanup_queue(q);
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
