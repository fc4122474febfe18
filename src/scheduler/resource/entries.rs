//! The storage of a [`super::Resource`]: ids and quantities in two parallel
//! arrays sorted by id, four of each inline (48 bytes in all), more on the
//! heap.
//!
//! Pairs of `(ResId, i64)` would pad each id to eight bytes; parallel
//! arrays of two-byte ids keep the inline form at 48 bytes where a small
//! vector of four pairs takes 72. A resource is held by every allocation
//! record, every allocation's victim facts and every waiting ask, so the
//! difference is ~50 MB at a million allocations.

use super::ResId;

/// Types held inline: a pod's memory, vcore, pods and ephemeral storage.
const INLINE: usize = 4;

/// Invariant: an inline form's ids and quantities past `len` are zero, so
/// that two inline listings compare as whole arrays.
pub(super) enum Entries {
    Inline {
        vals: [i64; INLINE],
        ids: [ResId; INLINE],
        len: u8,
    },
    /// More than [`INLINE`] types at some point (kept on the heap after).
    Heap(Box<HeapEntries>),
}

#[derive(Clone, Default)]
pub(super) struct HeapEntries {
    ids: Vec<ResId>,
    vals: Vec<i64>,
}

impl Clone for Entries {
    fn clone(&self) -> Self {
        match self {
            Entries::Inline { vals, ids, len } => Entries::Inline {
                vals: *vals,
                ids: *ids,
                len: *len,
            },
            Entries::Heap(h) => Entries::Heap(h.clone()),
        }
    }

    /// Copies into a heap form's own buffers: a node's available resource
    /// is recomputed from its capacity on every allocation, and a node of
    /// more than four types is on the heap, where a fresh clone costs
    /// three allocations.
    fn clone_from(&mut self, source: &Self) {
        match (self, source) {
            (Entries::Heap(mine), Entries::Heap(theirs)) => {
                mine.ids.clone_from(&theirs.ids);
                mine.vals.clone_from(&theirs.vals);
            }
            (me, _) => *me = source.clone(),
        }
    }
}

impl Default for Entries {
    fn default() -> Self {
        Entries::Inline {
            vals: [0; INLINE],
            ids: [0; INLINE],
            len: 0,
        }
    }
}

impl Entries {
    /// Empty, with room for `n` entries.
    #[inline]
    pub(super) fn with_capacity(n: usize) -> Self {
        if n <= INLINE {
            Entries::default()
        } else {
            Entries::Heap(Box::new(HeapEntries {
                ids: Vec::with_capacity(n),
                vals: Vec::with_capacity(n),
            }))
        }
    }

    /// How many types are listed.
    #[inline]
    pub(super) fn len(&self) -> usize {
        match self {
            Entries::Inline { len, .. } => *len as usize,
            Entries::Heap(h) => h.ids.len(),
        }
    }

    /// The ids, in increasing order.
    #[inline]
    pub(super) fn ids(&self) -> &[ResId] {
        match self {
            Entries::Inline { ids, len, .. } => &ids[..*len as usize],
            Entries::Heap(h) => &h.ids,
        }
    }

    /// The quantities, in the order of [`Self::ids`].
    #[inline]
    pub(super) fn vals(&self) -> &[i64] {
        match self {
            Entries::Inline { vals, len, .. } => &vals[..*len as usize],
            Entries::Heap(h) => &h.vals,
        }
    }

    /// The quantities, to change in place.
    #[inline]
    pub(super) fn vals_mut(&mut self) -> &mut [i64] {
        match self {
            Entries::Inline { vals, len, .. } => &mut vals[..*len as usize],
            Entries::Heap(h) => &mut h.vals,
        }
    }

    /// The ids with the quantities to change.
    #[inline]
    pub(super) fn ids_vals_mut(&mut self) -> (&[ResId], &mut [i64]) {
        match self {
            Entries::Inline { ids, vals, len } => {
                let n = *len as usize;
                (&ids[..n], &mut vals[..n])
            }
            Entries::Heap(h) => (&h.ids, &mut h.vals),
        }
    }

