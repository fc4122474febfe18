//! User and group limits (YuniKorn v1.8 semantics, `limits.md`): usage and
//! running applications per user and per group at every queue level of a
//! partition, and the checks the scheduling pass makes against the caps.
//!
//! One [`Ugm`] per partition (upstream keeps one for the whole process,
//! quirk Q1). Each application is linked once to its user's tracker and to
//! at most one group tracker; the link keeps the application's queue path,
//! the usage it has contributed and the caps that apply to it, so a check
//! walks only the capped levels and a usage change only the path, with no
//! string hashing and no allocation.
//!
//! Trackers exist only while an application is linked to them (a headroom
//! check creates nothing, quirk Q6). With no `limits` configured nothing
//! is linked or tracked: the pass pays one branch.
//!
//! The application object holds the index of its link (no hashing per
//! decision). An allocation of the pass counts at once against every
//! tracker's `spent` (so the next decision's bound sees it), and reaches
//! the levels when the partition flushes the touched links (at the end of
//! the pass, or when a check needs the exact levels).
//!
//! For an SI v1.8 RM that takes USERGROUP records, what reaches the levels
//! is noted as a [`UgChange`] (one per link and flush, not per
//! allocation), as are group links and, at a reload, the caps that
//! changed; the partition turns the notes into records after each step.

pub mod caps;
pub mod explain;
pub mod snap;

use std::sync::Arc;

use smallvec::SmallVec;

pub use caps::{Cap, Caps, LevelCaps};
pub use snap::UsageSnap;

use super::objects::application::{AppState, Application};
use super::objects::queue::{QueueId, QueueTree};
use super::resource::{ResId, Resource};
use super::{FastMap, FastSet};

/// Reason of the APP record when an application is held back (usually in
/// Accepted) by a user or group `maxapplications` (SI v1.8:
/// APP_CANNOTRUN_QUOTA).
pub const APP_CANNOTRUN_QUOTA: &str = "AppCannotRunQuota";
/// Reason of the APP record when it may run again (APP_RUNNABLE_QUOTA).
pub const APP_RUNNABLE_QUOTA: &str = "AppRunnableQuota";

#[cfg(test)]
#[test]
fn quota_reasons_are_transitions_to_the_event_store() {
    for r in [APP_CANNOTRUN_QUOTA, APP_RUNNABLE_QUOTA] {
        assert!(crate::events::TRANSITION_REASONS.contains(&r), "{r}");
    }
}

/// A change of the trackers an SI v1.8 RM hears of as a USERGROUP record
/// (limits.md 6.3); the partition turns these into records. Noted only
/// while [`Ugm::set_records`] turned noting on, so without USERGROUP
/// records nothing is built.
#[derive(Debug, Clone, PartialEq)]
pub enum UgChange {
    /// A user's or group's usage at an application's leaf changed by
    /// `delta` (positive parts grew, negative parts shrank). One per link
    /// each time its allocations reach the levels: the pass's allocations
    /// of an application arrive summed.
    Usage {
        /// A group tracker (else a user one).
        group: bool,
        /// The user or group.
        name: Arc<str>,
        /// The application's leaf.
        queue: Arc<str>,
        /// The change.
        delta: Resource,
    },
    /// An application was linked to a group (`set`) or unlinked.
    Link {
        /// Linked or unlinked.
        set: bool,
        /// The group.
        group: Arc<str>,
        /// The application.
        app: Arc<str>,
    },
    /// A user's or group's cap at a queue was set (or changed) or cleared.
    Limit {
        /// Set or cleared.
        set: bool,
        /// A group cap (else a user one).
        group: bool,
        /// The user or group.
        name: Arc<str>,
        /// The queue of the cap.
        queue: Arc<str>,
    },
}

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
    refs: u32,
}

/// One user's or one group's usage, per queue level.
#[derive(Debug, Clone, Default)]
pub struct Tracker {
    /// User or group name (`*` for the wildcard group).
    pub name: Arc<str>,
    /// Levels by slot: links keep their slots, so a usage change indexes
    /// and never hashes.
    slots: Vec<Option<Level>>,
    free: Vec<u32>,
    by_queue: FastMap<QueueId, u32>,
    links: usize,
    /// Everything ever added to any level of this tracker, per type
    /// (positive parts only, never decreased; indexed by type id): no
    /// level's room can have shrunk by more since a link cached its slack.
    /// The pass's allocations count here at once, before they reach the
    /// levels (see [`Ugm::charge`]). Wide, so that it never stops
    /// counting: 2^64 additions of the largest quantity still fit.
    spent: Vec<i128>,
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

    fn at(&self, i: u32) -> &Level {
        self.slots[i as usize].as_ref().expect("held level")
    }

