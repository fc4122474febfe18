//! A partition's live allocations: one slab, reached by slot, with one
//! index from UUID. A node and an application list the slots of their
//! allocations; each slab entry remembers its position in both lists, so
//! an allocation is linked and unlinked without hashing anything but its
//! UUID once (the index: lookups by UUID and the duplicate check when a
//! node registers with existing allocations).
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

use super::queue::QueueId;
use super::slot_index::SlotIndex;
use crate::scheduler::alloc_uuid::{AllocUuid, AsUuidRef, UuidRef};
use crate::scheduler::outcome::NewAllocation;
use crate::scheduler::resource::Resource;

/// Tag that pins an ask to one node (here, not in `application`: the
/// victim facts read it and `application` lists allocations).
pub const TAG_REQUIRED_NODE: &str = "yunikorn.apache.org/requiredNode";

/// An allocation's slot: stable while the allocation lives.
pub type AllocSlot = u32;

const NOWHERE: u32 = u32::MAX;

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
    /// Whether the UUID index finds it (not so for a swap's real
    /// allocation in flight).
    indexed: bool,
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
    slab: slab::Slab<Entry>,
    /// The UUID index: the slots of the indexed entries, found by the
    /// hash of their record's UUID (module docs).
    index: SlotIndex,
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
            .finish()
    }
}

/// The UUID of the record in `slot`, as the index compares it.
fn uuid_at(slab: &slab::Slab<Entry>, slot: AllocSlot) -> UuidRef<'_> {
    slab[slot as usize].alloc.record.uuid.as_ref()
}

impl AllocTable {
    /// How many live allocations the index holds (swaps in flight aside).
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The slot of allocation `uuid` (an RM's text: a canonical UUID finds
    /// the one held as bytes).
    pub fn slot_of<Q: AsUuidRef + ?Sized>(&self, uuid: &Q) -> Option<AllocSlot> {
        self.slot_by(uuid.uuid_ref())
    }

    fn slot_by(&self, uuid: UuidRef<'_>) -> Option<AllocSlot> {
        let slab = &self.slab;
        self.index
            .find(self.index.hash(&uuid), |s| uuid_at(slab, s) == uuid)
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

    /// Whether the allocation in `slot` is in the UUID index (false for a
    /// swap's real allocation in flight).
    pub fn is_indexed(&self, slot: AllocSlot) -> bool {
        self.slab[slot as usize].indexed
    }

    /// The UUIDs of the allocations `list` holds.
    pub fn uuids<'a>(&'a self, list: &'a AllocList) -> impl Iterator<Item = &'a AllocUuid> + 'a {
        list.slots().map(|s| &self.at(s).record.uuid)
    }

    /// Indexed allocations with their UUID, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (&AllocUuid, &Allocation)> {
        self.slab
            .iter()
            .filter(|(_, e)| e.indexed)
            .map(|(_, e)| (&e.alloc.record.uuid, &e.alloc))
    }

    /// Indexed allocations, in slot order.
    pub fn values(&self) -> impl Iterator<Item = &Allocation> {
        self.iter().map(|(_, a)| a)
    }

    /// Indexes `slot` under the UUID of its record; returns the slot that
    /// held that UUID before, if any (no longer indexed).
    fn index(&mut self, slot: AllocSlot) -> Option<AllocSlot> {
        let slab = &self.slab;
        let uuid = uuid_at(slab, slot);
        let h = self.index.hash(&uuid);
        self.index.replace(h, slot, |s| uuid_at(slab, s) == uuid)
    }

    /// Takes `slot` out of the index; its record still holds the UUID it
    /// is indexed under.
    fn unindex(&mut self, slot: AllocSlot) {
        let h = self.index.hash(&uuid_at(&self.slab, slot));
        self.index.remove(h, |s| s == slot);
    }

    /// Adds an allocation to the index, its application's and its node's
    /// lists. The caller has checked that its UUID is new.
    pub fn insert(
        &mut self,
        alloc: Allocation,
        app: &mut AllocList,
        node: &mut AllocList,
    ) -> AllocSlot {
        let slot = self.add(alloc, true);
        self.push(Side::App, app, slot);
        self.push(Side::Node, node, slot);
        let old = self.index(slot);
        debug_assert!(old.is_none(), "duplicate allocation UUID");
        slot
    }

    /// Adds a swap's real allocation in flight: on its node only.
    pub fn insert_in_flight(&mut self, alloc: Allocation, node: &mut AllocList) -> AllocSlot {
        let slot = self.add(alloc, false);
        self.push(Side::Node, node, slot);
        slot
    }

    /// A swap's real allocation in flight becomes the live `alloc`:
    /// indexed and listed by its application.
    pub fn adopt(&mut self, slot: AllocSlot, alloc: Allocation, app: &mut AllocList) {
        let e = &mut self.slab[slot as usize];
        debug_assert!(!e.indexed);
        e.indexed = true;
        e.set(alloc);
        self.push(Side::App, app, slot);
        self.index(slot);
    }

