//! A slab (a vector with a free list: stable integer slots, reused after
//! removal) whose storage grows in fixed chunks rather than by doubling
//! one vector.
//!
//! A partition's allocations live in one slab of ~100-byte entries. As one
//! vector it doubled as it grew: at a million allocations that copies
//! ~50 MB on the core thread in one go (a stall of several ms, between two
//! decisions) and holds the old and the new block at once for the copy.
//! Here the first chunk grows as a vector does, up to [`CHUNK`] entries,
//! and every later chunk is allocated at its full size once: nothing is
//! ever moved, and memory grows by one chunk at a time.
//!
//! Slots are handed out exactly as the `slab` crate's `Slab` does (the
//! most recently freed slot first, else the next new one), so
//! [`ChunkedSlab::vacant_key`] tells which slot the next insert takes: the
//! UUIDs SI v0.12 mints name it (`slot_uuid.rs`).

use std::fmt;

/// Slots per chunk: a power of two, so that a slot splits into a chunk and
/// a place with a shift and a mask.
const CHUNK_BITS: u32 = 12;
/// Entries in every chunk but the first, which grows up to it.
pub const CHUNK: usize = 1 << CHUNK_BITS;
const MASK: usize = CHUNK - 1;

enum Entry<T> {
    /// Free; holds the next free slot (the end of the list when it is the
    /// number of slots made so far).
    Vacant(usize),
    Occupied(T),
}

/// Values in stable slots, stored in chunks (module docs).
pub struct ChunkedSlab<T> {
    chunks: Vec<Vec<Entry<T>>>,
    /// The slot the next insert takes.
    next: usize,
    /// Slots made so far (occupied or vacant).
    made: usize,
}

impl<T> Default for ChunkedSlab<T> {
    fn default() -> Self {
        ChunkedSlab {
            chunks: Vec::new(),
            next: 0,
            made: 0,
        }
    }
}

impl<T> fmt::Debug for ChunkedSlab<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChunkedSlab")
            .field("made", &self.made)
            .field("chunks", &self.chunks.len())
            .finish()
    }
}

impl<T> ChunkedSlab<T> {
    /// The slot the next [`Self::insert`] takes.
    pub fn vacant_key(&self) -> usize {
        self.next
    }

    #[inline]
    fn entry(&self, slot: usize) -> Option<&Entry<T>> {
        self.chunks.get(slot >> CHUNK_BITS)?.get(slot & MASK)
    }

    #[inline]
    fn entry_mut(&mut self, slot: usize) -> Option<&mut Entry<T>> {
        self.chunks
            .get_mut(slot >> CHUNK_BITS)?
            .get_mut(slot & MASK)
    }

    /// The value in `slot`, if one is there.
    #[inline]
    pub fn get(&self, slot: usize) -> Option<&T> {
        match self.entry(slot)? {
            Entry::Occupied(v) => Some(v),
            Entry::Vacant(_) => None,
        }
    }

    /// The value in `slot`, if one is there, to change.
    #[inline]
    pub fn get_mut(&mut self, slot: usize) -> Option<&mut T> {
        match self.entry_mut(slot)? {
            Entry::Occupied(v) => Some(v),
            Entry::Vacant(_) => None,
        }
    }

    /// Stores `value`; returns its slot ([`Self::vacant_key`] before).
    #[inline]
    pub fn insert(&mut self, value: T) -> usize {
        let slot = self.next;
        if slot == self.made {
            self.push_new(value);
        } else {
            let e = self.entry_mut(slot).expect("a free slot is a made one");
            let Entry::Vacant(after) = *e else {
                unreachable!("the free list holds only vacant slots")
            };
            *e = Entry::Occupied(value);
            self.next = after;
        }
        slot
    }

    /// A new slot at the end, in the last chunk or a new one (inline: the
    /// value is moved once, into its place).
    #[inline(always)]
    fn push_new(&mut self, value: T) {
        let place = self.made & MASK;
        if place == 0 {
            // The first chunk starts small (most partitions hold few
            // allocations); the later ones are made whole, never to move.
            let capacity = if self.chunks.is_empty() { 0 } else { CHUNK };
            self.chunks.push(Vec::with_capacity(capacity));
        }
        let chunk = self.chunks.last_mut().expect("a chunk with room");
        chunk.push(Entry::Occupied(value));
        self.made += 1;
        self.next = self.made;
    }

