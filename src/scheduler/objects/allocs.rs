//! A partition's live allocations: one slab, reached by slot, with one
//! index from UUID. A node and an application list the slots of their
//! allocations; each slab entry remembers its position in both lists, so
//! an allocation is linked and unlinked without hashing anything but its
//! UUID once (the index: lookups by UUID and the duplicate check when a
//! node registers with existing allocations).
//!
//! A UUID the table minted itself names its slot ([`SlotUuids`]): a
//! lookup reads that slot, and the hash index holds only the others (an
//! RM's UUIDs and SI v1.x keys).
//!
//! Past 65,536 entries, an allocation a pass makes joins the index with
//! the others of its pass, in bucket order ([`SlotIndex::insert_batch`]),
//! and is found until then by a scan of the few waiting: at a million
//! allocations one random insert each was a fifth of the core thread
//! (docs/performance-index.md, "Batched index inserts"). Outside a pass
//! (a node registering with its allocations checks each for a duplicate
//! first) every insert is made at once.
//!
//! The index holds slots ([`SlotIndex`]): a probe compares the UUID in the
//! slot's record, and a hash is taken of the UUID as held ([`UuidRef`]: a
//! canonical UUID's bytes, any other string as given). Keys of 16 bytes or
//! an `Arc<str>` in each bucket cost ~25 MiB more at a million
//! allocations, whose index has two million buckets.
//!
//! The real allocation of a gang swap in flight on another node than its
//! placeholder is a slab entry outside the index and outside any
//! application: it sits in its node's list (usage, node removal, dump) and
//! its swap holds the slot until the swap is confirmed or undone.

use std::sync::Arc;

use super::chunked_slab::ChunkedSlab;
use super::queue::QueueId;
use super::slot_index::{KeyHash, SlotIndex};
use super::slot_uuid::SlotUuids;
use crate::scheduler::alloc_uuid::{AllocUuid, AsUuidRef, UuidRef};
use crate::scheduler::outcome::NewAllocation;
use crate::scheduler::resource::Resource;

/// Tag that pins an ask to one node (here, not in `application`: the
/// victim facts read it and `application` lists allocations).
pub const TAG_REQUIRED_NODE: &str = "yunikorn.apache.org/requiredNode";

/// An allocation's slot: stable while the allocation lives.
pub type AllocSlot = u32;

const NOWHERE: u32 = u32::MAX;

/// Allocations made that wait for the index at most: a lookup scans them.
const UNFILED_MAX: usize = 4096;

/// The size from which the index takes new allocations in batches: a
/// smaller one stays in cache, where the order gains nothing (the unit
/// tests batch early, to run both ways).
const BATCH_FROM: usize = if cfg!(test) { 64 } else { 1 << 16 };

/// An allocation: an ask placed on a node. The record is the one reported
/// to the RM, shared rather than copied: the partition's entry stays small
/// and making an allocation builds one record, not two.
#[derive(Debug, Clone)]
pub struct Allocation {
    /// What the RM was told (uuid, key, application, node, resource, ...).
    pub record: Arc<NewAllocation>,
    /// The application's leaf queue.
    pub queue: QueueId,
}

impl std::ops::Deref for Allocation {
    type Target = NewAllocation;
    fn deref(&self) -> &NewAllocation {
        &self.record
    }
}

/// The slots of a node's or an application's allocations, in no
/// particular order (removal swaps the last one into the gap).
#[derive(Debug, Clone, Default)]
pub struct AllocList(Vec<AllocSlot>);

impl AllocList {
    /// How many allocations are listed.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The listed slots.
    pub fn slots(&self) -> impl Iterator<Item = AllocSlot> + '_ {
        self.0.iter().copied()
    }
}

/// Which of an entry's two lists.
#[derive(Debug, Clone, Copy)]
pub enum Side {
    /// Its application's list.
    App,
    /// Its node's list.
    Node,
}

