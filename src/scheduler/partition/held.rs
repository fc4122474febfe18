//! REQUEST records of the causes no pass finds (docs/why-pending.md): an
//! application held for a running slot by a queue, user or group
//! `maxapplications` is never tried, and a gang member served by
//! replacement is skipped. The pass cannot note them, so a check reads
//! them with [`Partition::held_cause`] (the snapshot reads the same) and
//! gives the asks their reasons and records by the pass's rules: one when
//! the cause changes, at most one a minute while it stays.
//!
//! Cost: the check runs at the end of a pass, at most once per
//! [`HELD_CHECK_INTERVAL_NS`], and walks only the watched applications:
//! those added while not counted as running, those with real gang members
//! and those the pass found held by a user or group limit. An application
//! leaves the watch at the first check that finds it can no longer be
//! held (counted as running, no gang member waiting, not held by its user
//! or group), or when it has nothing left to wait for.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::explain::{gang_waiting, is_gang_member, record_reason};
use super::*;
use crate::scheduler::objects::pending::{Cause, PendingReason, HELD_CHECK_INTERVAL_NS};

impl Partition {
    /// Watches application `id` for held causes from now on; `gang` when
    /// it has a real gang member.
    pub(super) fn watch_held(&mut self, id: &Arc<str>, gang: bool) {
        let Some(app) = self.apps.get_mut(id) else {
            return;
        };
        match &mut app.held_watch {
            Some(g) => *g |= gang,
            None => {
                app.held_watch = Some(gang);
                self.held_watch.insert(app.id.clone());
            }
        }
    }

    /// Takes application `id` out of the watch.
    fn unwatch_held(&mut self, id: &Arc<str>) {
        self.held_watch.remove(id);
        if let Some(app) = self.apps.get_mut(id) {
            app.held_watch = None;
        }
    }

    /// The check of held causes, when due: each waiting ask of a watched
    /// application with a held cause gets it as its reason, and a REQUEST
    /// record in `records` when one is due (and that type is wanted).
    pub(super) fn held_reasons(&mut self, records: &mut Vec<si::EventRecord>) {
        if self.held_watch.is_empty() {
            return;
        }
        let now_ns = self.clock.unix_nanos();
        if now_ns < self.next_held_check_ns {
            return;
        }
        self.next_held_check_ns = now_ns.saturating_add(HELD_CHECK_INTERVAL_NS);
        let wanted = self
            .timeouts
            .events
            .allows(si::event_record::Type::Request as i32);
        let nodes = self.nodes.len();
        let watched: Vec<Arc<str>> = self.held_watch.iter().cloned().collect();
        let mut causes: Vec<(Slot, Cause)> = Vec::new();
        for id in watched {
            let Some(app) = self.apps.get(&id).filter(|a| a.has_pending()) else {
                self.unwatch_held(&id);
                continue;
            };
            let gang = app.held_watch.unwrap_or(false);
            let held = self.app_held(app);
            let maybe_held = !app.counted_active || self.ugm.held.contains(&app.seq);
            if held.is_none() && !gang {
                if !maybe_held {
                    self.unwatch_held(&id);
                }
                continue;
            }
            let waiting = if gang {
                gang_waiting(app)
            } else {
                BTreeMap::new()
            };
            let mut member = false;
            for slot in app.ask_order.values() {
                let Some(ask) = app.asks.whole_at(slot) else {
                    continue; // an ask of the order is whole
                };
                member |= is_gang_member(ask);
                let tried = ask.reason().map_or(0, |r| r.at_ns);
                let cause = match &held {
                    Some(h) => Some(h.clone()),
                    None => self.held_cause(app, ask, &waiting, tried),
                };
                if let Some(c) = cause {
                    causes.push((slot, c));
                }
            }
            if !member && !maybe_held {
                self.unwatch_held(&id);
            }
            let Some(app) = self.apps.get_mut(&id) else {
                continue;
            };
            if !member && app.held_watch.is_some() {
                app.held_watch = Some(false);
            }
            for (slot, cause) in causes.drain(..) {
                let Some(ask) = app.asks.whole_at_mut(slot) else {
                    continue;
                };
                let changed = match &mut ask.pending {
                    Some(r) => {
                        // The passes only counted on the ask come first.
                        r.settle();
                        r.update_held(cause, now_ns)
                    }
                    None => {
                        ask.pending = Some(crate::scheduler::objects::ask::StampedReason::new(
                            PendingReason::held(cause, now_ns),
                        ));
                        true
                    }
                };
                if wanted {
                    record_reason(ask, &app.id, changed, nodes, now_ns, records);
                }
                // Held: a pass that finds its old cause again must write.
                if let Some(r) = ask.pending.as_deref() {
                    r.stamp.written(0, r.recorded_ns);
                }
            }
        }
    }
}
