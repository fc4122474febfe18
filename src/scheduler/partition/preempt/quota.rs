//! Quota-change preemption (`shared/spec/policy/preemption.md` 13): after
//! a reload lowers a configured queue's max below what it uses, and the
//! queue's `quota.preemption.delay` (v1.8: `preemption.quota.delay`) has
//! passed, allocations in that queue
//! (a leaf, or the leaves below a parent, each taking a share) are
//! released to the RM with `PREEMPTED_BY_SCHEDULER` until the queue's
//! usage is back at or under the new max.
//!
//! Opt-in twice: the partition's `preemption.quotapreemptionenabled` and
//! a non-zero delay on the queue. No RM check is made (the victims free a
//! queue's quota, not a node, spec 13). Victims join the guarantee
//! preemption's book ([`super::PreemptionBook`]): their resources
//! count as `preempting` until the RM confirms, so no later step (of
//! either kind) picks them again or counts them as usage.
//!
//! Where sicore differs from the reference (docs/preemption.md):
//! armed queues are evaluated at the start of every pass, pending work or
//! not, and the core wakes up for them (quirk Q9's recommendation); a run
//! that takes nothing disarms the queue, so a parent does not repeat
//! empty runs (Q11); a child's weight counts only its usage above its
//! guarantee (Q11); an absent old max counts as unlimited when deciding
//! whether a reload lowered it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::scheduler::objects::allocs::AllocSlot;
use crate::scheduler::objects::application::TAG_REQUIRED_NODE;
use crate::scheduler::policies::parse_go_duration;

/// Queue property: how long after a lowering of the max quota-change
/// preemption starts; absent, invalid or zero = off for the queue. The
/// YuniKorn v1.9 name.
pub const PROP_QUOTA_DELAY: &str = "quota.preemption.delay";
/// The v1.8 name of [`PROP_QUOTA_DELAY`], still read for every RM (a v1.8
/// k8shim's configuration uses it); the v1.9 name wins when both are set.
pub const PROP_QUOTA_DELAY_V18: &str = "preemption.quota.delay";
/// Event message of a quota-change victim (spec 15), before the path.
pub const QUOTA_EVENT_PREFIX: &str = "Preempted by Quota change enforcement process in ";
/// Release message of a quota-change victim (spec 18), before the path.
pub const QUOTA_RELEASE_PREFIX: &str =
    "preempting allocations to enforce new max quota for queue : ";

/// A queue's quota delay: `quota.preemption.delay`, else the v1.8
/// `preemption.quota.delay`; a Go duration, zero when absent or invalid.
pub fn quota_delay_of(props: &BTreeMap<String, String>) -> Duration {
    props
        .get(PROP_QUOTA_DELAY)
        .or_else(|| props.get(PROP_QUOTA_DELAY_V18))
        .and_then(|v| parse_go_duration(v))
        .unwrap_or(Duration::ZERO)
}

/// Counters of quota-change preemption.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QuotaCounters {
    /// Runs started (a parent's run counts once).
    pub runs: u64,
    /// Victims released.
    pub victims: u64,
}

/// The partition's quota-change state.
#[derive(Debug, Default)]
pub struct QuotaBook {
    /// `preemption.quotapreemptionenabled` (absent = off).
    pub enabled: bool,
    /// Armed queues by path: when their preemption may start.
    pub armed: BTreeMap<Arc<str>, Instant>,
    /// Counters.
    pub counters: QuotaCounters,
}

/// A configured queue's max and delay before a reload, to compare with
/// after it.
pub(in crate::scheduler::partition) type QuotaBefore = Vec<(Arc<str>, Option<Resource>, Duration)>;

