//! Applications: adding and placing them (spec 5, 6.1), their order in a
//! leaf, and the queue-side admission rules: draining queues, the
//! `namespace.resourcequota` tag and `maxapplications`. The state machine,
//! its timers and removal are in `lifecycle.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::scheduler::edition::Edition;
use crate::scheduler::gang;
use crate::scheduler::objects::queue::QueueChange;
use crate::scheduler::ugm::Ugm;

impl Partition {
    /// Adds one application (spec 6.1); `Err` is the rejection reason. A
    /// rejected application is remembered (bounded) for REST readers, as
    /// YuniKorn lists its rejected applications.
    pub fn add_application(&mut self, req: &si::AddApplicationRequest) -> Result<(), String> {
        let result = self.admit_application(req);
        if let Err(reason) = &result {
            self.note_rejected(req, reason);
        }
        result
    }

    /// Keeps a rejection for REST (not a duplicate of an active one, whose
    /// id stays the active application's).
    fn note_rejected(&mut self, req: &si::AddApplicationRequest, reason: &str) {
        if req.application_id.is_empty() || self.apps.contains_key(req.application_id.as_str()) {
            return;
        }
        if self.rejected.len() >= COMPLETED_HISTORY {
            self.rejected.pop_front();
        }
        let now = self.clock.unix_nanos();
        let ugi = req.ugi.clone().unwrap_or_default();
        self.rejected.push_back(FinishedApp {
            id: Arc::from(req.application_id.as_str()),
            queue: req.queue_name.clone(),
            state: AppState::Rejected,
            finished_ns: now,
            user: ugi.user,
            groups: ugi.groups,
            submitted_ns: now,
            state_log: vec![(AppState::New, now), (AppState::Rejected, now)],
            message: reason.to_string(),
        });
    }

    fn admit_application(&mut self, req: &si::AddApplicationRequest) -> Result<(), String> {
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
        if self.queues.is_draining(queue) {
            return Err(format!(
                "queue {} is draining, it does not accept new application {app_id}",
                self.queues.get(queue).path
            ));
        }
        // The quota tag sets a dynamic leaf's max before the gang is
        // admitted against it (spec 3.5, 9.2); it is applied only once the
        // application is in, so a refusal changes nothing.
        let quota = self.quota_tag(queue, &req.tags);
        if let Some(ask) = placeholder_ask.as_ref().filter(|r| !r.is_zero()) {
            if let Err(e) = self.admit_gang(queue, app_id, ask, quota.as_ref()) {
                if !self.queues.get(queue).managed {
                    self.cleanup_queue(queue); // created for this application only
                }
                return Err(e);
            }
        }
        if let Some(max) = quota {
            let leaf = self.queues.get_mut(queue);
            if leaf.max.as_ref() != Some(&max) {
                let path = leaf.path.clone();
                leaf.max = Some(max);
                if self.queues.journal_on() {
                    let max = self.queues.get(queue).max.clone();
                    self.queues.note(|| QueueChange::Max { path, max });
                }
            }
        }
        let seq = self.next_seq();
        let id: Arc<str> = Arc::from(app_id);
        let mut timeout_ms = req.execution_timeout_milli_seconds;
        // SI v1: a gang resubmitted after a restart keeps its first deadline.
        if self.edition == Edition::V1 {
            if let Some(created) = req.tags.get(gang::CREATION_TIME_TAG) {
                let whole = if timeout_ms > 0 {
                    Duration::from_millis(timeout_ms as u64)
                } else {
                    self.timeouts.placeholder
                };
                let left = gang::timeout_since_creation(whole, created, self.clock.unix_nanos());
                timeout_ms = i64::try_from(left.as_millis()).unwrap_or(i64::MAX).max(1);
            }
        }
        let (slot, _) = self.apps.insert(
            id.clone(),
            Application::new(
                id,
                queue,
                user,
                req.tags.clone(),
                seq,
                self.clock.now(),
                placeholder_ask,
                crate::scheduler::gang::AppGang {
                    style: crate::scheduler::gang::GangStyle::parse(&req.gang_scheduling_style),
                    timeout_ms,
                    ..Default::default()
                },
            ),
        );
        if self.queues.journal_on() {
            let path = self.queues.get(queue).path.clone();
            let app = self.apps.at_mut(slot).id.clone();
            self.queues.note(|| QueueChange::App {
                path,
                app,
                added: true,
            });
        }
        let leaf = self.queues.get_mut(queue);
        leaf.apps.insert(seq, slot);
        // No pending ask yet: no priority to count in the queues.
        self.apps.at_mut(slot).file_in(leaf);
        let now_ns = self.clock.unix_nanos();
        let app = self.apps.at_mut(slot);
        app.submitted_ns = now_ns;
        app.log_state(AppState::New, now_ns);
        // Its group is chosen once, now (limits.md 2.3).
        if self.ugm.enabled() {
            self.ugm.link(self.apps.at_mut(slot), slot, &self.queues);
        }
        Ok(())
    }