    /// Puts `alloc` in the place of the indexed allocation in `slot` (same
    /// application, same node, same list positions). Returns the old one.
    pub fn replace(&mut self, slot: AllocSlot, alloc: Allocation) -> Allocation {
        self.unindex(slot);
        let old = self.slab[slot as usize].set(alloc);
        self.index(slot);
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
        if self.slab[slot as usize].indexed {
            self.unindex(slot);
        }
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

    fn add(&mut self, alloc: Allocation, indexed: bool) -> AllocSlot {
        self.next_born += 1;
        let slot = self.slab.insert(Entry {
            facts: VictimFacts::of(&alloc.record, self.next_born, self.hour),
            alloc,
            app_pos: NOWHERE,
            node_pos: NOWHERE,
            indexed,
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
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn alloc(uuid: &str) -> Allocation {
        Allocation {
            record: Arc::new(NewAllocation {
                key: Arc::from("k"),
                uuid: uuid.into(),
                node: Arc::from("n"),
                ctx: crate::scheduler::outcome::AllocCtx::new("a", "root.a", "default", ""),
                resource: Default::default(),
                priority: 0,
                tags: Default::default(),
                placeholder: false,
                preempt_self: true,
                preempt_other: true,
                originator: false,
            }),
            queue: 0,
        }
    }

    fn listed(t: &AllocTable, l: &AllocList) -> Vec<String> {
        let mut v: Vec<String> = t.uuids(l).map(|u| u.to_string()).collect();
        v.sort();
        v
    }

    #[test]
    fn lists_stay_in_step_through_removals_from_the_middle() {
        let mut t = AllocTable::default();
        let (mut app, mut n1, mut n2) = (
            AllocList::default(),
            AllocList::default(),
            AllocList::default(),
        );
        let s: Vec<AllocSlot> = (0..6)
            .map(|i| {
                let node = if i % 2 == 0 { &mut n1 } else { &mut n2 };
                t.insert(alloc(&format!("u{i}")), &mut app, node)
            })
            .collect();
        assert_eq!(t.len(), 6);
        t.remove(s[0], Some(&mut app), Some(&mut n1));
        t.remove(s[3], Some(&mut app), Some(&mut n2));
        assert_eq!(listed(&t, &app), ["u1", "u2", "u4", "u5"]);
        assert_eq!(listed(&t, &n1), ["u2", "u4"]);
        assert_eq!(listed(&t, &n2), ["u1", "u5"]);
        assert!(t.get("u0").is_none() && t.get("u3").is_none());
        assert_eq!(t.get("u5").unwrap().uuid, "u5");
        // Every remaining one can still be removed by its slot.
        for i in [5, 1, 4, 2] {
            let node = if i % 2 == 0 { &mut n1 } else { &mut n2 };
            t.remove(s[i], Some(&mut app), Some(node));
        }
        assert!(app.is_empty() && n1.is_empty() && n2.is_empty() && t.is_empty());
    }

    #[test]
    fn the_index_finds_a_uuid_by_the_rms_text_in_either_form() {
        let canon = "6f1c9a52-2a0b-4a39-9d7e-0c1f3b8b7a11";
        let minted = AllocUuid::new_v4();
        let mut t = AllocTable::default();
        let (mut app, mut node) = (AllocList::default(), AllocList::default());
        let mut with = |u: AllocUuid| {
            let mut a = alloc("x");
            Arc::make_mut(&mut a.record).uuid = u;
            t.insert(a, &mut app, &mut node)
        };
        let s_canon = with(AllocUuid::from_rm(canon));
        let s_minted = with(minted.clone());
        let s_key = with(AllocUuid::from_shared(&Arc::from("ask-1")));
        assert_eq!(t.len(), 3);
        // By the RM's text, by a copy of it, by the held UUID.
        assert_eq!(t.slot_of(canon), Some(s_canon));
        assert_eq!(t.slot_of(&canon.to_string()), Some(s_canon));
        assert_eq!(t.slot_of(&minted.to_string()), Some(s_minted));
        assert_eq!(t.slot_of(&minted), Some(s_minted));
        assert_eq!(t.slot_of("ask-1"), Some(s_key));
        // Another text is another UUID, whatever it looks like.
        assert_eq!(t.slot_of(&canon.to_uppercase()), None);
        assert_eq!(t.slot_of("ask-1 "), None);
        assert_eq!(t.slot_of(&"a".repeat(1 << 16)), None);
        let (k, a) = t.get_key_value(canon).unwrap();
        assert_eq!(
            (k.to_string(), a.uuid.to_string()),
            (canon.to_string(), canon.to_string())
        );
        let mut seen: Vec<String> = t.iter().map(|(u, _)| u.to_string()).collect();
        seen.sort();
        let mut want = vec![canon.to_string(), minted.to_string(), "ask-1".to_string()];
        want.sort();
        assert_eq!(seen, want);
        t.remove(s_canon, Some(&mut app), Some(&mut node));
        t.remove(s_key, Some(&mut app), Some(&mut node));
        assert_eq!((t.slot_of(canon), t.slot_of("ask-1")), (None, None));
        assert_eq!(t.len(), 1);
    }

    /// The facts of `slot` are those of its record, its age kept.
    fn facts_follow(t: &AllocTable, slot: AllocSlot, born: u64) {
        let (f, a) = (t.facts(slot), t.at(slot));
        assert_eq!(f.resource, a.resource);
        assert_eq!(f.priority, a.priority);
        assert_eq!(
            (f.placeholder, f.preempt_self, f.originator),
            (a.placeholder, a.preempt_self, a.originator)
        );
        assert_eq!(f.required_node, a.tags.contains_key(TAG_REQUIRED_NODE));
        assert_eq!((f.born, f.hour), (born, t.hour(slot)));
    }

    #[test]
    fn facts_follow_the_record_through_replace_and_adopt() {
        let mut t = AllocTable::default();
        let (mut app, mut node) = (AllocList::default(), AllocList::default());
        t.set_hour(7);
        let s = t.insert(alloc("a"), &mut app, &mut node);
        let born = t.born(s);
        facts_follow(&t, s, born);
        assert_eq!(t.hour(s), 7);
        // A resize or swap puts another record in the slot: the facts are
        // its, the age stays.
        t.set_hour(8);
        let mut other = (*alloc("b").record).clone();
        other.resource = crate::scheduler::resource::Resource::from_pairs([("vcore", 3)]).unwrap();
        other.priority = -4;
        other.placeholder = true;
        other.preempt_self = false;
        other.originator = true;
        other.tags = Arc::new(BTreeMap::from([(TAG_REQUIRED_NODE.into(), "n".into())]));
        t.replace(
            s,
            Allocation {
                record: Arc::new(other.clone()),
                queue: 0,
            },
        );
        facts_follow(&t, s, born);
        assert!(t.facts(s).required_node && t.facts(s).placeholder);
        assert_eq!(t.hour(s), 7);
        let real = t.insert_in_flight(alloc("c"), &mut node);
        let born = t.born(real);
        other.uuid = "c".into();
        t.adopt(
            real,
            Allocation {
                record: Arc::new(other),
                queue: 0,
            },
            &mut app,
        );
        facts_follow(&t, real, born);
        assert_eq!((t.facts(real).priority, t.hour(real)), (-4, 8));
    }

    #[test]
    fn the_index_follows_growth_and_removals_in_both_forms() {
        // Enough entries to regrow the table several times: every probe
        // and rehash reads the UUID from the slot's record.
        let mut t = AllocTable::default();
        let (mut app, mut node) = (AllocList::default(), AllocList::default());
        let uuids: Vec<AllocUuid> = (0..5_000)
            .map(|i| {
                if i % 2 == 0 {
                    AllocUuid::new_v4()
                } else {
                    AllocUuid::from_rm(&format!("key-{i}"))
                }
            })
            .collect();
        let slots: Vec<AllocSlot> = uuids
            .iter()
            .map(|u| {
                let mut a = alloc("x");
                Arc::make_mut(&mut a.record).uuid = u.clone();
                t.insert(a, &mut app, &mut node)
            })
            .collect();
        for (i, u) in uuids.iter().enumerate() {
            assert_eq!(t.slot_of(&u.to_string()), Some(slots[i]));
        }
        for i in (0..5_000).step_by(3) {
            t.remove(slots[i], Some(&mut app), Some(&mut node));
        }
        for (i, u) in uuids.iter().enumerate() {
            let want = (i % 3 != 0).then_some(slots[i]);
            assert_eq!(t.slot_of(u), want, "{u}");
        }
        assert_eq!(t.len(), 5_000 - 1_667);
    }

    #[test]
    fn in_flight_entries_join_the_index_when_adopted() {
        let mut t = AllocTable::default();
        let (mut app, mut node) = (AllocList::default(), AllocList::default());
        let ph = t.insert(alloc("ph"), &mut app, &mut node);
        let real = t.insert_in_flight(alloc("real"), &mut node);
        assert!(t.get("real").is_none() && !t.is_indexed(real));
        assert_eq!(t.len(), 1);
        assert_eq!(listed(&t, &node), ["ph", "real"]);
        t.adopt(real, alloc("real"), &mut app);
        assert_eq!(t.slot_of("real"), Some(real));
        assert_eq!(listed(&t, &app), ["ph", "real"]);
        // Same-node replacement keeps the slot and the positions.
        let old = t.replace(ph, alloc("ph2"));
        assert_eq!(old.uuid, "ph");
        assert!(t.get("ph").is_none());
        assert_eq!(t.slot_of("ph2"), Some(ph));
        assert_eq!(listed(&t, &node), ["ph2", "real"]);
        t.remove(ph, Some(&mut app), Some(&mut node));
        assert_eq!(listed(&t, &app), ["real"]);
        assert_eq!(listed(&t, &node), ["real"]);
    }
}
