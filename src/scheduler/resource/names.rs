//! The resource-type name tables: one per scheduler, charged per RM,
//! policy group or the scheduler itself, over one process-wide store of
//! the strings (see the parent module's docs).

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;

use super::Resource;
use crate::scheduler::FastMap;

/// An interned resource-type name. Two bytes: a [`Resource`] keeps its ids
/// apart from its quantities, so each id costs what it holds. The id
/// space is process-wide: 65,536 names held at once by all live
/// schedulers (each holds at most [`MAX_RESOURCE_TYPES`]); one more is
/// refused with an error naming the limit.
pub type ResId = u16;

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
pub(super) struct Store {
    ids: FastMap<Arc<str>, ResId>,
    slots: Vec<Option<Slot>>,
    /// Ids of names no table holds any more; the oldest is reused first,
    /// so a stale id (which no live quantity should carry) names nothing
    /// for as long as possible.
    free: VecDeque<ResId>,
}

pub(super) fn store() -> &'static RwLock<Store> {
    static STORE: OnceLock<RwLock<Store>> = OnceLock::new();
    STORE.get_or_init(Default::default)
}

impl Store {
    /// The id of `name` for one more table.
    pub(super) fn acquire(&mut self, name: &str) -> Result<(ResId, Arc<str>), String> {
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
                    .map_err(|_| {
                        format!(
                            "the process's schedulers hold {} resource type names, the most ids there are",
                            self.slots.len()
                        )
                    })?;
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
    pub(super) static HOME: RefCell<Option<Arc<ResourceNames>>> = const { RefCell::new(None) };
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
    pub(super) store: parking_lot::RwLockReadGuard<'static, Store>,
    pub(super) resource: &'a Resource,
}

impl Named<'_> {
    /// `(name, quantity)` in id order.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (&str, i64)> + '_ {
        self.resource
            .entries
            .iter()
            .map(|(id, v)| match self.store.slots.get(id as usize) {
                Some(Some(slot)) => (&*slot.name, v),
                _ => ("?", v),
            })
    }
}
