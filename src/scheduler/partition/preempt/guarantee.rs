//! Guarantee preemption (`shared/spec/policy/preemption.md` 2-11): a
//! request waiting in a queue below its guaranteed resource takes
//! resources back from leaves above theirs.
//!
//! The search half ([`Partition::plan_preemption`]) reads the partition
//! and asks the RM through the ReSync barrier, like the rest of the pass;
//! the commit half ([`Partition::commit_preemption`]) marks the victims,
//! releases them to the RM with `PREEMPTED_BY_SCHEDULER` and reserves the
//! chosen node for the preemptor. A commit lands before the next decision
//! of the same pass, so a later attempt sees the victims in flight (their
//! queues' `preempting`) and the new reservation.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

use super::*;
use crate::scheduler::objects::allocs::AllocSlot;
use crate::scheduler::policies::{
    delay_of, PreemptionPolicy, PriorityPolicy, PROP_PREEMPTION_POLICY,
};
use crate::scheduler::resync::ResyncBarrier;

use super::snap::{covers, has_types, EarlyEnd, Refusals, Snap, Victim, VictimIndex};

/// Solution scores (spec 9.3): below this no last-resort victim is used.
const SCORE_SATISFACTORY: u64 = 1 << 32;
/// Score bit of a solution that preempts an originator.
const SCORE_ORIGINATOR: u64 = 1 << 33;
/// Score bit of a solution that preempts an `allowPreemptSelf: false`
/// allocation.
const SCORE_OPTED_OUT: u64 = 1 << 34;

/// Shortfall per type: max(ask − available, 0).
fn shortfall(ask: &Resource, available: &Resource) -> Resource {
    let mut r = Resource::new();
    for (t, v) in ask.iter() {
        r.set(t, v.saturating_sub(available.get(t)).max(0));
    }
    r
}

/// Spec 10.1's order of the extra victims as one integer: the class
/// first, then newest first (`born` inverted), then the victim's position,
/// which makes every key distinct and gives the position back.
fn heap_key(class: u8, born: u64, position: u32) -> u128 {
    (u128::from(class) << 96) | (u128::from(u64::MAX - born) << 32) | u128::from(position)
}

/// The victim's position in a [`heap_key`].
fn heap_position(key: u128) -> usize {
    (key & u128::from(u32::MAX)) as usize
}

impl Partition {
    /// Whether guarantee preemption runs in this partition (spec 1.1; an
    /// absent key is off in the v0.12 edition, on in the v1.8 edition).
    pub fn preemption_on(&self) -> bool {
        self.preempt
            .configured
            .unwrap_or(self.edition == crate::scheduler::edition::Edition::V1)
    }

    /// Whether leaf `q` or an ancestor has a guarantee: without one, R is
    /// always unset and no attempt can help (spec 5). One walk per leaf
    /// per pass, cached in the pass.
    pub(in crate::scheduler::partition) fn preemption_possible(
        &self,
        q: QueueId,
        pass: &mut PassState,
    ) -> bool {
        if let Some(v) = pass.preempt_leaf.get(&q) {
            return *v;
        }
        let mut at = Some(q);
        let mut found = false;
        while let Some(id) = at {
            let queue = self.queues.get(id);
            if has_types(queue.guaranteed.as_ref()) {
                found = true;
                break;
            }
            at = queue.parent;
        }
        pass.preempt_leaf.insert(q, found);
        found
    }

