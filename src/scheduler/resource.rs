//! Resources: sparse maps from interned resource-type names to quantities.
//!
//! Names are interned once, at the boundary, into small integer ids, so the
//! scheduling hot path compares integers and never hashes strings. A
//! [`Resource`] keeps its entries sorted by id in an inline small vector:
//! most resources have two or three types and never touch the heap.
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

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;
use smallvec::SmallVec;

use super::FastMap;
use crate::proto::si::v1 as si;

/// An interned resource-type name. Four bytes cost nothing over two in a
/// `(ResId, i64)` entry (alignment), and leave the process-wide id space
/// unbounded by the number of live schedulers.
pub type ResId = u32;

/// Upper bound on distinct resource-type names per scheduler. A scheduler's
/// names are kept until it is dropped, so an RM sending random names must
/// not grow memory without bound.
pub const MAX_RESOURCE_TYPES: usize = 4096;

/// Most new names one RM may add to its scheduler's table, so that a
/// single caller cannot exhaust it for the scheduler's other RMs (a real
/// cluster uses a few dozen types).
pub const MAX_RESOURCE_TYPES_PER_RM: usize = 256;

/// Most new names the configurations of one policy group may add to their
/// scheduler's table over its lifetime (queue limits, node sort weights).
/// A configuration that would pass it is refused as a whole and charges
/// nothing.
pub const MAX_RESOURCE_TYPES_PER_POLICY_GROUP: usize = 256;

/// Longest resource-type name (a Kubernetes extended resource name is at
/// most 317 bytes: a 253-byte DNS prefix, `/`, a 63-byte name).
pub const MAX_RESOURCE_NAME_LEN: usize = 512;

// ---------------------------------------------------------------------------
// The process-wide store of name strings.

struct Slot {
    name: Arc<str>,
    /// Tables (one per scheduler, plus the detached one) holding the name.
    tables: u32,
}

#[derive(Default)]
struct Store {
    ids: FastMap<Arc<str>, ResId>,
    slots: Vec<Option<Slot>>,
    /// Ids of names no table holds any more; the oldest is reused first,
    /// so a stale id (which no live quantity should carry) names nothing
    /// for as long as possible.
    free: VecDeque<ResId>,
}

fn store() -> &'static RwLock<Store> {
    static STORE: OnceLock<RwLock<Store>> = OnceLock::new();
    STORE.get_or_init(Default::default)
}

impl Store {
    /// The id of `name` for one more table.
    fn acquire(&mut self, name: &str) -> Result<(ResId, Arc<str>), String> {
        if let Some(&id) = self.ids.get(name) {
            let slot = self.slots[id as usize].as_mut().expect("live id");
            slot.tables += 1;
            return Ok((id, slot.name.clone()));
        }
        let name: Arc<str> = Arc::from(name);
        let id = match self.free.pop_front() {
            Some(id) => id,
            None => {
                let id = ResId::try_from(self.slots.len())
                    .map_err(|_| "the process holds too many resource type names".to_string())?;
                self.slots.push(None);
                id
            }
        };
        self.slots[id as usize] = Some(Slot {
            name: name.clone(),
            tables: 1,
        });
        self.ids.insert(name.clone(), id);
        Ok((id, name))
    }

    /// One table less holds `id`; the last one frees the name.
    fn release(&mut self, id: ResId) {
        let Some(Some(slot)) = self.slots.get_mut(id as usize) else {
            return;
        };
        slot.tables -= 1;
        if slot.tables == 0 {
            let slot = self.slots[id as usize].take().expect("live id");
            self.ids.remove(&*slot.name);
            self.free.push_back(id);
        }
    }
}

/// The name of an interned id (`"?"` for an id no table holds, which only
/// a quantity that outlived its scheduler could carry).
pub fn name_of(id: ResId) -> Arc<str> {
    if let Some(Some(slot)) = store().read_recursive().slots.get(id as usize) {
        return slot.name.clone();
    }
    static UNKNOWN: OnceLock<Arc<str>> = OnceLock::new();
    UNKNOWN.get_or_init(|| Arc::from("?")).clone()
}

