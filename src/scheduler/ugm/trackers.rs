//! Trackers: one user's or group's usage and running count per queue
//! level, with level slots that links keep so updates index, not hash.

use std::sync::Arc;

use crate::scheduler::objects::queue::QueueId;
use crate::scheduler::resource::Resource;
use crate::scheduler::FastMap;

/// Usage of one tracker at one queue level.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Level {
    /// The queue.
    pub queue: QueueId,
    /// Sum of the linked applications' allocations in this subtree.
    pub usage: Resource,
    /// Applications counted as running in this subtree.
    pub running: u64,
    /// Links whose path holds this level (it goes with the last).
    pub(super) refs: u32,
}

/// One user's or one group's usage, per queue level.
#[derive(Debug, Clone, Default)]
pub struct Tracker {
    /// User or group name (`*` for the wildcard group).
    pub name: Arc<str>,
    /// Levels by slot: links keep their slots, so a usage change indexes
    /// and never hashes.
    pub(super) slots: Vec<Option<Level>>,
    pub(super) free: Vec<u32>,
    pub(super) by_queue: FastMap<QueueId, u32>,
    pub(super) links: usize,
    /// Everything ever added to any level of this tracker, per type
    /// (positive parts only, never decreased; indexed by type id): no
    /// level's room can have shrunk by more since a link cached its slack.
    /// The pass's allocations count here at once, before they reach the
    /// levels (see [`Ugm::charge`]). Wide, so that it never stops
    /// counting: 2^64 additions of the largest quantity still fit.
    pub(super) spent: Vec<i128>,
}

impl Tracker {
    /// The level of queue `q`, if an application on it is linked.
    pub fn level(&self, q: QueueId) -> Option<&Level> {
        self.by_queue
            .get(&q)
            .and_then(|&i| self.slots[i as usize].as_ref())
    }

    /// Every level, in no particular order.
    pub fn levels(&self) -> impl Iterator<Item = &Level> {
        self.slots.iter().flatten()
    }

    pub(super) fn at(&self, i: u32) -> &Level {
        self.slots[i as usize].as_ref().expect("held level")
    }

    pub(super) fn at_mut(&mut self, i: u32) -> &mut Level {
        self.slots[i as usize].as_mut().expect("held level")
    }

    /// Holds the level of `q` for one more link.
    pub(super) fn acquire(&mut self, q: QueueId) -> u32 {
        if let Some(&i) = self.by_queue.get(&q) {
            self.at_mut(i).refs += 1;
            return i;
        }
        let level = Level {
            queue: q,
            refs: 1,
            ..Level::default()
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(level);
                i
            }
            None => {
                self.slots.push(Some(level));
                u32::try_from(self.slots.len() - 1).expect("levels fit u32")
            }
        };
        self.by_queue.insert(q, i);
        i
    }

    /// One link less on level `i`; the last takes it away (the queue may
    /// go too, and its id be reused).
    pub(super) fn release(&mut self, i: u32) {
        let level = self.at_mut(i);
        level.refs = level.refs.saturating_sub(1);
        if level.refs == 0 {
            let q = level.queue;
            self.slots[i as usize] = None;
            self.by_queue.remove(&q);
            self.free.push(i);
        }
    }
}

/// Trackers of one kind, by slot and by name.
#[derive(Debug, Default, Clone)]
pub struct Trackers {
    pub(super) slots: Vec<Option<Tracker>>,
    pub(super) free: Vec<usize>,
    pub(super) by_name: FastMap<Arc<str>, usize>,
}

impl Trackers {
    /// The live trackers with their indices (an [`AppLink`]'s
    /// `user_index` / `group_index`).
    ///
    /// [`AppLink`]: super::AppLink
    pub fn live(&self) -> impl Iterator<Item = (usize, &Tracker)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.as_ref().map(|t| (i, t)))
    }

    pub(super) fn link(&mut self, name: &Arc<str>) -> usize {
        if let Some(&i) = self.by_name.get(name) {
            if let Some(t) = self.slots[i].as_mut() {
                t.links += 1;
            }
            return i;
        }
        let t = Tracker {
            name: name.clone(),
            links: 1,
            ..Tracker::default()
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(t);
                i
            }
            None => {
                self.slots.push(Some(t));
                self.slots.len() - 1
            }
        };
        self.by_name.insert(name.clone(), i);
        i
    }

    pub(super) fn unlink(&mut self, i: usize) {
        let gone = match self.slots[i].as_mut() {
            Some(t) => {
                t.links = t.links.saturating_sub(1);
                t.links == 0
            }
            None => false,
        };
        if gone {
            if let Some(t) = self.slots[i].take() {
                self.by_name.remove(&t.name);
            }
            self.free.push(i);
        }
    }

    #[inline]
    pub(super) fn at(&self, i: usize) -> &Tracker {
        self.slots[i].as_ref().expect("linked tracker")
    }

    #[inline]
    pub(super) fn at_mut(&mut self, i: usize) -> &mut Tracker {
        self.slots[i].as_mut().expect("linked tracker")
    }

    /// A tracker by name.
    pub fn get(&self, name: &str) -> Option<&Tracker> {
        self.by_name.get(name).map(|&i| self.at(i))
    }

    /// Every tracker, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Tracker> {
        self.slots.iter().flatten()
    }

    /// How many trackers there are.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}