    /// One attempt for `ask` of `app` (spec 3-10). `None` when preemption
    /// does not help; the search goes on with the next ask. Three steps:
    /// whether victims could help the ask's queue at all
    /// ([`Self::guarantee_search`]), the node and its victims, checked with
    /// the RM ([`Self::choose_node`]), and the final list with the extra
    /// victims for the queue's guarantee ([`Self::final_victims`]).
    pub(in crate::scheduler::partition) fn plan_preemption(
        &self,
        app: &Application,
        ask: &Ask,
        trigger: Trigger,
        cb: Option<&ResyncBarrier>,
        pass: &mut PassState,
        now: Instant,
    ) -> Option<PreemptionPlan> {
        if !self.may_attempt(app, ask, pass, now) {
            return None;
        }
        let victims = self.potential_victims(app, ask);
        let base = self.guarantee_search(app, ask, &victims, pass)?;
        // Victims by allocation slot: a node's list is read from the node's
        // own allocations, only for the nodes looked at.
        let by_slot = VictimIndex::new(&victims);
        let (node, node_victims) =
            self.choose_node(app, ask, trigger, &base, &victims, &by_slot, cb, pass, now)?;
        let last = self.final_victims(
            app.queue,
            ask,
            &base,
            &victims,
            &by_slot,
            node,
            node_victims,
            pass,
        )?;
        Some(PreemptionPlan {
            app: app.id.clone(),
            key: ask.key.clone(),
            node,
            victims: last,
        })
    }

    /// Whether an attempt for `ask` would pass its preconditions (spec 3)
    /// now, its leaf's attempts of the pass included; changes nothing.
    pub(in crate::scheduler::partition) fn attempt_due(
        &self,
        app: &Application,
        ask: &Ask,
        pass: &PassState,
        now: Instant,
    ) -> bool {
        self.preconditions(app, ask, &(app.id.clone(), ask.key.clone()), now)
            && pass
                .preempt_attempts
                .get(&app.queue)
                .is_none_or(|used| *used < ATTEMPTS_PER_LEAF)
    }

    /// Spec 3's preconditions, in order, but the leaf's attempts.
    fn preconditions(
        &self,
        app: &Application,
        ask: &Ask,
        id: &(Arc<str>, Arc<str>),
        now: Instant,
    ) -> bool {
        if !ask.preempt_other || ask.required_node.is_some() {
            return false;
        }
        let mark = self.preempt.asks.get(id).copied().unwrap_or_default();
        if mark.triggered {
            return false;
        }
        let leaf = self.queues.get(app.queue);
        if now.saturating_duration_since(ask.created) < delay_of(&leaf.properties) {
            return false;
        }
        mark.checked
            .is_none_or(|c| now.saturating_duration_since(c) >= ATTEMPT_SPACING)
    }