/// The new start time of a queue after a reload (spec 13.2). `armed` is
/// the current one; the result replaces it.
pub(crate) fn rearm(
    old_max: Option<&Resource>,
    new_max: Option<&Resource>,
    old_delay: Duration,
    new_delay: Duration,
    armed: Option<Instant>,
    now: Instant,
) -> Option<Instant> {
    // A zero delay changes nothing: an armed queue still fires (13.1).
    if new_delay.is_zero() {
        return armed;
    }
    // No max any more: disarmed.
    let new_max = new_max.filter(|m| !m.is_zero())?;
    let shifted = |at: Instant| {
        if new_delay >= old_delay {
            at + (new_delay - old_delay)
        } else {
            at.checked_sub(old_delay - new_delay).unwrap_or(now)
        }
    };
    if old_max == Some(new_max) {
        return match armed {
            None if old_delay.is_zero() => Some(now + new_delay),
            None => None,
            Some(at) if old_delay != new_delay => Some(shifted(at)),
            Some(at) => Some(at),
        };
    }
    // Lowered: some type of the new max is tighter than before (an absent
    // old max, or an absent type in it, is unlimited).
    let lowered = new_max
        .iter()
        .any(|(t, v)| old_max.and_then(|o| o.lookup(t)).is_none_or(|o| v < o));
    match armed {
        Some(at) if lowered && old_delay != new_delay => Some(shifted(at)),
        Some(at) => Some(at),
        None if lowered => Some(now + new_delay),
        None => None,
    }
}

/// `big` is strictly greater than `small` over the types of `big` (the
/// reference's "strictly greater, only existing"): with shared types,
/// none of them above `big` and not all equal; `small` empty: every type
/// of `big` positive; no shared type: both non-empty.
fn strictly_greater_existing(big: &Resource, small: &Resource) -> bool {
    let small_empty = small.iter().next().is_none();
    if big.iter().next().is_none() {
        return false;
    }
    if small_empty {
        return big.iter().all(|(_, v)| v > 0);
    }
    let mut shared = false;
    let mut differs = false;
    for (t, v) in big.iter() {
        if let Some(s) = small.lookup(t) {
            shared = true;
            if s > v {
                return false;
            }
            if s != v {
                differs = true;
            }
        }
    }
    if shared {
        differs
    } else {
        true
    }
}

/// `big` ≥ `small` over the types of `big` (the reference's "strictly
/// greater or equal, only existing"): the rules of
/// [`strictly_greater_existing`] with equality allowed.
fn greater_or_equal_existing(big: &Resource, small: &Resource) -> bool {
    if big.iter().next().is_none() {
        return false;
    }
    if small.iter().next().is_none() {
        return big.iter().all(|(_, v)| v > 0);
    }
    // Shared types all within, or none shared: both count as "≥".
    big.iter()
        .all(|(t, v)| small.lookup(t).is_none_or(|s| s <= v))
}

/// Whether `used` ≤ `max` in every type of the max (a missing type of
/// `used` is zero).
fn within_max(used: &Resource, max: &Resource) -> bool {
    max.iter().all(|(t, m)| used.get(t) <= m)
}

/// used − max over the types of the max, positive values only.
fn excess_over(used: &Resource, max: &Resource) -> Resource {
    let mut r = Resource::new();
    for (t, m) in max.iter() {
        let over = used.get(t).saturating_sub(m);
        if over > 0 {
            r.set(t, over);
        }
    }
    r
}

impl Partition {
    /// What [`Self::quota_after_reload`] compares with: every configured
    /// queue's max and delay, read before the tree changes.
    pub(in crate::scheduler::partition) fn quota_before_reload(&self) -> QuotaBefore {
        self.queues
            .iter()
            .filter(|(_, q)| q.managed)
            .map(|(_, q)| (q.path.clone(), q.max.clone(), quota_delay_of(&q.properties)))
            .collect()
    }

    /// Arms, shifts or disarms each configured queue after a reload (spec
    /// 13.2); queues that are no longer configured are disarmed.
    pub(in crate::scheduler::partition) fn quota_after_reload(&mut self, before: QuotaBefore) {
        let now = self.clock.now();
        let old: FastMap<&str, (Option<&Resource>, Duration)> = before
            .iter()
            .map(|(p, m, d)| (&**p, (m.as_ref(), *d)))
            .collect();
        let mut armed = BTreeMap::new();
        for (_, q) in self.queues.iter() {
            if !q.managed || q.parent.is_none() {
                continue; // root's max is the partition's size
            }
            let (old_max, old_delay) = old.get(&*q.path).copied().unwrap_or((None, Duration::ZERO));
            let current = self.preempt.quota.armed.get(&q.path).copied();
            let new_delay = quota_delay_of(&q.properties);
            if q.parent.is_some_and(|p| {
                !self
                    .queues
                    .get(p)
                    .properties
                    .contains_key(PROP_QUOTA_DELAY_V18)
            }) && q.properties.contains_key(PROP_QUOTA_DELAY_V18)
                && !q.properties.contains_key(PROP_QUOTA_DELAY)
            {
                log::warn!(
                    "queue {}: property {PROP_QUOTA_DELAY_V18} is the YuniKorn v1.8 name, which v1.9 no longer reads; use {PROP_QUOTA_DELAY}",
                    q.path
                );
            }
            if let Some(at) = rearm(old_max, q.max.as_ref(), old_delay, new_delay, current, now) {
                armed.insert(q.path.clone(), at);
            }
        }
        self.preempt.quota.armed = armed;
    }