/// Whether any table of the process holds `name` (for tests that check a
/// dropped scheduler gave its names back).
#[doc(hidden)]
pub fn process_holds_name(name: &str) -> bool {
    store().read().ids.contains_key(name)
}

// ---------------------------------------------------------------------------
// Per-scheduler tables.

/// Who a new name is charged to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Payer {
    Rm(String),
    /// An open configuration transaction (see [`configuration`]).
    Txn(u64),
    /// The scheduler itself: built-in defaults, internal use.
    Internal,
}

/// Whose share a settled name counts against.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Share {
    Rm(String),
    PolicyGroup(String),
    Internal,
}

#[derive(Clone, Copy)]
struct Entry {
    id: ResId,
    /// The configuration transaction holding the name provisionally, or 0
    /// once it is settled (charged to a share).
    txn: u64,
}

struct Txn {
    policy_group: String,
    /// Names this transaction added or took over; some may since have been
    /// taken over by an RM (their entry's `txn` says).
    names: Vec<Arc<str>>,
    /// How many of `names` the transaction still holds.
    pending: usize,
    /// The configuration was accepted: names it meets from now on (live
    /// state is being changed) are charged to its group at once.
    kept: bool,
}

#[derive(Default)]
struct Held {
    ids: FastMap<Arc<str>, Entry>,
    /// Settled names per share.
    added: HashMap<Share, usize>,
    txns: HashMap<u64, Txn>,
    next_txn: u64,
}

/// One scheduler's resource-name table (see the module docs). Dropping the
/// last handle gives its names back to the process.
pub struct ResourceNames {
    held: RwLock<Held>,
}

impl fmt::Debug for ResourceNames {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceNames")
            .field("names", &self.len())
            .finish()
    }
}

impl Drop for ResourceNames {
    fn drop(&mut self) {
        let held = self.held.get_mut();
        let mut store = store().write();
        for e in held.ids.values() {
            store.release(e.id);
        }
    }
}

impl ResourceNames {
    /// An empty table, for a new scheduler.
    pub fn new() -> Arc<Self> {
        Arc::new(ResourceNames {
            held: RwLock::new(Held::default()),
        })
    }

    /// Number of names the table holds (settled or provisional).
    pub fn len(&self) -> usize {
        self.held.read().ids.len()
    }

    /// Whether the table holds no name.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs `f` with new resource names charged to RM `rm_id` of this
    /// table's scheduler (see [`MAX_RESOURCE_TYPES_PER_RM`]), for decoding
    /// on the RM's own thread.
    pub fn charged_to<T>(self: &Arc<Self>, rm_id: &str, f: impl FnOnce() -> T) -> T {
        with_scope(
            Scope {
                names: Some(self.clone()),
                payer: Payer::Rm(rm_id.to_string()),
            },
            f,
        )
    }

    /// Runs `f` with new resource names charged to the table's scheduler
    /// itself (bounded by [`MAX_RESOURCE_TYPES`] only).
    pub fn charged_to_scheduler<T>(self: &Arc<Self>, f: impl FnOnce() -> T) -> T {
        with_scope(
            Scope {
                names: Some(self.clone()),
                payer: Payer::Internal,
            },
            f,
        )
    }

    /// The id of `name`, adding it, charged to `payer`, on first sight.
    fn intern(&self, name: &str, payer: &Payer) -> Result<ResId, String> {
        if let Some(e) = self.held.read().ids.get(name) {
            if e.txn == 0 || *payer == Payer::Txn(e.txn) {
                return Ok(e.id);
            }
        }
        self.intern_slow(name, payer)
    }

