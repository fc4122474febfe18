//! A slab of records found by string id: the id is resolved once, where a
//! request names the record, and the scheduling pass then carries the
//! integer slot (applications of a partition, asks of an application).

use std::borrow::Borrow;
use std::sync::Arc;

use crate::scheduler::FastMap;

/// A record's slot: stable while the record lives, reused after it goes.
pub type Slot = u32;

/// Records by slot, with an index from their string id.
#[derive(Debug, Clone)]
pub struct KeyedSlab<T> {
    slab: slab::Slab<T>,
    by_key: FastMap<Arc<str>, Slot>,
}

impl<T> Default for KeyedSlab<T> {
    fn default() -> Self {
        KeyedSlab {
            slab: slab::Slab::new(),
            by_key: FastMap::default(),
        }
    }
}

impl<T> KeyedSlab<T> {
    /// How many records there are.
    pub fn len(&self) -> usize {
        self.slab.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.slab.is_empty()
    }

    /// The slot of record `key`.
    pub fn slot_of(&self, key: &str) -> Option<Slot> {
        self.by_key.get(key).copied()
    }

    /// Whether record `key` exists.
    pub fn contains_key(&self, key: &str) -> bool {
        self.by_key.contains_key(key)
    }

    /// Record `key`.
    pub fn get(&self, key: &str) -> Option<&T> {
        self.slot_of(key).map(|s| &self.slab[s as usize])
    }

    /// Record `key`, to change.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut T> {
        let s = self.slot_of(key)?;
        Some(&mut self.slab[s as usize])
    }

    /// The record in `slot`, if the slot is taken.
    pub fn at(&self, slot: Slot) -> Option<&T> {
        self.slab.get(slot as usize)
    }

    /// The record in `slot` if the slot is taken, to change.
    pub fn try_at_mut(&mut self, slot: Slot) -> Option<&mut T> {
        self.slab.get_mut(slot as usize)
    }

    /// The record in `slot`, to change.
    pub fn at_mut(&mut self, slot: Slot) -> &mut T {
        &mut self.slab[slot as usize]
    }

    /// Adds record `key`, or replaces it in its slot; returns the slot and
    /// the record replaced.
    pub fn insert(&mut self, key: Arc<str>, value: T) -> (Slot, Option<T>) {
        if let Some(&s) = self.by_key.get(&*key) {
            let old = std::mem::replace(&mut self.slab[s as usize], value);
            return (s, Some(old));
        }
        let s = Slot::try_from(self.slab.insert(value)).expect("fewer than 2^32 records");
        self.by_key.insert(key, s);
        (s, None)
    }

    /// Removes record `key`.
    pub fn remove(&mut self, key: &str) -> Option<T> {
        self.remove_entry(key).map(|(_, v)| v)
    }

    /// Removes record `key`; returns its id with it.
    pub fn remove_entry(&mut self, key: &str) -> Option<(Arc<str>, T)> {
        let (k, s) = self.by_key.remove_entry(key)?;
        Some((k, self.slab.remove(s as usize)))
    }

    /// Every id, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &Arc<str>> {
        self.by_key.keys()
    }

    /// Every record, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.slab.iter().map(|(_, v)| v)
    }

    /// Every record, to change, in no particular order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.slab.iter_mut().map(|(_, v)| v)
    }

    /// Every (slot, record), to change, in no particular order.
    pub fn slots_mut(&mut self) -> impl Iterator<Item = (Slot, &mut T)> {
        self.slab
            .iter_mut()
            .map(|(i, v)| (Slot::try_from(i).expect("fewer than 2^32 records"), v))
    }

    /// Every (slot, record), in no particular order.
    pub fn slots(&self) -> impl Iterator<Item = (Slot, &T)> {
        self.slab
            .iter()
            .map(|(i, v)| (Slot::try_from(i).expect("fewer than 2^32 records"), v))
    }

    /// Every (id, record), in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &T)> {
        self.by_key
            .iter()
            .map(|(k, s)| (k, &self.slab[*s as usize]))
    }
}

impl<T> std::ops::Index<Slot> for KeyedSlab<T> {
    type Output = T;
    fn index(&self, slot: Slot) -> &T {
        &self.slab[slot as usize]
    }
}

impl<T, Q: Borrow<str> + ?Sized> std::ops::Index<&Q> for KeyedSlab<T> {
    type Output = T;
    fn index(&self, key: &Q) -> &T {
        self.get(key.borrow()).expect("no record with this id")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_resolve_to_stable_slots() {
        let mut t: KeyedSlab<i32> = KeyedSlab::default();
        let (a, none) = t.insert(Arc::from("a"), 1);
        assert!(none.is_none());
        let (b, _) = t.insert(Arc::from("b"), 2);
        assert_ne!(a, b);
        // Replacing keeps the slot.
        assert_eq!(t.insert(Arc::from("a"), 3), (a, Some(1)));
        assert_eq!((t["a"], t[a], t.slot_of("b")), (3, 3, Some(b)));
        assert_eq!(t.remove("a"), Some(3));
        assert!(t.get("a").is_none() && t.at(a).is_none() && t.len() == 1);
        let mut keys: Vec<&str> = t.keys().map(|k| &**k).collect();
        keys.sort();
        assert_eq!(keys, ["b"]);
        assert_eq!(
            t.iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect::<Vec<_>>(),
            [("b".to_string(), 2)]
        );
    }
}