    /// Placement (spec 5): returns the leaf queue, creating it if a rule allows.
    pub(crate) fn place(
        &mut self,
        app_id: &str,
        requested: &str,
        user: &UserGroup,
        tags: &BTreeMap<String, String>,
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
                // Refused with the bound named; the path itself may be huge.
                crate::config::bounds::check_queue_path(&placed)
                    .map_err(|e| format!("application '{app_id}' rejected: {e}"))?;
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
}

/// Application tag whose JSON SI `Resource` sets a dynamic leaf's max (3.5).
pub const TAG_RESOURCE_QUOTA: &str = "namespace.resourcequota";

/// Parses `{"resources":{"memory":{"value":2048}}}`; `None` if it does not
/// parse or is not strictly positive.
fn parse_quota(text: &str) -> Option<Resource> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let map = v.get("resources")?.as_object()?;
    let mut pairs = Vec::with_capacity(map.len());
    for (k, q) in map {
        // A quantity without `value` is zero, as in the protobuf JSON form.
        let value = match q.get("value") {
            None => 0,
            Some(v) => v.as_i64()?,
        };
        pairs.push((k.as_str(), value));
    }
    let r = Resource::from_pairs(pairs).ok()?;
    r.is_strictly_positive().then_some(r)
}

/// Brings the queue counters of `maxapplications`, and the user and group
/// trackers, in line with the application; called after every change of
/// its state or of its allocations.
pub(crate) fn sync_active(app: &mut Application, queues: &mut QueueTree, ugm: &mut Ugm) {
    sync_queue_active(app, queues);
    // Nothing is linked without limits: one branch.
    if ugm.has_links() {
        ugm.sync(app);
    }
}

/// The queue counters' half of [`sync_active`] (the pass's commit counts
/// the trackers itself, knowing the allocation).
pub(crate) fn sync_queue_active(app: &mut Application, queues: &mut QueueTree) {
    let now = counts_as_running(app);
    if now != app.counted_active {
        app.counted_active = now;
        queues.adjust_active_apps(app.queue, now);
    }
}

/// Whether an application counts against `maxapplications`: it holds
/// allocations, or it has had one and is `Starting`, `Running` or
/// `Completing`. An application that never got an allocation does not
/// count even when the state machine moved it on (`Accepted` ->
/// `Completing` when its asks are withdrawn, then `Running` on a new ask):
/// it would otherwise take a slot the limit never granted.
pub(crate) fn counts_as_running(a: &Application) -> bool {
    match a.state {
        AppState::Completed | AppState::Failed | AppState::Expired | AppState::Rejected => false,
        AppState::Starting | AppState::Running | AppState::Completing if a.started => true,
        _ => !a.allocations.is_empty(),
    }
}