    #[cold]
    fn intern_slow(&self, name: &str, payer: &Payer) -> Result<ResId, String> {
        if name.len() > MAX_RESOURCE_NAME_LEN {
            return Err(format!(
                "resource type name of {} bytes is longer than the limit of {MAX_RESOURCE_NAME_LEN}",
                name.len()
            ));
        }
        let mut guard = self.held.write();
        let held = &mut *guard;
        let existing = held.ids.get(name).copied();
        if let Some(e) = existing {
            if e.txn == 0 || *payer == Payer::Txn(e.txn) {
                return Ok(e.id);
            }
        } else if held.ids.len() >= MAX_RESOURCE_TYPES {
            return Err(format!(
                "too many distinct resource types in this scheduler (limit {MAX_RESOURCE_TYPES}); refusing new type '{name}'"
            ));
        }
        held.check_share(payer, name)?;
        let (entry, key) = match existing {
            // Held provisionally by a configuration not accepted yet: the
            // payer takes it over, so giving the configuration's names back
            // cannot take it from under the payer.
            Some(e) => {
                let key = held.ids.get_key_value(name).expect("present").0.clone();
                if let Some(t) = held.txns.get_mut(&e.txn) {
                    t.pending -= 1;
                }
                (e, key)
            }
            None => {
                let (id, key) = store().write().acquire(name)?;
                (Entry { id, txn: 0 }, key)
            }
        };
        let txn = match payer {
            Payer::Txn(t) => {
                let open = held.txns.get_mut(t).expect("checked");
                if open.kept {
                    let share = Share::PolicyGroup(open.policy_group.clone());
                    *held.added.entry(share).or_default() += 1;
                    0
                } else {
                    open.names.push(key.clone());
                    open.pending += 1;
                    *t
                }
            }
            Payer::Rm(rm) => {
                *held.added.entry(Share::Rm(rm.clone())).or_default() += 1;
                0
            }
            Payer::Internal => {
                *held.added.entry(Share::Internal).or_default() += 1;
                0
            }
        };
        held.ids.insert(key, Entry { id: entry.id, txn });
        Ok(entry.id)
    }

    fn open(&self, policy_group: &str) -> u64 {
        let mut held = self.held.write();
        held.next_txn += 1;
        let t = held.next_txn;
        held.txns.insert(
            t,
            Txn {
                policy_group: policy_group.to_string(),
                names: Vec::new(),
                pending: 0,
                kept: false,
            },
        );
        t
    }

    /// Settles what transaction `t` holds: charged to its policy group.
    fn keep(&self, t: u64) {
        let mut guard = self.held.write();
        let held = &mut *guard;
        let Some(txn) = held.txns.get_mut(&t) else {
            return;
        };
        for name in txn.names.drain(..) {
            if let Some(e) = held.ids.get_mut(&*name) {
                if e.txn == t {
                    e.txn = 0;
                }
            }
        }
        txn.kept = true;
        let kept = std::mem::take(&mut txn.pending);
        let share = Share::PolicyGroup(txn.policy_group.clone());
        *held.added.entry(share).or_default() += kept;
    }

    /// Ends transaction `t`, giving back what it still holds.
    fn close(&self, t: u64) {
        let mut guard = self.held.write();
        let held = &mut *guard;
        let Some(txn) = held.txns.remove(&t) else {
            return;
        };
        if txn.pending == 0 {
            return;
        }
        let mut store = store().write();
        for name in txn.names {
            if held.ids.get(&*name).is_some_and(|e| e.txn == t) {
                let e = held.ids.remove(&*name).expect("present");
                store.release(e.id);
            }
        }
    }
}