    /// When the core must run a pass for quota-change preemption: the
    /// earliest start of an armed queue, while the switch is on.
    pub fn quota_wake(&self) -> Option<Instant> {
        // Without nodes the core skips the partition's pass (and there is
        // nothing allocated to take back).
        if !self.preempt.quota.enabled || self.nodes.is_empty() {
            return None;
        }
        self.preempt.quota.armed.values().min().copied()
    }

    /// The quota step of a pass (spec 13.3): each armed queue whose start
    /// time has passed, parents before their children, runs once; a queue
    /// back at or under its max is disarmed. Returns the number of runs.
    pub(in crate::scheduler::partition) fn quota_pass(
        &mut self,
        now: Instant,
        out: &mut Outcomes,
    ) -> usize {
        if !self.preempt.quota.enabled || self.preempt.quota.armed.is_empty() {
            return 0;
        }
        // Parents first: a shorter path cannot be below a longer one.
        let mut due: Vec<(usize, Arc<str>, Instant)> = self
            .preempt
            .quota
            .armed
            .iter()
            .map(|(p, at)| (p.split('.').count(), p.clone(), *at))
            .collect();
        due.sort();
        let mut ran: Vec<QueueId> = Vec::new();
        let mut runs = 0;
        for (_, path, at) in due {
            let Some(id) = self.queues.lookup(&path).filter(|id| {
                let q = self.queues.get(*id);
                q.managed && q.parent.is_some()
            }) else {
                self.preempt.quota.armed.remove(&path);
                continue;
            };
            let Some(max) = self.queues.get(id).max.clone() else {
                self.preempt.quota.armed.remove(&path);
                continue;
            };
            if within_max(&self.quota_used(id), &max) {
                self.preempt.quota.armed.remove(&path);
                continue;
            }
            // A run below an ancestor that ran in this pass waits for the
            // next pass, which sees the ancestor's victims in flight.
            if now < at || ran.iter().any(|r| self.queues.is_ancestor_or_self(*r, id)) {
                continue;
            }
            ran.push(id);
            runs += 1;
            let taken = self.quota_run(id, &max, out);
            if taken == 0 {
                // Nothing more can be taken until something changes: no
                // empty run on every pass (quirk Q11).
                self.preempt.quota.armed.remove(&path);
            }
        }
        self.preempt.quota.counters.runs += runs as u64;
        runs
    }

    /// used = allocated − preempting.
    fn quota_used(&self, q: QueueId) -> Resource {
        let mut used = self.queues.get(q).allocated.clone();
        if let Some(p) = self.preempt.preempting.get(&q) {
            used.sub_clamped_assign(p);
        }
        used
    }

    /// One run for queue `q` over `max` (spec 13.4, 13.5). Returns the
    /// number of victims released.
    fn quota_run(&mut self, q: QueueId, max: &Resource, out: &mut Outcomes) -> usize {
        let excess = excess_over(&self.quota_used(q), max);
        if excess.is_zero() {
            return 0;
        }
        let mut shares = Vec::new();
        if self.queues.get(q).leaf {
            shares.push((q, excess));
        } else {
            self.quota_split(q, &excess, &mut shares);
        }
        let mut victims = Vec::new();
        for (leaf, share) in shares {
            let picked = self.quota_victims(leaf, &share);
            if !picked.is_empty() {
                victims.push((leaf, picked));
            }
        }
        let path = self.queues.get(q).path.to_string();
        let mut n = 0;
        for (leaf, picked) in victims {
            n += picked.len();
            self.quota_commit(leaf, &path, picked, out);
        }
        n
    }

