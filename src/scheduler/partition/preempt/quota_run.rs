//! One quota-change preemption run as YuniKorn v1.9 makes it
//! (`shared/spec/si-v1.9-delta.md` 5.5, 5.6, 2): the amount to take back
//! (the excess over the max, bounded by how far the path is above its
//! guarantees), the victims' order, a walk that never passes the amount,
//! the parent's floored split over its children, and the
//! `QUEUE_PREEMPTION` summary record.
//!
//! Where sicore differs from the reference (docs/preemption.md): the
//! victim classes go regular, then opted-out, then originators (quirk V1's
//! recommendation; the reference's score reads the other way); a child's
//! weight in the split counts only its usage above its guarantee (V5);
//! "preempted victims" counts every victim of the run (V3).

use std::cmp::Reverse;
use std::sync::Arc;

use smallvec::SmallVec;

use super::quota::{excess_over, QUOTA_EVENT_PREFIX, QUOTA_RELEASE_PREFIX};
use super::*;
use crate::events::{self, Change, Detail, Record, TYPE_QUEUE};
use crate::scheduler::objects::allocs::{AllocSlot, VictimFacts};
use crate::scheduler::partition::trace::PreemptCause;
use crate::scheduler::resource::{compare_shares, shares, ResId};
use crate::scheduler::FastSet;

/// The start of a `QUEUE_PREEMPTION` record's message.
pub const QUOTA_SUMMARY_PREFIX: &str = "Quota Preemption results summary: ";

/// What a run found and took, for its record.
#[derive(Debug, Default)]
struct Tally {
    /// Candidates of every leaf of the run.
    candidates: usize,
    /// Victims taken.
    taken: usize,
    /// Their summed resources.
    claimed: Resource,
}

/// A candidate's place in the victim order as plain integers: regular
/// before opted-out before originators, then most matched types first,
/// lower priority, later hour, smaller shares (their rank among the leaf's
/// distinct ones), newer (`born`, which is unique, so the order is total),
/// then its slot.
type OrderKey = (
    u8,
    Reverse<u32>,
    i32,
    Reverse<u32>,
    u32,
    Reverse<u64>,
    AllocSlot,
);

/// What a run reads of a candidate's resource; equal resources read alike.
#[derive(Clone, Copy)]
struct Profile {
    /// Percentage of the resource's types the amount also has (0: not a
    /// candidate).
    matched: u32,
    /// Whether it fits the amount on its own (only then can it be taken).
    fits: bool,
    /// Its shares' id in [`Profiles::seen`].
    shares: u32,
}

/// The profiles of one leaf's candidates for one amount. A leaf's
/// allocations are mostly alike, so a profile is worked out once per run
/// of equal resources, and the distinct shares are compared with few;
/// their ranks come once all are in, and the sort then compares integers
/// only.
struct Profiles<'a> {
    amount: &'a Resource,
    max: Option<&'a Resource>,
    /// Distinct shares (equal under [`compare_shares`], one entry), each
    /// what [`crate::scheduler::resource::shares`] gives for a resource cut
    /// to the amount's types.
    seen: Vec<SmallVec<[f64; 4]>>,
    /// Per type of the amount: the least any candidate that fits has.
    least: SmallVec<[(ResId, i64); 4]>,
    last: Option<(Resource, Profile)>,
}

impl<'a> Profiles<'a> {
    fn new(amount: &'a Resource, max: Option<&'a Resource>) -> Self {
        Profiles {
            amount,
            max,
            seen: Vec::new(),
            least: amount.iter().map(|(t, _)| (t, i64::MAX)).collect(),
            last: None,
        }
    }

