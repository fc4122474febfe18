//! Resources: sparse maps from interned resource-type names to quantities.
//!
//! Names are interned once, at the boundary, into small integer ids, so the
//! scheduling hot path compares integers and never hashes strings. A
//! [`Resource`] keeps its ids and quantities sorted by id in two inline
//! arrays of four (`entries.rs`): most resources have two to four types
//! and never touch the heap.
//!
//! # Who holds a name
//!
//! Each scheduler has its own name table ([`ResourceNames`]), bounded by
//! [`MAX_RESOURCE_TYPES`], so what one scheduler's RMs, configurations or
//! REST clients do can never take names from another scheduler. Within a
//! scheduler every new name is charged to whoever brought it: an RM (at
//! most [`MAX_RESOURCE_TYPES_PER_RM`]), a policy group's configuration (at
//! most [`MAX_RESOURCE_TYPES_PER_POLICY_GROUP`]) or the scheduler itself
//! (built-in defaults). Names are not freed while their scheduler lives:
//! any live quantity may refer to them, and counting references on the hot
//! path would cost more than the names do.
//!
//! Ids are process-wide so that a name has one id in every table that
//! holds it (and [`name_of`] needs no table): the strings live in one
//! reference-counted store, and a name leaves it, its id free for reuse,
//! when the last table holding it is dropped with its scheduler.
//!
//! A configuration charges nothing until it is accepted: while it is being
//! built and checked, its new names are held provisionally (see
//! [`configuration`]) and given back if it is refused. An RM that meets a
//! provisional name takes it over, charged to itself, so giving a refused
//! configuration's names back never strands an id that live state uses.

use std::fmt;
use std::sync::Arc;

use smallvec::SmallVec;

use crate::proto::si::v1 as si;

mod entries;
mod names;
use entries::Entries;
pub use names::*;

/// A sparse resource: a missing type is a zero quantity.
#[derive(Default, PartialEq, Eq, Hash)]
pub struct Resource {
    entries: Entries,
}

impl Clone for Resource {
    fn clone(&self) -> Self {
        Resource {
            entries: self.entries.clone(),
        }
    }

    /// Reuses a heap form's buffers ([`Entries`]' `clone_from`).
    fn clone_from(&mut self, source: &Self) {
        self.entries.clone_from(&source.entries);
    }
}

impl fmt::Debug for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut named: Vec<(Arc<str>, i64)> = self.iter().map(|(id, v)| (name_of(id), v)).collect();
        named.sort_unstable();
        write!(f, "map[")?;
        for (i, (n, v)) in named.iter().enumerate() {
            if i > 0 {
                write!(f, " ")?;
            }
            write!(f, "{n}:{v}")?;
        }
        write!(f, "]")
    }
}

