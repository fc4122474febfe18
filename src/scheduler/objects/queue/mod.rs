//! The queue tree of one partition: quotas, usage, ACLs and fair order.
//!
//! Queues live in an arena indexed by [`QueueId`]; a removed queue leaves an
//! empty slot so ids held elsewhere never point at another queue.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::scheduler::resource::{Resource, ShareKey};
use crate::security::{Acl, UserGroup};

mod config;
mod headroom;
mod priority;
mod unfiled;
use priority::inherited;
pub(crate) use priority::quietly;
pub use priority::{PrioritySettings, MIN_PRIORITY};
// snapshot.rs reads the priority policy through this name.
pub use crate::scheduler::policies::PriorityPolicy;
use crate::scheduler::policies::{AppSortPolicy, PROP_APP_SORT_POLICY};

/// Index of a queue in its tree's arena.
pub type QueueId = usize;

/// Queue lifecycle (spec 3.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueState {
    /// Schedules and accepts applications.
    Active,
    /// Removed from the config: runs what it has, then goes away.
    Draining,
}

/// What dynamic children of a parent inherit.
#[derive(Debug, Clone, Default)]
pub struct ChildTemplate {
    /// Properties given to dynamic leaves.
    pub properties: BTreeMap<String, String>,
    /// Guarantee given to dynamic leaves.
    pub guaranteed: Option<Resource>,
    /// Max given to dynamic leaves.
    pub max: Option<Resource>,
    /// `maxapplications` given to dynamic leaves (0 = none).
    pub max_applications: u64,
}

/// One queue.
#[derive(Debug, Clone)]
pub struct Queue {
    /// Lower-case name.
    pub name: String,
    /// Full dotted path from `root`.
    pub path: Arc<str>,
    /// The parent, `None` for root.
    pub parent: Option<QueueId>,
    /// Children by name.
    pub children: BTreeMap<String, QueueId>,
    /// Leaves hold applications; parents hold queues.
    pub leaf: bool,
    /// From the configuration (as opposed to created by placement).
    pub managed: bool,
    /// Configured guarantee.
    pub guaranteed: Option<Resource>,
    /// Configured max; for root, the partition's total capacity.
    pub max: Option<Resource>,
    /// Sum of allocations below.
    pub allocated: Resource,
    /// Sum of outstanding ask demand below.
    pub pending: Resource,
    /// Properties after inheritance.
    pub properties: BTreeMap<String, String>,
    /// Submit ACL text and parsed form.
    pub submit_acl: (String, Acl),
    /// Admin ACL text and parsed form.
    pub admin_acl: (String, Acl),
    /// Application order of a leaf.
    pub sort_policy: AppSortPolicy,
    /// Template for dynamic children.
    pub child_template: Option<ChildTemplate>,
    /// Lifecycle state.
    pub state: QueueState,
    /// Configured application limit (0 = none).
    pub max_applications: u64,
    /// Applications of a leaf keyed by submission sequence.
    pub apps: BTreeMap<u64, crate::scheduler::objects::keyed::Slot>,
    /// Applications of a leaf in scheduling order, by the key each holds
    /// (see [`AppKey`]), re-filed by the application whenever its priority
    /// or (fair leaves) its usage changes.
    pub app_order: BTreeMap<AppKey, crate::scheduler::objects::keyed::Slot>,
    /// Applications of a leaf in `Starting` (for the stateaware policy).
    pub starting_apps: usize,
    /// Applications at or below this queue that count against
    /// `maxapplications` (spec 3.8), kept as they start and stop counting.
    pub active_apps: u64,
    /// Children with pending demand in fair order (spec 3.6), by the key
    /// each child holds, re-filed whenever a child's usage or demand
    /// changes: a sorted vector of ids, in which a re-keyed child moves only
    /// past the siblings its new key passes (one allocation moves a queue a
    /// short way, often not at all), with no key copied or allocated.
    child_order: Vec<QueueId>,
    /// This queue's key in its parent's `child_order`, while it has demand.
    order_key: Option<ChildKey>,
    /// `priority.policy`, `priority.offset`, `application.sort.priority`.
    pub priority: PrioritySettings,
    /// Leaf: how many of its applications have each priority; parent: how
    /// many children report each priority (no priority is not counted).
    /// The highest key is the queue's raw priority.
    prio_counts: BTreeMap<i32, u32>,
    /// The priority the queue reports, as counted in its parent.
    reported: i32,
}

