//! Reservations (spec 8.9): an ask that fits nowhere right now may hold one
//! node, which then serves no other ask until the reservation goes.
//!
//! Keys are structured (node slot; application id + allocation key), never
//! matched by string prefix or suffix as the reference did. A node's
//! reservation is cancelled before the node leaves, so a slot never names
//! a node it was not made for.

use std::sync::Arc;
use std::time::Instant;

use smallvec::SmallVec;

use super::node::NodeSlot;
use crate::scheduler::FastMap;

/// The application and ask holding a node.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReservedAsk {
    /// Application id.
    pub app: Arc<str>,
    /// Allocation key of the ask.
    pub key: Arc<str>,
}

/// Every reservation of one partition, indexed both ways.
#[derive(Debug, Default, Clone)]
pub struct Reservations {
    /// Node -> the ask holding it (one reservation per node).
    by_node: FastMap<NodeSlot, ReservedAsk>,
    /// Ask -> nodes it holds, in the order it reserved them.
    by_ask: FastMap<ReservedAsk, SmallVec<[NodeSlot; 2]>>,
    /// Node -> when its reservation was made (the age rules of YuniKorn
    /// v1.9 count from there).
    since: FastMap<NodeSlot, Instant>,
}

impl Reservations {
    /// Whether nothing is reserved.
    pub fn is_empty(&self) -> bool {
        self.by_node.is_empty()
    }

    /// The ask holding `node`, if any.
    pub fn on_node(&self, node: NodeSlot) -> Option<&ReservedAsk> {
        self.by_node.get(&node)
    }

    /// The nodes an ask holds.
    pub fn nodes_of(&self, ask: &ReservedAsk) -> &[NodeSlot] {
        self.by_ask.get(ask).map_or(&[], |v| v.as_slice())
    }

    /// How many reservations an ask holds.
    pub fn count_for(&self, ask: &ReservedAsk) -> usize {
        self.nodes_of(ask).len()
    }

    /// Whether the application holds a reservation on this node (any ask).
    pub fn app_holds_node(&self, app: &str, node: NodeSlot) -> bool {
        self.by_node.get(&node).is_some_and(|r| &*r.app == app)
    }

    /// Records a reservation made at `at`. The caller checked the rules
    /// of spec 8.9.
    pub fn reserve(&mut self, node: NodeSlot, ask: ReservedAsk, at: Instant) {
        debug_assert!(!self.by_node.contains_key(&node));
        self.by_ask.entry(ask.clone()).or_default().push(node);
        self.by_node.insert(node, ask);
        self.since.insert(node, at);
    }

    /// When the reservation on `node` was made.
    pub fn made_at(&self, node: NodeSlot) -> Option<Instant> {
        self.since.get(&node).copied()
    }

    /// Cancels the reservation on a node; returns what held it.
    pub fn cancel_node(&mut self, node: NodeSlot) -> Option<ReservedAsk> {
        let ask = self.by_node.remove(&node)?;
        self.since.remove(&node);
        if let Some(nodes) = self.by_ask.get_mut(&ask) {
            nodes.retain(|n| *n != node);
            if nodes.is_empty() {
                self.by_ask.remove(&ask);
            }
        }
        Some(ask)
    }

    /// Cancels every reservation of one ask; returns the freed nodes.
    pub fn cancel_ask(&mut self, ask: &ReservedAsk) -> SmallVec<[NodeSlot; 2]> {
        let nodes: SmallVec<[NodeSlot; 2]> = self.nodes_of(ask).iter().copied().collect();
        for n in &nodes {
            self.cancel_node(*n);
        }
        nodes
    }

    /// Cancels every reservation of an application; returns the freed nodes.
    pub fn cancel_app(&mut self, app: &str) -> Vec<NodeSlot> {
        let nodes: Vec<NodeSlot> = self
            .by_node
            .iter()
            .filter(|(_, r)| &*r.app == app)
            .map(|(n, _)| *n)
            .collect();
        for n in &nodes {
            self.cancel_node(*n);
        }
        nodes
    }

    /// Every reservation, in no particular order (callers that show or
    /// act on them in sequence sort them by node id).
    pub fn iter(&self) -> impl Iterator<Item = (NodeSlot, &ReservedAsk)> {
        self.by_node.iter().map(|(n, r)| (*n, r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(app: &str, key: &str) -> ReservedAsk {
        ReservedAsk {
            app: Arc::from(app),
            key: Arc::from(key),
        }
    }

    #[test]
    fn both_indexes_stay_in_step() {
        let mut r = Reservations::default();
        let now = Instant::now();
        r.reserve(1, ask("a", "k"), now);
        r.reserve(10, ask("a", "k"), now);
        r.reserve(2, ask("b", "k"), now);
        assert_eq!(r.made_at(2), Some(now));
        assert_eq!(r.count_for(&ask("a", "k")), 2);
        assert!(r.app_holds_node("a", 10));
        assert!(!r.app_holds_node("a", 2));
        assert!(!r.app_holds_node("ab", 10), "no prefix matching");
        assert_eq!(r.cancel_node(1).unwrap(), ask("a", "k"));
        assert_eq!(r.made_at(1), None);
        assert_eq!(r.count_for(&ask("a", "k")), 1);
        assert_eq!(r.cancel_app("a").len(), 1);
        assert!(!r.iter().any(|(_, a)| &*a.app == "a"));
        assert_eq!(r.cancel_ask(&ask("b", "k")).len(), 1);
        assert!(r.is_empty());
    }
}