/// What preemption orders and filters victims by, copied out of the
/// allocation's shared record into its slab entry: a walk over thousands
/// of allocations reads the slab, mostly in order, rather than each record
/// (a cache miss apiece). Set from the record whenever the entry's
/// allocation is, so it cannot differ from it.
#[derive(Debug, Clone)]
pub struct VictimFacts {
    /// The record's resource.
    pub resource: Resource,
    /// The record's priority.
    pub priority: i32,
    /// Insertion order: larger is newer (preemption's victim order).
    pub born: u64,
    /// Clock hour since the Unix epoch it was added in (quota
    /// preemption's victim order).
    pub hour: u32,
    /// The record's `placeholder`.
    pub placeholder: bool,
    /// The record's `preempt_self`.
    pub preempt_self: bool,
    /// The record's `originator`.
    pub originator: bool,
    /// Whether its tags bind it to its node (never a victim).
    pub required_node: bool,
}

impl VictimFacts {
    fn of(a: &NewAllocation, born: u64, hour: u32) -> Self {
        VictimFacts {
            resource: a.resource.clone(),
            priority: a.priority,
            born,
            hour,
            placeholder: a.placeholder,
            preempt_self: a.preempt_self,
            originator: a.originator,
            required_node: a.tags.contains_key(TAG_REQUIRED_NODE),
        }
    }
}

#[derive(Debug)]
struct Entry {
    alloc: Allocation,
    facts: VictimFacts,
    /// Position in the application's list, `NOWHERE` when in none.
    app_pos: u32,
    /// Position in the node's list, `NOWHERE` when in none.
    node_pos: u32,
    /// How a lookup by UUID finds it.
    found: Found,
}

/// How a lookup by UUID finds an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    /// Through the hash index.
    Hashed,
    /// Through the slot its UUID names (minted here).
    BySlot,
    /// Not at all: a swap's real allocation in flight.
    Not,
}

impl Entry {
    /// Puts `alloc` in the entry, its facts with it (same age).
    fn set(&mut self, alloc: Allocation) -> Allocation {
        self.facts = VictimFacts::of(&alloc.record, self.facts.born, self.facts.hour);
        std::mem::replace(&mut self.alloc, alloc)
    }
}

impl Entry {
    fn pos(&mut self, side: Side) -> &mut u32 {
        match side {
            Side::App => &mut self.app_pos,
            Side::Node => &mut self.node_pos,
        }
    }
}

/// Live allocations by slot, with the UUID index.
#[derive(Default)]
pub struct AllocTable {
    slab: ChunkedSlab<Entry>,
    /// The UUID index: the slots of the indexed entries, found by the
    /// hash of their record's UUID (module docs).
    index: SlotIndex,
    /// Mints the UUIDs that name their slot, and reads it back.
    minted: SlotUuids,
    /// How many entries are found by their slot (outside the index).
    by_slot: usize,
    /// Entries to be indexed, with their hash ([`Self::file_unfiled`]).
    unfiled: Vec<(KeyHash, AllocSlot)>,
    /// Whether inserts wait in `unfiled` (during a pass).
    batching: bool,
    /// The next entry's `born`.
    next_born: u64,
    /// The next entry's `hour`.
    hour: u32,
}

impl std::fmt::Debug for AllocTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AllocTable")
            .field("slab", &self.slab)
            .field("indexed", &self.index.len())
            .field("by_slot", &self.by_slot)
            .field("unfiled", &self.unfiled.len())
            .finish()
    }
}

/// The UUID of the record in `slot`, as the index compares it.
fn uuid_at(slab: &ChunkedSlab<Entry>, slot: AllocSlot) -> UuidRef<'_> {
    slab[slot as usize].alloc.record.uuid.as_ref()
}

