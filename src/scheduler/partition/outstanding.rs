//! Outstanding requests (spec 8.12): asks a scheduling pass tried and
//! could not place, that fit their queue's configured limits. The core
//! reports them as `FAILED` through `UpdateContainerSchedulingState` so
//! that a cluster autoscaler can react. Also the `REQUEST` event of an ask
//! skipped for queue headroom (spec 13.2).
//!
//! As in later YuniKorn versions, only asks that were actually tried are
//! reported, and the work is incremental: a pass notes each ask it tries
//! without placing it (once per check interval, however many passes try
//! it), and each check reports at most [`OUTSTANDING_REPORT_BUDGET`] of the
//! noted asks per partition, the rest at the next check. The check never
//! walks the waiting asks, so one RM's backlog costs the core thread only
//! what its own passes already spend on it.

use std::collections::VecDeque;
use std::sync::Arc;

use super::*;
use crate::events;

/// Reason sent with every outstanding request.
pub const OUTSTANDING_REASON: &str = "request is waiting for cluster resources become available";

/// Most asks one partition reports per outstanding check; what is left is
/// reported at the next check.
pub const OUTSTANDING_REPORT_BUDGET: usize = 4096;

/// Asks passes tried and did not place since they were last reported, in
/// the order first tried, each once.
#[derive(Debug)]
pub struct TriedAsks {
    order: VecDeque<(Arc<str>, Arc<str>)>,
    queued: FastSet<(Arc<str>, Arc<str>)>,
    /// Whether the next pass notes what it tries: set when a check has
    /// taken every noted ask, cleared by the pass that notes.
    pub armed: bool,
}

impl Default for TriedAsks {
    fn default() -> Self {
        TriedAsks {
            order: VecDeque::new(),
            queued: FastSet::default(),
            armed: true,
        }
    }
}

impl TriedAsks {
    /// Notes a tried ask (nothing when it is noted already).
    pub fn note(&mut self, app: Arc<str>, key: Arc<str>) {
        let entry = (app, key);
        if !self.queued.contains(&entry) {
            self.queued.insert(entry.clone());
            self.order.push_back(entry);
        }
    }

    /// Whether nothing is noted.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    fn take(&mut self) -> Option<(Arc<str>, Arc<str>)> {
        let entry = self.order.pop_front()?;
        self.queued.remove(&entry);
        Some(entry)
    }
}

impl Partition {
    /// Up to `budget` outstanding asks as `(application id, allocation
    /// key)`: asks noted by passes since the last check that still wait
    /// and fit what their leaf's configured limits leave (shared, in the
    /// order tried, by the asks of the leaf reported together). With
    /// nothing noted it arms the noting again for the next pass.
    pub fn outstanding_requests(&mut self, budget: usize) -> Vec<(Arc<str>, Arc<str>)> {
        if self.tried.is_empty() {
            self.tried.armed = true;
            return Vec::new();
        }
        let mut found = Vec::new();
        let mut headrooms: FastMap<QueueId, Option<Resource>> = FastMap::default();
        let mut taken = 0;
        while taken < budget {
            let Some((app_id, key)) = self.tried.take() else {
                break;
            };
            taken += 1;
            let Some(app) = self.apps.get(&app_id) else {
                continue;
            };
            let Some(ask) = app.asks.whole(&key).filter(|a| a.pending_repeat > 0) else {
                continue;
            };
            if Self::served_by_replacement(app, ask) {
                continue; // waits for a placeholder, not for capacity
            }
            // Held back by a user/group cap: not waiting for the cluster
            // (limits.md 4.4), no autoscaler signal.
            if self.ugm.enabled()
                && (!self.runnable_by_limits(app)
                    || self.ugm.fits(app, &ask.resource) != crate::scheduler::ugm::Fit::Fits)
            {
                continue;
            }
            let headroom = headrooms
                .entry(app.queue)
                .or_insert_with(|| self.headroom_below_root(app.queue));
            let fits = headroom
                .as_ref()
                .is_none_or(|h| ask.resource.fits_in_max_undef(h));
            if !fits {
                continue;
            }
            if let Some(h) = headroom.as_mut() {
                // Only the types the limits name are constrained.
                for (t, v) in ask.resource.iter() {
                    if let Some(have) = h.lookup(t) {
                        h.set(t, have - v);
                    }
                }
            }
            found.push((app.id.clone(), ask.key.clone()));
        }
        if self.tried.is_empty() {
            self.tried.armed = true;
        }
        found
    }

    /// The leaf's headroom from configured `max` values only: root (the
    /// partition size) counts as unlimited. `None` = unlimited.
    fn headroom_below_root(&self, id: QueueId) -> Option<Resource> {
        if id == ROOT {
            return None;
        }
        let q = self.queues.get(id);
        let parent = q.parent.and_then(|p| self.headroom_below_root(p));
        let own = q.max.as_ref().map(|m| m.sub(&q.allocated));
        match (own, parent) {
            (None, p) => p,
            (Some(own), None) => Some(own),
            (Some(mut own), Some(ph)) => {
                for (t, v) in ph.iter() {
                    match own.lookup(t) {
                        None => own.set(t, v),
                        Some(o) => own.set(t, o.min(v)),
                    }
                }
                Some(own)
            }
        }
    }

    /// The `REQUEST` event for an ask skipped because it does not fit its
    /// queue's headroom (spec 13.2).
    pub(crate) fn queue_headroom_event(&self, app: &Application, ask: &Ask) -> si::EventRecord {
        events::record(
            si::event_record::Type::Request,
            &ask.key,
            &app.id,
            events::REASON_QUEUE_HEADROOM,
            format!(
                "Application {} does not fit into {} queue",
                app.id,
                self.queues.get(app.queue).path
            ),
        )
    }
}