    fn of(&mut self, resource: &Resource) -> Profile {
        if let Some((r, p)) = &self.last {
            if r == resource {
                return *p;
            }
        }
        let amount = self.amount;
        let types = resource.iter().count();
        // The resource cut to the amount's types (zeros stay listed).
        let mut cut = Resource::new();
        for (t, v) in resource.iter().filter(|(t, _)| amount.lookup(*t).is_some()) {
            cut.set(t, v);
        }
        let matched = cut.iter().count();
        let fits = amount.iter().all(|(t, p)| resource.get(t) <= p);
        let mut id = 0;
        if matched > 0 && fits {
            for (t, m) in self.least.iter_mut() {
                *m = (*m).min(resource.get(*t));
            }
            let shares = shares(&cut, self.max);
            let found = self
                .seen
                .iter()
                .position(|s| compare_shares(s, &shares).is_eq());
            id = found.unwrap_or_else(|| {
                self.seen.push(shares);
                self.seen.len() - 1
            }) as u32;
        }
        let p = Profile {
            matched: u32::try_from(matched * 100 / types.max(1)).unwrap_or(100),
            fits,
            shares: id,
        };
        self.last = Some((resource.clone(), p));
        p
    }

    /// Per shares id, its rank: smaller shares first.
    fn ranks(&self) -> Vec<u32> {
        let mut by: Vec<u32> = (0..self.seen.len() as u32).collect();
        by.sort_by(|a, b| compare_shares(&self.seen[*a as usize], &self.seen[*b as usize]));
        let mut rank = vec![0; by.len()];
        for (r, id) in by.into_iter().enumerate() {
            rank[id as usize] = r as u32;
        }
        rank
    }
}

impl Partition {
    /// One run for queue `q` whose max is `max`. Returns the number of
    /// victims released.
    pub(super) fn quota_run(&mut self, q: QueueId, max: &Resource, out: &mut Outcomes) -> usize {
        let amount = self.quota_amount(q, max);
        if amount.is_zero() {
            return 0;
        }
        let leaf = self.queues.get(q).leaf;
        let mut parts = Vec::new();
        if leaf {
            parts.push((q, amount.clone()));
        } else {
            self.quota_split(q, &amount, &mut parts);
        }
        let mut tally = Tally::default();
        let mut victims = Vec::new();
        let in_flight = self.victim_slots();
        for (l, share) in parts {
            let (candidates, picked) = self.quota_victims(l, &share, &in_flight);
            tally.candidates += candidates;
            if !picked.is_empty() {
                victims.push((l, picked));
            }
        }
        let path = self.queues.get(q).path.clone();
        for (l, picked) in victims {
            tally.taken += picked.len();
            for slot in &picked {
                tally
                    .claimed
                    .add_assign(&self.allocations.facts(*slot).resource);
            }
            self.quota_commit(l, &path, picked, out);
        }
        // The summary goes to an RM that takes it (SI v1.9, QUEUE records)
        // and, as the queue's trace, to the REST history.
        let to_rm = self.timeouts.events.queue_preemption();
        if tally.candidates > 0 && (to_rm || self.tracing()) {
            let mut r = summary_record(&path, max, &amount, &tally, leaf);
            r.ring_only = !to_rm;
            out.record(r);
        }
        tally.taken
    }

    /// What a run on `q` sets out to take back (5.5a): the excess of its
    /// usage over `max`, in each type no more than the largest amount by
    /// which a queue from `q` up to the root is above its guarantee (its
    /// allocated resource, victims in flight included, as the reference
    /// counts it: quirk V2). A type no queue on the path is above its
    /// guarantee in is not bounded.
    pub(super) fn quota_amount(&self, q: QueueId, max: &Resource) -> Resource {
        let excess = excess_over(&self.quota_used(q), max);
        let mut above = Resource::new();
        let mut at = Some(q);
        while let Some(id) = at {
            let queue = self.queues.get(id);
            at = queue.parent;
            let Some(g) = queue.guaranteed.as_ref() else {
                continue;
            };
            for (t, gv) in g.iter() {
                let over = queue.allocated.get(t).saturating_sub(gv);
                if over > 0 && over > above.get(t) {
                    above.set(t, over);
                }
            }
        }
        let mut amount = Resource::new();
        for (t, e) in excess.iter() {
            let v = above.lookup(t).map_or(e, |g| g.min(e));
            if v > 0 {
                amount.set(t, v);
            }
        }
        amount
    }

