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
//! For an SI v1.x RM that takes USERGROUP records, what reaches the levels
//! is noted as a [`UgChange`] (one per link and flush, not per
//! allocation), as are group links and, at a reload, the caps that
//! changed; the partition turns the notes into records after each step.
//!
//! Files: `trackers` (usage per level), `links` (link, charge, flush,
//! unlink), `checks` (fits, headroom, may run), `changes` (reloads and
//! USERGROUP notes), `caps` (the configured limits), `snap` (the dump).

pub mod caps;
mod changes;
mod checks;
pub mod explain;
mod links;
mod trackers;

use std::sync::Arc;

use smallvec::SmallVec;

pub use caps::{Cap, Caps, LevelCaps};
pub use trackers::{Tracker, Trackers};

use super::objects::application::Application;
use super::objects::queue::{QueueId, QueueTree};
use super::resource::{ResId, Resource};
use super::FastSet;

/// Reason of the APP record when an application is held back (usually in
/// Accepted) by a user or group `maxapplications` (SI v1.x:
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

/// A change of the trackers an SI v1.x RM hears of as a USERGROUP record
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

impl AppLink {
    /// Its user's tracker index in [`Ugm::users`].
    pub fn user_index(&self) -> usize {
        self.user
    }

    /// Its group's tracker index in [`Ugm::groups`], if it has a group.
    pub fn group_index(&self) -> Option<usize> {
        self.group
    }
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
    /// Whether changes are noted for USERGROUP records (an SI v1.x RM that
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

    pub(super) fn caps_for(
        &self,
        path: &[QueueId],
        user: &str,
        group: Option<&str>,
    ) -> (AppCaps, AppCaps) {
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
