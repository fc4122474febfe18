//! Nodes and the policy that orders them.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::slot_order::SlotOrder;
use crate::scheduler::policies::NodeSortPolicy;
use crate::scheduler::resource::{ResId, Resource};

/// Attribute naming a node's partition.
pub const ATTR_PARTITION: &str = "si/node-partition";
/// Node attribute whose value `unlimited` marks an unlimited node (spec 11.6).
pub const ATTR_NODE_TYPE: &str = "yunikorn.apache.org/nodeType";

/// A node's slot in its partition's [`NodeTable`]: stable while the node
/// is registered, reused after it leaves.
pub type NodeSlot = u32;

/// A node's place in the partition's node order: lower scores are tried
/// first, ties go by node id in byte order.
///
/// The key is integers, no pointer: the score as an order-preserving
/// `u64`, the node's order label, which the table assigns so that labels
/// sort like the ids (see [`NodeTable`]), and the slot that finds the node
/// without hashing its id. The table's B-tree compares score and label as
/// one `u128`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeKey {
    score_bits: u64,
    label: u64,
    slot: NodeSlot,
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

impl NodeKey {
    /// The node's slot.
    pub fn slot(&self) -> NodeSlot {
        self.slot
    }

    /// Score and label as one integer, the order's key: one comparison
    /// per B-tree step (labels are unique, so the slot never decides).
    fn packed(&self) -> u128 {
        (u128::from(self.score_bits) << 64) | u128::from(self.label)
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
    capacity: Resource,
    /// Used by things outside the scheduler.
    occupied: Resource,
    /// Sum of the allocations on the node: changed only by its
    /// [`NodeTable`], which keeps `available` and the order key with it.
    allocated: Resource,
    /// `capacity - allocated - occupied`.
    available: Resource,
    /// False while draining.
    pub schedulable: bool,
    /// An unlimited node (spec 11.6): every ask fits, predicates are not
    /// asked. It is then the partition's only node.
    pub unlimited: bool,
    /// Slots of the allocations on this node (in the partition's table).
    pub allocations: super::allocs::AllocList,
    /// SI v1.x: the foreign allocations on the node (not scheduled by the
    /// core) by key; `occupied` is their sum. Empty for v0.12 nodes, whose
    /// `occupied` is the `occupiedResource` the RM reports.
    foreign: crate::scheduler::FastMap<Arc<str>, Resource>,
    /// The node's current key in the partition's order (kept by its
    /// [`NodeTable`]).
    key: NodeKey,
}

impl Node {
    /// A new node; `capacity - occupied` is clamped at zero per type. Its
    /// table scores it on insertion.
    pub fn new(
        id: &str,
        attributes: BTreeMap<String, String>,
        capacity: Resource,
        occupied: Resource,
    ) -> Self {
        let available = capacity.sub_clamped(&occupied);
        let id: Arc<str> = Arc::from(id);
        let key = NodeKey {
            score_bits: 0,
            label: 0,
            slot: 0,
        };
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
            foreign: Default::default(),
            key,
        }
    }

    /// Recomputes `available` and the score after a change of capacity,
    /// occupied or allocated (the table re-files the key).
    fn refresh(&mut self, policy: &NodeSortPolicy) {
        self.available.clone_from(&self.capacity);
        self.available.sub_assign(&self.allocated);
        // Most nodes run nothing foreign: nothing to take off.
        if !self.occupied.is_empty() {
            self.available.sub_assign(&self.occupied);
        }
        self.key.score_bits = ordered_bits(policy.score(&self.capacity, &self.available));
    }

    /// The node's key in the partition's order.
    pub fn key(&self) -> NodeKey {
        self.key
    }

    /// Schedulable capacity.
    pub fn capacity(&self) -> &Resource {
        &self.capacity
    }

    /// Used by things outside the scheduler.
    pub fn occupied(&self) -> &Resource {
        &self.occupied
    }

