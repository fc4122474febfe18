//! An application's asks, and what it keeps under an ask's key: the whole
//! ask while it may still be scheduled, and a compact stand-in once its
//! last allocation is made (the allocation record carries the rest). At a
//! million allocated asks the whole `Ask` held inline was the largest item
//! of the heap (docs/performance.md); boxed, it goes back to the allocator
//! at placement, in the size class the allocation record takes.

use std::cmp::Reverse;
use std::sync::Arc;
use std::time::Instant;

use super::keyed::{KeyedSlab, Slot};
use super::slot_index::KeptHash;
use crate::scheduler::resource::Resource;

/// An allocation ask.
#[derive(Debug, Clone)]
pub struct Ask {
    /// Key within the application.
    pub key: Arc<str>,
    /// Resource per allocation.
    pub resource: Resource,
    /// Allocations this ask may still produce.
    pub pending_repeat: i32,
    /// Higher goes first.
    pub priority: i32,
    /// Arrival order, for ties on priority.
    pub seq: u64,
    /// Arrival time.
    pub created: Instant,
    /// Tags, copied into allocations.
    pub tags: crate::scheduler::tags::Tags,
    /// Gang task group.
    pub task_group: Arc<str>,
    /// Whether this is a gang placeholder.
    pub placeholder: bool,
    /// Node the ask is pinned to, if any.
    pub required_node: Option<Arc<str>>,
    /// May trigger guarantee preemption (SI v1.x `allowPreemptOther`;
    /// always true in the v0.12 edition).
    pub preempt_other: bool,
    /// Its allocations are preferred victims (`allowPreemptSelf`; see
    /// [`crate::scheduler::request::AskRequest::preempt_self`]).
    pub preempt_self: bool,
    /// The application's first task (SI v1.x `originator`).
    pub originator: bool,
    /// SI v1.x: the hash of the key in the partition's allocation index,
    /// taken when the ask arrived (the check that the key is not
    /// allocated), so that its allocation is filed without hashing the
    /// key again. `None` in v0.12, whose allocations get new UUIDs.
    pub alloc_hash: Option<KeptHash>,
    /// Why it waits, as the last pass that tried it found, with its stamp
    /// (boxed: most asks are placed at their first try and never need
    /// one; and an `Ask` of at most 160 bytes boxes in the size class of
    /// the allocation record, which reuses it once the ask is placed).
    pub pending: Option<Box<StampedReason>>,
}

/// An ask's reason and the passes that found its cause again since it was
/// written (pending/stamp.rs). Reads as the reason.
#[derive(Debug, Clone)]
pub struct StampedReason {
    /// The reason.
    pub reason: super::pending::PendingReason,
    /// Passes counted on it since it was written.
    pub stamp: super::pending::ReasonStamp,
}

impl StampedReason {
    /// A reason just written, with nothing counted.
    pub fn new(reason: super::pending::PendingReason) -> Box<Self> {
        Box::new(StampedReason {
            reason,
            stamp: Default::default(),
        })
    }

    /// The reason with the passes only counted since it was written
    /// folded in, before it is updated.
    pub fn settle(&mut self) {
        self.stamp.settle(&mut self.reason);
    }
}

impl std::ops::Deref for StampedReason {
    type Target = super::pending::PendingReason;
    fn deref(&self) -> &Self::Target {
        &self.reason
    }
}

impl std::ops::DerefMut for StampedReason {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.reason
    }
}

impl Ask {
    /// Why it waits, with the passes that found the same cause since the
    /// reason was last written counted in.
    pub fn reason(&self) -> Option<std::borrow::Cow<'_, super::pending::PendingReason>> {
        self.pending.as_deref().map(|r| r.stamp.read(&r.reason))
    }

    /// The ask's key in its application's order.
    pub fn order_key(&self) -> AskOrderKey {
        (Reverse(self.priority), self.seq)
    }
}

/// Priority descending, then arrival order (sequence numbers are unique in
/// the partition, so the key is too).
pub type AskOrderKey = (Reverse<i32>, u64);

/// An ask that has made its last allocation, as readers of a stand-in
/// need it: kept under its key so that a re-sent key replaces it, an SI
/// v1.x update finds it allocated, and its removal cancels what names it.
/// Only a real ask (not a placeholder) outside a gang swap is made one
/// (`Partition::compact_placed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlacedAsk {
    /// Its arrival order ([`Ask::seq`]): slot reuse is told apart by it.
    pub seq: u64,
    /// [`Ask::priority`].
    pub priority: i32,
    /// Whether it was pinned to a node ([`Ask::required_node`]).
    pub required_node: bool,
}

impl PlacedAsk {
    /// The stand-in of `ask`.
    pub fn of(ask: &Ask) -> Self {
        PlacedAsk {
            seq: ask.seq,
            priority: ask.priority,
            required_node: ask.required_node.is_some(),
        }
    }
}

/// An ask under its key: whole or placed.
#[derive(Debug, Clone)]
pub enum AskEntry {
    /// Waiting, or placed but still needed whole (a placeholder, a gang
    /// swap's real ask that an unlink may reopen).
    Whole(Box<Ask>),
    /// Fully allocated: the compact stand-in, whose resource types the
    /// pending sums list (its removal takes zero of each off them: no
    /// change, so it needs no resource).
    Placed(PlacedAsk),
    /// Fully allocated, with a resource type the pending sums do not list
    /// (an allocation the RM placed, a resize): the resource is kept, for
    /// the zero its removal lists there.
    PlacedListing(Box<(PlacedAsk, Resource)>),
}

impl From<Ask> for AskEntry {
    fn from(a: Ask) -> Self {
        AskEntry::Whole(Box::new(a))
    }
}

