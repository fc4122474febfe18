//! Nodes and the policy that orders them.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::resource::{intern, ResId, Resource};

/// Attribute naming a node's partition.
pub const ATTR_PARTITION: &str = "si/node-partition";
/// Node attribute whose value `unlimited` marks an unlimited node (spec 11.6).
pub const ATTR_NODE_TYPE: &str = "yunikorn.apache.org/nodeType";

/// A node's place in the partition's node order: lower scores are tried
/// first, ties go by node id in byte order.
///
/// Keys are compared on every reordering, so they compare as integers: the
/// score maps to an order-preserving `u64` and the first 16 bytes of the id
/// to a `u128`; the full id only settles ids that share those 16 bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeKey {
    score_bits: u64,
    id_prefix: u128,
    /// The node id.
    pub id: Arc<str>,
}

/// Maps an `f64` to a `u64` with the same order (IEEE total order).
fn ordered_bits(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

/// The first 16 bytes of `id`, big-endian, zero-padded: compares like the
/// byte string as far as it goes.
fn id_prefix(id: &str) -> u128 {
    let mut buf = [0u8; 16];
    let n = id.len().min(16);
    buf[..n].copy_from_slice(&id.as_bytes()[..n]);
    u128::from_be_bytes(buf)
}

impl NodeKey {
    /// The key of node `id` with policy score `score`.
    pub fn new(score: f64, id: Arc<str>) -> Self {
        NodeKey {
            score_bits: ordered_bits(score),
            id_prefix: id_prefix(&id),
            id,
        }
    }
}

impl NodeKey {
    /// The same node's key with a new score.
    fn rescored(&self, score: f64) -> Self {
        NodeKey {
            score_bits: ordered_bits(score),
            id_prefix: self.id_prefix,
            id: self.id.clone(),
        }
    }
}

impl Ord for NodeKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score_bits
            .cmp(&other.score_bits)
            .then(self.id_prefix.cmp(&other.id_prefix))
            .then_with(|| self.id.cmp(&other.id))
    }
}

impl PartialOrd for NodeKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Which nodes go first (spec 8.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeSortKind {
    /// Least used first: spreads load.
    Fair,
    /// Most used first: packs nodes.
    BinPacking,
}

/// The partition's node sorting policy with its resource weights.
#[derive(Debug, Clone)]
pub struct NodeSortPolicy {
    /// Fair or bin-packing.
    pub kind: NodeSortKind,
    /// Positive weights per resource type.
    pub weights: Vec<(ResId, f64)>,
}

impl Default for NodeSortPolicy {
    fn default() -> Self {
        NodeSortPolicy::new("fair", &Default::default()).expect("default policy")
    }
}

impl NodeSortPolicy {
    /// Builds the policy; no weights means `{vcore: 1, memory: 1}`.
    pub fn new(
        kind: &str,
        weights: &std::collections::BTreeMap<String, f64>,
    ) -> Result<Self, String> {
        let kind = match kind {
            "binpacking" => NodeSortKind::BinPacking,
            _ => NodeSortKind::Fair,
        };
        let mut w = Vec::new();
        if weights.is_empty() {
            w.push((intern("vcore")?, 1.0));
            w.push((intern("memory")?, 1.0));
        } else {
            for (name, v) in weights {
                if *v > 0.0 {
                    w.push((intern(name)?, *v));
                }
            }
        }
        Ok(NodeSortPolicy { kind, weights: w })
    }

    /// The policy name as configured.
    pub fn name(&self) -> &'static str {
        match self.kind {
            NodeSortKind::Fair => "fair",
            NodeSortKind::BinPacking => "binpacking",
        }
    }

    /// The node's score: weighted usage for fair, its complement for
    /// bin-packing; lower goes first.
    pub fn score(&self, capacity: &Resource, available: &Resource) -> f64 {
        let (mut sum, mut wsum) = (0.0, 0.0);
        for (id, w) in &self.weights {
            let cap = capacity.get(*id);
            if cap == 0 || capacity.lookup(*id).is_none() {
                continue;
            }
            let usage = 1.0 - available.get(*id) as f64 / cap as f64;
            sum += w * usage;
            wsum += w;
        }
        let u = if wsum > 0.0 { sum / wsum } else { 0.0 };
        match self.kind {
            NodeSortKind::Fair => u,
            NodeSortKind::BinPacking => 1.0 - u,
        }
    }
}

