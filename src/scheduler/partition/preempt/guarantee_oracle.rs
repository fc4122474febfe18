//! The guarantee-preemption decision as it was before the victim index
//! (issue 33 item 4): every potential victim walked in full. Kept as the
//! oracle the indexed decision is compared with (`guarantee_index_tests`).

#![allow(dead_code)]

use std::time::Instant;

use super::*;
use crate::scheduler::objects::allocs::AllocSlot;
use crate::scheduler::policies::{delay_of, PreemptionPolicy, PriorityPolicy};
use crate::scheduler::resync::ResyncBarrier;

/// Solution scores (spec 9.3): below this no last-resort victim is used.
const SCORE_SATISFACTORY: u64 = 1 << 32;
/// Score bit of a solution that preempts an originator.
const SCORE_ORIGINATOR: u64 = 1 << 33;
/// Score bit of a solution that preempts an `allowPreemptSelf: false`
/// allocation.
const SCORE_OPTED_OUT: u64 = 1 << 34;

/// Per-queue used resources (allocated − preempting) for what-if steps.
#[derive(Clone)]
struct Snap<'a> {
    tree: &'a QueueTree,
    used: FastMap<QueueId, Resource>,
    ask_queue: QueueId,
    /// The ask queue has a non-empty guarantee of its own (spec 4.2 rule 5).
    ask_guaranteed: bool,
}

fn has_types(r: Option<&Resource>) -> bool {
    r.is_some_and(|r| r.iter().next().is_some())
}

impl<'a> Snap<'a> {
    fn new(p: &'a Partition, ask_queue: QueueId) -> Self {
        Snap {
            tree: &p.queues,
            used: FastMap::default(),
            ask_queue,
            ask_guaranteed: has_types(p.queues.get(ask_queue).guaranteed.as_ref()),
        }
    }