    /// Takes the value out of `slot`, which becomes the next one
    /// [`Self::insert`] takes. Panics when `slot` holds none.
    pub fn remove(&mut self, slot: usize) -> T {
        self.try_remove(slot)
            .unwrap_or_else(|| panic!("slot {slot} holds no value"))
    }

    /// [`Self::remove`], or `None` when `slot` holds no value.
    pub fn try_remove(&mut self, slot: usize) -> Option<T> {
        let next = self.next;
        let e = self.entry_mut(slot)?;
        if matches!(e, Entry::Vacant(_)) {
            return None;
        }
        let Entry::Occupied(v) = std::mem::replace(e, Entry::Vacant(next)) else {
            unreachable!("checked occupied")
        };
        self.next = slot;
        Some(v)
    }

    /// The values with their slots, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &T)> + '_ {
        self.chunks.iter().enumerate().flat_map(|(c, chunk)| {
            chunk.iter().enumerate().filter_map(move |(i, e)| match e {
                Entry::Occupied(v) => Some(((c << CHUNK_BITS) | i, v)),
                Entry::Vacant(_) => None,
            })
        })
    }
}

impl<T> std::ops::Index<usize> for ChunkedSlab<T> {
    type Output = T;

    #[inline]
    fn index(&self, slot: usize) -> &T {
        match self.get(slot) {
            Some(v) => v,
            None => panic!("slot {slot} holds no value"),
        }
    }
}

impl<T> std::ops::IndexMut<usize> for ChunkedSlab<T> {
    #[inline]
    fn index_mut(&mut self, slot: usize) -> &mut T {
        match self.get_mut(slot) {
            Some(v) => v,
            None => panic!("slot {slot} holds no value"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random inserts and removals, against the `slab` crate: the same
    /// slots, values, next slot and listing, across several chunks.
    #[test]
    fn hands_out_the_slots_the_slab_crate_does() {
        let mut rng = fastrand::Rng::with_seed(0x5_1ab);
        let mut mine = ChunkedSlab::default();
        let mut theirs = slab::Slab::new();
        let mut live: Vec<usize> = Vec::new();
        for round in 0..60_000u32 {
            // Grow for most of the run, then shrink, then grow again:
            // removals reach every chunk and slots are reused across them.
            let grow = match round {
                0..=25_000 => rng.u8(..10) < 8,
                25_001..=40_000 => rng.u8(..10) < 3,
                _ => rng.u8(..10) < 6,
            };
            assert_eq!(mine.vacant_key(), theirs.vacant_key());
            if grow || live.is_empty() {
                let s = mine.insert(round);
                assert_eq!(s, theirs.insert(round));
                live.push(s);
            } else {
                let s = live.swap_remove(rng.usize(..live.len()));
                assert_eq!(mine.remove(s), theirs.remove(s));
                assert!(mine.get(s).is_none());
                assert!(mine.try_remove(s).is_none());
            }
            if round % 1_000 == 0 {
                assert_eq!(mine.iter().count(), theirs.len());
            }
        }
        assert!(mine.chunks.len() > 3, "the run spans several chunks");
        for &s in &live {
            assert_eq!(mine[s], theirs[s]);
            mine[s] += 1;
            assert_eq!(mine.get(s), Some(&(theirs[s] + 1)));
        }
        let listed: Vec<(usize, u32)> = mine.iter().map(|(s, v)| (s, *v - 1)).collect();
        let want: Vec<(usize, u32)> = theirs.iter().map(|(s, v)| (s, *v)).collect();
        assert_eq!(listed, want);
    }

    #[test]
    fn only_the_first_chunk_ever_grows() {
        let mut s = ChunkedSlab::default();
        for i in 0..CHUNK * 3 + 5 {
            s.insert(i);
        }
        assert_eq!(s.chunks.len(), 4);
        assert!(s.chunks[1..].iter().all(|c| c.capacity() == CHUNK));
        // The first chunk's doubling ends at the chunk's size.
        assert_eq!(s.chunks[0].capacity(), CHUNK);
        assert!(s.get(CHUNK * 4).is_none(), "past the end");
    }

    #[test]
    #[should_panic(expected = "holds no value")]
    fn removing_a_free_slot_panics() {
        let mut s = ChunkedSlab::default();
        let a = s.insert(1);
        s.remove(a);
        s.remove(a);
    }
}