/// A node registered by the RM.
#[derive(Debug, Clone)]
pub struct Node {
    /// Node id, unique in its partition.
    pub id: Arc<str>,
    /// Attributes as the RM sent them.
    pub attributes: BTreeMap<String, String>,
    /// Schedulable capacity.
    pub capacity: Resource,
    /// Used by things outside the scheduler.
    pub occupied: Resource,
    /// Sum of the allocations on the node.
    pub allocated: Resource,
    /// `capacity - allocated - occupied`.
    pub available: Resource,
    /// False while draining.
    pub schedulable: bool,
    /// An unlimited node (spec 11.6): every ask fits, predicates are not
    /// asked. It is then the partition's only node.
    pub unlimited: bool,
    /// UUIDs of the allocations on this node.
    pub allocations: super::FastSet<Arc<str>>,
    /// The node's current key in the partition's order.
    pub key: NodeKey,
}

impl Node {
    /// A new node; `capacity - occupied` is clamped at zero per type.
    pub fn new(
        id: &str,
        attributes: BTreeMap<String, String>,
        capacity: Resource,
        occupied: Resource,
        policy: &NodeSortPolicy,
    ) -> Self {
        let available = capacity.sub_clamped(&occupied);
        let id: Arc<str> = Arc::from(id);
        let key = NodeKey::new(policy.score(&capacity, &available), id.clone());
        let unlimited = is_unlimited(&attributes);
        Node {
            id,
            unlimited,
            attributes,
            capacity,
            occupied,
            allocated: Resource::new(),
            available,
            schedulable: true,
            allocations: Default::default(),
            key,
        }
    }

    /// Recomputes `available` after a change of capacity, occupied or
    /// allocated. Returns the node's new key.
    pub fn refresh(&mut self, policy: &NodeSortPolicy) -> NodeKey {
        self.available.clone_from(&self.capacity);
        self.available.sub_assign(&self.allocated);
        self.available.sub_assign(&self.occupied);
        self.key = self
            .key
            .rescored(policy.score(&self.capacity, &self.available));
        self.key.clone()
    }

    /// Whether `ask` fits in what is still free (strict: a type the node
    /// does not report is zero, unlike v0.12; see spec 14.4).
    pub fn fits_available(&self, ask: &Resource) -> bool {
        self.unlimited || ask.fits_in(&self.available)
    }

    /// Whether `ask` could ever fit on this node.
    pub fn fits_capacity(&self, ask: &Resource) -> bool {
        self.unlimited || ask.fits_in(&self.capacity)
    }
}

/// Whether a node's attributes mark it unlimited (spec 11.6).
pub fn is_unlimited(attributes: &BTreeMap<String, String>) -> bool {
    attributes
        .get(ATTR_NODE_TYPE)
        .is_some_and(|t| t == "unlimited")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(pairs: &[(&str, i64)]) -> Resource {
        Resource::from_pairs(pairs.iter().copied()).unwrap()
    }

    #[test]
    fn fair_prefers_less_used_and_binpacking_more_used() {
        let cap = r(&[("memory", 100), ("vcore", 10)]);
        let fair = NodeSortPolicy::default();
        let bin = NodeSortPolicy::new("binpacking", &Default::default()).unwrap();
        let half = r(&[("memory", 50), ("vcore", 5)]);
        assert!(fair.score(&cap, &cap) < fair.score(&cap, &half));
        assert!(bin.score(&cap, &half) < bin.score(&cap, &cap));
    }

    #[test]
    fn keys_order_by_score_then_id_bytes() {
        let k = |s: f64, id: &str| NodeKey::new(s, Arc::from(id));
        assert!(k(0.1, "b") < k(0.2, "a"));
        assert!(k(-0.5, "z") < k(0.0, "a"));
        assert!(k(1.5, "a") > k(1.0, "z"));
        assert!(k(0.5, "a") < k(0.5, "b"));
        assert!(k(0.5, "node-0000000000001") < k(0.5, "node-0000000000002"));
        assert!(k(0.5, "n") < k(0.5, "n1"));
        assert!(k(-0.25, "x") < k(0.0, "x") && k(0.0, "x") < k(0.25, "x"));
    }

    #[test]
    fn weights_change_the_score() {
        let cap = r(&[("memory", 100), ("vcore", 10)]);
        let avail = r(&[("memory", 0), ("vcore", 10)]);
        let mut w = std::collections::BTreeMap::new();
        w.insert("vcore".to_string(), 1.0);
        let vcore_only = NodeSortPolicy::new("fair", &w).unwrap();
        assert_eq!(vcore_only.score(&cap, &avail), 0.0);
        assert_eq!(NodeSortPolicy::default().score(&cap, &avail), 0.5);
    }
}
