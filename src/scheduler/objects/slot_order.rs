//! An ordered set of keys, each with a slot: a short list of sorted
//! blocks. Two orders use it, and both move entries at their ends far
//! more often than in the middle:
//!
//! - the partition's node order ([`NodeKey`](super::node::NodeKey): score,
//!   then id label). Every allocation and release moves one node, since
//!   its score changes. The fair policy over equal nodes takes every node
//!   from the front and puts it at the back; binpacking puts it back at
//!   the front.
//! - an application's ask order ([`AskOrderKey`](super::ask::AskOrderKey):
//!   priority, then arrival). Asks arrive at the back, and the pass takes
//!   them from the front.
//!
//! `std`'s `BTreeMap` spent ~1,040 instructions per node move at 5,000
//! nodes, and ~1,000 per ask (its insertion and its removal) at 10,000
//! asks (callgrind), walking and rebalancing its nodes. Here an entry at
//! either end is found with no search; elsewhere it is a binary search over
//! the blocks' last keys, one within a block, and a short copy inside that
//! block. A block's entries start at an offset into its buffer, so that
//! taking its first entry, or putting one back there, copies nothing. A
//! walk reads the order front to back, one slice per block.

/// A slot in the table that holds the ordered things (a node's, an ask's;
/// named here so that the order imports neither table).
type Slot = u32;

/// Most entries a block holds; one more splits it in two.
const BLOCK_MAX: usize = 128;
/// A block left with fewer entries joins a neighbour when both fit in one,
/// so removals never leave a long tail of tiny blocks.
const BLOCK_MIN: usize = BLOCK_MAX / 4;

/// A sorted run of entries, `buf[head..]`. Entries taken from the front
/// leave a gap before `head` that a front insertion reuses; the gap is
/// dropped once it is as long as a block, so a buffer never holds more
/// than twice the entries of a full block.
#[derive(Debug, Clone)]
struct Block<K> {
    head: usize,
    buf: Vec<(K, Slot)>,
}

impl<K: Ord + Copy> Block<K> {
    fn entries(&self) -> &[(K, Slot)] {
        &self.buf[self.head..]
    }

    fn len(&self) -> usize {
        self.buf.len() - self.head
    }

    fn last_key(&self) -> K {
        self.buf[self.buf.len() - 1].0
    }

    fn insert(&mut self, i: usize, e: (K, Slot)) {
        if i == 0 && self.head > 0 {
            self.head -= 1;
            self.buf[self.head] = e;
        } else {
            self.buf.insert(self.head + i, e);
        }
    }

    fn remove(&mut self, i: usize) -> (K, Slot) {
        if i > 0 {
            return self.buf.remove(self.head + i);
        }
        let e = self.buf[self.head];
        self.head += 1;
        if self.head >= BLOCK_MAX || self.head == self.buf.len() {
            self.buf.drain(..self.head);
            self.head = 0;
        }
        e
    }

    /// The entries from position `at` on, as a block of their own.
    fn split_off(&mut self, at: usize) -> Block<K> {
        Block {
            head: 0,
            buf: self.buf.split_off(self.head + at),
        }
    }
}

/// Keys with their slots, in key order. Keys are unique.
#[derive(Debug, Clone)]
pub struct SlotOrder<K> {
    /// The last (largest) key of each block, in block order: the search
    /// for a key's block reads only this.
    lasts: Vec<K>,
    /// Sorted, non-empty blocks of at most [`BLOCK_MAX`] entries; every key
    /// of a block is below every key of the next.
    blocks: Vec<Block<K>>,
    len: usize,
}

impl<K> Default for SlotOrder<K> {
    fn default() -> Self {
        SlotOrder {
            lasts: Vec::new(),
            blocks: Vec::new(),
            len: 0,
        }
    }
}

impl<K: Ord + Copy> SlotOrder<K> {
    /// How many keys the order holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first (smallest) key, with its slot.
    pub fn first(&self) -> Option<(K, Slot)> {
        self.blocks.first().map(|b| b.entries()[0])
    }