/// An application's place in its leaf's order (spec `policy/priority.md`
/// 5.2). With priority sorting enabled, higher priority comes first, then
/// usage share (fair leaves) or submission (fifo); disabled, priority only
/// breaks ties of the share (fair) or of the submission time (fifo). The
/// submission sequence ends it, so keys are unique.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct AppKey {
    /// Priority, when it comes first (else 0).
    pub first: Reverse<i32>,
    /// Usage share relative to the leaf's guarantee (fair leaves only).
    pub share: ShareKey,
    /// Submission time (fifo with priority sorting disabled only).
    pub submitted: Option<std::time::Instant>,
    /// Priority, when it only breaks ties (else 0).
    pub then: Reverse<i32>,
    /// Submission sequence.
    pub seq: u64,
}

/// A child's place in its parent's fair order: usage share relative to its
/// guarantee; on a tie, the larger pending demand first; then by path
/// (siblings' paths order as their names).
///
/// The reference breaks a share tie only when one queue's pending demand
/// is larger in every resource type (at least as large, larger in one);
/// that is a partial order. The sum of the pending quantities is a total
/// order that agrees with it wherever it decides (a dominating demand has
/// the larger sum), and it is a property of the queue alone, so the order
/// stays incremental.
///
/// Priority (the child's reported priority) comes before all of it when the
/// parent sorts by priority, else right after the share.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ChildKey {
    first: Reverse<i32>,
    shares: ShareKey,
    then: Reverse<i32>,
    pending: Reverse<i128>,
    path: Arc<str>,
    id: QueueId,
}

/// The pending demand as one number, for the tie-break of [`ChildKey`]:
/// every resource type counts with weight one (wide, so no sum overflows).
fn pending_weight(pending: &Resource) -> i128 {
    pending.iter().map(|(_, v)| i128::from(v.max(0))).sum()
}

/// Whether a change to a queue can have moved its usage share, the part
/// of [`ChildKey`] that costs most to compute.
#[derive(Clone, Copy)]
enum Usage {
    Changed,
    Unchanged,
}

impl Queue {
    fn blank(name: &str, path: String, parent: Option<QueueId>, leaf: bool) -> Self {
        Queue {
            name: name.to_ascii_lowercase(),
            path: Arc::from(path),
            parent,
            children: BTreeMap::new(),
            leaf,
            managed: false,
            guaranteed: None,
            max: None,
            allocated: Resource::new(),
            pending: Resource::new(),
            properties: BTreeMap::new(),
            submit_acl: (String::new(), Acl::default()),
            admin_acl: (String::new(), Acl::default()),
            sort_policy: AppSortPolicy::Fifo,
            child_template: None,
            state: QueueState::Active,
            max_applications: 0,
            apps: BTreeMap::new(),
            app_order: BTreeMap::new(),
            starting_apps: 0,
            active_apps: 0,
            child_order: Vec::new(),
            order_key: None,
            priority: PrioritySettings::default(),
            prio_counts: BTreeMap::new(),
            reported: MIN_PRIORITY,
        }
    }
}

/// A change of the tree an SI v1.x RM hears of as a QUEUE record (the
/// partition turns these into records).
#[derive(Debug, Clone, PartialEq)]
pub enum QueueChange {
    /// A queue was created: from configuration (`managed`) or dynamically.
    Added {
        /// Its path.
        path: Arc<str>,
        /// Whether the configuration made it.
        managed: bool,
    },
    /// A queue was removed.
    Removed {
        /// Its path.
        path: Arc<str>,
        /// Whether the configuration had made it.
        managed: bool,
    },
    /// A reload turned a queue into a leaf or a parent.
    Type {
        /// Its path.
        path: Arc<str>,
        /// Whether it is a leaf now.
        leaf: bool,
    },
    /// A queue's max changed (`None`: unlimited now).
    Max {
        /// Its path.
        path: Arc<str>,
        /// The new max.
        max: Option<Resource>,
    },
    /// A queue's guarantee changed.
    Guaranteed {
        /// Its path.
        path: Arc<str>,
        /// The new guarantee.
        guaranteed: Option<Resource>,
    },
    /// An application joined (`added`) or left a leaf.
    App {
        /// The leaf's path.
        path: Arc<str>,
        /// The application.
        app: Arc<str>,
        /// Joined or left.
        added: bool,
    },
}