    /// The preconditions of an attempt (spec 3), in order; an attempt
    /// that passes them counts against its leaf's attempts of the pass.
    fn may_attempt(
        &self,
        app: &Application,
        ask: &Ask,
        pass: &mut PassState,
        now: Instant,
    ) -> bool {
        let id = (app.id.clone(), ask.key.clone());
        if !self.preconditions(app, ask, &id, now) {
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
    fn guarantee_search(
        &self,
        app: &Application,
        ask: &Ask,
        victims: &[Victim],
        pass: &mut PassState,
    ) -> Option<Snap<'_>> {
        let ask_q = app.queue;
        let mut base = Snap::new(self, ask_q);
        base.seed(&self.preempt, ask_q);
        // The victims come leaf by leaf: one seed per leaf.
        let mut last = None;
        for v in victims {
            if last != Some(v.leaf) {
                base.seed(&self.preempt, v.leaf);
                last = Some(v.leaf);
            }
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
    fn choose_node(
        &self,
        app: &Application,
        ask: &Ask,
        trigger: Trigger,
        base: &Snap<'_>,
        victims: &[Victim],
        by_slot: &VictimIndex,
        cb: Option<&ResyncBarrier>,
        pass: &mut PassState,
        now: Instant,
    ) -> Option<(NodeSlot, Vec<Victim>)> {
        // Step 3 (spec 7): candidate nodes and their ordered victims.
        let me = ReservedAsk {
            app: app.id.clone(),
            key: ask.key.clone(),
        };
        // Steps 4 and 5 (spec 8, 9): one victim list per usable node, and
        // the RM asked in check order (start index, then node id); the
        // first success scoring below 2^32 wins, else the lowest score
        // (ties: check order). Nodes go in id order and a list whose start
        // index is the lowest possible (-1 for T1, 0 for T2) is checked at
        // once, since nothing unseen can come before it: the RM hears the
        // same checks in the same order, and the lists of the nodes after
        // a winner are never built.
        let mut stale = Vec::new();
        let nodes: Vec<&Node> = self
            .nodes
            .by_id_order()
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
        // Found in slot order, as a walk of the node table finds them.
        stale.sort_by_key(|(slot, _)| *slot);
        pass.preempt_stale.extend(stale);
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
            let mut list: Vec<Victim> = by_slot
                .on_node(victims, n)
                .into_iter()
                .map(|(_, v)| v)
                .collect();
            // Spec 7.2: opted in first, then non-originators, newest first
            // (`born` is unique, so the order is total).
            list.sort_unstable_by_key(|v| (v.class, std::cmp::Reverse(v.born)));
            let Some((index, list)) = self.victims_for_node(base, ask, n.available(), list) else {
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
            if self.check_node(app, ask, slot, index, list, cb, pass, &mut chosen) {
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
                if self.check_node(app, ask, slot, index, list, cb, pass, &mut chosen) {
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
    fn final_victims(
        &self,
        ask_q: QueueId,
        ask: &Ask,
        base: &Snap<'_>,
        victims: &[Victim],
        by_slot: &VictimIndex,
        node: NodeSlot,
        node_victims: Vec<Victim>,
        pass: &mut PassState,
    ) -> Option<Vec<AllocSlot>> {
        // Step 6 (spec 10.1): extra victims for the queue's guarantee.
        let mut s = base.clone();
        for v in &node_victims {
            s.apply(v.leaf, &self.allocations.at(v.slot).resource, false);
        }
        let mut taken = vec![false; victims.len()];
        for v in &node_victims {
            if let Some(i) = by_slot.position(v.slot) {
                taken[i] = true;
            }
        }
        // Spec 10.1: none < originator < opted out (combined), newest first
        // (`born` is unique). A heap: the walk mostly stops after a few
        // (below), and the classes came with the victims, so building it
        // reads no allocation.
        // Sized up front: a filtered collect would grow it by copies. The
        // order is packed in one integer (class, then `born` inverted,
        // then the position), which heapifies in fewer instructions than
        // the tuple did.
        let mut order = Vec::with_capacity(victims.len());
        order.extend(
            victims
                .iter()
                .enumerate()
                .filter(|(i, _)| !taken[*i])
                .map(|(i, v)| Reverse(heap_key(v.class, v.born, i as u32))),
        );
        let mut others: BinaryHeap<Reverse<u128>> = BinaryHeap::from(order);
        let fits = ask.resource.fits_in(self.nodes[node].available());
        let node_id = &self.nodes[node].id;
        let counted = |v: &Victim| fits || self.allocations.at(v.slot).node == *node_id;
        let mut early = EarlyEnd::new(
            &s,
            ask,
            node_victims
                .iter()
                .filter(|v| counted(v))
                .map(|v| &self.allocations.at(v.slot).resource),
        );
        // A leaf that refused a victim refuses the next ones until its
        // remaining guarantee can have changed.
        let mut refusals = Refusals::default();
        let mut extra = Vec::new();
        while let Some(Reverse(key)) = others.pop() {
            let v = &victims[heap_position(key)];
            if refusals.refused(&s, v.leaf) {
                continue;
            }
            let res = &self.allocations.at(v.slot).resource;
            if !s.accept_victim(v.leaf, res, &ask.resource) {
                refusals.note(&s, v.leaf);
                continue;
            }
            match s.absorbs(res) {
                Some(before) => {
                    s.apply(ask_q, res, true);
                    if s.remaining(ask_q).as_ref() != Some(&before) {
                        extra.push(*v);
                        refusals.moved(&s, v.leaf);
                        if early.extra(res, counted(v)) {
                            break;
                        }
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
        let mut total = Resource::new();
        let mut last = Vec::new();
        for v in node_victims.into_iter().chain(extra) {
            if !counted(&v) {
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
    fn check_node(
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
            self.preemption_check(&app.id, ask, node, &list, index, cb, &mut pass.events)
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
    fn preemption_check(
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
    fn victims_for_node(
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
    fn potential_victims(&self, app: &Application, ask: &Ask) -> Vec<Victim> {
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
        let root_value = recorded(root).unwrap_or(value);
        let mut stack = vec![(root, root_value, false)];
        let gang = &self.gang;
        // One what-if state for every leaf's guarantee check: seeding only
        // records used resources, so leaves share their ancestors' entries.
        let mut s = Snap::new(self, app.queue);
        // The leaves above their guarantee first, and how many allocations
        // they hold: the victims' vector is sized once (tens of thousands
        // of victims would otherwise be copied as it grows).
        let mut leaves = Vec::new();
        let mut bound = 0usize;
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
            s.seed(&self.preempt, q);
            if s.remaining(q)
                .is_some_and(|r| r.iter().all(|(_, v)| v >= 0))
            {
                continue; // within guarantee
            }
            bound += queue
                .apps
                .values()
                .filter_map(|a| self.apps.at(*a))
                .map(|a| a.allocations.len())
                .sum::<usize>();
            leaves.push((q, value, fenced));
        }
        let mut out = Vec::with_capacity(bound);
        for (q, value, fenced) in leaves {
            for a_slot in self.queues.get(q).apps.values() {
                let Some(victim_app) = self.apps.at(*a_slot) else {
                    continue;
                };
                for slot in victim_app.allocations.slots() {
                    // The slab entry's facts: the record is read only for
                    // the UUID, of a placeholder or while victims are in
                    // flight.
                    let a = self.allocations.facts(slot);
                    let uuid = || &self.allocations.at(slot).uuid;
                    if !a.resource.shares_positive_type(&ask.resource)
                        || a.required_node
                        || (a.placeholder && gang.placeholder_leaving(uuid()))
                        || (!self.preempt.victims.is_empty() && self.preempt.is_victim(uuid()))
                        || !(fenced || i64::from(a.priority) <= value)
                    {
                        continue;
                    }
                    out.push(Victim {
                        slot,
                        leaf: q,
                        born: a.born,
                        class: u8::from(a.originator) | u8::from(!a.preempt_self) << 1,
                    });
                }
            }
        }
        out
    }

    /// Whether a queue's `preemption.policy` came from its parent (only
    /// `disabled` is inherited, spec 1.2; the tree copies every property).
    pub(crate) fn inherited_policy(&self, q: QueueId) -> bool {
        let queue = self.queues.get(q);
        let Some(p) = queue.parent else {
            return false;
        };
        let own = queue.properties.get(PROP_PREEMPTION_POLICY);
        own.is_some() && own == self.queues.get(p).properties.get(PROP_PREEMPTION_POLICY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_follows_the_reference() {
        let r = |pairs: &[(&str, i64)]| Resource::from_pairs(pairs.iter().copied()).unwrap();
        assert!(covers(&r(&[("vcore", 5)]), &r(&[("vcore", 5)])));
        assert!(!covers(&r(&[("vcore", 4)]), &r(&[("vcore", 5)])));
        assert!(!covers(&Resource::new(), &r(&[("vcore", 5)])));
        // Quirk Q5: one over-covered type is enough.
        assert!(covers(
            &r(&[("vcore", 6), ("memory", 1)]),
            &r(&[("vcore", 5), ("memory", 5)])
        ));
    }

    /// The packed key sorts as spec 10.1's tuple (class, newest first,
    /// position) and gives the position back.
    #[test]
    fn the_packed_heap_key_sorts_as_the_tuple() {
        let mut rng = fastrand::Rng::with_seed(10);
        let mut keys: Vec<(u8, u64, u32)> = (0..2_000)
            .map(|_| (rng.u8(..3), rng.u64(..), rng.u32(..)))
            .chain([(0, 0, 0), (2, u64::MAX, u32::MAX), (1, u64::MAX, 0)])
            .collect();
        keys.sort_unstable_by_key(|&(c, b, p)| (c, Reverse(b), p));
        let packed: Vec<u128> = keys.iter().map(|&(c, b, p)| heap_key(c, b, p)).collect();
        assert!(packed.windows(2).all(|w| w[0] <= w[1]));
        for (k, &(_, _, p)) in packed.iter().zip(&keys) {
            assert_eq!(heap_position(*k), p as usize);
        }
    }
}
