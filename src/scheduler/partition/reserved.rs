//! The reserved pass (spec 8.10): asks holding a node reservation are
//! tried first, on their node and then on any other free node.

use std::time::Instant;

use super::preempt::ReservedRequired;
use super::*;
use crate::events::Record;
use crate::scheduler::objects::queue::AppKey;
use crate::scheduler::resync::ResyncBarrier;
use crate::scheduler::ugm::Fit;

/// Reserved nodes and the asks holding them.
type HeldNodes = Vec<(NodeSlot, ReservedAsk)>;

impl Partition {
    /// Reservations grouped by application, the applications in the order
    /// the regular search visits them (spec 8.10): leaves in depth-first
    /// fair order, then each leaf's application order (`stateaware` as
    /// `fifo`, without its filter); within an application, its asks in
    /// scheduling order. One walk over the reservations.
    fn reserved_apps_in_order(&self) -> Vec<HeldNodes> {
        let leaf_rank = self.leaf_ranks();
        let mut apps: Vec<((usize, AppKey), HeldNodes)> = Vec::new();
        let mut index: FastMap<&str, usize> = FastMap::default();
        // In node id order, as the walk has always gone.
        let mut all: Vec<(&str, NodeSlot, &ReservedAsk)> = self
            .reservations
            .iter()
            .map(|(n, r)| (&*self.nodes[n].id, n, r))
            .collect();
        all.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (_, node, r) in all {
            if let Some(i) = index.get(&*r.app) {
                apps[*i].1.push((node, r.clone()));
                continue;
            }
            index.insert(&*r.app, apps.len());
            let order = match self.apps.get(&r.app) {
                // Gone: sorted last, where its reservations are cancelled.
                None => (usize::MAX, AppKey::default()),
                Some(app) => (
                    // A leaf without demand is not walked: after every other.
                    leaf_rank.get(&app.queue).copied().unwrap_or(usize::MAX - 1),
                    app.leaf_key().clone(),
                ),
            };
            apps.push((order, vec![(node, r.clone())]));
        }
        apps.sort_by(|a, b| a.0.cmp(&b.0));
        apps.into_iter()
            .map(|(_, mut held)| {
                let app = held.first().and_then(|(_, r)| self.apps.get(&r.app));
                if let Some(app) = app {
                    held.sort_by_cached_key(|(n, r)| {
                        (
                            app.asks.get(&r.key).map(AskEntry::order_key),
                            self.nodes[*n].id.clone(),
                        )
                    });
                }
                held
            })
            .collect()
    }

    /// The reserved pass (spec 8.10): applications in queue order; each
    /// first tries its reserved asks on their reserved nodes, then on any
    /// other free node. Stale reservations are cancelled on the way.
    pub(super) fn reserved_pass(
        &mut self,
        cb: Option<&ResyncBarrier>,
        budget: usize,
        preempt_on: bool,
        now: Instant,
        out: &mut Outcomes,
    ) -> usize {
        let mut made = 0;
        for held in self.reserved_apps_in_order() {
            if made >= budget {
                break;
            }
            let mut unsatisfied = Vec::new();
            for (slot, r) in held {
                if made >= budget {
                    break;
                }
                if self.reservations.on_node(slot) != Some(&r) {
                    continue;
                }
                // The user/group check below wants exact levels.
                self.flush_limits();
                let Some(fits_queue) = self.reserved_ask_usable(slot, &r) else {
                    // Stale: the ask is gone or satisfied, or the node is
                    // draining (the reference kept those; the spec recommends not).
                    self.reservations.cancel_node(slot);
                    continue;
                };
                if !fits_queue {
                    self.expire_reservation(slot, &r, now); // YuniKorn v1.9, 7.1
                    continue;
                }
                // Required-node preemption (preempt/required.rs).
                if preempt_on {
                    match self.reserved_required_node(slot, &r, cb, now, out) {
                        ReservedRequired::Ordinary => {}
                        ReservedRequired::Waits => continue,
                        ReservedRequired::Preempted => {
                            made += 1;
                            continue;
                        }
                    }
                }
                // Usable: waiting, so whole.
                let Some(ask) = self.apps[&r.app].asks.whole(&r.key) else {
                    continue;
                };
                let node = &self.nodes[slot];
                let mut events = Vec::new();
                let placed = self.try_node(&r.app, ask, node, cb, true, &mut events);
                out.events.extend(events.into_iter().map(Record::from));
                if placed {
                    let (a, k) = self.ask_slots(&r);
                    self.commit(a, k, slot, cb, out);
                    made += 1;
                } else {
                    unsatisfied.push((slot, r));
                }
            }
            // Then each still-held reservation on another node (the reserved
            // node is freed when that works).
            for (slot, r) in unsatisfied {
                if made >= budget {
                    break;
                }
                self.flush_limits();
                if self.reservations.on_node(slot) != Some(&r)
                    || self.reserved_ask_usable(slot, &r) != Some(true)
                {
                    continue;
                }
                // Usable: waiting, so whole.
                let Some(ask) = self.apps[&r.app].asks.whole(&r.key) else {
                    continue;
                };
                if ask.required_node.is_some() {
                    continue; // its own node only (spec 8.7 step 1)
                }
                let mut events = Vec::new();
                let target = self
                    .nodes
                    .ordered()
                    .filter(|n| {
                        n.schedulable && self.reservations.on_node(n.key().slot()).is_none()
                    })
                    .filter(|n| n.fits_capacity(&ask.resource))
                    .find(|n| self.try_node(&r.app, ask, n, cb, true, &mut events))
                    .map(|n| n.key().slot());
                out.events.extend(events.into_iter().map(Record::from));
                if let Some(target) = target {
                    self.reservations.cancel_node(slot);
                    let (a, k) = self.ask_slots(&r);
                    self.commit(a, k, target, cb, out);
                    made += 1;
                }
            }
        }
        made
    }

    /// Whether a reservation can still be served: `None` when it is stale
    /// (ask gone or satisfied, node gone or draining), else whether the ask
    /// may be allocated now: it fits the queue's headroom, and the
    /// application is not held back by `maxapplications`.
    fn reserved_ask_usable(&self, node: NodeSlot, r: &ReservedAsk) -> Option<bool> {
        let app = self.apps.get(&r.app)?;
        let ask = app.asks.whole(&r.key).filter(|a| a.pending_repeat > 0)?;
        self.nodes.at(node).filter(|n| n.schedulable)?;
        let held_back = (!app.counted_active && self.app_limit_reached(app.queue))
            || Self::served_by_replacement(app, ask)
            || (self.ugm.enabled()
                && (!self.runnable_by_limits(app)
                    || self.ugm.fits(app, &ask.resource) != Fit::Fits));
        Some(
            !held_back
                && self
                    .queues
                    .headroom(app.queue)
                    .is_none_or(|h| ask.resource.fits_in_max_undef(&h)),
        )
    }

    /// The slots of a reserved ask that [`Self::reserved_ask_usable`] found.
    fn ask_slots(&self, r: &ReservedAsk) -> (Slot, Slot) {
        let app = self.apps.slot_of(&r.app).expect("checked usable");
        let ask = self.apps[app].asks.slot_of(&r.key).expect("checked usable");
        (app, ask)
    }
}
