//! The what-if state of a guarantee-preemption decision: each queue's
//! used resources (allocated − preempting) as victims are taken away and
//! the preemptor added, and the remaining guarantee R of spec 4.2.

use super::*;
use smallvec::SmallVec;

use crate::scheduler::objects::allocs::AllocSlot;
use crate::scheduler::resource::ResId;

/// Per-queue used resources (allocated − preempting) for what-if steps.
#[derive(Clone)]
pub(super) struct Snap<'a> {
    pub(super) tree: &'a QueueTree,
    pub(super) used: FastMap<QueueId, Resource>,
    pub(super) ask_queue: QueueId,
    /// The ask queue has a non-empty guarantee of its own (spec 4.2 rule 5).
    pub(super) ask_guaranteed: bool,
}

pub(super) fn has_types(r: Option<&Resource>) -> bool {
    r.is_some_and(|r| r.iter().next().is_some())
}

impl<'a> Snap<'a> {
    pub(super) fn new(p: &'a Partition, ask_queue: QueueId) -> Self {
        Snap {
            tree: &p.queues,
            used: FastMap::default(),
            ask_queue,
            ask_guaranteed: has_types(p.queues.get(ask_queue).guaranteed.as_ref()),
        }
    }

    /// Seeds every queue on `leaf`'s path with its used resources.
    pub(super) fn seed(&mut self, book: &PreemptionBook, leaf: QueueId) {
        let mut at = Some(leaf);
        while let Some(id) = at {
            if self.used.contains_key(&id) {
                break;
            }
            let q = self.tree.get(id);
            let mut used = q.allocated.clone();
            if let Some(p) = book.preempting.get(&id) {
                used.sub_assign(p);
            }
            self.used.insert(id, used);
            at = q.parent;
        }
    }

    pub(super) fn apply(&mut self, leaf: QueueId, res: &Resource, add: bool) {
        let mut at = Some(leaf);
        while let Some(id) = at {
            if let Some(u) = self.used.get_mut(&id) {
                if add {
                    u.add_assign(res);
                } else {
                    u.sub_assign(res);
                }
            }
            at = self.tree.get(id).parent;
        }
    }

    /// Remaining guarantee R(q) (spec 4.2); `None` = unset.
    pub(super) fn remaining(&self, q: QueueId) -> Option<Resource> {
        let queue = self.tree.get(q);
        let parent = queue.parent.and_then(|p| self.remaining(p));
        let guaranteed = queue.guaranteed.as_ref().filter(|g| has_types(Some(g)));
        if guaranteed.is_none() && !has_types(parent.as_ref()) {
            return None;
        }
        let own = guaranteed.map(|g| {
            let used = self.used.get(&q);
            let mut r = Resource::new();
            for (t, v) in g.iter() {
                r.set(t, v.saturating_sub(used.map_or(0, |u| u.get(t))));
            }
            r
        });
        if q == self.ask_queue {
            if let Some(mut own) = own {
                if let Some(p) = &parent {
                    for (t, v) in p.iter() {
                        if own.lookup(t).is_none() {
                            own.set(t, v);
                        }
                    }
                }
                return Some(own);
            }
        }
        // Ancestry by tree links, not by path prefix (quirk Q6).
        if own.is_some()
            && self.ask_guaranteed
            && q != self.ask_queue
            && self.tree.is_ancestor_or_self(q, self.ask_queue)
        {
            return None;
        }
        match (own, parent) {
            (None, None) => None,
            (Some(o), None) => Some(o),
            (None, Some(p)) => Some(p),
            (Some(mut o), Some(p)) => {
                for (t, v) in p.iter() {
                    match o.lookup(t) {
                        Some(ov) => o.set(t, ov.min(v)),
                        None => o.set(t, v),
                    }
                }
                Some(o)
            }
        }
    }