    /// SI v1.x: the foreign allocations on the node, by key, in no
    /// particular order (their sum is [`Node::occupied`]).
    pub fn foreign(&self) -> impl Iterator<Item = (&Arc<str>, &Resource)> {
        self.foreign.iter()
    }

    /// Sum of the allocations on the node.
    pub fn allocated(&self) -> &Resource {
        &self.allocated
    }

    /// What is still free: `capacity - allocated - occupied`.
    pub fn available(&self) -> &Resource {
        &self.available
    }

    /// Whether `ask` fits in what is still free (strict: a type the node
    /// does not report is zero, unlike v0.12; see spec 14.4).
    pub fn fits_available(&self, ask: &Resource) -> bool {
        self.available_short(ask).is_none()
    }

    /// Whether `ask` could ever fit on this node.
    pub fn fits_capacity(&self, ask: &Resource) -> bool {
        self.capacity_short(ask).is_none()
    }

    /// The first type of `ask` this node's capacity is short of: `None`
    /// when the ask could fit ([`Self::fits_capacity`] in the same walk).
    #[inline]
    pub fn capacity_short(&self, ask: &Resource) -> Option<ResId> {
        self.capacity_short_index(ask).and_then(|i| ask.type_at(i))
    }

    /// [`Self::capacity_short`] as the type's position in `ask`.
    #[inline]
    pub fn capacity_short_index(&self, ask: &Resource) -> Option<usize> {
        if self.unlimited {
            None
        } else {
            ask.first_short_index(&self.capacity)
        }
    }

    /// The first type of `ask` the node's free resource is short of:
    /// `None` when it fits now ([`Self::fits_available`] in the same walk).
    #[inline]
    pub fn available_short(&self, ask: &Resource) -> Option<ResId> {
        if self.unlimited {
            None
        } else {
            ask.first_short(&self.available)
        }
    }
}

/// Whether a node's attributes mark it unlimited (spec 11.6).
pub fn is_unlimited(attributes: &BTreeMap<String, String>) -> bool {
    attributes
        .get(ATTR_NODE_TYPE)
        .is_some_and(|t| t == "unlimited")
}

/// Distance between the order labels of nodes registered after (or
/// before) every other: ids arriving in ascending or descending order never
/// run out of room.
const LABEL_STEP: u64 = 1 << 32;

/// The nodes of a partition: a slab of nodes, the id index (used where a
/// request names a node) and the policy order (used by the scheduling
/// pass, which reaches each node by its slot).
///
/// The order breaks score ties by node id in byte order, without the ids
/// in the keys: each node carries an order label, an integer that sorts
/// like its id among the registered nodes. A new node takes a label between
/// those of its neighbours in id order; when two neighbours' labels are
/// adjacent, every node is relabelled evenly, one pass over the nodes (with
/// 2^64 labels this takes dozens of insertions into the same gap).
#[derive(Debug, Default)]
pub struct NodeTable {
    /// The policy that scores the nodes for the order.
    policy: NodeSortPolicy,
    slab: slab::Slab<Node>,
    by_id: crate::scheduler::FastMap<Arc<str>, NodeSlot>,
    /// Ids in byte order: the neighbours a new node's label goes between.
    id_order: BTreeMap<Arc<str>, NodeSlot>,
    /// Policy order: [`NodeKey::packed`] to slot.
    order: SlotOrder<u128>,
    /// SI v1.x: the node of each foreign allocation, by key (a release
    /// names the key only).
    foreign_nodes: crate::scheduler::FastMap<Arc<str>, NodeSlot>,
}

impl NodeTable {
    /// An empty table ordered by `policy`.
    pub fn new(policy: NodeSortPolicy) -> Self {
        NodeTable {
            policy,
            ..Default::default()
        }
    }

    /// The policy the order follows.
    pub fn policy(&self) -> &NodeSortPolicy {
        &self.policy
    }