    fn at_mut(&mut self, i: u32) -> &mut Level {
        self.slots[i as usize].as_mut().expect("held level")
    }

    /// Holds the level of `q` for one more link.
    fn acquire(&mut self, q: QueueId) -> u32 {
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
    fn release(&mut self, i: u32) {
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
    slots: Vec<Option<Tracker>>,
    free: Vec<usize>,
    by_name: FastMap<Arc<str>, usize>,
}

impl Trackers {
    fn link(&mut self, name: &Arc<str>) -> usize {
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

    fn unlink(&mut self, i: usize) {
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
    fn at(&self, i: usize) -> &Tracker {
        self.slots[i].as_ref().expect("linked tracker")
    }

    #[inline]
    fn at_mut(&mut self, i: usize) -> &mut Tracker {
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

/// The caps that apply to one application: (position on its path, cap).
type AppCaps = SmallVec<[(usize, Cap); 2]>;

/// Level slots of one tracker along a path, root first.
type PathLevels = SmallVec<[u32; 6]>;

/// A link's cached room for one capped type: the smallest `max - usage`
/// over its capped levels (user and group) when cached, and its trackers'
/// `spent` then. Room now is at least `room` minus what both trackers spent
/// since, so an ask within that fits with no walk over the levels.
#[derive(Debug, Clone, Copy)]
struct Slack {
    ty: ResId,
    room: i64,
    user_spent: i128,
    group_spent: i128,
}

type Slacks = SmallVec<[Slack; 2]>;

/// One application's link to its trackers.
#[derive(Debug, Clone)]
pub struct AppLink {
    /// Application id (REST and dump).
    pub app: Arc<str>,
    /// Its sequence number: an index held by a stale application object
    /// never reaches another application's link.
    seq: u64,
    /// Its slot in the partition's applications (for the flush).
    slot: u32,
    user: usize,
    group: Option<usize>,
    /// The linked group's name, `None` for "no group".
    pub group_name: Option<Arc<str>>,
    /// The queue path root first.
    pub path: SmallVec<[QueueId; 6]>,
    /// The leaf's path (the reference of its USERGROUP usage records).
    pub queue_path: Arc<str>,
    user_levels: PathLevels,
    group_levels: PathLevels,
    /// What the application's levels hold (the pass's allocations are
    /// added when the link is flushed).
    pub usage: Resource,
    /// Whether it is counted as running at every level of its path.
    pub running: bool,
    user_caps: AppCaps,
    group_caps: AppCaps,
    /// Whether some cap on its path limits resources.
    res_capped: bool,
    slack: Slacks,
    /// Whether `slack` may be used; once half of it is gone (or the
    /// levels moved under it), checks walk the levels until the flush
    /// makes it again.
    slack_ok: bool,
    /// Whether it waits in [`Ugm::dirty`].
    dirty: bool,
}

/// The user/group limits of one partition.
#[derive(Debug, Default, Clone)]
pub struct Ugm {
    /// The configured caps.
    pub caps: Caps,
    /// User trackers.
    pub users: Trackers,
    /// Group trackers.
    pub groups: Trackers,
    /// Links by index (`Application::ugm_link`).
    links: Vec<Option<AppLink>>,
    free_links: Vec<u32>,
    linked: usize,
    /// Links with allocations not yet at their levels, or a cache to make.
    dirty: Vec<u32>,
    /// Asks in the "user quota failed" state (limits.md 4.2), by
    /// application sequence number and allocation key.
    pub quota_failed: FastSet<(u64, Arc<str>)>,
    /// Applications held back by a user or group `maxapplications`
    /// (limits.md 4.1; not counted as running, whatever their state), by
    /// sequence number: an APP record went out when they entered, one goes
    /// when they may run. One whose requests all go leaves without a
    /// record (nothing waits), as does one that is removed.
    pub held: FastSet<u64>,
    /// Whether some cap limits running applications.
    apps_capped: bool,
    /// Whether changes are noted for USERGROUP records (an SI v1.8 RM that
    /// takes them).
    records: bool,
    /// Changes not yet turned into records.
    changes: Vec<UgChange>,
}

/// What [`Ugm::fits`] found for an ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// Inside every cap.
    Fits,
    /// Over the user's or the group's headroom.
    Over,
    /// Near a cap while allocations of the pass are still on their way to
    /// the levels: flush ([`Ugm::take_dirty`]) and ask again.
    Unsure,
}

fn path_of(tree: &QueueTree, leaf: QueueId) -> SmallVec<[QueueId; 6]> {
    let mut path = SmallVec::new();
    let mut cur = Some(leaf);
    while let Some(q) = cur {
        path.push(q);
        cur = tree.get(q).parent;
    }
    path.reverse();
    path
}

/// Whether `ask` fits at one level: for each capped type, the ask is at
/// most the remaining room (never below zero).
fn level_fits(usage: &Resource, cap: &Resource, ask: &Resource) -> bool {
    cap.iter().all(|(t, c)| {
        let want = ask.get(t);
        want <= 0 || want <= c.saturating_sub(usage.get(t)).max(0)
    })
}

/// A tracker's `spent` of one type.
#[inline]
fn spent_of(spent: &[i128], ty: ResId) -> i128 {
    spent.get(ty as usize).copied().unwrap_or(0)
}

/// Adds the positive parts of `res` to a `spent`.
#[inline]
fn spend(spent: &mut Vec<i128>, res: &Resource) {
    for (ty, v) in res.iter() {
        if v <= 0 {
            continue;
        }
        let i = ty as usize;
        if i >= spent.len() {
            spent.resize(i + 1, 0);
        }
        spent[i] += i128::from(v);
    }
}

impl Ugm {
    /// Whether limits are enforced at all: some `limits` configured.
    #[inline]
    pub fn enabled(&self) -> bool {
        !self.caps.is_empty()
    }

    /// Whether the pass must look at the limits: enforced, or some ask still
    /// waits for its "fits again" event after the limits went away.
    #[inline]
    pub fn active(&self) -> bool {
        self.enabled() || !self.quota_failed.is_empty()
    }

    /// Whether the pass must look at application admission: enforced, or
    /// some application still waits for its "runnable" record.
    #[inline]
    pub fn admission_active(&self) -> bool {
        self.apps_capped || !self.held.is_empty()
    }

    /// Notes changes for USERGROUP records from now on (or stops).
    pub fn set_records(&mut self, on: bool) {
        self.records = on;
        if !on {
            self.changes.clear();
        }
    }

    /// Whether changes wait to become records.
    #[inline]
    pub fn has_changes(&self) -> bool {
        !self.changes.is_empty()
    }

    /// The changes noted since the last call.
    pub fn take_changes(&mut self) -> Vec<UgChange> {
        std::mem::take(&mut self.changes)
    }

    /// Whether any application is linked.
    #[inline]
    pub fn has_links(&self) -> bool {
        self.linked > 0
    }

    /// Every link, in no particular order.
    pub fn links(&self) -> impl Iterator<Item = &AppLink> {
        self.links.iter().flatten()
    }

    /// The link of an application, if it is linked.
    #[inline]
    pub fn link_of(&self, app: &Application) -> Option<&AppLink> {
        let link = self.links.get(app.ugm_link? as usize)?.as_ref()?;
        (link.seq == app.seq).then_some(link)
    }

    fn caps_for(&self, path: &[QueueId], user: &str, group: Option<&str>) -> (AppCaps, AppCaps) {
        let mut uc = AppCaps::new();
        let mut gc = AppCaps::new();
        for (pos, q) in path.iter().enumerate() {
            let Some(level) = self.caps.levels.get(q) else {
                continue;
            };
            if let Some((c, _)) = level.user(user) {
                uc.push((pos, c.clone()));
            }
            if let Some(c) = group.and_then(|g| level.group(g)) {
                gc.push((pos, c.clone()));
            }
        }
        (uc, gc)
    }

    /// Links an application (in partition slot `slot`) to its user and
    /// (resolved once, 2.3) its group, and counts what it already holds.
    /// Does nothing when no limits are configured or it is linked already.
    pub fn link(&mut self, app: &mut Application, slot: u32, tree: &QueueTree) {
        if !self.enabled() || self.link_of(app).is_some() {
            return;
        }
        let group = self.caps.resolve_group(tree, app.queue, &app.user.groups);
        app.ugm_link = Some(self.link_as(app, slot, tree, group));
    }

    /// Makes the link; returns its index.
    fn link_as(
        &mut self,
        app: &Application,
        slot: u32,
        tree: &QueueTree,
        group: Option<Arc<str>>,
    ) -> u32 {
        let path = path_of(tree, app.queue);
        let user_name: Arc<str> = Arc::from(app.user.user.as_str());
        let (user_caps, group_caps) = self.caps_for(&path, &user_name, group.as_deref());
        let user = self.users.link(&user_name);
        let gix = group.as_ref().map(|g| self.groups.link(g));
        let user_levels = hold(self.users.at_mut(user), &path);
        let group_levels = gix.map_or_else(PathLevels::new, |g| hold(self.groups.at_mut(g), &path));
        let res_capped = user_caps
            .iter()
            .chain(group_caps.iter())
            .any(|(_, c)| c.max.is_some());
        if self.records {
            if let Some(g) = &group {
                self.changes.push(UgChange::Link {
                    set: true,
                    group: g.clone(),
                    app: app.id.clone(),
                });
            }
        }
        let link = AppLink {
            app: app.id.clone(),
            seq: app.seq,
            slot,
            user,
            group: gix,
            group_name: group,
            queue_path: tree.get(app.queue).path.clone(),
            path,
            user_levels,
            group_levels,
            usage: Resource::new(),
            running: false,
            user_caps,
            group_caps,
            res_capped,
            slack: Slacks::new(),
            slack_ok: false,
            dirty: false,
        };
        let id = match self.free_links.pop() {
            Some(id) => {
                self.links[id as usize] = Some(link);
                id
            }
            None => {
                self.links.push(Some(link));
                u32::try_from(self.links.len() - 1).expect("links fit u32")
            }
        };
        self.linked += 1;
        self.sync_link(id, app, true);
        self.settle(id);
        id
    }

    /// Re-makes the cache of a link now if the levels are exact, or else
    /// at the next flush. Until then the old cache stays a valid bound:
    /// every increase since counts in `spent`, and a decrease only leaves
    /// more room than it says.
    fn settle(&mut self, id: u32) {
        let clean = self.dirty.is_empty();
        let Some(link) = self.links[id as usize].as_mut() else {
            return;
        };
        if !link.res_capped {
            return;
        }
        if clean {
            self.refresh(id);
        } else if !link.dirty {
            link.dirty = true;
            self.dirty.push(id);
        }
    }

    /// Recomputes the cached slack of one link from its capped levels
    /// (which must be exact: nothing dirty).
    fn refresh(&mut self, id: u32) {
        let Some(link) = self.links[id as usize].as_ref() else {
            return;
        };
        let user = self.users.at(link.user);
        let group = link.group.map(|g| self.groups.at(g));
        let mut slack = Slacks::new();
        let mut fold = |t: &Tracker, levels: &PathLevels, caps: &AppCaps| {
            for (pos, cap) in caps {
                let Some(max) = &cap.max else { continue };
                let usage = &t.at(levels[*pos]).usage;
                for (ty, c) in max.iter() {
                    let room = c.saturating_sub(usage.get(ty));
                    match slack.iter_mut().find(|s| s.ty == ty) {
                        Some(s) => s.room = s.room.min(room),
                        None => slack.push(Slack {
                            ty,
                            room,
                            user_spent: spent_of(&user.spent, ty),
                            group_spent: group.map_or(0, |g| spent_of(&g.spent, ty)),
                        }),
                    }
                }
            }
        };
        fold(user, &link.user_levels, &link.user_caps);
        if let Some(g) = group {
            fold(g, &link.group_levels, &link.group_caps);
        }
        // Charges index `spent` by these types with no growth check.
        let need = slack.iter().map(|s| s.ty as usize + 1).max().unwrap_or(0);
        let Some(link) = self.links[id as usize].as_mut() else {
            return;
        };
        let spent = &mut self.users.at_mut(link.user).spent;
        if spent.len() < need {
            spent.resize(need, 0);
        }
        if let Some(g) = link.group {
            let spent = &mut self.groups.at_mut(g).spent;
            if spent.len() < need {
                spent.resize(need, 0);
            }
        }
        link.slack = slack;
        link.slack_ok = true;
    }

    /// Brings the trackers in line with the application's allocations and
    /// running state (limits.md 3.2, 3.4); called after every change of
    /// its allocations or state. Nothing is refused here: recovered
    /// allocations and resizes may go over a cap.
    pub fn sync(&mut self, app: &Application) {
        let Some(id) = self.link_of(app).map(|_| app.ugm_link.unwrap_or_default()) else {
            return;
        };
        if self.sync_link(id, app, true) {
            self.settle(id);
        }
    }

    /// [`Self::sync`] of link `id`; `spend`: whether an increase counts in
    /// `spent` (not when it is the pass's allocations, counted already).
    /// Returns whether anything changed.
    fn sync_link(&mut self, id: u32, app: &Application, count: bool) -> bool {
        let Some(link) = self.links[id as usize].as_mut() else {
            return false;
        };
        let terminal = matches!(
            app.state,
            AppState::Completed | AppState::Failed | AppState::Expired | AppState::Rejected
        );
        // Counted from the first allocation; a running application keeps
        // its slot while it has allocations or pending requests (Q2).
        let running = !terminal
            && if link.running {
                !(app.allocations.is_empty() && app.pending.is_zero())
            } else {
                !app.allocations.is_empty()
            };
        // Without placeholders (the usual case) nothing is built to compare.
        let placeholders = &app.gang.placeholder_allocated;
        let same = if placeholders.is_zero() {
            *app.allocated() == link.usage
        } else {
            app.allocated().add(placeholders) == link.usage
        };
        if same && running == link.running {
            return false;
        }
        let delta = app.allocated().add(placeholders).sub(&link.usage);
        let runs = i64::from(running) - i64::from(link.running);
        if self.records && !delta.is_zero() {
            note_usage(&mut self.changes, &self.users, link, &delta);
        }
        link.usage.add_assign(&delta);
        link.running = running;
        apply(
            self.users.at_mut(link.user),
            &link.user_levels,
            &delta,
            runs,
            count,
        );
        if let Some(g) = link.group {
            apply(
                self.groups.at_mut(g),
                &link.group_levels,
                &delta,
                runs,
                count,
            );
        }
        true
    }

    /// A new allocation of `res` for an application (the pass's commit):
    /// it counts at once against the user's and the group's `spent`, so
    /// the next decision's bound sees it; the running slot is taken at
    /// the first. The levels get it when the link is flushed. No copy of
    /// the resource, no hashing.
    ///
    /// Only the link's capped types are spent: a level that caps a type
    /// for a user (or group) caps it for every link of that user (group)
    /// through it, so a charge that reaches a capped level has that type
    /// in its own slack. Nor is the cache re-made here: its bound only
    /// shrinks with what is spent, and once an ask passes it the check
    /// walks the exact levels (after a flush) and the flush re-makes it.
    #[inline]
    pub fn charge(&mut self, app: &Application, res: &Resource) {
        let Some(id) = app.ugm_link else {
            return;
        };
        let Some(link) = self
            .links
            .get_mut(id as usize)
            .and_then(Option::as_mut)
            .filter(|l| l.seq == app.seq)
        else {
            return;
        };
        if !link.running {
            link.running = true;
            let none = Resource::new();
            apply(
                self.users.at_mut(link.user),
                &link.user_levels,
                &none,
                1,
                false,
            );
            if let Some(g) = link.group {
                apply(self.groups.at_mut(g), &link.group_levels, &none, 1, false);
            }
        }
        if link.res_capped && !link.slack_ok {
            // No cache made yet (linked during a pass): every type counts.
            spend(&mut self.users.at_mut(link.user).spent, res);
            if let Some(g) = link.group {
                spend(&mut self.groups.at_mut(g).spent, res);
            }
        } else if !link.slack.is_empty() {
            let user = &mut self.users.at_mut(link.user).spent;
            for s in &link.slack {
                let v = res.get(s.ty);
                if v > 0 {
                    if let Some(x) = user.get_mut(s.ty as usize) {
                        *x += i128::from(v);
                    }
                }
            }
            if let Some(g) = link.group {
                let group = &mut self.groups.at_mut(g).spent;
                for s in &link.slack {
                    let v = res.get(s.ty);
                    if v > 0 {
                        if let Some(x) = group.get_mut(s.ty as usize) {
                            *x += i128::from(v);
                        }
                    }
                }
            }
        }
        if !link.dirty {
            link.dirty = true;
            self.dirty.push(id);
        }
    }

    /// Whether allocations of the pass wait to reach the levels.
    #[inline]
    pub fn is_dirty(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// The links to flush, as (link, application slot); give the list
    /// back to [`Self::flush`] with each application.
    pub fn take_dirty(&mut self) -> Vec<(u32, u32)> {
        let links = &self.links;
        self.dirty
            .drain(..)
            .filter_map(|id| Some((id, links.get(id as usize)?.as_ref()?.slot)))
            .collect()
    }

    /// Flushes the links [`Self::take_dirty`] gave (with their
    /// applications, `None` when gone): their allocations reach the
    /// levels, then their caches are made again on the exact levels.
    pub fn flush<'a>(&mut self, links: impl Iterator<Item = (u32, Option<&'a Application>)>) {
        let mut touched: SmallVec<[u32; 8]> = SmallVec::new();
        for (id, app) in links {
            let Some(link) = self.links[id as usize].as_mut() else {
                continue;
            };
            link.dirty = false;
            if let Some(app) = app.filter(|a| a.seq == link.seq) {
                self.sync_link(id, app, false);
            }
            touched.push(id);
        }
        for id in touched {
            if self.links[id as usize]
                .as_ref()
                .is_some_and(|l| l.res_capped)
            {
                self.refresh(id);
            }
        }
    }

    /// The application leaves: everything it still counts is taken off
    /// (quirk Q9's fix: always, pending or not) and its links go.
    pub fn unlink(&mut self, app: &Application) {
        if self.link_of(app).is_none() {
            return;
        }
        let id = app.ugm_link.unwrap_or_default();
        let Some(link) = self.links[id as usize].take() else {
            return;
        };
        self.free_links.push(id);
        self.linked = self.linked.saturating_sub(1);
        // The levels hold `usage` (the pass's allocations not flushed yet
        // never reached them).
        let delta = Resource::new().sub(&link.usage);
        let runs = -i64::from(link.running);
        if self.records {
            if !delta.is_zero() {
                note_usage(&mut self.changes, &self.users, &link, &delta);
            }
            if let Some(g) = &link.group_name {
                self.changes.push(UgChange::Link {
                    set: false,
                    group: g.clone(),
                    app: link.app.clone(),
                });
            }
        }
        let user = self.users.at_mut(link.user);
        apply(user, &link.user_levels, &delta, runs, false);
        for &i in &link.user_levels {
            user.release(i);
        }
        self.users.unlink(link.user);
        if let Some(g) = link.group {
            let group = self.groups.at_mut(g);
            apply(group, &link.group_levels, &delta, runs, false);
            for &i in &link.group_levels {
                group.release(i);
            }
            self.groups.unlink(g);
        }
        let seq = app.seq;
        if !self.quota_failed.is_empty() {
            self.quota_failed.retain(|(s, _)| *s != seq);
        }
        self.held.remove(&seq);
    }

    /// Whether `ask` fits the application's user and group headroom
    /// (limits.md 2.5, 2.6). An unlinked application has no caps.
    /// [`Fit::Unsure`] only while some link is dirty.
    #[inline]
    pub fn fits(&self, app: &Application, ask: &Resource) -> Fit {
        let Some(link) = self.link_of(app) else {
            return Fit::Fits;
        };
        if !link.res_capped {
            return Fit::Fits;
        }
        // Far from every cap: the cached slack answers.
        if link.slack_ok
            && slack_all(&self.users, &self.groups, link, |ty, _, bound| {
                let want = ask.get(ty);
                want <= 0 || want <= bound
            })
        {
            return Fit::Fits;
        }
        // The exact walk needs the pass's allocations at the levels.
        if !self.dirty.is_empty() {
            return Fit::Unsure;
        }
        let ok = |t: &Tracker, levels: &PathLevels, caps: &AppCaps| {
            caps.iter().all(|(pos, cap)| match &cap.max {
                None => true,
                Some(max) => level_fits(&t.at(levels[*pos]).usage, max, ask),
            })
        };
        let user_ok = ok(self.users.at(link.user), &link.user_levels, &link.user_caps);
        let group_ok = link
            .group
            .is_none_or(|g| ok(self.groups.at(g), &link.group_levels, &link.group_caps));
        if user_ok && group_ok {
            Fit::Fits
        } else {
            Fit::Over
        }
    }

    /// The application's headroom: per type the smallest room left over
    /// every capped level of its user and group; `None` when unlimited.
    /// Exact when nothing is dirty.
    pub fn headroom(&self, app: &Application) -> Option<Resource> {
        let link = self.link_of(app)?;
        let mut out: Option<Resource> = None;
        let mut fold = |t: &Tracker, levels: &PathLevels, caps: &AppCaps| {
            for (pos, cap) in caps {
                let Some(max) = &cap.max else { continue };
                let room = max.sub(&t.at(levels[*pos]).usage);
                let h = out.get_or_insert_with(Resource::new);
                for (id, v) in room.iter() {
                    let v = match max.lookup(id) {
                        Some(_) => v,
                        None => continue,
                    };
                    match h.lookup(id) {
                        Some(cur) if cur <= v => {}
                        _ => h.set(id, v),
                    }
                }
            }
        };
        fold(self.users.at(link.user), &link.user_levels, &link.user_caps);
        if let Some(g) = link.group {
            fold(self.groups.at(g), &link.group_levels, &link.group_caps);
        }
        out
    }

    /// Whether the application may become running (limits.md 2.7): it is
    /// counted already, or every capped level has a free slot for its user
    /// and its group. (Running counts reach the levels at once.)
    #[inline]
    pub fn can_run(&self, app: &Application) -> bool {
        let Some(link) = self.link_of(app) else {
            return true;
        };
        if link.running {
            return true;
        }
        let ok = |t: &Tracker, levels: &PathLevels, caps: &AppCaps| {
            caps.iter().all(|(pos, cap)| {
                cap.max_apps == 0 || t.at(levels[*pos]).running.saturating_add(1) <= cap.max_apps
            })
        };
        ok(self.users.at(link.user), &link.user_levels, &link.user_caps)
            && link
                .group
                .is_none_or(|g| ok(self.groups.at(g), &link.group_levels, &link.group_caps))
    }

    /// A reload (limits.md 5): the new caps replace the old; every link is
    /// rebuilt with the caps of its path, recounting what the application
    /// holds. A group link is kept while that group still has a cap on the
    /// application's path; otherwise (group limit removed, or "no group")
    /// the group is resolved again and the application's whole usage moves
    /// with it (quirks Q3-Q5 fixed). Every application's link index is
    /// set again (`None` without limits).
    pub fn reload<'a>(
        &mut self,
        caps: Caps,
        tree: &QueueTree,
        apps: impl Iterator<Item = (u32, &'a mut Application)>,
    ) {
        let records = self.records;
        let mut changes = std::mem::take(&mut self.changes);
        let old = std::mem::take(self);
        let apps_capped = caps.levels.values().any(|l| {
            l.users
                .values()
                .chain(l.user_wildcard.iter())
                .chain(l.groups.iter().map(|(_, c)| c))
                .chain(l.group_wildcard.iter())
                .any(|c| c.max_apps > 0)
        });
        *self = Ugm {
            caps,
            quota_failed: old.quota_failed.clone(),
            held: old.held.clone(),
            apps_capped,
            ..Ugm::default()
        };
        let enabled = self.enabled();
        for (slot, app) in apps {
            let prev = old.link_of(app).cloned();
            app.ugm_link = None;
            if !enabled {
                if records {
                    relink_changes(&mut changes, &old, prev.as_ref(), self, None);
                }
                continue;
            }
            let path = path_of(tree, app.queue);
            let kept = prev
                .as_ref()
                .and_then(|l| l.group_name.clone())
                .filter(|g| self.caps.group_on_path(&path, g));
            let group = match kept {
                Some(g) => Some(g),
                None => self.caps.resolve_group(tree, app.queue, &app.user.groups),
            };
            let was_running = prev.as_ref().is_some_and(|l| l.running);
            // `records` is off while linking: what changed is told below,
            // old link against new.
            let id = self.link_as(app, slot, tree, group);
            app.ugm_link = Some(id);
            // Keep a slot held only by pending asks (Q2) across the reload.
            if was_running && !app.pending.is_zero() {
                if let Some(l) = self.links[id as usize].as_mut() {
                    if !l.running {
                        l.running = true;
                        let none = Resource::new();
                        apply(self.users.at_mut(l.user), &l.user_levels, &none, 1, false);
                        if let Some(g) = l.group {
                            apply(self.groups.at_mut(g), &l.group_levels, &none, 1, false);
                        }
                    }
                }
            }
            if records {
                let now = self.links[id as usize].as_ref();
                relink_changes(&mut changes, &old, prev.as_ref(), self, now);
            }
        }
        if records {
            limit_changes(&mut changes, &old, self, tree);
        }
        self.records = records;
        self.changes = changes;
    }

    /// The user name of a link.
    pub fn user_name(&self, link: &AppLink) -> &Arc<str> {
        &self.users.at(link.user).name
    }
}

/// Calls `f(type, cached room, lower bound on the room now)` for each type
/// the link caches, until it returns `false`.
#[inline]
fn slack_all(
    users: &Trackers,
    groups: &Trackers,
    link: &AppLink,
    mut f: impl FnMut(ResId, i64, i64) -> bool,
) -> bool {
    let user = &users.at(link.user).spent;
    let group = link.group.map(|g| &groups.at(g).spent);
    link.slack.iter().all(|s| {
        // Exact in i128: each difference is at most what was spent since.
        let mut used = spent_of(user, s.ty) - s.user_spent;
        if let Some(g) = group {
            used += spent_of(g, s.ty) - s.group_spent;
        }
        let left = i64::try_from(i128::from(s.room) - used).unwrap_or(i64::MIN);
        f(s.ty, s.room, left)
    })
}

/// Holds the levels of `path` in `t` for a new link.
fn hold(t: &mut Tracker, path: &[QueueId]) -> PathLevels {
    path.iter().map(|q| t.acquire(*q)).collect()
}

/// Adds `delta` and `runs` at the levels; `count`: whether the increase
/// counts in `spent` too.
fn apply(t: &mut Tracker, levels: &[u32], delta: &Resource, runs: i64, count: bool) {
    let zero = delta.is_zero();
    if !zero && count {
        spend(&mut t.spent, delta);
    }
    for &i in levels {
        let level = t.at_mut(i);
        if !zero {
            level.usage.add_assign(delta);
        }
        if runs > 0 {
            level.running = level.running.saturating_add(1);
        } else if runs < 0 {
            level.running = level.running.saturating_sub(1);
        }
    }
}

/// Notes a usage change of a link's user and group.
fn note_usage(changes: &mut Vec<UgChange>, users: &Trackers, link: &AppLink, delta: &Resource) {
    changes.push(UgChange::Usage {
        group: false,
        name: users.at(link.user).name.clone(),
        queue: link.queue_path.clone(),
        delta: delta.clone(),
    });
    if let (Some(g), Some(_)) = (&link.group_name, link.group) {
        changes.push(UgChange::Usage {
            group: true,
            name: g.clone(),
            queue: link.queue_path.clone(),
            delta: delta.clone(),
        });
    }
}

/// What a reload did to one application's link, `prev` (in `old`) to
/// `now` (in `new`): usage that moved to or from a tracker, a group link
/// made or dropped. An unchanged link notes nothing.
fn relink_changes(
    changes: &mut Vec<UgChange>,
    old: &Ugm,
    prev: Option<&AppLink>,
    new: &Ugm,
    now: Option<&AppLink>,
) {
    let none = Resource::new();
    fn usage<'a>(l: Option<&'a AppLink>, none: &'a Resource) -> &'a Resource {
        l.map_or(none, |l| &l.usage)
    }
    let Some(any) = now.or(prev) else {
        return;
    };
    let queue = any.queue_path.clone();
    // The user: only its usage can differ (it is the same user).
    let user = match (prev, now) {
        (_, Some(n)) => new.users.at(n.user).name.clone(),
        (Some(p), None) => old.users.at(p.user).name.clone(),
        (None, None) => return,
    };
    let delta = usage(now, &none).sub(usage(prev, &none));
    if !delta.is_zero() {
        changes.push(UgChange::Usage {
            group: false,
            name: user,
            queue: queue.clone(),
            delta,
        });
    }
    let before = prev.and_then(|l| l.group_name.clone());
    let after = now.and_then(|l| l.group_name.clone());
    if before == after {
        if let Some(g) = after {
            let delta = usage(now, &none).sub(usage(prev, &none));
            if !delta.is_zero() {
                changes.push(UgChange::Usage {
                    group: true,
                    name: g,
                    queue,
                    delta,
                });
            }
        }
        return;
    }
    if let Some(g) = before {
        let held = usage(prev, &none);
        if !held.is_zero() {
            changes.push(UgChange::Usage {
                group: true,
                name: g.clone(),
                queue: queue.clone(),
                delta: none.sub(held),
            });
        }
        changes.push(UgChange::Link {
            set: false,
            group: g,
            app: any.app.clone(),
        });
    }
    if let Some(g) = after {
        changes.push(UgChange::Link {
            set: true,
            group: g.clone(),
            app: any.app.clone(),
        });
        let held = usage(now, &none);
        if !held.is_zero() {
            changes.push(UgChange::Usage {
                group: true,
                name: g,
                queue,
                delta: held.clone(),
            });
        }
    }
}

/// The caps a reload set, changed or cleared, per tracker and queue
/// (limits.md 6.3): a named user's or group's cap that differs from
/// before, and, where a user wildcard came, changed or went, the cap of
/// every user with a linked application that it covers (before or after).
fn limit_changes(changes: &mut Vec<UgChange>, old: &Ugm, new: &Ugm, tree: &QueueTree) {
    let mut queues: Vec<QueueId> = old
        .caps
        .levels
        .keys()
        .chain(new.caps.levels.keys())
        .copied()
        .collect();
    queues.sort_unstable();
    queues.dedup();
    for q in queues {
        let Some(path) = tree.path_of(q) else {
            continue;
        };
        let (o, n) = (old.caps.levels.get(&q), new.caps.levels.get(&q));
        let mut users: Vec<Arc<str>> = o
            .into_iter()
            .chain(n)
            .flat_map(|l| l.users.keys().cloned())
            .collect();
        if o.and_then(|l| l.user_wildcard.as_ref()) != n.and_then(|l| l.user_wildcard.as_ref()) {
            users.extend(
                old.users
                    .iter()
                    .chain(new.users.iter())
                    .map(|t| t.name.clone()),
            );
        }
        users.sort_unstable();
        users.dedup();
        for u in users {
            let before = o.and_then(|l| l.user(&u)).map(|(c, _)| c);
            let after = n.and_then(|l| l.user(&u)).map(|(c, _)| c);
            if before != after {
                changes.push(UgChange::Limit {
                    set: after.is_some(),
                    group: false,
                    name: u,
                    queue: path.clone(),
                });
            }
        }
        let mut groups: Vec<Arc<str>> = o
            .into_iter()
            .chain(n)
            .flat_map(|l| {
                l.groups
                    .iter()
                    .map(|(g, _)| g.clone())
                    .chain(l.group_wildcard.as_ref().map(|_| Arc::from(caps::WILDCARD)))
            })
            .collect();
        groups.sort_unstable();
        groups.dedup();
        for g in groups {
            let before = o.and_then(|l| l.group(&g));
            let after = n.and_then(|l| l.group(&g));
            if before != after {
                changes.push(UgChange::Limit {
                    set: after.is_some(),
                    group: true,
                    name: g,
                    queue: path.clone(),
                });
            }
        }
    }
}