impl AllocTable {
    /// How many live allocations a UUID finds (swaps in flight aside).
    pub fn len(&self) -> usize {
        self.index.len() + self.by_slot + self.unfiled.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A new UUID for the next allocation to be inserted (SI v0.12 mints
    /// one per allocation): it names the slot that allocation will take,
    /// so no index entry is made for it. Inserted elsewhere, it is indexed
    /// as any other UUID; never inserted, it is never minted again.
    pub fn mint_uuid(&mut self) -> AllocUuid {
        let slot =
            AllocSlot::try_from(self.slab.vacant_key()).expect("fewer than 2^32 live allocations");
        AllocUuid::from_bits(self.minted.mint(slot))
    }

    /// The slot of allocation `uuid` (an RM's text: a canonical UUID finds
    /// the one held as bytes).
    pub fn slot_of<Q: AsUuidRef + ?Sized>(&self, uuid: &Q) -> Option<AllocSlot> {
        self.slot_by(uuid.uuid_ref())
    }

    /// [`Self::slot_of`], with the hash the index files `uuid` under: a
    /// caller that inserts it when absent hands that hash to
    /// [`Self::insert_hashed`] rather than hashing it again (SI v1.x: an
    /// ask's key is looked up when it arrives and filed when placed).
    #[inline]
    pub fn probe<Q: AsUuidRef + ?Sized>(&self, uuid: &Q) -> (Option<AllocSlot>, KeyHash) {
        let uuid = uuid.uuid_ref();
        let h = self.index.hash(uuid.as_bytes());
        let slot = self.slot_minted(uuid);
        (slot.or_else(|| self.slot_hashed(uuid, h)), h)
    }

    fn slot_by(&self, uuid: UuidRef<'_>) -> Option<AllocSlot> {
        self.slot_minted(uuid)
            .or_else(|| self.slot_hashed(uuid, self.index.hash(uuid.as_bytes())))
    }

    /// The slot `uuid` names, when minted here and held there.
    #[inline]
    fn slot_minted(&self, uuid: UuidRef<'_>) -> Option<AllocSlot> {
        let UuidRef::Bits(bits) = uuid else {
            return None;
        };
        let slot = self.minted.slot_of(&bits)?;
        let held = self
            .slab
            .get(slot as usize)
            .filter(|e| e.found == Found::BySlot);
        held.is_some_and(|e| e.alloc.record.uuid.as_ref() == uuid)
            .then_some(slot)
    }

    /// The slot of `uuid` among the hashed ones (`h`: its hash).
    #[inline]
    fn slot_hashed(&self, uuid: UuidRef<'_>, h: KeyHash) -> Option<AllocSlot> {
        let slab = &self.slab;
        let found = self.index.find(h, |s| uuid_at(slab, s) == uuid);
        found.or_else(|| {
            self.unfiled
                .iter()
                .find(|&&(u, s)| u.same(h) && uuid_at(slab, s) == uuid)
                .map(|&(_, s)| s)
        })
    }

    /// From now until [`Self::file_unfiled`], a large index takes new
    /// allocations in batches (a pass).
    pub fn batch_inserts(&mut self) {
        self.batching = true;
    }

    /// Indexes the allocations waiting, and makes the next inserts at once.
    pub fn file_unfiled(&mut self) {
        self.flush_unfiled();
        self.batching = false;
    }

    fn flush_unfiled(&mut self) {
        if !self.unfiled.is_empty() {
            self.index.insert_batch(&mut self.unfiled);
            self.unfiled.clear();
        }
    }

    /// Whether allocation `uuid` exists.
    pub fn contains_key<Q: AsUuidRef + ?Sized>(&self, uuid: &Q) -> bool {
        self.slot_of(uuid).is_some()
    }

    /// Allocation `uuid`.
    pub fn get<Q: AsUuidRef + ?Sized>(&self, uuid: &Q) -> Option<&Allocation> {
        self.slot_of(uuid).map(|s| &self.slab[s as usize].alloc)
    }

    /// Allocation `uuid` with its UUID as held.
    pub fn get_key_value<Q: AsUuidRef + ?Sized>(
        &self,
        uuid: &Q,
    ) -> Option<(&AllocUuid, &Allocation)> {
        let a = self.get(uuid)?;
        Some((&a.record.uuid, a))
    }

    /// The allocation in `slot` (indexed or a swap's real allocation).
    pub fn at(&self, slot: AllocSlot) -> &Allocation {
        &self.slab[slot as usize].alloc
    }

    /// Whether a lookup by UUID finds the allocation in `slot` (false for
    /// a swap's real allocation in flight).
    pub fn is_indexed(&self, slot: AllocSlot) -> bool {
        self.slab[slot as usize].found != Found::Not
    }

    /// The UUIDs of the allocations `list` holds.
    pub fn uuids<'a>(&'a self, list: &'a AllocList) -> impl Iterator<Item = &'a AllocUuid> + 'a {
        list.slots().map(|s| &self.at(s).record.uuid)
    }

    /// Indexed allocations with their UUID, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (&AllocUuid, &Allocation)> {
        self.slab
            .iter()
            .filter(|(_, e)| e.found != Found::Not)
            .map(|(_, e)| (&e.alloc.record.uuid, &e.alloc))
    }