    /// Orders the nodes by `policy` from now on (every node is re-scored).
    pub fn set_policy(&mut self, policy: NodeSortPolicy) {
        self.policy = policy;
        let slots: Vec<NodeSlot> = self.slab.iter().map(|(_, n)| n.key.slot).collect();
        for slot in slots {
            self.refresh(slot);
        }
    }

    /// An allocation of `res` joined the node in `slot`: its usage grows
    /// and the node moves in the order.
    pub fn allocate(&mut self, slot: NodeSlot, res: &Resource) {
        self.slab[slot as usize].allocated.add_assign(res);
        self.refresh(slot);
    }

    /// An allocation of `res` left the node in `slot` (usage clamped at
    /// zero per type).
    pub fn release(&mut self, slot: NodeSlot, res: &Resource) {
        self.slab[slot as usize].allocated.sub_clamped_assign(res);
        self.refresh(slot);
    }

    /// An allocation on the node in `slot` changed size from `old` to
    /// `new` (a gang swap in the placeholder's space): one re-filing.
    pub fn resize(&mut self, slot: NodeSlot, old: &Resource, new: &Resource) {
        let n = &mut self.slab[slot as usize];
        n.allocated.sub_clamped_assign(old);
        n.allocated.add_assign(new);
        self.refresh(slot);
    }

    /// The RM reported new capacity and occupied resource for the node.
    pub fn set_resources(&mut self, slot: NodeSlot, capacity: Resource, occupied: Resource) {
        let n = &mut self.slab[slot as usize];
        n.capacity = capacity;
        n.occupied = occupied;
        self.refresh(slot);
    }

    /// Whether the allocation of `res` on the node in `slot` can change
    /// to `new` with the node's usage exact (no sum past an i64).
    pub fn can_resize(&self, slot: NodeSlot, old: &Resource, new: &Resource) -> bool {
        self.slab[slot as usize]
            .allocated
            .sub_clamped(old)
            .can_add(new)
    }

    /// SI v1.x: sets foreign allocation `key` on the node in `slot` to
    /// `res` (added, or resized when the key is known): the node's
    /// occupied resource is the sum of its foreign allocations. A key held
    /// by another node moves here. `Err` (nothing changed) when the sum
    /// would not fit an i64.
    pub fn set_foreign(
        &mut self,
        slot: NodeSlot,
        key: &Arc<str>,
        res: Resource,
    ) -> Result<(), String> {
        let elsewhere = self.foreign_nodes.get(key).copied().filter(|s| *s != slot);
        let n = &self.slab[slot as usize];
        let base = match n.foreign.get(key) {
            // The sum includes the old size: taking it out is exact.
            Some(old) => n.occupied.sub_clamped(old),
            None => n.occupied.clone(),
        };
        let Some(occupied) = base.checked_add(&res) else {
            return Err(format!(
                "foreign allocation {key} of {res} would overflow the occupied total {} of node {}",
                n.occupied, n.id
            ));
        };
        if elsewhere.is_some() {
            self.remove_foreign(key);
        }
        let n = &mut self.slab[slot as usize];
        n.occupied = occupied;
        n.foreign.insert(key.clone(), res);
        self.foreign_nodes.insert(key.clone(), slot);
        self.refresh(slot);
        Ok(())
    }

    /// SI v1.x: removes foreign allocation `key` from its node; returns
    /// the node's slot and the resource it held.
    pub fn remove_foreign(&mut self, key: &str) -> Option<(NodeSlot, Resource)> {
        let slot = self.foreign_nodes.remove(key)?;
        let n = &mut self.slab[slot as usize];
        let res = n.foreign.remove(key)?;
        n.occupied.sub_clamped_assign(&res);
        self.refresh(slot);
        Some((slot, res))
    }