impl Held {
    /// Whether `payer` may add `name` as new to the table.
    fn check_share(&self, payer: &Payer, name: &str) -> Result<(), String> {
        match payer {
            Payer::Rm(rm) => {
                if self.added.get(&Share::Rm(rm.clone())).copied().unwrap_or(0)
                    >= MAX_RESOURCE_TYPES_PER_RM
                {
                    return Err(format!(
                        "RM {rm} introduced too many distinct resource types (limit {MAX_RESOURCE_TYPES_PER_RM} per RM); refusing new type '{name}'"
                    ));
                }
            }
            Payer::Txn(t) => {
                let txn = self
                    .txns
                    .get(t)
                    .ok_or("configuration transaction is not open")?;
                let settled = self
                    .added
                    .get(&Share::PolicyGroup(txn.policy_group.clone()))
                    .copied()
                    .unwrap_or(0);
                if settled + txn.pending >= MAX_RESOURCE_TYPES_PER_POLICY_GROUP {
                    return Err(format!(
                        "the configuration of policy group '{}' introduces too many distinct resource types (limit {MAX_RESOURCE_TYPES_PER_POLICY_GROUP} per policy group, {settled} in use by its earlier configurations); refusing new type '{name}'",
                        txn.policy_group
                    ));
                }
            }
            // Bounded by the table's limit only.
            Payer::Internal => {}
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Which table and payer the current thread interns for.

struct Scope {
    /// `None`: the thread's home table.
    names: Option<Arc<ResourceNames>>,
    payer: Payer,
}

thread_local! {
    /// The payer (and table) of the conversion running on this thread.
    static SCOPE: RefCell<Option<Scope>> = const { RefCell::new(None) };
    /// The table of the scheduler that owns this thread (its core thread).
    static HOME: RefCell<Option<Arc<ResourceNames>>> = const { RefCell::new(None) };
}

/// The table of threads no scheduler owns (unit tests, fuzzing, Rust code
/// building resources on its own): bounded like any other and shared by no
/// scheduler.
fn detached() -> &'static Arc<ResourceNames> {
    static DETACHED: OnceLock<Arc<ResourceNames>> = OnceLock::new();
    DETACHED.get_or_init(ResourceNames::new)
}

fn with_home<T>(f: impl FnOnce(&Arc<ResourceNames>) -> T) -> T {
    HOME.with(|h| match &*h.borrow() {
        Some(names) => f(names),
        None => f(detached()),
    })
}

fn with_scope<T>(scope: Scope, f: impl FnOnce() -> T) -> T {
    struct Reset(Option<Scope>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let old = self.0.take();
            SCOPE.with(|s| *s.borrow_mut() = old);
        }
    }
    let old = SCOPE.with(|s| s.borrow_mut().replace(scope));
    let _reset = Reset(old);
    f()
}

/// Makes `names` the table of the calling thread (a scheduler's core
/// thread) for the rest of its life.
pub fn set_home(names: Arc<ResourceNames>) {
    HOME.with(|h| *h.borrow_mut() = Some(names));
}

/// Runs `f` with new resource names charged to RM `rm_id` in the calling
/// thread's table (the core thread's: its scheduler's).
pub fn charged_to<T>(rm_id: &str, f: impl FnOnce() -> T) -> T {
    with_scope(
        Scope {
            names: None,
            payer: Payer::Rm(rm_id.to_string()),
        },
        f,
    )
}

/// Runs `f`, the building and checking of a configuration of
/// `policy_group`, in the calling thread's table: new names are held
/// provisionally and given back when `f` returns, unless
/// [`keep_configuration_names`] was called first (the configuration was
/// accepted). Inside an open configuration, `f` simply joins it.
pub fn configuration<T>(policy_group: &str, f: impl FnOnce() -> T) -> T {
    let open = SCOPE.with(|s| {
        matches!(
            &*s.borrow(),
            Some(Scope {
                payer: Payer::Txn(_),
                ..
            })
        )
    });
    if open {
        return f();
    }
    let names = with_home(Arc::clone);
    let t = names.open(policy_group);
    struct Close(Arc<ResourceNames>, u64);
    impl Drop for Close {
        fn drop(&mut self) {
            self.0.close(self.1);
        }
    }
    let _close = Close(names.clone(), t);
    with_scope(
        Scope {
            names: Some(names),
            payer: Payer::Txn(t),
        },
        f,
    )
}

/// Charges the names the open configuration holds to its policy group:
/// called once the configuration is accepted, before live state uses them.
pub fn keep_configuration_names() {
    SCOPE.with(|s| {
        if let Some(Scope {
            names: Some(names),
            payer: Payer::Txn(t),
        }) = &*s.borrow()
        {
            names.keep(*t);
        }
    });
}

/// The id of a name the scheduler itself uses by default (the node sort
/// policy's `vcore` and `memory`): charged to the scheduler, never to the
/// configuration or RM being converted.
pub fn intern_builtin(name: &str) -> Result<ResId, String> {
    SCOPE.with(|s| match &*s.borrow() {
        Some(Scope {
            names: Some(names), ..
        }) => names.intern(name, &Payer::Internal),
        _ => with_home(|names| names.intern(name, &Payer::Internal)),
    })
}

/// Returns the id of `name`, interning it on first sight in the current
/// table, charged to the current payer.
pub fn intern(name: &str) -> Result<ResId, String> {
    SCOPE.with(|s| match &*s.borrow() {
        Some(Scope {
            names: Some(names),
            payer,
        }) => names.intern(name, payer),
        Some(Scope { names: None, payer }) => with_home(|names| names.intern(name, payer)),
        None => with_home(|names| names.intern(name, &Payer::Internal)),
    })
}

/// See [`Resource::named`].
pub struct Named<'a> {
    store: parking_lot::RwLockReadGuard<'static, Store>,
    resource: &'a Resource,
}