impl Resource {
    /// An empty (all-zero) resource.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a resource from `(name, quantity)` pairs.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, i64)>) -> Result<Self, String> {
        let mut r = Resource::new();
        for (name, v) in pairs {
            r.set(intern(name)?, v);
        }
        Ok(r)
    }

    /// Converts a wire resource, interning its names.
    pub fn from_proto(p: &si::Resource) -> Result<Self, String> {
        Self::from_pairs(p.resources.iter().map(|(k, q)| (k.as_str(), q.value)))
    }

    /// Converts an optional wire resource; `None` stays `None`.
    pub fn from_proto_opt(p: Option<&si::Resource>) -> Result<Option<Self>, String> {
        p.map(Self::from_proto).transpose()
    }

    /// The wire form.
    pub fn to_proto(&self) -> si::Resource {
        si::Resource {
            resources: self
                .iter()
                .map(|(id, v)| (name_of(id).to_string(), si::Quantity { value: v }))
                .collect(),
        }
    }

    /// `(name, quantity)` pairs sorted by name, for reports.
    pub fn to_named(&self) -> std::collections::BTreeMap<String, i64> {
        self.iter()
            .map(|(id, v)| (name_of(id).to_string(), v))
            .collect()
    }

    /// A view of the resource with its names, resolved under one read lock
    /// of the name store held by the view (for encoders: no copy of any
    /// name). Nothing may intern while a view is alive on the thread.
    pub fn named(&self) -> Named<'_> {
        Named {
            store: store().read_recursive(),
            resource: self,
        }
    }

    /// Iterates `(id, quantity)` in id order.
    pub fn iter(&self) -> impl Iterator<Item = (ResId, i64)> + '_ {
        self.entries.iter()
    }

    /// The quantity of a type (zero when missing).
    #[inline]
    pub fn get(&self, id: ResId) -> i64 {
        self.lookup(id).unwrap_or(0)
    }

    /// Whether every type `other` lists (zero or not) is listed here too:
    /// then adding or taking off a multiple of `other` lists no new type.
    pub fn lists_types_of(&self, other: &Resource) -> bool {
        // Same types in the same order, nearly always: one comparison.
        self.entries.same_ids(&other.entries)
            || other
                .entries
                .ids()
                .iter()
                .all(|id| self.lookup(*id).is_some())
    }

    /// The quantity of a type, or `None` when the type is missing.
    #[inline]
    pub fn lookup(&self, id: ResId) -> Option<i64> {
        self.entries.lookup(id)
    }

    /// Sets the quantity of a type.
    pub fn set(&mut self, id: ResId, v: i64) {
        match self.entries.search(id) {
            Ok(i) => self.entries.vals_mut()[i] = v,
            Err(i) => self.entries.insert(i, id, v),
        }
    }

    /// True when it lists no type at all.
    pub fn is_empty(&self) -> bool {
        self.entries.len() == 0
    }

    /// True when every quantity is zero (or there are none).
    pub fn is_zero(&self) -> bool {
        self.entries.vals().iter().all(|v| *v == 0)
    }

    /// At least one quantity above zero and none below.
    pub fn is_strictly_positive(&self) -> bool {
        let vals = self.entries.vals();
        vals.iter().any(|v| *v > 0) && vals.iter().all(|v| *v >= 0)
    }

    /// True when any quantity is negative.
    pub fn has_negative(&self) -> bool {
        self.entries.vals().iter().any(|v| *v < 0)
    }

    fn merge(&self, other: &Resource, f: impl Fn(i64, i64) -> i64) -> Resource {
        let (a, av) = (self.entries.ids(), self.entries.vals());
        let (b, bv) = (other.entries.ids(), other.entries.vals());
        let mut out = Entries::with_capacity(a.len().max(b.len()));
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            if j == b.len() || (i < a.len() && a[i] < b[j]) {
                out.push(a[i], f(av[i], 0));
                i += 1;
            } else if i == a.len() || b[j] < a[i] {
                out.push(b[j], f(0, bv[j]));
                j += 1;
            } else {
                out.push(a[i], f(av[i], bv[j]));
                i += 1;
                j += 1;
            }
        }
        Resource { entries: out }
    }

    /// `self + other` per type, or `None` when a sum does not fit an i64:
    /// totals that are later subtracted from must stay exact.
    pub fn checked_add(&self, other: &Resource) -> Option<Resource> {
        self.can_add(other).then(|| self.add(other))
    }

    /// Whether `self + other` fits an i64 for every type: one merged walk
    /// over both (sorted) entry lists, building nothing.
    pub fn can_add(&self, other: &Resource) -> bool {
        // Same types, inline: every place at once, with no branch per type
        // (a sum overflows when its sign differs from both terms').
        if let Some((x, y)) = self.entries.same_inline(&other.entries) {
            let overflow = x.iter().zip(y).fold(0, |acc, (&p, &q)| {
                let sum = p.wrapping_add(q);
                acc | ((p ^ sum) & (q ^ sum))
            });
            return overflow >= 0;
        }
        let (a, av) = (self.entries.ids(), self.entries.vals());
        let (b, bv) = (other.entries.ids(), other.entries.vals());
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            match a[i].cmp(&b[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    if av[i].checked_add(bv[j]).is_none() {
                        return false;
                    }
                    i += 1;
                    j += 1;
                }
            }
        }
        true
    }

    /// `self * n` per type, or `None` when a product does not fit an i64.
    pub fn checked_mul(&self, n: i64) -> Option<Resource> {
        self.iter()
            .all(|(_, v)| v.checked_mul(n).is_some())
            .then(|| self.mul(n))
    }

    /// `self + other` per type, saturating.
    pub fn add(&self, other: &Resource) -> Resource {
        self.merge(other, i64::saturating_add)
    }

    /// `self - other` per type, saturating; results may be negative.
    pub fn sub(&self, other: &Resource) -> Resource {
        self.merge(other, i64::saturating_sub)
    }

    /// `self - other` with negative results clamped to zero.
    pub fn sub_clamped(&self, other: &Resource) -> Resource {
        self.merge(other, |a, b| a.saturating_sub(b).max(0))
    }

    /// Applies `f` per type in place. When `other` has no type `self`
    /// lacks (the usual case on the hot path) nothing is reallocated.
    #[inline]
    fn merge_assign(&mut self, other: &Resource, f: impl Fn(i64, i64) -> i64) {
        // Same types in the same order (an ask against the usage it adds
        // to, nearly always): one zipped walk. Every caller's `f(0, 0)` is 0.
        if self.entries.zip_same_ids(&other.entries, &f) {
            return;
        }
        self.merge_assign_slow(other, f);
    }

    /// [`Self::merge_assign`] when the types differ: kept out of line so
    /// that the common case inlines small.
    #[inline(never)]
    fn merge_assign_slow(&mut self, other: &Resource, f: impl Fn(i64, i64) -> i64) {
        // Both id lists are sorted: one walk tells whether `other`'s types
        // are all here (an allocation's three against a node's six, as the
        // k8shim reports them), a second changes them in place.
        let mine = self.entries.ids();
        let mut i = 0;
        let covered = other.entries.ids().iter().all(|id| {
            while i < mine.len() && mine[i] < *id {
                i += 1;
            }
            i < mine.len() && mine[i] == *id
        });
        if !covered {
            *self = self.merge(other, f);
            return;
        }
        // Every type here takes `f`, with zero for those `other` lacks:
        // the same as `merge` (a clamped difference clamps them too).
        let (theirs, their_vals) = (other.entries.ids(), other.entries.vals());
        let (mine, vals) = self.entries.ids_vals_mut();
        let mut j = 0;
        for (id, v) in mine.iter().zip(vals.iter_mut()) {
            let q = if theirs.get(j) == Some(id) {
                j += 1;
                their_vals[j - 1]
            } else {
                0
            };
            *v = f(*v, q);
        }
    }

    /// In-place `self += other`.
    #[inline]
    pub fn add_assign(&mut self, other: &Resource) {
        self.merge_assign(other, i64::saturating_add);
    }

    /// In-place `self -= other`.
    pub fn sub_assign(&mut self, other: &Resource) {
        self.merge_assign(other, i64::saturating_sub);
    }

    /// In-place `self -= other` with negative results clamped to zero.
    pub fn sub_clamped_assign(&mut self, other: &Resource) {
        self.merge_assign(other, |a, b| a.saturating_sub(b).max(0));
    }

    /// Raises each type to `other`'s quantity where that is larger (a type
    /// missing here counts as zero, so it is added only when positive): a
    /// running maximum, in place.
    pub fn raise_to(&mut self, other: &Resource) {
        if self.entries.same_ids(&other.entries) {
            for (a, b) in self.entries.vals_mut().iter_mut().zip(other.entries.vals()) {
                *a = (*a).max(*b);
            }
            return;
        }
        for (id, v) in other.iter() {
            if v > self.get(id) {
                self.set(id, v);
            }
        }
    }

    /// `self * n` per type, saturating.
    pub fn mul(&self, n: i64) -> Resource {
        let mut out = self.clone();
        for v in out.entries.vals_mut() {
            *v = v.saturating_mul(n);
        }
        out
    }

    /// The same resource without its zero quantities: the same value for
    /// every arithmetic, but a listing (REST, records) no longer names
    /// them.
    pub fn without_zeros(mut self) -> Resource {
        self.entries.retain_vals(|v| v != 0);
        self
    }

    /// Strict fit: every type of `self` fits in `big`, where a type missing
    /// from `big` is zero and negative quantities of `big` count as zero.
    pub fn fits_in(&self, big: &Resource) -> bool {
        self.first_short(big).is_none()
    }

    /// The first type `big` has less of than `self` (a missing or negative
    /// quantity counts as zero): `None` exactly when [`Self::fits_in`].
    #[inline]
    pub fn first_short(&self, big: &Resource) -> Option<ResId> {
        self.first_short_index(big).and_then(|i| self.type_at(i))
    }

    /// [`Self::first_short`] as a position in [`Self::iter`]'s order
    /// (the node walk counts by position; [`Self::type_at`] names it).
    #[inline]
    pub fn first_short_index(&self, big: &Resource) -> Option<usize> {
        self.entries
            .position_with(&big.entries, |v, b| v > b.unwrap_or(0).max(0))
    }

    /// The type at position `i` of [`Self::iter`]'s order.
    pub fn type_at(&self, i: usize) -> Option<ResId> {
        self.entries.ids().get(i).copied()
    }

    /// Fit where types missing from `big` are unlimited (quota checks).
    pub fn fits_in_max_undef(&self, big: &Resource) -> bool {
        self.entries
            .position_with(&big.entries, |v, b| b.is_some_and(|b| v > b.max(0)))
            .is_none()
    }

    /// Whether some type has a quantity above zero both here and in
    /// `other`: taking `other` away could free something `self` needs.
    pub fn shares_positive_type(&self, other: &Resource) -> bool {
        self.entries
            .position_with(&other.entries, |v, o| v > 0 && o.is_some_and(|o| o > 0))
            .is_some()
    }

    /// Per-type minimum where a missing type counts as zero.
    pub fn min(&self, other: &Resource) -> Resource {
        self.merge(other, i64::min)
    }
}