    /// Adds `key` with its slot. A key already in the order keeps its
    /// place and takes the new slot; its old slot is returned.
    pub fn insert(&mut self, key: K, slot: Slot) -> Option<Slot> {
        // Both ends are found without a search.
        if let (Some(last), Some(block)) = (self.lasts.last_mut(), self.blocks.last_mut()) {
            if key > *last && block.len() < BLOCK_MAX {
                block.buf.push((key, slot));
                *last = key;
                self.len += 1;
                return None;
            }
        }
        if let Some(block) = self.blocks.first_mut() {
            if block.entries()[0].0 > key && block.len() < BLOCK_MAX {
                block.insert(0, (key, slot));
                self.len += 1;
                return None;
            }
        }
        // The first block whose last key is not below `key`, or the last
        // block when `key` is above all.
        let b = self.lasts.partition_point(|l| *l < key);
        let b = match b.checked_sub(usize::from(b == self.blocks.len())) {
            Some(b) => b,
            None => {
                // No blocks at all.
                self.blocks.push(Block {
                    head: 0,
                    buf: vec![(key, slot)],
                });
                self.lasts.push(key);
                self.len += 1;
                return None;
            }
        };
        let block = &mut self.blocks[b];
        let i = block.entries().partition_point(|e| e.0 < key);
        if let Some(held) = block.buf.get_mut(block.head + i).filter(|e| e.0 == key) {
            return Some(std::mem::replace(&mut held.1, slot));
        }
        self.len += 1;
        if block.len() < BLOCK_MAX {
            block.insert(i, (key, slot));
            if i + 1 == block.len() {
                self.lasts[b] = key;
            }
            return None;
        }
        // A full block. Past the end of the last block, or before the start
        // of the first, the key starts a block of its own, so that keys
        // arriving in order (asks; nodes moved to an end) fill whole
        // blocks, each in a buffer of a block's size.
        let fresh = || {
            let mut buf = Vec::with_capacity(BLOCK_MAX);
            buf.push((key, slot));
            Block { head: 0, buf }
        };
        if i == BLOCK_MAX {
            // Only the last block has a key below every one of its own.
            self.blocks.push(fresh());
            self.lasts.push(key);
            return None;
        }
        if i == 0 && b == 0 {
            self.blocks.insert(0, fresh());
            self.lasts.insert(0, key);
            return None;
        }
        // Elsewhere the block splits in halves first, so that no buffer
        // grows past a block's size.
        let half = BLOCK_MAX / 2;
        let mut tail = block.split_off(half);
        if i < half {
            block.insert(i, (key, slot));
        } else {
            tail.insert(i - half, (key, slot));
        }
        self.lasts[b] = block.last_key();
        self.lasts.insert(b + 1, tail.last_key());
        self.blocks.insert(b + 1, tail);
        None
    }

    /// Removes `key`; returns its slot, or `None` when it is not in the
    /// order.
    pub fn remove(&mut self, key: &K) -> Option<Slot> {
        let key = *key;
        // The front is where the fair policy takes its next node from, and
        // the pass its next ask.
        let (b, i) = match self.blocks.first() {
            Some(block) if block.entries()[0].0 == key => (0, 0),
            _ => {
                let b = self.lasts.partition_point(|l| *l < key);
                let block = self.blocks.get(b)?;
                let i = block.entries().partition_point(|e| e.0 < key);
                if block.entries().get(i)?.0 != key {
                    return None;
                }
                (b, i)
            }
        };
        let block = &mut self.blocks[b];
        let (_, slot) = block.remove(i);
        self.len -= 1;
        if block.len() == 0 {
            self.blocks.remove(b);
            self.lasts.remove(b);
        } else {
            if i == block.len() {
                self.lasts[b] = block.last_key();
            }
            if block.len() < BLOCK_MIN {
                self.join(b);
            }
        }
        Some(slot)
    }

    /// Joins the short block `b` with a neighbour they both fit in, the
    /// next one first.
    fn join(&mut self, b: usize) {
        let fits = |o: usize| self.blocks[b].len() + self.blocks[o].len() <= BLOCK_MAX;
        let (into, from) = if b + 1 < self.blocks.len() && fits(b + 1) {
            (b, b + 1)
        } else if b > 0 && fits(b - 1) {
            (b - 1, b)
        } else {
            return;
        };
        let moved = self.blocks.remove(from);
        self.blocks[into].buf.extend_from_slice(moved.entries());
        self.lasts.remove(into);
    }

    /// The keys with their slots, in key order.
    pub fn iter(&self) -> Iter<'_, K> {
        Iter {
            blocks: self.blocks.iter(),
            block: [].iter(),
        }
    }

    /// The keys above `key` (which need not be in the order) with their
    /// slots, in key order.
    pub fn iter_after(&self, key: &K) -> Iter<'_, K> {
        let b = self.lasts.partition_point(|l| l <= key);
        let mut blocks = self.blocks[b.min(self.blocks.len())..].iter();
        let block = match blocks.next() {
            Some(first) => {
                let e = first.entries();
                e[e.partition_point(|e| e.0 <= *key)..].iter()
            }
            None => [].iter(),
        };
        Iter { blocks, block }
    }

    /// The slots in key order.
    pub fn values(&self) -> Values<'_, K> {
        Values {
            entries: self.iter(),
            left: self.len,
        }
    }
}