    /// `(id, quantity)` in id order.
    #[inline]
    pub(super) fn iter(&self) -> impl Iterator<Item = (ResId, i64)> + '_ {
        self.ids().iter().copied().zip(self.vals().iter().copied())
    }

    /// The position of `id`, or where it would go.
    #[inline]
    pub(super) fn search(&self, id: ResId) -> Result<usize, usize> {
        match self {
            // Four ids at most: a straight walk beats halving.
            Entries::Inline { ids, len, .. } => {
                for (i, &x) in ids[..*len as usize].iter().enumerate() {
                    if x >= id {
                        return if x == id { Ok(i) } else { Err(i) };
                    }
                }
                Err(*len as usize)
            }
            Entries::Heap(h) => h.ids.binary_search(&id),
        }
    }

    /// The quantity of `id`, if listed. Its own walk rather than
    /// [`Self::search`]'s: written as `search(id).ok().map(..)` the pass
    /// cost ~100 more instructions per allocation (callgrind, 2026-12-03).
    #[inline]
    pub(super) fn lookup(&self, id: ResId) -> Option<i64> {
        match self {
            Entries::Inline { ids, vals, len } => {
                for i in 0..*len as usize {
                    if ids[i] == id {
                        return Some(vals[i]);
                    }
                }
                None
            }
            Entries::Heap(h) => h.ids.binary_search(&id).ok().map(|i| h.vals[i]),
        }
    }

    /// The first position of `self` where `stop` holds for its quantity
    /// and `other`'s quantity of the same type (`None` when `other` does
    /// not list it). One walk over both sorted lists, instead of a look-up
    /// in `other` per type: the fit checks of the node walk and of
    /// preemption's victims run this for every node and victim they see.
    #[inline]
    pub(super) fn position_with(
        &self,
        other: &Entries,
        mut stop: impl FnMut(i64, Option<i64>) -> bool,
    ) -> Option<usize> {
        // The common case: both inline with the same types (an ask against
        // a node, a victim against the ask), compared pairwise.
        if let (
            Entries::Inline { vals, ids, len },
            Entries::Inline {
                vals: ovals,
                ids: oids,
                len: olen,
            },
        ) = (self, other)
        {
            if len == olen && ids == oids {
                let n = (*len as usize).min(INLINE);
                return (0..n).find(|&i| stop(vals[i], Some(ovals[i])));
            }
        }
        let (oids, ovals) = (other.ids(), other.vals());
        let mut j = 0;
        for (i, (&id, &v)) in self.ids().iter().zip(self.vals()).enumerate() {
            while oids.get(j).is_some_and(|&o| o < id) {
                j += 1;
            }
            let o = match oids.get(j) {
                Some(&o) if o == id => ovals.get(j).copied(),
                _ => None,
            };
            if stop(v, o) {
                return Some(i);
            }
        }
        None
    }

    /// Whether both list the same types in the same order (the hot case
    /// of every sum: an ask against the usage it adds to).
    #[inline]
    pub(super) fn same_ids(&self, other: &Entries) -> bool {
        match (self, other) {
            // Whole arrays: the zeroed tails make this exact, and it is
            // one eight-byte comparison, no call.
            (
                Entries::Inline {
                    ids: a, len: la, ..
                },
                Entries::Inline {
                    ids: b, len: lb, ..
                },
            ) => la == lb && a == b,
            _ => {
                let (a, b) = (self.ids(), other.ids());
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
            }
        }
    }

    /// Both quantity arrays whole, when both listings are inline with the
    /// same types (their unused places are zero in both).
    #[inline]
    pub(super) fn same_inline<'a>(
        &'a self,
        other: &'a Entries,
    ) -> Option<(&'a [i64; INLINE], &'a [i64; INLINE])> {
        match (self, other) {
            (
                Entries::Inline {
                    vals: a,
                    ids: ia,
                    len: la,
                },
                Entries::Inline {
                    vals: b,
                    ids: ib,
                    len: lb,
                },
            ) if la == lb && ia == ib => Some((a, b)),
            _ => None,
        }
    }

    /// Sets each quantity to `f` of it and `other`'s quantity of the same
    /// type, when both list the same types in the same order; `false`, and
    /// nothing changed, when they do not. `f(0, 0)` must be 0: two inline
    /// listings are combined whole, the zeroed tails included, with no
    /// loop over their length (a pod's resource is added to and taken from
    /// several usages at each allocation).
    #[inline]
    pub(super) fn zip_same_ids(&mut self, other: &Entries, f: impl Fn(i64, i64) -> i64) -> bool {
        debug_assert_eq!(f(0, 0), 0, "the zeroed tails would change");
        if let Some(b) = self.same_inline(other).map(|(_, b)| *b) {
            if let Entries::Inline { vals: a, .. } = self {
                for (x, y) in a.iter_mut().zip(b) {
                    *x = f(*x, y);
                }
            }
            return true;
        }
        if !self.same_ids(other) {
            return false;
        }
        for (x, y) in self.vals_mut().iter_mut().zip(other.vals()) {
            *x = f(*x, *y);
        }
        true
    }

    /// Inserts `(id, v)` at position `i` (the caller keeps the order).
    pub(super) fn insert(&mut self, i: usize, id: ResId, v: i64) {
        match self {
            Entries::Inline { vals, ids, len } if (*len as usize) < INLINE => {
                let n = *len as usize;
                ids.copy_within(i..n, i + 1);
                vals.copy_within(i..n, i + 1);
                ids[i] = id;
                vals[i] = v;
                *len += 1;
            }
            Entries::Inline { .. } => {
                self.spill();
                self.insert(i, id, v);
            }
            Entries::Heap(h) => {
                h.ids.insert(i, id);
                h.vals.insert(i, v);
            }
        }
    }

    /// Appends `(id, v)`: `id` must be above every listed id.
    #[inline]
    pub(super) fn push(&mut self, id: ResId, v: i64) {
        let n = self.len();
        self.insert(n, id, v);
    }

    /// Keeps the entries whose quantity satisfies `keep`, in place.
    pub(super) fn retain_vals(&mut self, keep: impl Fn(i64) -> bool) {
        let (ids, vals) = match self {
            Entries::Inline { vals, ids, len } => {
                let n = *len as usize;
                (&mut ids[..n], &mut vals[..n])
            }
            Entries::Heap(h) => (&mut h.ids[..], &mut h.vals[..]),
        };
        let mut kept = 0;
        for r in 0..ids.len() {
            if keep(vals[r]) {
                ids[kept] = ids[r];
                vals[kept] = vals[r];
                kept += 1;
            }
        }
        // The freed tail is zeroed (the inline form's invariant).
        ids[kept..].fill(0);
        vals[kept..].fill(0);
        match self {
            // `kept` is at most the old length, which fit a u8.
            Entries::Inline { len, .. } => *len = kept as u8,
            Entries::Heap(h) => {
                h.ids.truncate(kept);
                h.vals.truncate(kept);
                // Back inline when the rest fits: a node registered with
                // six types, two of them zero (the k8shim's huge pages),
                // then works on the inline form, as what it is compared
                // with and subtracted from does.
                if kept <= INLINE {
                    let mut inline = Entries::default();
                    for (i, (&id, &v)) in h.ids.iter().zip(&h.vals).enumerate() {
                        inline.insert(i, id, v);
                    }
                    *self = inline;
                }
            }
        }
    }

    fn spill(&mut self) {
        let heap = HeapEntries {
            ids: self.ids().to_vec(),
            vals: self.vals().to_vec(),
        };
        *self = Entries::Heap(Box::new(heap));
    }
}

