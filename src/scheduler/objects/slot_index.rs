//! A hash index of slab slots whose keys live in the slab entries (the
//! allocation UUID index, the id index of a [`super::keyed::KeyedSlab`]).
//!
//! A bucket holds the slot and 32 bits of its key's hash: 8 bytes where a
//! map holding an `Arc<str>` or a 16-byte UUID takes 20-24. A probe
//! compares the key in the slot's entry (the caller's `eq`); growing the
//! table rehashes from the stored bits, so it reads no entry and follows
//! no key's pointer (with a million allocations keyed by RM strings,
//! three cache misses each per regrowth otherwise).

use std::hash::{BuildHasher, Hasher};
use std::num::NonZeroU32;

use hashbrown::HashTable;

/// A key's hash as the index uses it (of one index: each has its own
/// random seed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyHash(u32);

/// A [`KeyHash`] kept for later, never zero: an `Option` of one takes
/// no more room than the hash (an ask keeps one, and its box must stay
/// in its size class).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeptHash(NonZeroU32);

impl KeyHash {
    /// Whether two hashes are the same (a key's candidates share it).
    pub fn same(self, other: KeyHash) -> bool {
        self.0 == other.0
    }

    /// The hash to keep; `None` for zero (one key in 2^32 is hashed again).
    pub fn kept(self) -> Option<KeptHash> {
        NonZeroU32::new(self.0).map(KeptHash)
    }

    /// The table's 64-bit hash: the 32 bits twice. hashbrown takes the
    /// bucket from the low bits and its 7-bit tag from the top ones, which
    /// stay independent up to 2^25 buckets.
    fn full(self) -> u64 {
        (u64::from(self.0) << 32) | u64::from(self.0)
    }
}

impl From<KeptHash> for KeyHash {
    fn from(k: KeptHash) -> Self {
        KeyHash(k.0.get())
    }
}

/// Slots found by the hash of a key their entries hold.
#[derive(Clone, Default)]
pub struct SlotIndex {
    table: HashTable<(u32, u32)>,
    hasher: foldhash::fast::RandomState,
}

impl std::fmt::Debug for SlotIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlotIndex")
            .field("len", &self.table.len())
            .finish()
    }
}

impl SlotIndex {
    /// How many slots are indexed.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// The hash of a key's bytes (the same bytes always give the same
    /// one). The bytes alone: foldhash's `write` folds their length in, and
    /// one call is one fold, where hashing a `str` or an enum through
    /// `Hash` adds a terminator or a discriminant, each a fold of its own.
    pub fn hash(&self, key: &[u8]) -> KeyHash {
        let mut state = self.hasher.build_hasher();
        state.write(key);
        let h = state.finish();
        KeyHash((h ^ (h >> 32)) as u32)
    }

    /// The slot whose entry's key `eq` accepts, among those with hash `h`.
    pub fn find(&self, h: KeyHash, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        self.table
            .find(h.full(), |&(s, bits)| bits == h.0 && eq(s))
            .map(|&(s, _)| s)
    }

    /// Indexes `slot` under `h`; the caller knows no entry has its key.
    pub fn insert_unique(&mut self, h: KeyHash, slot: u32) {
        self.table
            .insert_unique(h.full(), (slot, h.0), |&(_, bits)| KeyHash(bits).full());
    }

    /// Indexes each slot of `batch` under its hash; the caller knows no
    /// two entries share a key and none is indexed yet. They go in in the
    /// order of their buckets, so that the table is written from one end
    /// to the other rather than at random: a million allocations' index
    /// does not fit any cache, and a random bucket costs a cache and a
    /// TLB miss. The order leaves `batch` sorted.
    pub fn insert_batch(&mut self, batch: &mut [(KeyHash, u32)]) {
        self.table
            .reserve(batch.len(), |&(_, bits)| KeyHash(bits).full());
        // hashbrown's bucket is the hash's low bits under its mask, and it
        // holds 7/8 of its buckets (all when under 8). A wrong guess here
        // costs only the order's benefit.
        let capacity = self.table.capacity();
        let buckets = if capacity < 8 {
            capacity + 1
        } else {
            capacity / 7 * 8
        };
        let mask = (buckets.next_power_of_two() - 1) as u32;
        batch.sort_unstable_by_key(|&(h, _)| h.0 & mask);
        for &(h, slot) in batch.iter() {
            self.insert_unique(h, slot);
        }
    }

    /// Takes out the slot `eq` accepts among those with hash `h`.
    pub fn remove(&mut self, h: KeyHash, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        let e = self
            .table
            .find_entry(h.full(), |&(s, bits)| bits == h.0 && eq(s))
            .ok()?;
        Some(e.remove().0 .0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_found_and_removed_through_growth_one_by_one_or_in_batches() {
        let keys: Vec<String> = (0..10_000).map(|i| format!("k{i}")).collect();
        let mut ix = SlotIndex::default();
        for (i, k) in keys.iter().enumerate().take(3_000) {
            ix.insert_unique(ix.hash(k.as_bytes()), i as u32);
        }
        // The rest in batches, each regrowing the table.
        for chunk in (3_000..10_000u32).collect::<Vec<_>>().chunks(2_500) {
            let mut batch: Vec<(KeyHash, u32)> = chunk
                .iter()
                .map(|&i| (ix.hash(keys[i as usize].as_bytes()), i))
                .collect();
            ix.insert_batch(&mut batch);
        }
        assert_eq!(ix.len(), 10_000);
        let at = |s: u32| keys[s as usize].as_str();
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(
                ix.find(ix.hash(k.as_bytes()), |s| at(s) == k),
                Some(i as u32)
            );
        }
        assert_eq!(ix.find(ix.hash(b"nope"), |s| at(s) == "nope"), None);
        for k in keys.iter().step_by(2) {
            assert!(ix.remove(ix.hash(k.as_bytes()), |s| at(s) == k).is_some());
        }
        assert_eq!(ix.len(), 5_000);
        assert_eq!(ix.find(ix.hash(b"k2"), |s| at(s) == "k2"), None);
        assert_eq!(ix.find(ix.hash(b"k3"), |s| at(s) == "k3"), Some(3));
    }

    #[test]
    fn a_kept_hash_is_the_hash_and_only_zero_is_not_kept() {
        let ix = SlotIndex::default();
        for k in (0..1_000).map(|i| format!("k{i}")) {
            let h = ix.hash(k.as_bytes());
            assert_eq!(h.kept().map(KeyHash::from), Some(h));
        }
        assert_eq!(KeyHash(0).kept(), None);
        assert_eq!(std::mem::size_of::<Option<KeptHash>>(), 4);
    }
}