impl AskEntry {
    /// The whole ask, `None` for a compact stand-in.
    #[inline]
    pub fn whole(&self) -> Option<&Ask> {
        match self {
            AskEntry::Whole(a) => Some(a),
            AskEntry::Placed(_) | AskEntry::PlacedListing(_) => None,
        }
    }

    /// The whole ask to change, `None` for a compact stand-in.
    #[inline]
    pub fn whole_mut(&mut self) -> Option<&mut Ask> {
        match self {
            AskEntry::Whole(a) => Some(a),
            AskEntry::Placed(_) | AskEntry::PlacedListing(_) => None,
        }
    }

    /// The stand-in, `None` for a whole ask.
    pub fn placed(&self) -> Option<&PlacedAsk> {
        match self {
            AskEntry::Whole(_) => None,
            AskEntry::Placed(p) => Some(p),
            AskEntry::PlacedListing(b) => Some(&b.0),
        }
    }

    /// [`Ask::seq`].
    pub fn seq(&self) -> u64 {
        match self.placed() {
            Some(p) => p.seq,
            None => self.whole().map_or(0, |a| a.seq),
        }
    }

    /// [`Ask::priority`].
    pub fn priority(&self) -> i32 {
        match self.placed() {
            Some(p) => p.priority,
            None => self.whole().map_or(0, |a| a.priority),
        }
    }

    /// [`Ask::order_key`].
    pub fn order_key(&self) -> AskOrderKey {
        (Reverse(self.priority()), self.seq())
    }

    /// [`Ask::pending_repeat`]: none left for a stand-in.
    pub fn pending_repeat(&self) -> i32 {
        self.whole().map_or(0, |a| a.pending_repeat)
    }

    /// Whether it is pinned to a node.
    pub fn has_required_node(&self) -> bool {
        match self.placed() {
            Some(p) => p.required_node,
            None => self.whole().is_some_and(|a| a.required_node.is_some()),
        }
    }

    /// The demand its removal takes off the pending sums: its resource
    /// times its repeats left; for a stand-in zero of each type the sums
    /// may not list.
    pub fn demand(&self) -> Resource {
        match self {
            AskEntry::Whole(a) => a.resource.mul(a.pending_repeat.max(0) as i64),
            AskEntry::Placed(_) => Resource::new(),
            AskEntry::PlacedListing(b) => b.1.mul(0),
        }
    }

    /// Sets the resource of a fully allocated ask (a resize of its
    /// allocation); `listed`: whether the pending sums list its types.
    pub fn resize_placed(&mut self, new: &Resource, listed: bool) {
        match self {
            AskEntry::Whole(a) => a.resource = new.clone(),
            AskEntry::PlacedListing(b) => b.1 = new.clone(),
            AskEntry::Placed(p) if !listed => {
                *self = AskEntry::PlacedListing(Box::new((*p, new.clone())));
            }
            AskEntry::Placed(_) => {}
        }
    }

    /// [`Ask::placeholder`] (a stand-in is never one).
    pub fn placeholder(&self) -> bool {
        self.whole().is_some_and(|a| a.placeholder)
    }

    /// The stand-in of a fully allocated whole `ask`; `listed`: whether
    /// the pending sums list its resource types.
    pub fn placed_of(ask: &Ask, listed: bool) -> AskEntry {
        let p = PlacedAsk::of(ask);
        if listed {
            AskEntry::Placed(p)
        } else {
            AskEntry::PlacedListing(Box::new((p, ask.resource.clone())))
        }
    }
}

impl KeyedSlab<AskEntry> {
    /// The whole ask in `slot` (`None`: the slot is free or holds a
    /// stand-in). The asks of an application's order are whole.
    #[inline]
    pub fn whole_at(&self, slot: Slot) -> Option<&Ask> {
        self.at(slot).and_then(AskEntry::whole)
    }

    /// [`Self::whole_at`], to change.
    #[inline]
    pub fn whole_at_mut(&mut self, slot: Slot) -> Option<&mut Ask> {
        self.try_at_mut(slot).and_then(AskEntry::whole_mut)
    }

    /// The whole ask `key` (`None`: no such key, or a stand-in).
    pub fn whole(&self, key: &str) -> Option<&Ask> {
        self.get(key).and_then(AskEntry::whole)
    }

    /// [`Self::whole`], to change.
    pub fn whole_mut(&mut self, key: &str) -> Option<&mut Ask> {
        self.get_mut(key).and_then(AskEntry::whole_mut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_two_words() {
        // The bool's spare values tag the enum (and the slab's vacant
        // entries): 16 bytes per key instead of a whole ask.
        assert_eq!(std::mem::size_of::<AskEntry>(), 16);
        assert_eq!(std::mem::size_of::<Option<AskEntry>>(), 16);
        // The slab's own entry: vacant (the next free slot) or taken by
        // the key (keyed.rs keeps it beside the record) and the entry.
        #[allow(dead_code)]
        enum SlabEntry {
            Vacant(usize),
            Occupied((std::sync::Arc<str>, AskEntry)),
        }
        assert_eq!(std::mem::size_of::<SlabEntry>(), 32);
    }

    #[test]
    fn a_boxed_ask_fits_the_allocation_record_s_size_class() {
        // A placed ask's box is freed as its allocation record is made:
        // in one mimalloc size class (160 bytes, outcome.rs) the record
        // reuses the block; in the next class up freed boxes wait for the
        // allocator's purge, ~60 MiB more at 1M single asks.
        assert!(
            std::mem::size_of::<Ask>() <= 160,
            "{}",
            std::mem::size_of::<Ask>()
        );
    }
}