/// The queue tree of a partition.
#[derive(Debug, Clone)]
pub struct QueueTree {
    slots: Vec<Option<Queue>>,
    /// Slots of removed queues, reused before the vector grows: dynamic
    /// queues come and go all the time.
    free: Vec<QueueId>,
    by_path: crate::scheduler::FastMap<String, QueueId>,
    /// Whether changes are noted in `journal` (QUEUE records wanted).
    journal_on: bool,
    /// Changes not yet turned into records.
    journal: Vec<QueueChange>,
    /// Leaves whose chain's demand grew without re-filing (unfiled.rs).
    unfiled: Vec<QueueId>,
}

/// The root's id.
pub const ROOT: QueueId = 0;

impl QueueTree {
    /// Notes changes for QUEUE records from now on (or stops).
    pub fn set_journal(&mut self, on: bool) {
        self.journal_on = on;
        if !on {
            self.journal.clear();
        }
    }

    /// Whether changes are noted.
    #[inline]
    pub fn journal_on(&self) -> bool {
        self.journal_on
    }

    /// Notes a change, if changes are noted.
    #[inline]
    pub fn note(&mut self, change: impl FnOnce() -> QueueChange) {
        if self.journal_on {
            self.journal.push(change());
        }
    }

    /// Whether changes wait to become records.
    #[inline]
    pub fn has_journal(&self) -> bool {
        !self.journal.is_empty()
    }

    /// The changes noted since the last call.
    pub fn take_journal(&mut self) -> Vec<QueueChange> {
        std::mem::take(&mut self.journal)
    }

    /// The path of a live queue (`None` for a removed id).
    pub fn path_of(&self, id: QueueId) -> Option<&Arc<str>> {
        self.slots.get(id)?.as_ref().map(|q| &q.path)
    }

    /// Puts a new queue into a free slot, or a new one.
    fn store(&mut self, q: Queue) -> QueueId {
        match self.free.pop() {
            Some(id) => {
                self.slots[id] = Some(q);
                id
            }
            None => {
                self.slots.push(Some(q));
                self.slots.len() - 1
            }
        }
    }

    /// The queue with this id. Panics on a removed id: ids are only held
    /// for live queues.
    pub fn get(&self, id: QueueId) -> &Queue {
        self.slots[id].as_ref().expect("live queue id")
    }

    /// Mutable access to a live queue.
    pub fn get_mut(&mut self, id: QueueId) -> &mut Queue {
        self.slots[id].as_mut().expect("live queue id")
    }

    /// Looks a queue up by full path, case-insensitively.
    pub fn lookup(&self, path: &str) -> Option<QueueId> {
        self.by_path.get(&path.to_ascii_lowercase()).copied()
    }