impl<K: Ord + Copy> FromIterator<(K, Slot)> for SlotOrder<K> {
    /// The order of `entries`, in any order, whose keys are unique.
    fn from_iter<I: IntoIterator<Item = (K, Slot)>>(entries: I) -> Self {
        let mut all: Vec<(K, Slot)> = entries.into_iter().collect();
        all.sort_unstable_by_key(|e| e.0);
        debug_assert!(all.windows(2).all(|w| w[0].0 < w[1].0), "duplicate keys");
        // Blocks start three-quarters full, with room to grow either way.
        let per = BLOCK_MAX * 3 / 4;
        let blocks: Vec<Block<K>> = all
            .chunks(per)
            .map(|c| Block {
                head: 0,
                buf: c.to_vec(),
            })
            .collect();
        SlotOrder {
            lasts: blocks.iter().map(Block::last_key).collect(),
            blocks,
            len: all.len(),
        }
    }
}

/// [`SlotOrder::iter`]: the keys with their slots, in key order.
#[derive(Debug, Clone)]
pub struct Iter<'a, K> {
    blocks: std::slice::Iter<'a, Block<K>>,
    block: std::slice::Iter<'a, (K, Slot)>,
}

impl<K: Ord + Copy> Iterator for Iter<'_, K> {
    type Item = (K, Slot);

    #[inline]
    fn next(&mut self) -> Option<(K, Slot)> {
        loop {
            if let Some(e) = self.block.next() {
                return Some(*e);
            }
            self.block = self.blocks.next()?.entries().iter();
        }
    }
}

/// [`SlotOrder::values`]: the slots in key order.
#[derive(Debug, Clone)]
pub struct Values<'a, K> {
    entries: Iter<'a, K>,
    left: usize,
}