/// Fairness comparison (spec 14.5): the shares of `usage` relative to
/// `reference`, largest first.
pub fn shares(usage: &Resource, reference: Option<&Resource>) -> SmallVec<[f64; 4]> {
    // Pushed one by one: collected through the iterator adaptors, a call
    // cost ~300 instructions rather than ~180, and a queue is re-keyed
    // after every allocation.
    let mut out: SmallVec<[f64; 4]> = SmallVec::new();
    match reference {
        // The same types in the same order: no look-up per type.
        Some(r) if usage.entries.same_ids(&r.entries) => {
            for (&u, &of) in usage.entries.vals().iter().zip(r.entries.vals()) {
                out.push(share_of(u, Some(of)));
            }
        }
        _ => {
            for (id, u) in usage.iter() {
                out.push(share_of(u, reference.map(|r| r.get(id))));
            }
        }
    }
    if out.len() > 1 {
        out.sort_unstable_by(|a, b| b.total_cmp(a));
    }
    out
}

/// One type's share: `usage` over the reference's quantity `of`, or the
/// usage itself where the reference has none (or zero) of the type.
pub fn share_of(usage: i64, of: Option<i64>) -> f64 {
    if usage == 0 {
        return 0.0;
    }
    match of {
        Some(g) if g != 0 => usage as f64 / g as f64,
        _ => usage as f64,
    }
}