    /// U (spec 4.5): the ask queue is within its guarantee for the ask's types.
    pub(super) fn ask_queue_within(&self, ask: &Resource) -> bool {
        self.remaining(self.ask_queue)
            .is_some_and(|r| ask.iter().all(|(t, _)| r.lookup(t).is_none_or(|v| v >= 0)))
    }

    /// A(v) (spec 4.4): removes `res` from `leaf` when accepted.
    pub(super) fn accept_victim(&mut self, leaf: QueueId, res: &Resource, ask: &Resource) -> bool {
        let before = self.remaining(leaf);
        let accepted =
            before.is_none_or(|b| ask.iter().any(|(t, _)| b.lookup(t).is_some_and(|v| v < 0)));
        if accepted {
            self.apply(leaf, res, false);
        }
        accepted
    }

    /// Whether R(ask queue) is set and can absorb `res`.
    pub(super) fn absorbs(&self, res: &Resource) -> Option<Resource> {
        let r = self.remaining(self.ask_queue)?;
        res.iter()
            .all(|(t, v)| r.lookup(t).is_none_or(|rv| v <= rv))
            .then_some(r)
    }
}

/// One potential victim.
#[derive(Clone, Copy)]
pub(super) struct Victim {
    pub(super) slot: AllocSlot,
    pub(super) leaf: QueueId,
    pub(super) born: u64,
    /// Its class in the victim orders (spec 7.2, 10.1): 1 originator,
    /// 2 opted out of being preempted, 3 both, 0 neither; lower first.
    pub(super) class: u8,
}

/// The potential victims by allocation slot, so that a node's victims are
/// read from the node's own allocations, and only for the nodes a decision
/// looks at.
pub(super) struct VictimIndex {
    /// Per allocation slot: the victim's position + 1, 0 for none.
    at: Vec<u32>,
}

impl VictimIndex {
    pub(super) fn new(victims: &[Victim]) -> Self {
        let len = victims
            .iter()
            .map(|v| v.slot as usize + 1)
            .max()
            .unwrap_or(0);
        let mut at = vec![0u32; len];
        for (i, v) in victims.iter().enumerate() {
            at[v.slot as usize] = i as u32 + 1;
        }
        VictimIndex { at }
    }

    /// The position in `victims` of the victim at `slot`, if it is one.
    pub(super) fn position(&self, slot: AllocSlot) -> Option<usize> {
        let i = self.at.get(slot as usize).copied().unwrap_or(0);
        (i > 0).then(|| (i - 1) as usize)
    }

    /// The victims on `node`, each with its position in `victims`.
    pub(super) fn on_node(&self, victims: &[Victim], node: &Node) -> Vec<(u32, Victim)> {
        node.allocations
            .slots()
            .filter_map(|slot| {
                let i = self.at.get(slot as usize).copied().unwrap_or(0);
                (i > 0).then(|| (i - 1, victims[(i - 1) as usize]))
            })
            .collect()
    }
}

/// Leaves that refused a victim (spec 4.4: their R is at or above zero in
/// the ask's types), remembered until R can have changed. R of a leaf
/// reads the used resources of the queues with a guarantee on its path
/// only, so a count of changes per such queue tells when to look again.
#[derive(Default)]
pub(super) struct Refusals {
    /// Changes of used resources per queue with a guarantee.
    changes: FastMap<QueueId, u64>,
    /// Per leaf: the sum of the changes on its path when it refused.
    refused: FastMap<QueueId, u64>,
}

impl Refusals {
    /// The changes on `leaf`'s path so far (they only grow: an equal sum
    /// means none).
    fn stamp(&self, tree: &QueueTree, leaf: QueueId) -> u64 {
        if self.changes.is_empty() {
            return 0;
        }
        let mut sum = 0u64;
        let mut at = Some(leaf);
        while let Some(q) = at {
            sum = sum.wrapping_add(self.changes.get(&q).copied().unwrap_or(0));
            at = tree.get(q).parent;
        }
        sum
    }

