//! Outstanding requests (spec 8.12): asks that fit their queue's configured
//! limits, whether or not a node can take them now. The core reports them
//! as `FAILED` through `UpdateContainerSchedulingState` so that a cluster
//! autoscaler can react. Also the `REQUEST` event of an ask skipped for
//! queue headroom (spec 13.2).

use std::sync::Arc;

use super::*;
use crate::events;

/// Reason sent with every outstanding request.
pub const OUTSTANDING_REASON: &str = "request is waiting for cluster resources become available";

impl Partition {
    /// The outstanding asks as `(application id, allocation key)`, in the
    /// order the check visits them.
    pub fn outstanding_requests(&self) -> Vec<(Arc<str>, Arc<str>)> {
        let mut found = Vec::new();
        if self.queues.get(ROOT).pending.is_strictly_positive() {
            self.outstanding_in(ROOT, &mut found);
        }
        found
    }

    fn outstanding_in(&self, q: QueueId, found: &mut Vec<(Arc<str>, Arc<str>)>) {
        let queue = self.queues.get(q);
        if !queue.leaf {
            for child in self.queues.sorted_children(q) {
                self.outstanding_in(child, found);
            }
            return;
        }
        // Shared by every application of the leaf.
        let mut headroom = self.headroom_below_root(q);
        for app_id in self.outstanding_app_order(q) {
            let app = &self.apps[&app_id];
            for key in app.ask_order.values() {
                let ask = &app.asks[*key];
                if Self::served_by_replacement(app, ask) {
                    continue; // waits for a placeholder, not for capacity
                }
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
        }
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

    /// Applications with demand in the leaf's policy order, `stateaware`
    /// treated as `fifo` and nothing filtered out.
    fn outstanding_app_order(&self, q: QueueId) -> Vec<Arc<str>> {
        let queue = self.queues.get(q);
        let apps = queue
            .apps
            .values()
            .filter_map(|slot| self.apps.at(*slot))
            .filter(|a| a.has_pending());
        match queue.sort_policy {
            AppSortPolicy::Fair => {
                let mut v: Vec<_> = apps
                    .map(|a| (shares(a.allocated(), queue.guaranteed.as_ref()), a))
                    .collect();
                v.sort_by(|(sa, a), (sb, b)| {
                    compare_shares(sa, sb)
                        .then(a.seq.cmp(&b.seq))
                        .then(a.id.cmp(&b.id))
                });
                v.into_iter().map(|(_, a)| a.id.clone()).collect()
            }
            AppSortPolicy::Fifo | AppSortPolicy::StateAware => apps.map(|a| a.id.clone()).collect(),
        }
    }

    /// The `REQUEST` event for an ask skipped because it does not fit its
    /// queue's headroom (spec 13.2).
    pub(crate) fn queue_headroom_event(&self, app: &Application, ask: &Ask) -> si::EventRecord {
        events::record(
            si::event_record::Type::Request,
            &ask.key,
            &app.id,
            "InsufficientQueueResources",
            format!(
                "Application {} does not fit into {} queue",
                app.id,
                self.queues.get(app.queue).path
            ),
        )
    }
}