    /// Indexed allocations, in slot order.
    pub fn values(&self) -> impl Iterator<Item = &Allocation> {
        self.iter().map(|(_, a)| a)
    }

    /// Makes `slot` found by the slot itself when its UUID names it.
    fn file_by_slot(&mut self, slot: AllocSlot) -> bool {
        if let UuidRef::Bits(bits) = uuid_at(&self.slab, slot) {
            if self.minted.slot_of(&bits) == Some(slot) {
                self.slab[slot as usize].found = Found::BySlot;
                self.by_slot += 1;
                return true;
            }
        }
        false
    }

    /// Makes `slot` found by the UUID of its record: by the slot itself
    /// when the UUID names it, else through the index (during a pass on a
    /// large index, once the pass's others join it). No other entry holds
    /// that UUID: callers check before an allocation is added. `known`:
    /// its hash, when the caller has it from [`Self::probe`].
    fn index(&mut self, slot: AllocSlot, known: Option<KeyHash>) {
        if self.file_by_slot(slot) {
            return;
        }
        let uuid = uuid_at(&self.slab, slot);
        debug_assert!(self.slot_by(uuid).is_none(), "duplicate allocation UUID");
        let h = match known {
            Some(h) => {
                debug_assert_eq!(
                    h,
                    self.index.hash(uuid.as_bytes()),
                    "a hash of another UUID or table"
                );
                h
            }
            None => self.index.hash(uuid.as_bytes()),
        };
        self.slab[slot as usize].found = Found::Hashed;
        if !self.batching || self.index.len() < BATCH_FROM {
            self.index.insert_unique(h, slot);
        } else {
            self.unfiled.push((h, slot));
            if self.unfiled.len() >= UNFILED_MAX {
                self.flush_unfiled();
            }
        }
    }

    /// Makes `slot` found by no UUID; its record still holds the UUID it
    /// was found by.
    fn unindex(&mut self, slot: AllocSlot) {
        match std::mem::replace(&mut self.slab[slot as usize].found, Found::Not) {
            Found::BySlot => self.by_slot -= 1,
            Found::Hashed => {
                // Rare (a release, a swap): the waiting join the index
                // first, so that the slot is where removal looks.
                self.flush_unfiled();
                let h = self.index.hash(uuid_at(&self.slab, slot).as_bytes());
                self.index.remove(h, |s| s == slot);
            }
            Found::Not => {}
        }
    }

    /// Adds an allocation to the index, its application's and its node's
    /// lists. The caller has checked that its UUID is new.
    pub fn insert(
        &mut self,
        alloc: Allocation,
        app: &mut AllocList,
        node: &mut AllocList,
    ) -> AllocSlot {
        self.insert_hashed(alloc, app, node, None)
    }

    /// [`Self::insert`], with the hash of the allocation's UUID when
    /// [`Self::probe`] of this table gave it.
    pub fn insert_hashed(
        &mut self,
        alloc: Allocation,
        app: &mut AllocList,
        node: &mut AllocList,
        hash: Option<KeyHash>,
    ) -> AllocSlot {
        let slot = self.add(alloc);
        self.push(Side::App, app, slot);
        self.push(Side::Node, node, slot);
        self.index(slot, hash);
        slot
    }