    /// Iterates over live queues.
    pub fn iter(&self) -> impl Iterator<Item = (QueueId, &Queue)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, q)| q.as_ref().map(|q| (i, q)))
    }

    /// Submit access: any submit or admin ACL from the queue up to root.
    pub fn can_submit(&self, id: QueueId, user: &UserGroup) -> bool {
        let mut cur = Some(id);
        while let Some(c) = cur {
            let q = self.get(c);
            if q.submit_acl.1.allows(user) || q.admin_acl.1.allows(user) {
                return true;
            }
            cur = q.parent;
        }
        false
    }

    /// Creates the missing levels of `path` as dynamic queues (spec 5.6) and
    /// returns the leaf.
    pub fn create_dynamic(&mut self, path: &str, user: &UserGroup) -> Result<QueueId, String> {
        let path = path.to_ascii_lowercase();
        if !path.starts_with("root.") {
            return Err("illegal queue name passed in".into());
        }
        crate::config::bounds::check_queue_path(&path)?;
        let parts: Vec<&str> = path.split('.').collect();
        let mut existing = ROOT;
        let mut depth = 1;
        while depth < parts.len() {
            match self.get(existing).children.get(parts[depth]) {
                Some(c) => {
                    existing = *c;
                    depth += 1;
                }
                None => break,
            }
        }
        if depth == parts.len() {
            return Ok(existing);
        }
        let anc = self.get(existing);
        if anc.leaf {
            return Err(format!(
                "cannot add a child queue to a leaf queue: {}",
                anc.path
            ));
        }
        if self.is_draining(existing) {
            return Err(format!(
                "cannot add a child queue when queue is marked for deletion: {}",
                anc.path
            ));
        }
        if !self.can_submit(existing, user) {
            return Err(format!(
                "user {} has no submit access to queue {}",
                user.user, anc.path
            ));
        }
        // Check every new name before creating anything, so a bad name
        // deeper in the path leaves no orphaned dynamic parents behind.
        if let Some(name) = parts[depth..]
            .iter()
            .find(|n| !crate::config::is_valid_queue_name(n))
        {
            return Err(format!(
                "invalid queue name {name}, a name must only have alphanumeric characters, - or _, and be no longer than 64 characters"
            ));
        }
        for (i, name) in parts.iter().enumerate().skip(depth) {
            let leaf = i + 1 == parts.len();
            let parent = self.get(existing);
            let child_path = format!("{}.{}", parent.path, name);
            let mut q = Queue::blank(name, child_path.clone(), Some(existing), leaf);
            if leaf {
                match &parent.child_template {
                    Some(t) => {
                        q.properties = t.properties.clone();
                        q.guaranteed = t.guaranteed.clone();
                        q.max = t.max.clone();
                        // Applied as YuniKorn v1 does (v0.12 parsed it only).
                        q.max_applications = t.max_applications;
                    }
                    None => {
                        if let Some(p) = parent.properties.get(PROP_APP_SORT_POLICY) {
                            q.properties.insert(PROP_APP_SORT_POLICY.into(), p.clone());
                        }
                    }
                }
                q.sort_policy =
                    AppSortPolicy::from_property(q.properties.get(PROP_APP_SORT_POLICY));
                q.priority = PrioritySettings::from_properties(&child_path, &q.properties);
            } else {
                q.child_template = parent.child_template.clone();
            }
            let id = self.store(q);
            self.by_path.insert(child_path, id);
            self.get_mut(existing)
                .children
                .insert((*name).to_string(), id);
            existing = id;
            if self.journal_on {
                let path = self.get(id).path.clone();
                self.journal.push(QueueChange::Added {
                    path,
                    managed: false,
                });
            }
        }
        Ok(existing)
    }

    /// Whether the queue or one of its ancestors is draining: such a queue
    /// runs what it has but takes no new applications or children.
    pub fn is_draining(&self, id: QueueId) -> bool {
        let mut cur = Some(id);
        while let Some(c) = cur {
            let q = self.get(c);
            if q.state == QueueState::Draining {
                return true;
            }
            cur = q.parent;
        }
        false
    }

    /// The queues from `id` up to root that have a `maxapplications` limit.
    pub fn app_limits(&self, id: QueueId) -> Vec<(QueueId, u64)> {
        let mut out = Vec::new();
        let mut cur = Some(id);
        while let Some(c) = cur {
            let q = self.get(c);
            if q.max_applications > 0 {
                out.push((c, q.max_applications));
            }
            cur = q.parent;
        }
        out
    }

    /// Counts an application in or out of `active_apps` from the leaf up.
    pub fn adjust_active_apps(&mut self, id: QueueId, counted: bool) {
        let mut cur = Some(id);
        while let Some(c) = cur {
            let q = self.get_mut(c);
            if counted {
                q.active_apps += 1;
            } else {
                q.active_apps = q.active_apps.saturating_sub(1);
            }
            cur = q.parent;
        }
    }

    /// Whether `anc` is `id` or one of its ancestors.
    pub fn is_ancestor_or_self(&self, anc: QueueId, id: QueueId) -> bool {
        let mut cur = Some(id);
        while let Some(c) = cur {
            if c == anc {
                return true;
            }
            cur = self.get(c).parent;
        }
        false
    }

    /// Removes an empty dynamic or draining queue. Returns whether it went.
    pub fn remove_if_unused(&mut self, id: QueueId) -> bool {
        let q = self.get(id);
        let removable = id != ROOT
            && (!q.managed || q.state == QueueState::Draining)
            && q.children.is_empty()
            && q.apps.is_empty()
            && q.allocated.is_zero();
        if removable {
            if let (Some(p), Some(key)) = (q.parent, q.order_key.as_ref()) {
                let at = self.child_position(p, id, key);
                self.get_mut(p).child_order.remove(at);
            }
            let q = self.slots[id].take().expect("live");
            // An unused queue has no priority left to take out of its
            // parent's counts (no applications, no children).
            debug_assert_eq!(q.reported, MIN_PRIORITY);
            // Nothing holds the id any more: no children, applications or
            // allocations refer to an unused queue.
            self.free.push(id);
            self.by_path.remove(&*q.path);
            if let Some(p) = q.parent {
                self.get_mut(p).children.remove(&q.name);
            }
            if self.journal_on {
                self.journal.push(QueueChange::Removed {
                    path: q.path,
                    managed: q.managed,
                });
            }
        }
        removable
    }

    /// Applies `change` to every queue from `id` up to root, keeping each
    /// one's place in its parent's fair order (usage and demand both count
    /// in it).
    fn update_chain(&mut self, id: QueueId, usage: Usage, change: impl Fn(&mut Queue)) {
        let mut cur = Some(id);
        while let Some(c) = cur {
            let q = self.get_mut(c);
            change(q);
            cur = q.parent;
            self.rekey_after(c, usage);
        }
    }

    /// Re-files a queue in its parent's `child_order` after its usage,
    /// guarantee or demand changed.
    fn rekey(&mut self, id: QueueId) {
        self.rekey_after(id, Usage::Changed);
    }

    /// [`Self::rekey`], told whether the usage share can have changed: a
    /// change of demand alone keeps the filed key's shares (computing them
    /// divides once per resource type, on every ask taken in).
    fn rekey_after(&mut self, id: QueueId, usage: Usage) {
        let q = self.get(id);
        let Some(parent) = q.parent else {
            return;
        };
        let by_priority = self.get(parent).priority.sort;
        let first = Reverse(if by_priority { q.reported } else { 0 });
        let then = Reverse(if by_priority { 0 } else { q.reported });
        let pending = q
            .pending
            .is_strictly_positive()
            .then(|| Reverse(pending_weight(&q.pending)));
        // Filed and still with demand: the key's path and id stay, so it is
        // changed where it is and moved, with no new key built (what every
        // ask taken in and every allocation does); a change of demand alone
        // keeps its shares too.
        if let (Some(old), Some(pending)) = (&q.order_key, pending) {
            let shares = match usage {
                Usage::Changed => Some(ShareKey::of(&q.allocated, q.guaranteed.as_ref())),
                Usage::Unchanged => None,
            };
            let same_shares = shares.as_ref().is_none_or(|s| *s == old.shares);
            if same_shares && (old.first, old.then, old.pending) == (first, then, pending) {
                return;
            }
            let at = self.child_position(parent, id, old);
            let key = self.get_mut(id).order_key.as_mut().expect("matched above");
            (key.first, key.then, key.pending) = (first, then, pending);
            if let Some(shares) = shares {
                key.shares = shares;
            }
            let mut order = std::mem::take(&mut self.get_mut(parent).child_order);
            self.refile(&mut order, at);
            self.get_mut(parent).child_order = order;
            return;
        }
        let key = pending.map(|pending| ChildKey {
            first,
            shares: ShareKey::of(&q.allocated, q.guaranteed.as_ref()),
            then,
            pending,
            path: q.path.clone(),
            id,
        });
        if key == q.order_key {
            return;
        }
        // The other children's keys are unchanged, so their part of the
        // order stays sorted: find where this child was, then where its new
        // key goes among the rest.
        let at = q
            .order_key
            .as_ref()
            .map(|old| self.child_position(parent, id, old));
        self.get_mut(id).order_key = key;
        let mut order = std::mem::take(&mut self.get_mut(parent).child_order);
        let key_of = |c: &QueueId| self.get(*c).order_key.as_ref().expect("filed with a key");
        match (at, self.get(id).order_key.as_ref()) {
            (Some(i), None) => {
                order.remove(i);
            }
            (None, Some(new)) => {
                let j = order.partition_point(|c| key_of(c) < new);
                order.insert(j, id);
            }
            (Some(i), Some(_)) => self.refile(&mut order, i),
            (None, None) => {}
        }
        self.get_mut(parent).child_order = order;
    }

    /// Moves the child at `i` of `order` (its parent's, taken out), whose
    /// key changed, to where its new key goes: the other children's keys
    /// are unchanged, so their part of the order is still sorted.
    fn refile(&self, order: &mut [QueueId], i: usize) {
        let key_of = |c: &QueueId| self.get(*c).order_key.as_ref().expect("filed with a key");
        let new = key_of(&order[i]);
        let left = order[..i].partition_point(|c| key_of(c) < new);
        if left < i {
            order[left..=i].rotate_right(1);
        } else {
            let right = i + 1 + order[i + 1..].partition_point(|c| key_of(c) < new);
            order[i..right].rotate_left(1);
        }
    }

    /// Where child `id`, holding `key`, is in `parent`'s order. Keys are
    /// unique (they end with the id), so the id alone says "found" without
    /// comparing the whole key.
    fn child_position(&self, parent: QueueId, id: QueueId, key: &ChildKey) -> usize {
        self.get(parent)
            .child_order
            .binary_search_by(|c| {
                if *c == id {
                    return std::cmp::Ordering::Equal;
                }
                let k = self.get(*c).order_key.as_ref().expect("filed with a key");
                k.cmp(key)
            })
            .expect("a child with a key is filed")
    }

    /// Adds allocated resource from the leaf up.
    pub fn add_allocated(&mut self, id: QueueId, res: &Resource) {
        self.update_chain(id, Usage::Changed, |q| q.allocated.add_assign(res));
    }

    /// Subtracts allocated resource from the leaf up, clamped at zero.
    pub fn sub_allocated(&mut self, id: QueueId, res: &Resource) {
        self.update_chain(id, Usage::Changed, |q| q.allocated.sub_clamped_assign(res));
    }

    /// Adds pending demand from the leaf up.
    /// Checks that adding `res` to the pending (or, with `allocated`, the
    /// allocated) total of `id` and each ancestor stays exact.
    pub fn check_add(&self, id: QueueId, res: &Resource, allocated: bool) -> Result<(), String> {
        let mut cur = Some(id);
        while let Some(c) = cur {
            let q = self.get(c);
            let (total, what) = if allocated {
                (&q.allocated, "allocated")
            } else {
                (&q.pending, "pending")
            };
            if !total.can_add(res) {
                return Err(format!(
                    "{res} would overflow the {what} total {total} of queue {}",
                    q.path
                ));
            }
            cur = q.parent;
        }
        Ok(())
    }

    pub fn add_pending(&mut self, id: QueueId, res: &Resource) {
        self.update_chain(id, Usage::Unchanged, |q| q.pending.add_assign(res));
    }

    /// Moves `res` from pending to allocated from the leaf up: what one
    /// allocation does, in one walk and one re-keying per level.
    pub fn pending_to_allocated(&mut self, id: QueueId, res: &Resource) {
        self.update_chain(id, Usage::Changed, |q| {
            q.pending.sub_clamped_assign(res);
            q.allocated.add_assign(res);
        });
    }

    /// Subtracts pending demand from the leaf up, clamped at zero.
    pub fn sub_pending(&mut self, id: QueueId, res: &Resource) {
        self.update_chain(id, Usage::Unchanged, |q| q.pending.sub_clamped_assign(res));
    }

    /// Children with pending demand, in fair order (spec 3.6): highest
    /// priority first (unless the queue's priority sorting is disabled),
    /// then lowest usage share relative to the guarantee, ties by larger
    /// pending demand, then by name (see [`ChildKey`]). Kept up to
    /// date as usage changes, never sorted on the scheduling path.
    pub fn sorted_children(&self, id: QueueId) -> impl Iterator<Item = QueueId> + '_ {
        debug_assert!(self.is_settled(), "a queue order read before its settle");
        self.get(id).child_order.iter().copied()
    }
}

#[cfg(test)]
mod tests;