    /// 5.6b: a parent's amount split over its children by weight, each
    /// share floored, down to leaves, in child-name order. Children at or
    /// under their guarantee take no part.
    fn quota_split(&self, q: QueueId, amount: &Resource, parts: &mut Vec<(QueueId, Resource)>) {
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
                        continue;
                    }
                    // Only usage above the guarantee counts (V5).
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
                let (Some(e), sum) = (amount.lookup(t), total.get(t)) else {
                    continue;
                };
                if w <= 0 || sum <= 0 {
                    continue;
                }
                // w ≤ sum, so the floored share is at most e.
                let v = (i128::from(w) * i128::from(e) / i128::from(sum)) as i64;
                if v > 0 {
                    share.set(t, v);
                }
            }
            if share.is_zero() {
                continue;
            }
            if self.queues.get(child).leaf {
                parts.push((child, share));
            } else {
                self.quota_split(child, &share, parts);
            }
        }
    }

    /// 5.5b-d: the candidates of leaf `q` for `amount`, and the victims
    /// taken from them in order while the total stays within the amount.
    ///
    /// Every candidate counts, but only those that fit the amount on their
    /// own can be taken: only they are ordered, and the walk stops once,
    /// in some type, what is left of the amount is below every one of them
    /// (the victims are those of a walk over the whole list).
    fn quota_victims(
        &self,
        q: QueueId,
        amount: &Resource,
        in_flight: &FastSet<AllocSlot>,
    ) -> (usize, Vec<AllocSlot>) {
        let queue = self.queues.get(q);
        let mut count = 0usize;
        let mut keys: Vec<OrderKey> = Vec::new();
        let mut profiles = Profiles::new(amount, queue.max.as_ref());
        for a_slot in queue.apps.values() {
            let Some(app) = self.apps.at(*a_slot) else {
                continue;
            };
            for slot in app.allocations.slots() {
                let a = self.allocations.facts(slot);
                if self.quota_excluded(slot, a, in_flight) {
                    continue;
                }
                let p = profiles.of(&a.resource);
                if p.matched == 0 {
                    continue; // no type of the amount: not a candidate
                }
                count += 1;
                if !p.fits {
                    continue; // too large on its own: never taken
                }
                keys.push((
                    u8::from(!a.preempt_self) + 2 * u8::from(a.originator),
                    Reverse(p.matched),
                    a.priority,
                    Reverse(a.hour),
                    p.shares,
                    Reverse(a.born),
                    slot,
                ));
            }
        }
        if profiles.seen.len() > 1 {
            let rank = profiles.ranks();
            for k in &mut keys {
                k.4 = rank[k.4 as usize];
            }
        }
        // Cheap on the runs a leaf's list mostly is (found oldest first).
        keys.sort_unstable();
        let mut total = Resource::new();
        let mut picked = Vec::new();
        for &(.., slot) in &keys {
            let res = &self.allocations.facts(slot).resource;
            // Past the amount with what is taken: skipped.
            if amount
                .iter()
                .all(|(t, p)| total.get(t).saturating_add(res.get(t)) <= p)
            {
                total.add_assign(res);
                picked.push(slot);
                let full = profiles
                    .least
                    .iter()
                    .any(|(t, m)| amount.get(*t).saturating_sub(total.get(*t)) < *m);
                if full {
                    break; // no candidate left fits what remains
                }
            }
        }
        (count, picked)
    }

    /// The slots of the victims in flight, for [`Self::quota_excluded`]:
    /// one look-up per victim rather than one per candidate.
    fn victim_slots(&self) -> FastSet<AllocSlot> {
        self.preempt
            .victims
            .keys()
            .filter_map(|uuid| self.allocations.slot_of(uuid))
            .collect()
    }

    /// Whether the allocation at `slot` (its slab entry's facts `a`) can be
    /// no candidate whatever the amount (5.5b): it is bound to its node, is
    /// a placeholder on its way out, or is a victim already (its slot in
    /// `in_flight`, from [`Self::victim_slots`]). Reads the record only for
    /// a placeholder's UUID.
    fn quota_excluded(
        &self,
        slot: AllocSlot,
        a: &VictimFacts,
        in_flight: &FastSet<AllocSlot>,
    ) -> bool {
        a.required_node
            || (a.placeholder
                && self
                    .gang
                    .placeholder_leaving(&self.allocations.at(slot).uuid))
            || (!in_flight.is_empty() && in_flight.contains(&slot))
    }

    /// Marks the victims of leaf `leaf`, records their events and releases
    /// them, one response per application (5.5e).
    fn quota_commit(
        &mut self,
        leaf: QueueId,
        path: &str,
        picked: Vec<AllocSlot>,
        out: &mut Outcomes,
    ) {
        if self.tracing() {
            self.trace_preemption(None, &picked, PreemptCause::Quota(path), out);
        }
        let event = format!("{QUOTA_EVENT_PREFIX}{path}");
        let message = format!("{QUOTA_RELEASE_PREFIX}{path}");
        let mut by_app: Vec<(Arc<str>, Vec<si::AllocationRelease>)> = Vec::new();
        for slot in picked {
            let app = self.allocations.at(slot).app().clone();
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

/// `big` ≥ `small` over the types of `big` (the reference's "greater or
/// equal, only existing"): with shared types, none above `big`; `small`
/// empty: every type of `big` positive; no shared type: true.
fn greater_or_equal_existing(big: &Resource, small: &Resource) -> bool {
    if big.is_empty() {
        return false;
    }
    if small.is_empty() {
        return big.iter().all(|(_, v)| v > 0);
    }
    big.iter()
        .all(|(t, v)| small.lookup(t).is_none_or(|s| s <= v))
}

/// A resource as the reference prints it (a Go map, keys sorted).
fn go_map(r: &Resource) -> String {
    let parts: Vec<String> = r
        .to_named()
        .iter()
        .map(|(k, v)| format!("{k}:{v}"))
        .collect();
    format!("map[{}]", parts.join(" "))
}

/// The `QUEUE_PREEMPTION` record of a run on `path` (delta 2.2): its max
/// at the start, and a summary of what it set out to take and took.
fn summary_record(path: &str, max: &Resource, amount: &Resource, t: &Tally, leaf: bool) -> Record {
    // The reference prints a leaf's empty claim as a nil resource, a
    // parent's as an empty map.
    let claimed = if leaf && t.taken == 0 {
        "nil resource".to_string()
    } else {
        go_map(&t.claimed)
    };
    let message = format!(
        "{QUOTA_SUMMARY_PREFIX}preemptable resources: {}, claimed resources: {claimed}, selected victims: {}, preempted victims: {}",
        go_map(amount),
        t.candidates,
        t.taken
    );
    events::structured(
        TYPE_QUEUE,
        path,
        "",
        Change::Set,
        Detail::QueuePreemption,
        Some(max.to_proto()),
        message,
    )
}

#[cfg(test)]
#[path = "quota_index_tests.rs"]
mod index_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn r(pairs: &[(&str, i64)]) -> Resource {
        Resource::from_pairs(pairs.iter().copied()).unwrap()
    }

    #[test]
    fn greater_or_equal_reads_only_the_types_of_the_bigger() {
        assert!(greater_or_equal_existing(
            &r(&[("vcore", 10)]),
            &r(&[("vcore", 10)])
        ));
        assert!(!greater_or_equal_existing(
            &r(&[("vcore", 10)]),
            &r(&[("vcore", 11)])
        ));
        assert!(greater_or_equal_existing(
            &r(&[("vcore", 10)]),
            &r(&[("memory", 11)])
        ));
        assert!(greater_or_equal_existing(
            &r(&[("vcore", 10)]),
            &Resource::new()
        ));
        assert!(!greater_or_equal_existing(
            &Resource::new(),
            &r(&[("memory", 5)])
        ));
    }

    #[test]
    fn resources_print_as_go_maps() {
        assert_eq!(
            go_map(&r(&[("vcore", 100), ("memory", 5)])),
            "map[memory:5 vcore:100]"
        );
        assert_eq!(go_map(&Resource::new()), "map[]");
    }
}