    /// Adds a swap's real allocation in flight: on its node only.
    pub fn insert_in_flight(&mut self, alloc: Allocation, node: &mut AllocList) -> AllocSlot {
        let slot = self.add(alloc);
        self.push(Side::Node, node, slot);
        slot
    }

    /// A swap's real allocation in flight becomes the live `alloc`:
    /// indexed and listed by its application.
    pub fn adopt(&mut self, slot: AllocSlot, alloc: Allocation, app: &mut AllocList) {
        let e = &mut self.slab[slot as usize];
        debug_assert_eq!(e.found, Found::Not);
        e.set(alloc);
        self.push(Side::App, app, slot);
        self.index(slot, None);
    }

    /// Puts `alloc` in the place of the indexed allocation in `slot` (same
    /// application, same node, same list positions). Returns the old one.
    pub fn replace(&mut self, slot: AllocSlot, alloc: Allocation) -> Allocation {
        self.unindex(slot);
        let old = self.slab[slot as usize].set(alloc);
        self.index(slot, None);
        old
    }

    /// Removes the allocation in `slot` from the index and from the lists
    /// given (`None` where the list's owner is already gone). Returns it.
    pub fn remove(
        &mut self,
        slot: AllocSlot,
        app: Option<&mut AllocList>,
        node: Option<&mut AllocList>,
    ) -> Allocation {
        if let Some(list) = app {
            self.unlink(Side::App, list, slot);
        }
        if let Some(list) = node {
            self.unlink(Side::Node, list, slot);
        }
        self.unindex(slot);
        self.slab.remove(slot as usize).alloc
    }

    /// When the allocation in `slot` was added: larger is newer.
    pub fn born(&self, slot: AllocSlot) -> u64 {
        self.slab[slot as usize].facts.born
    }

    /// The clock hour (since the Unix epoch) of the allocation in `slot`.
    pub fn hour(&self, slot: AllocSlot) -> u32 {
        self.slab[slot as usize].facts.hour
    }

    /// What preemption reads of the allocation in `slot`, without reading
    /// its record.
    pub fn facts(&self, slot: AllocSlot) -> &VictimFacts {
        &self.slab[slot as usize].facts
    }

    /// Sets the clock hour the next allocations are added in.
    pub fn set_hour(&mut self, hour: u32) {
        self.hour = hour;
    }

    /// Stores `alloc`, found by no UUID yet.
    fn add(&mut self, alloc: Allocation) -> AllocSlot {
        self.next_born += 1;
        let slot = self.slab.insert(Entry {
            facts: VictimFacts::of(&alloc.record, self.next_born, self.hour),
            alloc,
            app_pos: NOWHERE,
            node_pos: NOWHERE,
            found: Found::Not,
        });
        AllocSlot::try_from(slot).expect("fewer than 2^32 live allocations")
    }

    fn push(&mut self, side: Side, list: &mut AllocList, slot: AllocSlot) {
        *self.slab[slot as usize].pos(side) = list.0.len() as u32;
        list.0.push(slot);
    }

    /// Takes `slot` out of `list` by its recorded position; the list's last
    /// slot moves into the gap.
    fn unlink(&mut self, side: Side, list: &mut AllocList, slot: AllocSlot) {
        let pos = std::mem::replace(self.slab[slot as usize].pos(side), NOWHERE);
        if pos == NOWHERE {
            return;
        }
        let pos = pos as usize;
        debug_assert_eq!(list.0.get(pos), Some(&slot), "allocation list out of step");
        list.0.swap_remove(pos);
        if let Some(&moved) = list.0.get(pos) {
            *self.slab[moved as usize].pos(side) = pos as u32;
        }
    }
}

impl<Q: AsUuidRef + ?Sized> std::ops::Index<&Q> for AllocTable {
    type Output = Allocation;
    fn index(&self, uuid: &Q) -> &Allocation {
        self.get(uuid).expect("no allocation with this UUID")
    }
}

#[cfg(test)]
mod tests;