    /// Spec 13.5: a parent's excess split over its children by weight,
    /// down to leaves, in child-name order.
    fn quota_split(&self, q: QueueId, excess: &Resource, shares: &mut Vec<(QueueId, Resource)>) {
        let mut weights: Vec<(QueueId, Resource)> = Vec::new();
        let mut total = Resource::new();
        for child in self.queues.get(q).children.values() {
            let used = self.quota_used(*child);
            if used.is_zero() {
                continue;
            }
            let guaranteed = self.queues.get(*child).guaranteed.clone();
            let weight = match guaranteed.filter(|g| g.iter().next().is_some()) {
                Some(g) => {
                    if greater_or_equal_existing(&g, &used) {
                        continue; // within its guarantee
                    }
                    // Only usage above the guarantee counts (Q11).
                    let mut w = Resource::new();
                    for (t, gv) in g.iter() {
                        let over = used.get(t).saturating_sub(gv);
                        if over > 0 {
                            w.set(t, over);
                        }
                    }
                    w
                }
                None => used,
            };
            total.add_assign(&weight);
            weights.push((*child, weight));
        }
        for (child, weight) in weights {
            let mut share = Resource::new();
            for (t, w) in weight.iter() {
                let (Some(e), sum) = (excess.lookup(t), total.get(t)) else {
                    continue;
                };
                if w <= 0 || sum <= 0 {
                    continue;
                }
                let v = (w as f64 / sum as f64 * e as f64).round_ties_even() as i64;
                if v > 0 {
                    share.set(t, v);
                }
            }
            if share.is_zero() {
                continue;
            }
            if self.queues.get(child).leaf {
                shares.push((child, share));
            } else {
                self.quota_split(child, &share, shares);
            }
        }
    }

    /// Spec 13.4: the victims of leaf `q` for an excess of `excess`.
    fn quota_victims(&self, q: QueueId, excess: &Resource) -> Vec<AllocSlot> {
        let queue = self.queues.get(q);
        let gang = &self.gang;
        let mut candidates: Vec<(i32, std::cmp::Reverse<u64>, AllocSlot)> = Vec::new();
        for a_slot in queue.apps.values() {
            let Some(app) = self.apps.at(*a_slot) else {
                continue;
            };
            for slot in app.allocations.slots() {
                let a = self.allocations.at(slot);
                if !excess.iter().any(|(t, _)| a.resource.lookup(t).is_some())
                    || a.tags.contains_key(TAG_REQUIRED_NODE)
                    || (a.placeholder && gang.placeholder_leaving(&a.uuid))
                    || self.preempt.is_victim(&a.uuid)
                {
                    continue;
                }
                candidates.push((
                    a.priority,
                    std::cmp::Reverse(self.allocations.born(slot)),
                    slot,
                ));
            }
        }
        // Spec 12.4: every allocation is of the ordinary class today (no
        // allowPreemptSelf/originator yet); lower priority first, newest
        // first. `born` is unique, so the size tie-break never applies.
        candidates.sort_unstable();
        let guaranteed = queue.guaranteed.as_ref().filter(|g| !g.is_zero());
        let mut used = self.quota_used(q);
        let mut total = Resource::new();
        let mut picked = Vec::new();
        for (_, _, slot) in candidates {
            let res = &self.allocations.at(slot).resource;
            if !res.fits_in_max_undef(excess) {
                continue;
            }
            if !strictly_greater_existing(excess, &total) {
                break; // the excess is reached
            }
            used.sub_assign(res);
            if guaranteed.is_some_and(|g| strictly_greater_existing(g, &used)) {
                used.add_assign(res); // would drop below the guarantee
                continue;
            }
            total.add_assign(res);
            picked.push(slot);
        }
        picked
    }

    /// Marks the victims of leaf `leaf`, records their events and releases
    /// them, one response per application (spec 13.4).
    fn quota_commit(
        &mut self,
        leaf: QueueId,
        path: &str,
        picked: Vec<AllocSlot>,
        out: &mut Outcomes,
    ) {
        let event = format!("{QUOTA_EVENT_PREFIX}{path}");
        let message = format!("{QUOTA_RELEASE_PREFIX}{path}");
        let mut by_app: Vec<(Arc<str>, Vec<si::AllocationRelease>)> = Vec::new();
        for slot in picked {
            let app = self.allocations.at(slot).app.clone();
            let release = self.release_victim(slot, leaf, &event, &message, out);
            match by_app.iter_mut().find(|(a, _)| *a == app) {
                Some((_, list)) => list.push(release),
                None => by_app.push((app, vec![release])),
            }
            self.preempt.quota.counters.victims += 1;
        }
        for (_, released) in by_app {
            out.new_allocation_message(si::AllocationResponse {
                released,
                ..Default::default()
            });
        }
    }
}