    /// SI v1.x: the node holding foreign allocation `key`. Inline, with
    /// the empty case first: every SI v1.x ask is checked here.
    #[inline]
    pub fn foreign_node(&self, key: &str) -> Option<NodeSlot> {
        if self.foreign_nodes.is_empty() {
            return None;
        }
        self.foreign_nodes.get(key).copied()
    }

    /// How many nodes are registered.
    pub fn len(&self) -> usize {
        self.slab.len()
    }

    /// Whether no node is registered.
    pub fn is_empty(&self) -> bool {
        self.slab.is_empty()
    }

    /// The slot of node `id`.
    pub fn slot_of(&self, id: &str) -> Option<NodeSlot> {
        self.by_id.get(id).copied()
    }

    /// Whether node `id` is registered.
    pub fn contains_key(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    /// Node `id`.
    pub fn get(&self, id: &str) -> Option<&Node> {
        self.slot_of(id).map(|s| &self.slab[s as usize])
    }

    /// Node `id`, to change (its resources change only through the
    /// table: [`NodeTable::allocate`], [`NodeTable::set_resources`]).
    pub fn get_mut(&mut self, id: &str) -> Option<&mut Node> {
        let s = self.slot_of(id)?;
        Some(&mut self.slab[s as usize])
    }

    /// The node in `slot`, if the slot is taken.
    pub fn at(&self, slot: NodeSlot) -> Option<&Node> {
        self.slab.get(slot as usize)
    }

    /// The node in `slot`, to change (see [`NodeTable::get_mut`]).
    pub fn at_mut(&mut self, slot: NodeSlot) -> &mut Node {
        &mut self.slab[slot as usize]
    }

    /// Every node, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &Node> {
        self.slab.iter().map(|(_, n)| n)
    }

    /// Every node id, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &Arc<str>> {
        self.by_id.keys()
    }

    /// Every node in id order (bytes).
    pub fn by_id_order(&self) -> impl Iterator<Item = &Node> {
        self.id_order.values().map(|s| &self.slab[*s as usize])
    }

    /// Every node in policy order.
    pub fn ordered(&self) -> impl ExactSizeIterator<Item = &Node> {
        self.order.values().map(|s| &self.slab[s as usize])
    }

    /// Adds a node whose id is not registered yet; returns its slot.
    pub fn insert(&mut self, mut node: Node) -> NodeSlot {
        debug_assert!(!self.by_id.contains_key(&*node.id));
        let slot = NodeSlot::try_from(self.slab.vacant_key()).expect("fewer than 2^32 nodes");
        let id = node.id.clone();
        let label = {
            use std::ops::Bound::{Excluded, Unbounded};
            let below = self
                .id_order
                .range::<str, _>((Unbounded, Excluded(&*id)))
                .next_back();
            let above = self
                .id_order
                .range::<str, _>((Excluded(&*id), Unbounded))
                .next();
            let label_of = |s: &NodeSlot| self.slab[*s as usize].key.label;
            free_label(
                below.map(|(_, s)| label_of(s)),
                above.map(|(_, s)| label_of(s)),
            )
        };
        node.key.slot = slot;
        node.key.label = label.unwrap_or(0);
        node.key.score_bits = ordered_bits(self.policy.score(&node.capacity, &node.available));
        self.slab.insert(node);
        self.by_id.insert(id.clone(), slot);
        self.id_order.insert(id, slot);
        match label {
            Some(_) => {
                self.order
                    .insert(self.slab[slot as usize].key.packed(), slot);
            }
            None => self.relabel(),
        }
        slot
    }

    /// Spreads the labels evenly over the `u64` range, in id order, and
    /// rebuilds the order.
    fn relabel(&mut self) {
        let gap = u64::MAX / (self.id_order.len() as u64 + 1);
        for (i, s) in self.id_order.values().enumerate() {
            self.slab[*s as usize].key.label = gap * (i as u64 + 1);
        }
        self.order = self
            .slab
            .iter()
            .map(|(_, n)| (n.key.packed(), n.key.slot))
            .collect();
    }

    /// Removes node `id`.
    pub fn remove(&mut self, id: &str) -> Option<Node> {
        let slot = self.by_id.remove(id)?;
        self.id_order.remove(id);
        let node = self.slab.remove(slot as usize);
        // Its foreign allocations go with it.
        for k in node.foreign.keys() {
            self.foreign_nodes.remove(k);
        }
        self.order.remove(&node.key.packed());
        Some(node)
    }

    /// Recomputes the node's free resource and score after a change, and
    /// re-files it in the order.
    fn refresh(&mut self, slot: NodeSlot) {
        let n = &mut self.slab[slot as usize];
        let old = n.key;
        n.refresh(&self.policy);
        if n.key != old {
            self.order.remove(&old.packed());
            let held = self.order.insert(n.key.packed(), slot);
            // A key names its node (its label is unique).
            debug_assert!(held.is_none(), "node key already in the order");
        }
    }
}