    /// Whether `leaf` refused a victim and nothing it reads changed since.
    pub(super) fn refused(&self, s: &Snap<'_>, leaf: QueueId) -> bool {
        self.refused
            .get(&leaf)
            .is_some_and(|at| *at == self.stamp(s.tree, leaf))
    }

    /// `leaf` refused a victim.
    pub(super) fn note(&mut self, s: &Snap<'_>, leaf: QueueId) {
        let at = self.stamp(s.tree, leaf);
        self.refused.insert(leaf, at);
    }

    /// A victim of `leaf` moved to the ask queue: the used resources of
    /// the queues on one path and not the other changed.
    pub(super) fn moved(&mut self, s: &Snap<'_>, leaf: QueueId) {
        for (from, other) in [(leaf, s.ask_queue), (s.ask_queue, leaf)] {
            let mut at = Some(from);
            while let Some(q) = at {
                let queue = s.tree.get(q);
                if has_types(queue.guaranteed.as_ref()) && !s.tree.is_ancestor_or_self(q, other) {
                    *self.changes.entry(q).or_default() += 1;
                }
                at = queue.parent;
            }
        }
    }
}

/// "covers" as spec 10.2 computes it.
pub(super) fn covers(total: &Resource, ask: &Resource) -> bool {
    let mut shared = false;
    let mut all_equal = true;
    for (t, want) in ask.iter() {
        let Some(have) = total.lookup(t) else {
            continue;
        };
        shared = true;
        if have > want {
            return true;
        }
        if have != want {
            all_equal = false;
        }
    }
    shared && all_equal
}

/// When the extra-victim walk of spec 10.1 may stop early without changing
/// the decision. Its outcome is the extra victims the final list (10.2)
/// takes, which stop mattering once the list covers the ask, and whether
/// the ask queue ends within its guarantee (U). Each extra victim moves
/// its resource from its leaf to the ask queue, and the queue absorbed it:
/// R(ask queue) falls by exactly the victim's resource, and ends at or above
/// zero, in the victim's types, and no other type changes. So U at the end
/// is known as soon as every ask type in which R was below zero at the
/// start has come up in an extra victim (true), or from the start when R
/// is unset (false: then any extra victim fails the decision).
pub(super) struct EarlyEnd {
    /// R unset: U is false whatever comes.
    unset: bool,
    /// Ask types in which R was below zero and no extra victim came yet.
    open: SmallVec<[ResId; 4]>,
    /// What the final list would hold so far, and the ask.
    total: Resource,
    ask: Resource,
}

impl EarlyEnd {
    /// At the start of the walk, from state `s` and the node victims that
    /// the final list counts.
    pub(super) fn new<'r>(
        s: &Snap<'_>,
        ask: &Ask,
        node_victims: impl Iterator<Item = &'r Resource>,
    ) -> Self {
        let r = s.remaining(s.ask_queue);
        let open = r.as_ref().map_or_else(SmallVec::new, |r| {
            ask.resource
                .iter()
                .filter(|(t, _)| r.lookup(*t).is_some_and(|v| v < 0))
                .map(|(t, _)| t)
                .collect()
        });
        let mut total = Resource::new();
        for res in node_victims {
            if !covers(&total, &ask.resource) {
                total.add_assign(res);
            }
        }
        EarlyEnd {
            unset: r.is_none(),
            open,
            total,
            ask: ask.resource.clone(),
        }
    }

    /// An extra victim of `res` was taken (`counted`: the final list would
    /// take it if it does not cover the ask yet). Whether the walk can stop.
    pub(super) fn extra(&mut self, res: &Resource, counted: bool) -> bool {
        if self.unset {
            return true;
        }
        self.open.retain(|t| res.lookup(*t).is_none());
        if counted && !covers(&self.total, &self.ask) {
            self.total.add_assign(res);
        }
        self.open.is_empty() && covers(&self.total, &self.ask)
    }
}