impl Partition {
    /// The max that `namespace.resourcequota` on an application added to a
    /// dynamic leaf sets for that leaf (spec 3.5). `None` for managed
    /// queues and for values that do not parse or are not strictly positive.
    fn quota_tag(&self, queue: QueueId, tags: &BTreeMap<String, String>) -> Option<Resource> {
        if self.queues.get(queue).managed {
            return None;
        }
        let (_, text) = tags
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(TAG_RESOURCE_QUOTA))?;
        let max = parse_quota(text);
        if max.is_none() {
            log::warn!("ignoring {TAG_RESOURCE_QUOTA} tag value {text:?}");
        }
        max
    }

    /// The applications of leaf `q` that may be scheduled, in the leaf's
    /// order (priority, then usage share). `maxapplications` (YuniKorn v1.2 semantics): while the leaf or
    /// any ancestor already has as many running applications as its limit,
    /// applications that have not started yet are held back; they stay
    /// `Accepted` until a running one finishes. (User and group caps are
    /// the pass's to check: it records their transitions.)
    pub(crate) fn fair_leaf_apps(
        &self,
        q: QueueId,
    ) -> impl Iterator<Item = (Slot, &Application)> + '_ {
        let full = self.app_limit_reached(q);
        let queue = self.queues.get(q);
        queue
            .app_order
            .values()
            .filter_map(|slot| Some((*slot, self.apps.at(*slot)?)))
            .filter(move |(_, a)| !full || counts_as_running(a))
    }

    /// Rebuilds every leaf's application order and every queue's priority,
    /// after a reload that may have changed policies, guarantees or
    /// priority properties.
    pub(crate) fn rebuild_app_orders(&mut self) {
        let leaves: Vec<QueueId> = self.queues.iter().map(|(id, _)| id).collect();
        for q in leaves {
            self.queues.get_mut(q).app_order.clear();
        }
        for app in self.apps.values_mut() {
            app.file_in(self.queues.get_mut(app.queue));
        }
        let prios = self.apps.values().map(|a| (a.queue, a.priority()));
        self.queues.recompute_priorities(prios);
    }

    /// Applications of leaf `q` in the leaf's order (fifo: priority, then
    /// submission), without those held back by `maxapplications` (see
    /// [`Self::fair_leaf_apps`]).
    pub(crate) fn leaf_apps(&self, q: QueueId) -> impl Iterator<Item = (Slot, &Application)> + '_ {
        let full = self.app_limit_reached(q);
        self.queues
            .get(q)
            .app_order
            .values()
            .filter_map(|slot| Some((*slot, self.apps.at(*slot)?)))
            .filter(move |(_, a)| !full || counts_as_running(a))
    }

    /// User/group `maxapplications` (limits.md 4.1): an application not
    /// counted as running that its user or group has no running slot for
    /// is held back. Usually it is `Accepted` and stays so; the state
    /// alone does not decide, though: one whose requests all went moved on
    /// to `Completing`, and a new request moves it to `Running` without an
    /// allocation. Upstream then lets it through and the user runs one
    /// application more than its cap; here it waits for a slot.
    pub(crate) fn runnable_by_limits(&self, a: &Application) -> bool {
        self.ugm.can_run(a)
    }

    /// Whether the leaf or an ancestor is at its `maxapplications` limit.
    pub fn app_limit_reached(&self, q: QueueId) -> bool {
        self.queues
            .app_limits(q)
            .iter()
            .any(|(lq, max)| self.queues.get(*lq).active_apps >= *max)
    }

    /// The partition is going away (removed from the configuration, spec
    /// 2.8 step 2): every application fails with `PartitionRemoved` (the RM
    /// sees `Failing`, then `Failed`) and leaves; nodes go with the
    /// partition. Allocations are not released one by one: the RM learns
    /// from the failed state that the application is gone.
    pub fn fail_all_applications(&mut self, out: &mut Outcomes) {
        let ids: Vec<Arc<str>> = self.apps.keys().cloned().collect();
        for id in ids {
            for _ in 0..2 {
                let can_fail = self
                    .apps
                    .get(&id)
                    .is_some_and(|a| transition(a.state, AppEvent::Fail).is_some());
                if can_fail {
                    self.fire(
                        &id,
                        AppEvent::Fail,
                        Some(super::lifecycle::INFO_PARTITION_REMOVED),
                        out,
                    );
                }
            }
            self.terminate(&id);
        }
    }
}