impl std::ops::Index<NodeSlot> for NodeTable {
    type Output = Node;
    fn index(&self, slot: NodeSlot) -> &Node {
        &self.slab[slot as usize]
    }
}

/// A label strictly between `below` and `above` (a missing neighbour is
/// the end of the range), or `None` when there is none left.
fn free_label(below: Option<u64>, above: Option<u64>) -> Option<u64> {
    match (below, above) {
        (None, None) => Some(1 << 63),
        (Some(b), None) => b
            .checked_add(LABEL_STEP)
            .or_else(|| (b < u64::MAX).then(|| b + (u64::MAX - b).div_ceil(2))),
        (None, Some(a)) => a
            .checked_sub(LABEL_STEP)
            .or_else(|| (a > 0).then_some(a / 2)),
        (Some(b), Some(a)) => (a - b >= 2).then(|| b + (a - b) / 2),
    }
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

    /// A node of capacity 10 memory with `used` allocated: its fair score
    /// is `used / 10` (the default weights count only reported types).
    fn add(t: &mut NodeTable, id: &str, used: i64) -> NodeSlot {
        let n = Node::new(id, BTreeMap::new(), r(&[("memory", 10)]), Resource::new());
        let s = t.insert(n);
        t.allocate(s, &r(&[("memory", used)]));
        s
    }

    fn ordered_ids(t: &NodeTable) -> Vec<String> {
        t.ordered().map(|n| n.id.to_string()).collect()
    }

    #[test]
    fn order_is_score_then_id_bytes() {
        let mut t = NodeTable::default();
        for (id, used) in [("b", 1), ("a", 2), ("n1", 0), ("n", 0), ("z", 0), ("x", 5)] {
            add(&mut t, id, used);
        }
        assert_eq!(ordered_ids(&t), ["n", "n1", "z", "b", "a", "x"]);
        let a = t.slot_of("a").unwrap();
        t.release(a, &r(&[("memory", 2)]));
        assert_eq!(ordered_ids(&t), ["a", "n", "n1", "z", "b", "x"]);
        assert_eq!(t.remove("n").map(|n| n.id.to_string()), Some("n".into()));
        assert_eq!(ordered_ids(&t), ["a", "n1", "z", "b", "x"]);
        assert!(t.get("n").is_none() && t.len() == 5);
    }

    /// Kubernetes node names often share long prefixes: ties must still go
    /// by the whole id in byte order, whatever order the nodes arrive in,
    /// including orders that exhaust the labels between two neighbours.
    #[test]
    fn ties_follow_the_whole_id_for_long_shared_prefixes() {
        let prefix = "ip-10-0-0-0.eu-west-1.compute.internal.cluster-a.example.com/pool-";
        let ids: Vec<String> = (0..600).map(|i| format!("{prefix}{i:05}")).collect();
        // Ascending, descending, and always into the same gap (each new id
        // just above the first and below the previous one).
        let mut orders: Vec<Vec<usize>> = vec![(0..600).collect(), (0..600).rev().collect()];
        let mut squeeze = vec![0, 599];
        squeeze.extend((1..599).rev());
        orders.push(squeeze);
        let mut rng = fastrand::Rng::with_seed(15);
        let mut shuffled: Vec<usize> = (0..600).collect();
        rng.shuffle(&mut shuffled);
        orders.push(shuffled);
        for order in orders {
            let mut t = NodeTable::default();
            for &i in &order {
                // Three score classes, so ties happen within each.
                add(&mut t, &ids[i], (i % 3) as i64);
            }
            let mut want: Vec<(i64, String)> = ids
                .iter()
                .enumerate()
                .map(|(i, id)| ((i % 3) as i64, id.clone()))
                .collect();
            want.sort();
            let want: Vec<String> = want.into_iter().map(|(_, id)| id).collect();
            assert_eq!(ordered_ids(&t), want);
            // Removing and re-adding keeps the order exact.
            for i in (0..600).step_by(7) {
                t.remove(&ids[i]).unwrap();
            }
            for i in (0..600).step_by(7) {
                add(&mut t, &ids[i], (i % 3) as i64);
            }
            assert_eq!(ordered_ids(&t), want);
        }
    }

    #[test]
    fn labels_fill_gaps_and_report_exhaustion() {
        assert_eq!(free_label(None, None), Some(1 << 63));
        assert_eq!(free_label(Some(10), None), Some(10 + LABEL_STEP));
        assert_eq!(free_label(Some(u64::MAX), None), None);
        assert_eq!(free_label(Some(u64::MAX - 1), None), Some(u64::MAX));
        assert_eq!(free_label(Some(u64::MAX - 4), None), Some(u64::MAX - 2));
        assert_eq!(free_label(None, Some(0)), None);
        assert_eq!(free_label(None, Some(1)), Some(0));
        assert_eq!(free_label(Some(4), Some(6)), Some(5));
        assert_eq!(free_label(Some(4), Some(5)), None);
    }

    #[test]
    fn foreign_allocations_sum_into_occupied_and_follow_their_node() {
        let mut t = NodeTable::default();
        let a = add(&mut t, "a", 0);
        let b = add(&mut t, "b", 0);
        let (f1, f2): (Arc<str>, Arc<str>) = ("f1".into(), "f2".into());
        t.set_foreign(a, &f1, r(&[("memory", 3)])).unwrap();
        t.set_foreign(a, &f2, r(&[("memory", 4)])).unwrap();
        assert_eq!(t[a].occupied(), &r(&[("memory", 7)]));
        assert_eq!(t[a].available(), &r(&[("memory", 3)]));
        // Busier now: `b` goes first in the fair order.
        assert_eq!(ordered_ids(&t), ["b", "a"]);
        // Resize in place, then move to the other node.
        t.set_foreign(a, &f1, r(&[("memory", 1)])).unwrap();
        assert_eq!(t[a].occupied(), &r(&[("memory", 5)]));
        t.set_foreign(b, &f1, r(&[("memory", 1)])).unwrap();
        assert_eq!(t[a].occupied(), &r(&[("memory", 4)]));
        assert_eq!(t[b].occupied(), &r(&[("memory", 1)]));
        assert_eq!(t.foreign_node("f1"), Some(b));
        // An overflowing sum changes nothing.
        let big: Arc<str> = "big".into();
        assert!(t.set_foreign(b, &big, r(&[("memory", i64::MAX)])).is_err());
        assert_eq!(t[b].occupied(), &r(&[("memory", 1)]));
        assert_eq!(t.foreign_node("big"), None);
        assert_eq!(t.remove_foreign("f2").map(|(s, _)| s), Some(a));
        assert!(t[a].occupied().is_zero());
        assert!(t.remove_foreign("f2").is_none());
        // A node's removal takes its foreign allocations from the index.
        t.remove("b");
        assert_eq!(t.foreign_node("f1"), None);
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