/// A usage's shares (see [`shares`]) as a sort key: ordered by
/// [`compare_shares`], a total order, so queues and applications can be
/// kept in fair order in B-trees and re-keyed when their usage changes.
#[derive(Debug, Clone, Default)]
pub struct ShareKey(pub SmallVec<[f64; 4]>);

impl ShareKey {
    /// The key of `usage` relative to `reference`.
    pub fn of(usage: &Resource, reference: Option<&Resource>) -> Self {
        ShareKey(shares(usage, reference))
    }
}

impl PartialEq for ShareKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for ShareKey {}

impl PartialOrd for ShareKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ShareKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        compare_shares(&self.0, &other.0)
    }
}

/// Compares two share lists: dominant share first, leftovers by their sign.
pub fn compare_shares(a: &[f64], b: &[f64]) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    for (x, y) in a.iter().zip(b.iter()) {
        match x.total_cmp(y) {
            Ordering::Equal => {}
            o => return o,
        }
    }
    let rest_sign = |rest: &[f64]| {
        rest.iter()
            .find(|v| **v != 0.0)
            .map_or(Ordering::Equal, |v| v.total_cmp(&0.0))
    };
    match a.len().cmp(&b.len()) {
        Ordering::Greater => rest_sign(&a[b.len()..]),
        Ordering::Less => rest_sign(&b[a.len()..]).reverse(),
        Ordering::Equal => Ordering::Equal,
    }
}

#[cfg(test)]
mod tests;