impl Named<'_> {
    /// `(name, quantity)` in id order.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (&str, i64)> + '_ {
        self.resource
            .entries
            .iter()
            .map(|&(id, v)| match self.store.slots.get(id as usize) {
                Some(Some(slot)) => (&*slot.name, v),
                _ => ("?", v),
            })
    }
}

/// A sparse resource: a missing type is a zero quantity.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Resource {
    entries: SmallVec<[(ResId, i64); 4]>,
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
        self.entries.iter().copied()
    }

    /// The quantity of a type (zero when missing).
    pub fn get(&self, id: ResId) -> i64 {
        self.lookup(id).unwrap_or(0)
    }

    /// The quantity of a type, or `None` when the type is missing.
    pub fn lookup(&self, id: ResId) -> Option<i64> {
        self.entries
            .binary_search_by_key(&id, |e| e.0)
            .ok()
            .map(|i| self.entries[i].1)
    }

    /// Sets the quantity of a type.
    pub fn set(&mut self, id: ResId, v: i64) {
        match self.entries.binary_search_by_key(&id, |e| e.0) {
            Ok(i) => self.entries[i].1 = v,
            Err(i) => self.entries.insert(i, (id, v)),
        }
    }

    /// True when every quantity is zero (or there are none).
    pub fn is_zero(&self) -> bool {
        self.entries.iter().all(|e| e.1 == 0)
    }

    /// At least one quantity above zero and none below.
    pub fn is_strictly_positive(&self) -> bool {
        self.entries.iter().any(|e| e.1 > 0) && self.entries.iter().all(|e| e.1 >= 0)
    }

    /// True when any quantity is negative.
    pub fn has_negative(&self) -> bool {
        self.entries.iter().any(|e| e.1 < 0)
    }

    fn merge(&self, other: &Resource, f: impl Fn(i64, i64) -> i64) -> Resource {
        let (a, b) = (&self.entries, &other.entries);
        let mut out = SmallVec::with_capacity(a.len().max(b.len()));
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            if j == b.len() || (i < a.len() && a[i].0 < b[j].0) {
                out.push((a[i].0, f(a[i].1, 0)));
                i += 1;
            } else if i == a.len() || b[j].0 < a[i].0 {
                out.push((b[j].0, f(0, b[j].1)));
                j += 1;
            } else {
                out.push((a[i].0, f(a[i].1, b[j].1)));
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
        let (a, b) = (&self.entries, &other.entries);
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            match a[i].0.cmp(&b[j].0) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    if a[i].1.checked_add(b[j].1).is_none() {
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
    fn merge_assign(&mut self, other: &Resource, f: impl Fn(i64, i64) -> i64) {
        // Same types in the same order (an ask against the usage it adds
        // to, nearly always): one zipped walk.
        if self.entries.len() == other.entries.len()
            && self
                .entries
                .iter()
                .zip(other.entries.iter())
                .all(|(a, b)| a.0 == b.0)
        {
            for (a, b) in self.entries.iter_mut().zip(other.entries.iter()) {
                a.1 = f(a.1, b.1);
            }
            return;
        }
        let covered = other
            .entries
            .iter()
            .all(|(id, _)| self.lookup(*id).is_some());
        if !covered {
            *self = self.merge(other, f);
            return;
        }
        for (id, v) in other.iter() {
            let i = self
                .entries
                .binary_search_by_key(&id, |e| e.0)
                .expect("covered");
            self.entries[i].1 = f(self.entries[i].1, v);
        }
    }

    /// In-place `self += other`.
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

    /// `self * n` per type, saturating.
    pub fn mul(&self, n: i64) -> Resource {
        Resource {
            entries: self
                .entries
                .iter()
                .map(|(id, v)| (*id, v.saturating_mul(n)))
                .collect(),
        }
    }

    /// Strict fit: every type of `self` fits in `big`, where a type missing
    /// from `big` is zero and negative quantities of `big` count as zero.
    pub fn fits_in(&self, big: &Resource) -> bool {
        self.iter().all(|(id, v)| v <= big.get(id).max(0))
    }

    /// Fit where types missing from `big` are unlimited (quota checks).
    pub fn fits_in_max_undef(&self, big: &Resource) -> bool {
        self.iter()
            .all(|(id, v)| big.lookup(id).is_none_or(|b| v <= b.max(0)))
    }

    /// Per-type minimum where a missing type counts as zero.
    pub fn min(&self, other: &Resource) -> Resource {
        self.merge(other, i64::min)
    }
}

/// Fairness comparison (spec 14.5): the shares of `usage` relative to
/// `reference`, largest first.
pub fn shares(usage: &Resource, reference: Option<&Resource>) -> SmallVec<[f64; 4]> {
    let mut out: SmallVec<[f64; 4]> = usage
        .iter()
        .map(|(id, u)| {
            if u == 0 {
                0.0
            } else {
                match reference.map(|g| g.get(id)) {
                    Some(g) if g != 0 => u as f64 / g as f64,
                    _ => u as f64,
                }
            }
        })
        .collect();
    out.sort_unstable_by(|a, b| b.total_cmp(a));
    out
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
mod tests {
    use super::*;

    fn r(pairs: &[(&str, i64)]) -> Resource {
        Resource::from_pairs(pairs.iter().copied()).unwrap()
    }

    use super::process_holds_name as in_store;

    /// Runs `f` as on the core thread of a scheduler with table `names`.
    fn at_home<T>(names: &Arc<ResourceNames>, f: impl FnOnce() -> T) -> T {
        let old = HOME.with(|h| h.borrow_mut().replace(names.clone()));
        let out = f();
        HOME.with(|h| *h.borrow_mut() = old);
        out
    }

    #[test]
    fn tables_are_per_scheduler_and_give_their_names_back() {
        let a = ResourceNames::new();
        let b = ResourceNames::new();
        let name = "unit/per-scheduler-shared";
        let ida = a.charged_to("rm", || intern(name)).unwrap();
        let idb = b.charged_to("rm", || intern(name)).unwrap();
        assert_eq!(ida, idb, "one id per name across tables");
        // `a`'s RM fills its share; `b`'s RM of the same rmID still has its own.
        for i in 1..MAX_RESOURCE_TYPES_PER_RM {
            a.charged_to("rm", || intern(&format!("unit/a-{i}")))
                .unwrap();
        }
        let e = a.charged_to("rm", || intern("unit/a-over")).unwrap_err();
        assert!(e.contains("limit 256 per RM"), "{e}");
        assert!(b.charged_to("rm", || intern("unit/b-1")).is_ok());
        assert_eq!(a.len(), MAX_RESOURCE_TYPES_PER_RM);
        drop(a);
        assert!(
            !in_store("unit/a-1"),
            "a dropped table gives its names back"
        );
        assert!(in_store(name), "still held by the other table");
        assert_eq!(&*name_of(idb), name);
        drop(b);
        assert!(!in_store(name));
        assert_eq!(&*name_of(idb), "?");
    }

    #[test]
    fn scheduler_total_is_bounded_across_rms() {
        let t = ResourceNames::new();
        for rm in 0..MAX_RESOURCE_TYPES / MAX_RESOURCE_TYPES_PER_RM {
            for i in 0..MAX_RESOURCE_TYPES_PER_RM {
                t.charged_to(&format!("rm{rm}"), || {
                    intern(&format!("unit/total-{rm}-{i}"))
                })
                .unwrap();
            }
        }
        let e = t
            .charged_to("late", || intern("unit/total-late"))
            .unwrap_err();
        assert!(e.contains("limit 4096"), "{e}");
        // Names it holds still resolve for anyone in the scheduler.
        assert!(t.charged_to("late", || intern("unit/total-0-0")).is_ok());
    }

    #[test]
    fn a_refused_configuration_charges_nothing() {
        let t = ResourceNames::new();
        at_home(&t, || {
            let refused: Result<(), String> = configuration("g", || {
                for i in 0..MAX_RESOURCE_TYPES_PER_POLICY_GROUP + 10 {
                    intern(&format!("unit/cfg-{i}"))?;
                }
                Ok(())
            });
            let e = refused.unwrap_err();
            assert!(e.contains("policy group 'g'"), "{e}");
            assert!(e.contains("limit 256 per policy group"), "{e}");
            assert!(t.is_empty(), "refused: nothing held");
            assert!(!in_store("unit/cfg-0"));
            // The full share is still there, and kept once accepted.
            configuration("g", || {
                for i in 0..MAX_RESOURCE_TYPES_PER_POLICY_GROUP {
                    intern(&format!("unit/cfg-{i}")).unwrap();
                }
                keep_configuration_names();
            });
            assert_eq!(t.len(), MAX_RESOURCE_TYPES_PER_POLICY_GROUP);
            // Kept names count against later configurations of the group
            // but cost nothing when used again.
            let e = configuration("g", || intern("unit/cfg-new")).unwrap_err();
            assert!(e.contains("256 in use"), "{e}");
            assert!(configuration("g", || intern("unit/cfg-3")).is_ok());
            assert!(configuration("other", || intern("unit/cfg-other")).is_ok());
            assert_eq!(t.len(), MAX_RESOURCE_TYPES_PER_POLICY_GROUP, "not kept");
        });
    }

    #[test]
    fn an_rm_takes_over_a_provisional_name() {
        let t = ResourceNames::new();
        at_home(&t, || {
            let id = configuration("g", || {
                let id = intern("unit/claimed").unwrap();
                intern("unit/given-back").unwrap();
                // An RM decoding on its own thread meets the name now.
                let t2 = t.clone();
                let claimed =
                    std::thread::spawn(move || t2.charged_to("rm", || intern("unit/claimed")))
                        .join()
                        .unwrap()
                        .unwrap();
                assert_eq!(claimed, id);
                id
            });
            assert_eq!(t.len(), 1, "the RM's name stays, the other goes back");
            assert_eq!(&*name_of(id), "unit/claimed");
            assert!(!in_store("unit/given-back"));
        });
    }

    #[test]
    fn names_met_after_keep_are_charged_at_once() {
        let t = ResourceNames::new();
        at_home(&t, || {
            configuration("g", || {
                intern("unit/kept-before").unwrap();
                keep_configuration_names();
                intern("unit/kept-after").unwrap();
            });
            assert_eq!(t.len(), 2, "live state may use both");
            let e = configuration("g", || {
                for i in 0..MAX_RESOURCE_TYPES_PER_POLICY_GROUP {
                    intern(&format!("unit/kept-{i}"))?;
                }
                Ok::<_, String>(())
            })
            .unwrap_err();
            assert!(e.contains("2 in use"), "{e}");
        });
    }

    #[test]
    fn nested_configuration_joins_the_open_one() {
        let t = ResourceNames::new();
        at_home(&t, || {
            configuration("g", || {
                configuration("g", || intern("unit/nested-1")).unwrap();
                assert_eq!(t.len(), 1, "the inner end gives nothing back");
            });
            assert!(t.is_empty());
        });
    }

    #[test]
    fn can_add_checks_every_shared_type() {
        let big = r(&[("memory", i64::MAX - 1), ("vcore", 1)]);
        assert!(big.can_add(&r(&[("memory", 1)])));
        assert!(!big.can_add(&r(&[("memory", 2)])));
        assert!(big.can_add(&r(&[("pods", i64::MAX), ("vcore", 5)])));
        assert!(!r(&[("pods", 1), ("vcore", i64::MAX)]).can_add(&r(&[("vcore", 1)])));
        assert_eq!(big.checked_add(&r(&[("memory", 2)])), None);
        assert_eq!(
            r(&[("memory", 1)]).checked_add(&r(&[("vcore", 2)])),
            Some(r(&[("memory", 1), ("vcore", 2)]))
        );
    }

    #[test]
    fn arithmetic_over_the_union_of_types() {
        let a = r(&[("memory", 10), ("vcore", 2)]);
        let b = r(&[("vcore", 3), ("gpu", 1)]);
        assert_eq!(a.add(&b), r(&[("memory", 10), ("vcore", 5), ("gpu", 1)]));
        assert_eq!(a.sub(&b), r(&[("memory", 10), ("vcore", -1), ("gpu", -1)]));
        assert_eq!(
            a.sub_clamped(&b),
            r(&[("memory", 10), ("vcore", 0), ("gpu", 0)])
        );
        let mut c = a.clone();
        c.add_assign(&b);
        c.sub_assign(&b);
        assert_eq!(c, r(&[("memory", 10), ("vcore", 2), ("gpu", 0)]));
        // In place, over the same types (the zipped fast path), over a
        // subset, and over types self lacks: all as the copying forms.
        for (x, y) in [(&a, &a), (&a, &r(&[("vcore", 5)])), (&a, &b), (&b, &a)] {
            let mut v = x.clone();
            v.sub_clamped_assign(y);
            assert_eq!(v, x.sub_clamped(y));
            let mut v = x.clone();
            v.add_assign(y);
            assert_eq!(v, x.add(y));
            let mut v = x.clone();
            v.sub_assign(y);
            assert_eq!(v, x.sub(y));
        }
        assert_eq!(
            r(&[("m", i64::MAX)]).add(&r(&[("m", 1)])),
            r(&[("m", i64::MAX)])
        );
    }

    #[test]
    fn fit_rules() {
        let ask = r(&[("memory", 10), ("gpu", 1)]);
        let node = r(&[("memory", 100)]);
        assert!(!ask.fits_in(&node), "strict fit: a missing type is zero");
        assert!(
            ask.fits_in_max_undef(&node),
            "quota fit: a missing type is unlimited"
        );
        assert!(r(&[("memory", -5)]).fits_in(&r(&[])));
        assert!(!r(&[("memory", 1)]).fits_in(&r(&[("memory", -5)])));
    }

    #[test]
    fn share_comparison_uses_dominant_share() {
        let g = r(&[("memory", 100), ("vcore", 10)]);
        let a = shares(&r(&[("memory", 50), ("vcore", 1)]), Some(&g));
        let b = shares(&r(&[("memory", 10), ("vcore", 6)]), Some(&g));
        assert_eq!(compare_shares(&a, &b), std::cmp::Ordering::Less);
        assert_eq!(
            compare_shares(&[0.5, 0.2], &[0.5]),
            std::cmp::Ordering::Greater
        );
    }

    #[test]
    fn display_sorts_by_name() {
        assert_eq!(
            r(&[("vcore", 1), ("memory", 2)]).to_string(),
            "map[memory:2 vcore:1]"
        );
    }
}