#[cfg(test)]
#[path = "quota_tests.rs"]
mod step_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn r(pairs: &[(&str, i64)]) -> Resource {
        Resource::from_pairs(pairs.iter().copied()).unwrap()
    }

    #[test]
    fn strictly_greater_follows_the_reference() {
        assert!(strictly_greater_existing(
            &r(&[("vcore", 10)]),
            &Resource::new()
        ));
        assert!(strictly_greater_existing(
            &r(&[("vcore", 10)]),
            &r(&[("vcore", 9)])
        ));
        assert!(!strictly_greater_existing(
            &r(&[("vcore", 10)]),
            &r(&[("vcore", 10)])
        ));
        assert!(!strictly_greater_existing(
            &r(&[("vcore", 10)]),
            &r(&[("vcore", 11)])
        ));
        // Types of the smaller side the bigger lacks are ignored.
        assert!(strictly_greater_existing(
            &r(&[("vcore", 10)]),
            &r(&[("vcore", 5), ("memory", 500)])
        ));
        // Disjoint: true.
        assert!(strictly_greater_existing(
            &r(&[("vcore", 10)]),
            &r(&[("memory", 5)])
        ));
        assert!(!strictly_greater_existing(
            &Resource::new(),
            &r(&[("memory", 5)])
        ));
        assert!(greater_or_equal_existing(
            &r(&[("vcore", 10)]),
            &r(&[("vcore", 10)])
        ));
        assert!(!greater_or_equal_existing(
            &r(&[("vcore", 10)]),
            &r(&[("vcore", 11)])
        ));
    }

    #[test]
    fn arming_follows_spec_13_2() {
        let now = Instant::now();
        let s = Duration::from_secs;
        let (m10, m20) = (r(&[("vcore", 10)]), r(&[("vcore", 20)]));
        // Lowered: armed at now + delay.
        assert_eq!(
            rearm(Some(&m20), Some(&m10), s(0), s(5), None, now),
            Some(now + s(5))
        );
        // An absent old max counts as unlimited.
        assert_eq!(
            rearm(None, Some(&m10), s(5), s(5), None, now),
            Some(now + s(5))
        );
        // Raised: not armed.
        assert_eq!(rearm(Some(&m10), Some(&m20), s(5), s(5), None, now), None);
        // Unchanged max, delay 0 -> 5: armed; delay unchanged: not.
        assert_eq!(
            rearm(Some(&m10), Some(&m10), s(0), s(5), None, now),
            Some(now + s(5))
        );
        assert_eq!(rearm(Some(&m10), Some(&m10), s(5), s(5), None, now), None);
        // Armed, delay changed: shifted by the difference, either way.
        let at = now + s(5);
        assert_eq!(
            rearm(Some(&m10), Some(&m10), s(5), s(8), Some(at), now),
            Some(at + s(3))
        );
        assert_eq!(
            rearm(Some(&m20), Some(&m10), s(5), s(2), Some(at), now),
            Some(now + s(2))
        );
        // Armed, lowered again with the same delay: kept.
        assert_eq!(
            rearm(Some(&m20), Some(&m10), s(5), s(5), Some(at), now),
            Some(at)
        );
        // The max removed: disarmed.
        assert_eq!(rearm(Some(&m10), None, s(5), s(5), Some(at), now), None);
        // Delay 0 (or removed): an armed queue stays armed, nothing arms.
        assert_eq!(rearm(Some(&m10), None, s(5), s(0), Some(at), now), Some(at));
        assert_eq!(rearm(Some(&m20), Some(&m10), s(0), s(0), None, now), None);
    }

    #[test]
    fn excess_and_within_max_use_the_types_of_the_max() {
        let used = r(&[("vcore", 25), ("memory", 100)]);
        assert_eq!(
            excess_over(&used, &r(&[("vcore", 10)])),
            r(&[("vcore", 15)])
        );
        assert!(!within_max(&used, &r(&[("vcore", 10)])));
        assert!(within_max(&used, &r(&[("vcore", 25)])));
        assert!(within_max(&used, &r(&[("gpu", 1)])));
    }
}