impl<K: Ord + Copy> Iterator for Values<'_, K> {
    type Item = Slot;

    #[inline]
    fn next(&mut self) -> Option<Slot> {
        let (_, slot) = self.entries.next()?;
        self.left -= 1;
        Some(slot)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<K: Ord + Copy> ExactSizeIterator for Values<'_, K> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Checks the order's invariants and returns its entries.
    fn entries<K: Ord + Copy + std::fmt::Debug>(o: &SlotOrder<K>) -> Vec<(K, Slot)> {
        assert_eq!(o.lasts.len(), o.blocks.len());
        for (b, block) in o.blocks.iter().enumerate() {
            assert!(
                block.len() > 0 && block.len() <= BLOCK_MAX,
                "block {b}: {} entries",
                block.len()
            );
            assert_eq!(o.lasts[b], block.last_key(), "block {b}'s last key");
            assert!(
                block.head < BLOCK_MAX && block.buf.len() <= 2 * BLOCK_MAX,
                "block {b}'s gap"
            );
        }
        // A block that fell short joined a neighbour if one had room, so two
        // short blocks are never neighbours (and blocks stay few).
        for w in o.blocks.windows(2) {
            assert!(
                w[0].len() >= BLOCK_MIN || w[1].len() >= BLOCK_MIN,
                "two short neighbours"
            );
        }
        let all: Vec<_> = o.blocks.iter().flat_map(|b| b.entries()).copied().collect();
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0), "keys out of order");
        assert_eq!(all.len(), o.len());
        let it = o.values();
        assert_eq!(it.len(), o.len());
        assert_eq!(
            it.collect::<Vec<_>>(),
            all.iter().map(|e| e.1).collect::<Vec<_>>()
        );
        assert_eq!(o.iter().collect::<Vec<_>>(), all);
        assert_eq!(o.first(), all.first().copied());
        assert_eq!(o.is_empty(), all.is_empty());
        all
    }

    /// A small deterministic generator (xorshift), so a failure replays.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// Random moves, inserts and removals, against a BTreeMap, in the
    /// patterns the scheduler makes: a node leaving the front for the back
    /// (the fair policy over equal nodes), for the front (binpacking), or
    /// for anywhere. Keys are drawn from narrow ranges so that they collide
    /// with the ones present, and blocks split and join often.
    #[test]
    fn the_order_agrees_with_a_btreemap_through_random_moves() {
        for (seed, spread) in [(1u64, 600u64), (7, 5_000), (42, 200_000)] {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let mut order = SlotOrder::default();
            let mut model: BTreeMap<u128, Slot> = BTreeMap::new();
            for step in 0..20_000u32 {
                // Scores 1..=spread; moves go to 0 (the front) or past
                // spread (the back).
                let key = u128::from(rng.next() % spread + 1) << 64 | u128::from(rng.next() % 64);
                match rng.next() % 6 {
                    0 | 1 if !model.contains_key(&key) => {
                        assert_eq!(order.insert(key, step), None);
                        model.insert(key, step);
                    }
                    2 => assert_eq!(order.remove(&key), model.remove(&key), "step {step}"),
                    3 | 4 if !model.is_empty() => {
                        // Move the first entry to the back (or the last to
                        // the front), as allocations do.
                        // In runs, so that an end block fills up.
                        let back = (step / 600) % 2 == 0;
                        let (old, slot) = if back {
                            model.pop_first().unwrap()
                        } else {
                            model.pop_last().unwrap()
                        };
                        assert_eq!(order.remove(&old), Some(slot));
                        let score = if back { u128::from(spread) + 1 } else { 0 };
                        let new = score << 64 | u128::from(step + 64);
                        if let std::collections::btree_map::Entry::Vacant(v) = model.entry(new) {
                            v.insert(slot);
                            assert_eq!(order.insert(new, slot), None);
                        }
                    }
                    5 => {
                        // A key present keeps its place and takes the new
                        // slot; the walk from after a key is the map's range.
                        if let Some((&k, _)) = model.range(key..).next() {
                            assert_eq!(order.insert(k, step), model.insert(k, step));
                        }
                        assert!(order
                            .iter_after(&key)
                            .eq(model.range(key + 1..).map(|(k, v)| (*k, *v))));
                    }
                    _ => {}
                }
                assert!(
                    order.blocks.iter().all(|b| b.len() <= BLOCK_MAX),
                    "step {step}"
                );
                if step % 997 == 0 {
                    assert_eq!(
                        entries(&order),
                        model.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>()
                    );
                }
            }
            assert_eq!(
                entries(&order),
                model.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>()
            );
            // Thinned out at random (blocks fall short all over and join),
            // then emptied, then refilled from an unsorted list.
            let mut keys: Vec<u128> = model.keys().copied().collect();
            for n in 0..keys.len() * 7 / 8 {
                let k = keys.swap_remove((rng.next() % keys.len() as u64) as usize);
                assert_eq!(order.remove(&k), model.remove(&k));
                if n % 97 == 0 {
                    entries(&order);
                }
            }
            for k in model.keys() {
                assert!(order.remove(k).is_some());
            }
            assert_eq!(order.len(), 0);
            assert!(order.blocks.is_empty() && order.iter().next().is_none());
            let rebuilt: SlotOrder<u128> = model.iter().rev().map(|(k, v)| (*k, *v)).collect();
            assert_eq!(
                entries(&rebuilt),
                model.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn a_missing_key_removes_nothing() {
        let mut o: SlotOrder<u128> = [(5u128, 1), (9, 2)].into_iter().collect();
        assert_eq!(o.remove(&7), None);
        assert_eq!(o.remove(&10), None);
        assert_eq!(o.remove(&0), None);
        assert_eq!(entries(&o), [(5, 1), (9, 2)]);
        assert_eq!(o.remove(&9), Some(2));
        assert_eq!(o.remove(&9), None);
        assert_eq!(entries(&o), [(5, 1)]);
        assert_eq!(o.iter_after(&5).next(), None);
        assert_eq!(o.iter_after(&4).collect::<Vec<_>>(), [(5, 1)]);
    }

    #[test]
    fn ask_keys_order_by_priority_then_arrival() {
        use std::cmp::Reverse;
        let mut o: SlotOrder<(Reverse<i32>, u64)> = SlotOrder::default();
        for (slot, (priority, seq)) in [(0, 1), (5, 2), (0, 3), (-3, 4), (5, 5)]
            .into_iter()
            .enumerate()
        {
            assert_eq!(o.insert((Reverse(priority), seq), slot as Slot), None);
        }
        assert_eq!(o.values().collect::<Vec<_>>(), [1, 4, 0, 2, 3]);
        assert_eq!(o.first(), Some(((Reverse(5), 2), 1)));
        let after: Vec<Slot> = o.iter_after(&(Reverse(0), 1)).map(|e| e.1).collect();
        assert_eq!(after, [2, 3]);
        assert_eq!(o.remove(&(Reverse(5), 2)), Some(1));
        assert_eq!(o.first(), Some(((Reverse(5), 5), 4)));
    }

    /// Keys that arrive in order (asks at the back, nodes moved to either
    /// end) fill whole blocks whose buffers hold one block: the order of
    /// 500,000 asks is then 24 bytes an ask.
    #[test]
    fn keys_in_order_fill_whole_blocks() {
        for back in [true, false] {
            let mut o: SlotOrder<u128> = SlotOrder::default();
            let n = BLOCK_MAX as u32 * 10 + 5;
            for k in 0..n {
                let key = if back { k } else { n - k };
                assert_eq!(o.insert(u128::from(key), k), None);
            }
            entries(&o);
            let full = o.blocks.iter().filter(|b| b.len() == BLOCK_MAX).count();
            assert_eq!(full, 10, "back {back}");
            assert!(
                o.blocks.iter().all(|b| b.buf.capacity() <= BLOCK_MAX),
                "back {back}"
            );
        }
    }
}