// Equal when the listings are, whichever form holds them.
impl PartialEq for Entries {
    fn eq(&self, other: &Self) -> bool {
        self.same_ids(other) && self.vals() == other.vals()
    }
}

impl Eq for Entries {}

impl std::hash::Hash for Entries {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.ids().hash(state);
        self.vals().hash(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_types_inline_in_48_bytes_and_more_spill() {
        // The size this layout exists for (module docs).
        assert_eq!(std::mem::size_of::<Entries>(), 48);
        let mut e = Entries::default();
        for id in [9, 3, 7, 1] {
            let i = e.search(id).unwrap_err();
            e.insert(i, id, i64::from(id) * 10);
        }
        assert!(matches!(e, Entries::Inline { .. }));
        assert_eq!(e.ids(), &[1, 3, 7, 9]);
        assert_eq!(e.vals(), &[10, 30, 70, 90]);
        e.insert(2, 5, 50);
        assert!(matches!(e, Entries::Heap(_)));
        assert_eq!(e.ids(), &[1, 3, 5, 7, 9]);
        assert_eq!(e.vals(), &[10, 30, 50, 70, 90]);
        // The same listing is equal in either form.
        let mut inline = Entries::default();
        for (id, v) in [(1, 10), (3, 30)] {
            inline.push(id, v);
        }
        e.retain_vals(|v| v < 40);
        assert_eq!(e.ids(), &[1, 3]);
        assert!(e == inline);
        // What fits inline again goes back inline.
        assert!(matches!(e, Entries::Inline { .. }));
        // Inline listings compare as whole arrays: what leaves is zeroed.
        let mut three = Entries::default();
        for (id, v) in [(1, 10), (2, 0), (3, 30)] {
            three.push(id, v);
        }
        assert!(!three.same_ids(&inline));
        three.retain_vals(|v| v != 0);
        assert!(three.same_ids(&inline) && three == inline);
        assert_eq!((three.lookup(3), three.lookup(2)), (Some(30), None));
        assert_eq!(
            (three.search(2), three.search(3), three.search(9)),
            (Err(1), Ok(1), Err(2))
        );
        let mut heap = Entries::with_capacity(8);
        heap.push(1, 10);
        heap.push(3, 30);
        assert!(matches!(heap, Entries::Heap(_)));
        assert!(heap == inline);
    }

    #[test]
    fn clone_from_keeps_a_heap_form_and_copies_any() {
        let listing = |pairs: &[(ResId, i64)]| {
            let mut e = Entries::with_capacity(pairs.len());
            for &(id, v) in pairs {
                e.push(id, v);
            }
            e
        };
        let six = listing(&[(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6)]);
        let seven = listing(&[(1, 7), (2, 7), (3, 7), (4, 7), (5, 7), (6, 7), (8, 7)]);
        let two = listing(&[(1, 10), (9, 90)]);
        let mut e = seven.clone();
        e.clone_from(&six);
        assert!(matches!(e, Entries::Heap(_)) && e == six);
        e.clone_from(&two);
        assert!(matches!(e, Entries::Inline { .. }) && e == two);
        e.clone_from(&seven);
        assert!(e == seven && e.vals() == [7; 7]);
    }
}
