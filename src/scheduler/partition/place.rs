//! The allocation path, written once for the regular, reserved and gang
//! passes: leaves in the order the search visits them, the candidate nodes
//! of an ask, one attempt on a node, and minting the allocation when an
//! ask's repeat is taken.

use std::sync::Arc;

use super::*;
use crate::scheduler::objects::pending::NodeCounts;
use crate::scheduler::port::PredicateCheck;
use crate::scheduler::resync::ResyncBarrier;

impl Partition {
    /// Leaves in the order the regular search visits them: depth-first in
    /// fair queue order. A leaf without demand is not ranked.
    pub(crate) fn leaf_ranks(&self) -> FastMap<QueueId, usize> {
        let mut ranks = FastMap::default();
        let mut stack = vec![ROOT];
        while let Some(q) = stack.pop() {
            if self.queues.get(q).leaf {
                let rank = ranks.len();
                ranks.insert(q, rank);
            } else {
                let children: Vec<QueueId> = self.queues.sorted_children(q).collect();
                stack.extend(children.into_iter().rev());
            }
        }
        ranks
    }

    /// The first candidate node where `ask` fits now and the RM's
    /// predicates agree. Nodes the ask can never fit are skipped, and so
    /// are nodes reserved for another ask; `me` is the ask as a
    /// reservation, `None` when the partition holds no reservation.
    /// `missed` sees each node that was tried and refused, with the
    /// reservation on it.
    pub(crate) fn first_fit<'a>(
        &'a self,
        app_id: &str,
        ask: &Ask,
        me: Option<&ReservedAsk>,
        cb: Option<&ResyncBarrier>,
        events: &mut Vec<si::EventRecord>,
        missed: impl FnMut(&'a Node, Option<&'a ReservedAsk>),
    ) -> Option<&'a Node> {
        let mut counts = NodeCounts::default();
        self.first_fit_counted(app_id, ask, me, cb, events, &mut counts, missed)
    }

    /// [`Self::first_fit`], counting in `counts` why each node turned the
    /// ask down (the walk is the same; the counts are a few integers).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn first_fit_counted<'a>(
        &'a self,
        app_id: &str,
        ask: &Ask,
        me: Option<&ReservedAsk>,
        cb: Option<&ResyncBarrier>,
        events: &mut Vec<si::EventRecord>,
        counts: &mut NodeCounts,
        mut missed: impl FnMut(&'a Node, Option<&'a ReservedAsk>),
    ) -> Option<&'a Node> {
        if let Some(required) = &ask.required_node {
            // The only candidate, used even while draining.
            let Some(n) = self.nodes.get(required) else {
                counts.required_missing = true;
                return None;
            };
            counts.examined += 1;
            if let Some(t) = n.capacity_short(&ask.resource) {
                counts.short_of(t);
                return None;
            }
            return self
                .try_candidate(app_id, ask, n, me, cb, events, counts, &mut missed)
                .then_some(n);
        }
        // The walk counts in locals (registers: nothing else sees them) and
        // hands the totals over once. Nodes short of capacity mostly lack
        // the same type of the ask (by position): that one is counted
        // here, any other in `counts`.
        let mut unschedulable = 0u32;
        let (mut short_at, mut short_n) = (usize::MAX, 0u32);
        let nodes = self.nodes.ordered();
        // Every node is visited when none takes the ask (the only case
        // whose counts are read), so the examined ones need no counter.
        let visited = u32::try_from(nodes.len()).unwrap_or(u32::MAX);
        for n in nodes {
            if !n.schedulable {
                unschedulable += 1;
                continue;
            }
            if let Some(i) = n.capacity_short_index(&ask.resource) {
                if i == short_at {
                    short_n += 1;
                } else if short_n == 0 {
                    (short_at, short_n) = (i, 1);
                } else {
                    counts.short_of_n(ask.resource.type_at(i).unwrap_or_default(), 1);
                }
                continue;
            }
            if self.try_candidate(app_id, ask, n, me, cb, events, counts, &mut missed) {
                return Some(n);
            }
        }
        let examined = visited.saturating_sub(unschedulable);
        counts.examined = counts.examined.saturating_add(examined);
        counts.unschedulable = counts.unschedulable.saturating_add(unschedulable);
        if let Some(t) = ask.resource.type_at(short_at).filter(|_| short_n > 0) {
            counts.short_of_n(t, short_n);
        }
        counts.most_first();
        None
    }

    /// One node of [`Self::first_fit_counted`]'s walk that could hold the
    /// ask: not reserved for another ask, then [`Self::try_node`].
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn try_candidate<'a>(
        &'a self,
        app_id: &str,
        ask: &Ask,
        n: &'a Node,
        me: Option<&ReservedAsk>,
        cb: Option<&ResyncBarrier>,
        events: &mut Vec<si::EventRecord>,
        counts: &mut NodeCounts,
        missed: &mut impl FnMut(&'a Node, Option<&'a ReservedAsk>),
    ) -> bool {
        let reserved_by = match me {
            Some(_) => self.reservations.on_node(n.key().slot()),
            None => None,
        };
        if reserved_by.is_some_and(|r| Some(r) != me) {
            // A reserved node mostly lacks room anyway (its ask did not
            // fit): "reserved" is told only where the room was there.
            match n.available_short(&ask.resource) {
                Some(t) => counts.short_of(t),
                None => counts.reserved_other += 1,
            }
            return false;
        }
        if self.try_node_counted(app_id, ask, n, cb, true, events, Some(counts)) {
            return true;
        }
        missed(n, reserved_by);
        false
    }

    /// One allocation attempt of an ask on a node (spec 8.7 step 3): free
    /// resource, then the RM's predicates. A refusal's reason becomes a
    /// `REQUEST` event (the store keeps the latest per ask).
    pub(crate) fn try_node(
        &self,
        app: &str,
        ask: &Ask,
        n: &Node,
        cb: Option<&ResyncBarrier>,
        allocate: bool,
        events: &mut Vec<si::EventRecord>,
    ) -> bool {
        self.try_node_counted(app, ask, n, cb, allocate, events, None)
    }

    /// [`Self::try_node`], counting a refusal in `counts` when given.
    #[allow(clippy::too_many_arguments)]
    fn try_node_counted(
        &self,
        app: &str,
        ask: &Ask,
        n: &Node,
        cb: Option<&ResyncBarrier>,
        allocate: bool,
        events: &mut Vec<si::EventRecord>,
        counts: Option<&mut NodeCounts>,
    ) -> bool {
        if allocate {
            if let Some(t) = n.available_short(&ask.resource) {
                if let Some(c) = counts {
                    c.short_of(t);
                }
                return false;
            }
        }
        // Predicates are not asked for an unlimited node (spec 8.7).
        let Some(cb) = cb.filter(|b| b.asks_predicates() && !n.unlimited) else {
            return true;
        };
        let args = PredicateCheck {
            allocation_key: &ask.key,
            node_id: &n.id,
            allocate,
        };
        // The barrier first brings the RM's cache up to date.
        match cb.predicates(&args) {
            Ok(()) => true,
            Err(reason) => {
                if let Some(c) = counts {
                    c.refused_by_rm(&reason);
                }
                events.push(crate::events::record(
                    si::event_record::Type::Request,
                    &ask.key,
                    app,
                    crate::events::REASON_PREDICATE_REFUSED,
                    format!("node {} refused ask {}: {reason}", n.id, ask.key),
                ));
                false
            }
        }
    }

    /// Replaces the whole asks whose last allocation the pass made by
    /// their compact stand-ins (ask.rs), giving their memory back
    /// to the allocator. After the pass: its reasons are written to whole
    /// asks. A gang swap's real ask stays whole (an unlink may reopen it),
    /// and so does a placeholder (the gang counts read its task group).
    pub(crate) fn compact_placed(&mut self) {
        let mut placed = std::mem::take(&mut self.placed_whole);
        for (app_slot, app_seq, ask_slot, ask_seq) in placed.drain(..) {
            let Some(app) = self.apps.try_at_mut(app_slot).filter(|a| a.seq == app_seq) else {
                continue;
            };
            let Some(ask) = app.asks.whole_at(ask_slot) else {
                continue;
            };
            if ask.seq != ask_seq || ask.pending_repeat > 0 || ask.placeholder {
                continue;
            }
            let listed = pending_lists(&self.queues, app.queue, &app.pending, &ask.resource);
            let standin = AskEntry::placed_of(ask, listed);
            *app.asks.at_mut(ask_slot) = standin;
        }
        self.placed_whole = placed;
    }

    /// Takes one repeat of ask `ask_slot` of application `app_slot` for
    /// node `node`: the ask leaves its application's order when it has none
    /// left, the application's demand shrinks, and the allocation is minted
    /// with a new UUID (SI v1.x: its key). Usage (application, node, queue) is the caller's:
    /// a gang swap counts it differently from a plain allocation. Returns
    /// the allocation and the repeats the ask has left.
    pub(crate) fn mint(
        &mut self,
        app_slot: Slot,
        ask_slot: Slot,
        node: Arc<str>,
    ) -> (Arc<NewAllocation>, i32) {
        // Minted only for an ask of the order: whole.
        const WHOLE: &str = "an ask of the order is whole";
        let group = self.apps[app_slot]
            .asks
            .whole_at(ask_slot)
            .expect(WHOLE)
            .task_group
            .clone();
        let ctx = self.ctx_of(app_slot, &group);
        let app = self.apps.at_mut(app_slot);
        let ask = app.asks.whole_at_mut(ask_slot).expect(WHOLE);
        // The order key does not depend on the repeat count: the ask
        // leaves the order only when it is done.
        ask.pending_repeat -= 1;
        let (remaining, order) = (ask.pending_repeat, ask.order_key());
        if remaining <= 0 && app.ask_order.remove(&order).is_some() {
            self.waiting_asks = self.waiting_asks.saturating_sub(1);
            app.sync_priority(&mut self.queues);
        }
        let ask = app.asks.whole_at(ask_slot).expect(WHOLE);
        app.pending.sub_clamped_assign(&ask.resource);
        // SI v1.x: the allocation key is the allocation's identity (one
        // request, one allocation); v0.12 mints a UUID per allocation.
        let uuid = if self.edition == crate::scheduler::edition::Edition::V1 {
            crate::scheduler::alloc_uuid::AllocUuid::from_shared(&ask.key)
        } else {
            self.allocations.mint_uuid()
        };
        let record = Arc::new(NewAllocation {
            key: ask.key.clone(),
            uuid,
            node,
            ctx,
            resource: ask.resource.clone(),
            priority: ask.priority,
            tags: ask.tags.clone(),
            placeholder: ask.placeholder,
            preempt_self: ask.preempt_self,
            preempt_other: ask.preempt_other,
            originator: ask.originator,
        });
        (record, remaining)
    }
}

/// Whether the pending sums of an application in leaf `leaf` with pending
/// demand `pending`, and of its queues, list every type of `res`. Removing
/// a fully allocated ask takes zero of each of its types off those sums,
/// which lists a type not listed yet; with every type listed that changes
/// nothing, so its stand-in needs no resource.
pub(super) fn pending_lists(
    queues: &QueueTree,
    leaf: QueueId,
    pending: &Resource,
    res: &Resource,
) -> bool {
    if !pending.lists_types_of(res) {
        return false;
    }
    let mut at = Some(leaf);
    while let Some(q) = at {
        let q = queues.get(q);
        if !q.pending.lists_types_of(res) {
            return false;
        }
        at = q.parent;
    }
    true
}