    /// Seeds every queue on `leaf`'s path with its used resources.
    fn seed(&mut self, book: &PreemptionBook, leaf: QueueId) {
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

    fn apply(&mut self, leaf: QueueId, res: &Resource, add: bool) {
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
    fn remaining(&self, q: QueueId) -> Option<Resource> {
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
    fn ask_queue_within(&self, ask: &Resource) -> bool {
        self.remaining(self.ask_queue)
            .is_some_and(|r| ask.iter().all(|(t, _)| r.lookup(t).is_none_or(|v| v >= 0)))
    }

    /// A(v) (spec 4.4): removes `res` from `leaf` when accepted.
    fn accept_victim(&mut self, leaf: QueueId, res: &Resource, ask: &Resource) -> bool {
        let before = self.remaining(leaf);
        let accepted =
            before.is_none_or(|b| ask.iter().any(|(t, _)| b.lookup(t).is_some_and(|v| v < 0)));
        if accepted {
            self.apply(leaf, res, false);
        }
        accepted
    }

    /// Whether R(ask queue) is set and can absorb `res`.
    fn absorbs(&self, res: &Resource) -> Option<Resource> {
        let r = self.remaining(self.ask_queue)?;
        res.iter()
            .all(|(t, v)| r.lookup(t).is_none_or(|rv| v <= rv))
            .then_some(r)
    }
}

/// One potential victim.
#[derive(Clone)]
struct Victim {
    slot: AllocSlot,
    leaf: QueueId,
    node: Option<NodeSlot>,
    born: u64,
}

/// "covers" as spec 10.2 computes it.
fn covers(total: &Resource, ask: &Resource) -> bool {
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

/// Shortfall per type: max(ask − available, 0).
fn shortfall(ask: &Resource, available: &Resource) -> Resource {
    let mut r = Resource::new();
    for (t, v) in ask.iter() {
        r.set(t, v.saturating_sub(available.get(t)).max(0));
    }
    r
}

impl Partition {
    /// One attempt for `ask` of `app` (spec 3-10). `None` when preemption
    /// does not help; the search goes on with the next ask. Three steps:
    /// whether victims could help the ask's queue at all
    /// ([`Self::oracle_guarantee_search`]), the node and its victims, checked with
    /// the RM ([`Self::oracle_choose_node`]), and the final list with the extra
    /// victims for the queue's guarantee ([`Self::oracle_final_victims`]).
    pub(in crate::scheduler::partition) fn oracle_plan_preemption(
        &self,
        app: &Application,
        ask: &Ask,
        trigger: Trigger,
        cb: Option<&ResyncBarrier>,
        pass: &mut PassState,
        now: Instant,
    ) -> Option<PreemptionPlan> {
        if !self.oracle_may_attempt(app, ask, pass, now) {
            return None;
        }
        let victims = self.oracle_potential_victims(app, ask);
        let base = self.oracle_guarantee_search(app, ask, &victims, pass)?;
        let (node, node_victims) =
            self.oracle_choose_node(app, ask, trigger, &base, &victims, cb, pass, now)?;
        let last =
            self.oracle_final_victims(app.queue, ask, &base, &victims, node, node_victims, pass)?;
        Some(PreemptionPlan {
            app: app.id.clone(),
            key: ask.key.clone(),
            node,
            victims: last,
        })
    }

    /// The preconditions of an attempt (spec 3), in order; an attempt
    /// that passes them counts against its leaf's attempts of the pass.
    fn oracle_may_attempt(
        &self,
        app: &Application,
        ask: &Ask,
        pass: &mut PassState,
        now: Instant,
    ) -> bool {
        // Preconditions (spec 3), in order.
        if !ask.preempt_other || ask.required_node.is_some() {
            return false;
        }
        let id = (app.id.clone(), ask.key.clone());
        let mark = self.preempt.asks.get(&id).copied().unwrap_or_default();
        if mark.triggered {
            return false;
        }
        let leaf = self.queues.get(app.queue);
        if now.saturating_duration_since(ask.created) < delay_of(&leaf.properties) {
            return false;
        }
        if mark
            .checked
            .is_some_and(|c| now.saturating_duration_since(c) < ATTEMPT_SPACING)
        {
            return false;
        }
        let used = pass.preempt_attempts.entry(app.queue).or_insert(0);
        if *used >= ATTEMPTS_PER_LEAF {
            pass.preempt_counts.attempts_exhausted += 1;
            return false; // "Preemption max attempts exhausted"
        }
        *used += 1;
        pass.preempt_checked.push(id);
        true
    }

    /// Step 1 (spec 5): whether preemption can help the ask's queue at
    /// all. Returns the queues' used resources (allocated − preempting)
    /// the later steps start from.
    fn oracle_guarantee_search(
        &self,
        app: &Application,
        ask: &Ask,
        victims: &[Victim],
        pass: &mut PassState,
    ) -> Option<Snap<'_>> {
        let ask_q = app.queue;
        let mut base = Snap::new(self, ask_q);
        base.seed(&self.preempt, ask_q);
        for v in victims {
            base.seed(&self.preempt, v.leaf);
        }
        // Step 1 (spec 5): can preemption help the ask queue at all?
        let helps = match base.remaining(ask_q) {
            Some(r0)
                if ask
                    .resource
                    .iter()
                    .all(|(t, v)| r0.lookup(t).is_none_or(|rv| v <= rv)) =>
            {
                true
            }
            _ => {
                let mut s = base.clone();
                s.apply(ask_q, &ask.resource, true);
                victims.iter().any(|v| {
                    s.apply(v.leaf, &self.allocations.at(v.slot).resource, false);
                    s.ask_queue_within(&ask.resource)
                })
            }
        };
        if !helps || victims.is_empty() {
            pass.preempt_counts.guarantee_check_failed += 1;
            return None; // "Preemption queue guarantees check failed"
        }
        Some(base)
    }

    /// Steps 3-5 (spec 7-9): the candidate nodes, each one's ordered
    /// victims, and the RM's check; the chosen node and its victims.
    #[allow(clippy::too_many_arguments)]
    fn oracle_choose_node(
        &self,
        app: &Application,
        ask: &Ask,
        trigger: Trigger,
        base: &Snap<'_>,
        victims: &[Victim],
        cb: Option<&ResyncBarrier>,
        pass: &mut PassState,
        now: Instant,
    ) -> Option<(NodeSlot, Vec<Victim>)> {
        // Step 3 (spec 7): candidate nodes and their ordered victims.
        let me = ReservedAsk {
            app: app.id.clone(),
            key: ask.key.clone(),
        };
        let mut by_node: FastMap<NodeSlot, Vec<Victim>> = FastMap::default();
        for v in victims {
            if let Some(n) = v.node {
                by_node.entry(n).or_default().push(v.clone());
            }
        }
        // Steps 4 and 5 (spec 8, 9): one victim list per usable node, and
        // the RM asked in check order (start index, then node id); the
        // first success scoring below 2^32 wins, else the lowest score
        // (ties: check order). Nodes go in id order and a list whose start
        // index is the lowest possible (-1 for T1, 0 for T2) is checked at
        // once, since nothing unseen can come before it: the RM hears the
        // same checks in the same order, and the lists of the nodes after
        // a winner are never built.
        let mut stale = Vec::new();
        let mut nodes: Vec<&Node> = self
            .nodes
            .values()
            .filter(|n| {
                // 7.1: every node is walked; a stale lower-priority
                // reservation is cancelled (required.rs) whatever
                // becomes of this attempt, and its node then counts as free
                // of other reservations. The exclusions come after.
                let held = self
                    .reservations
                    .on_node(n.key().slot())
                    .filter(|r| **r != me);
                let free = match held {
                    None => true,
                    Some(r) => {
                        let cancel = self.stale_for_preemptor(n.key().slot(), r, ask, now);
                        if cancel {
                            stale.push((n.key().slot(), r.clone()));
                        }
                        cancel
                    }
                };
                free && n.schedulable && ask.resource.fits_in(n.capacity())
            })
            .collect();
        pass.preempt_stale.extend(stale);
        nodes.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        // -1 (no victim needed) only for T1, and only if some node has room.
        let floor = if trigger == Trigger::QueueBound
            && nodes.iter().any(|n| ask.resource.fits_in(n.available()))
        {
            -1
        } else {
            0
        };
        let mut later: Vec<(i64, NodeSlot, Vec<Victim>)> = Vec::new();
        let mut chosen: Option<(u64, NodeSlot, Vec<Victim>)> = None;
        let mut asked = false;
        let mut done = false;
        for n in nodes {
            let slot = n.key().slot();
            let mut list = by_node.remove(&slot).unwrap_or_default();
            // Spec 7.2: opted in first, then non-originators, newest first.
            list.sort_by_key(|v| {
                let a = self.allocations.at(v.slot);
                (!a.preempt_self, a.originator, std::cmp::Reverse(v.born))
            });
            let Some((index, list)) = self.oracle_victims_for_node(base, ask, n.available(), list)
            else {
                continue;
            };
            if index < 0 && trigger == Trigger::NodeBound {
                continue; // already tried by the ordinary walk
            }
            if index > floor {
                later.push((index, slot, list));
                continue;
            }
            asked = true;
            if self.oracle_check_node(app, ask, slot, index, list, cb, pass, &mut chosen) {
                done = true;
                break;
            }
        }
        if !done {
            // Node ids are unique: the order is total.
            later.sort_by(|a, b| {
                a.0.cmp(&b.0)
                    .then_with(|| self.nodes[a.1].id.cmp(&self.nodes[b.1].id))
            });
            for (index, slot, list) in later {
                asked = true;
                if self.oracle_check_node(app, ask, slot, index, list, cb, pass, &mut chosen) {
                    break;
                }
            }
        }
        let Some((_, node, node_victims)) = chosen else {
            // "Preemption does not help"
            if asked {
                pass.preempt_counts.rm_refused += 1;
            } else {
                pass.preempt_counts.no_candidate_node += 1;
            }
            return None;
        };
        Some((node, node_victims))
    }

    /// Step 6 (spec 10.1-10.2): extra victims elsewhere for the queue's
    /// guarantee, then the final list that covers the ask.
    #[allow(clippy::too_many_arguments)]
    fn oracle_final_victims(
        &self,
        ask_q: QueueId,
        ask: &Ask,
        base: &Snap<'_>,
        victims: &[Victim],
        node: NodeSlot,
        node_victims: Vec<Victim>,
        pass: &mut PassState,
    ) -> Option<Vec<AllocSlot>> {
        // Step 6 (spec 10.1): extra victims for the queue's guarantee.
        let mut s = base.clone();
        for v in &node_victims {
            s.apply(v.leaf, &self.allocations.at(v.slot).resource, false);
        }
        let taken: FastSet<AllocSlot> = node_victims.iter().map(|v| v.slot).collect();
        let mut others: Vec<&Victim> = victims
            .iter()
            .filter(|v| !taken.contains(&v.slot))
            .collect();
        // Spec 10.1: none < originator < opted out (combined), newest first.
        others.sort_by_key(|v| {
            let a = self.allocations.at(v.slot);
            let flags = u8::from(a.originator) | u8::from(!a.preempt_self) << 1;
            (flags, std::cmp::Reverse(v.born))
        });
        let mut extra = Vec::new();
        for v in others {
            let res = &self.allocations.at(v.slot).resource;
            if !s.accept_victim(v.leaf, res, &ask.resource) {
                continue;
            }
            match s.absorbs(res) {
                Some(before) => {
                    s.apply(ask_q, res, true);
                    if s.remaining(ask_q).as_ref() != Some(&before) {
                        extra.push(v.clone());
                    } else {
                        s.apply(ask_q, res, false);
                        s.apply(v.leaf, res, true);
                    }
                }
                None => {
                    s.apply(v.leaf, res, true);
                    break;
                }
            }
        }
        if !extra.is_empty() && !s.ask_queue_within(&ask.resource) {
            pass.preempt_counts.short_of_resources += 1;
            return None;
        }
        // Final list (spec 10.2).
        let fits = ask.resource.fits_in(self.nodes[node].available());
        let mut total = Resource::new();
        let mut last = Vec::new();
        for v in node_victims.into_iter().chain(extra) {
            if !fits && v.node != Some(node) {
                continue;
            }
            if !covers(&total, &ask.resource) {
                total.add_assign(&self.allocations.at(v.slot).resource);
                last.push(v.slot);
            }
        }
        if last.is_empty() || !covers(&total, &ask.resource) {
            pass.preempt_counts.short_of_resources += 1;
            return None; // "Preemption helped but short of resources"
        }
        Some(last)
    }

    /// Asks the RM about one node (spec 9.2) and scores a success (9.3,
    /// scoring the list sent: quirk Q7's recommendation); keeps it in
    /// `chosen` when it beats what is there. Returns whether it wins
    /// outright (a score below 2^32).
    #[allow(clippy::too_many_arguments)]
    fn oracle_check_node(
        &self,
        app: &Application,
        ask: &Ask,
        slot: NodeSlot,
        index: i64,
        list: Vec<Victim>,
        cb: Option<&ResyncBarrier>,
        pass: &mut PassState,
        chosen: &mut Option<(u64, NodeSlot, Vec<Victim>)>,
    ) -> bool {
        let node = &self.nodes[slot];
        let answer = if list.is_empty() {
            self.try_node(&app.id, ask, node, cb, true, &mut pass.events)
                .then_some(-1)
        } else {
            self.oracle_preemption_check(&app.id, ask, node, &list, index, cb, &mut pass.events)
        };
        // An index beyond the list is unfit (spec 9.3).
        let keep = match answer {
            Some(i) if i < 0 => 0,
            Some(i) if (i as usize) < list.len() => i as usize + 1,
            _ => return false,
        };
        let score = list[..keep].iter().fold(keep as u64, |acc, v| {
            let a = self.allocations.at(v.slot);
            acc | if a.originator { SCORE_ORIGINATOR } else { 0 }
                | if a.preempt_self { 0 } else { SCORE_OPTED_OUT }
        });
        if chosen.as_ref().is_some_and(|(best, _, _)| score >= *best) {
            return false;
        }
        *chosen = Some((score, slot, list.into_iter().take(keep).collect()));
        score < SCORE_SATISFACTORY
    }

    /// The RM's check of one node with victims (spec 9.2, 14.2): the v1.8
    /// edition's `PreemptionPredicates` when the RM has it, else
    /// `Predicates{allocate: false}` with the core's own start index.
    /// Returns the index of the last victim needed.
    #[allow(clippy::too_many_arguments)]
    fn oracle_preemption_check(
        &self,
        app: &str,
        ask: &Ask,
        node: &Node,
        list: &[Victim],
        index: i64,
        cb: Option<&ResyncBarrier>,
        events: &mut Vec<si::EventRecord>,
    ) -> Option<i64> {
        let Some(b) = cb else {
            return Some(index); // no RM check: the first check succeeds
        };
        let keys: Vec<String> = list
            .iter()
            .map(|v| self.allocations.at(v.slot).uuid.to_string())
            .collect();
        match b.preemption_predicates(&ask.key, &node.id, &keys, index as i32) {
            Some(answer) => answer.map(i64::from),
            None => self
                .try_node(app, ask, node, cb, false, events)
                .then_some(index),
        }
    }

    /// Spec 8: the victims of one node and the index of the last one the
    /// ask needs; (−1, []) when the node needs none; `None`: unusable.
    fn oracle_victims_for_node(
        &self,
        base: &Snap<'_>,
        ask: &Ask,
        available: &Resource,
        list: Vec<Victim>,
    ) -> Option<(i64, Vec<Victim>)> {
        if ask.resource.fits_in(available) {
            return Some((-1, Vec::new()));
        }
        if list.is_empty() {
            return None; // no copy of the snapshot for a node without victims
        }
        let mut s = base.clone();
        let mut n = available.clone();
        let (mut head, mut tail) = (Vec::new(), Vec::new());
        for v in list {
            let res = &self.allocations.at(v.slot).resource;
            if !s.accept_victim(v.leaf, res, &ask.resource) {
                continue;
            }
            if s.absorbs(res).is_some() {
                s.apply(s.ask_queue, res, true);
            } else {
                s.apply(v.leaf, res, true);
                break;
            }
            let before = shortfall(&ask.resource, &n);
            let after = shortfall(&ask.resource, &n.add(res));
            if before == after {
                s.apply(s.ask_queue, res, false);
                s.apply(v.leaf, res, true);
                tail.push(v);
            } else {
                n.add_assign(res);
                head.push(v);
            }
        }
        head.append(&mut tail);
        if head.is_empty() {
            return None;
        }
        let mut s = base.clone();
        let mut n = available.clone();
        let mut result = Vec::new();
        let mut index = None;
        for v in head {
            let res = &self.allocations.at(v.slot).resource;
            if s.accept_victim(v.leaf, res, &ask.resource) {
                n.add_assign(res);
                result.push(v);
                if index.is_none() && ask.resource.fits_in(&n) {
                    index = Some(result.len() as i64 - 1);
                }
            }
        }
        index.map(|i| (i, result))
    }

    /// Spec 6: the fence root and the eligible allocations below it.
    fn oracle_potential_victims(&self, app: &Application, ask: &Ask) -> Vec<Victim> {
        // 6.1: walk up, recording the ask's priority in each queue's frame.
        let mut path: Vec<(QueueId, i64)> = Vec::new();
        let mut value = i64::from(ask.priority);
        let mut at = app.queue;
        let root = loop {
            let q = self.queues.get(at);
            path.push((at, value));
            let fence = PreemptionPolicy::of(&q.properties) == PreemptionPolicy::Fence
                && !self.inherited_policy(at);
            // YuniKorn v1.9 (delta 6.1): a max the ask would push the
            // queue past fences it; reaching the max exactly does not.
            let overflows = q.max.as_ref().is_some_and(|m| {
                m.iter().any(|(t, v)| {
                    let sum = q
                        .allocated
                        .lookup(t)
                        .into_iter()
                        .chain(ask.resource.lookup(t));
                    sum.reduce(i64::saturating_add).is_some_and(|s| s > v)
                })
            });
            if q.parent.is_none() || fence || overflows {
                break at;
            }
            value = match q.priority.policy {
                PriorityPolicy::Fence => i64::from(q.priority.offset),
                PriorityPolicy::Default => value + i64::from(q.priority.offset),
            };
            at = q.parent.expect("checked above");
        };
        let recorded = |q: QueueId| path.iter().find(|(id, _)| *id == q).map(|(_, v)| *v);
        let mut out = Vec::new();
        let root_value = recorded(root).unwrap_or(value);
        let mut stack = vec![(root, root_value, false)];
        let gang = &self.gang;
        while let Some((q, value, fenced)) = stack.pop() {
            let queue = self.queues.get(q);
            if !queue.leaf {
                for child in queue.children.values() {
                    let c = self.queues.get(*child);
                    if let Some(v) = recorded(*child) {
                        stack.push((*child, v, fenced));
                    } else if c.priority.policy == PriorityPolicy::Fence {
                        if i64::from(c.priority.offset) <= value {
                            stack.push((*child, value, true));
                        }
                    } else {
                        stack.push((*child, value - i64::from(c.priority.offset), fenced));
                    }
                }
                continue;
            }
            // 6.3: leaves.
            if q == app.queue
                || PreemptionPolicy::of(&queue.properties) == PreemptionPolicy::Disabled
            {
                continue;
            }
            let mut s = Snap::new(self, app.queue);
            s.seed(&self.preempt, q);
            if s.remaining(q)
                .is_some_and(|r| r.iter().all(|(_, v)| v >= 0))
            {
                continue; // within guarantee
            }
            for a_slot in queue.apps.values() {
                let Some(victim_app) = self.apps.at(*a_slot) else {
                    continue;
                };
                for slot in victim_app.allocations.slots() {
                    let a = self.allocations.at(slot);
                    if !a.resource.shares_positive_type(&ask.resource)
                        || a.tags
                            .contains_key(crate::scheduler::objects::application::TAG_REQUIRED_NODE)
                        || (a.placeholder && gang.placeholder_leaving(&a.uuid))
                        || self.preempt.is_victim(&a.uuid)
                        || !(fenced || i64::from(a.priority) <= value)
                    {
                        continue;
                    }
                    out.push(Victim {
                        slot,
                        leaf: q,
                        node: self.nodes.slot_of(&a.node),
                        born: self.allocations.born(slot),
                    });
                }
            }
        }
        out
    }
}
