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

pub mod caps;
pub mod snap;

use std::sync::Arc;

use smallvec::SmallVec;

pub use caps::{Cap, Caps, LevelCaps};
pub use snap::UsageSnap;

use super::objects::application::{AppState, Application};
use super::objects::queue::{QueueId, QueueTree};
use super::resource::{ResId, Resource};
use super::{FastMap, FastSet};

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
    /// (positive parts only, never decreased): no level's room can have
    /// shrunk by more since a link cached its slack.
    spent: Resource,
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

    fn at(&self, i: usize) -> &Tracker {
        self.slots[i].as_ref().expect("linked tracker")
    }

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
    user_spent: i64,
    group_spent: i64,
}

type Slacks = SmallVec<[Slack; 2]>;

/// One application's link to its trackers.
#[derive(Debug, Clone)]
pub struct AppLink {
    /// Application id (REST and dump).
    pub app: Arc<str>,
    user: usize,
    group: Option<usize>,
    /// The linked group's name, `None` for "no group".
    pub group_name: Option<Arc<str>>,
    /// The queue path root first.
    pub path: SmallVec<[QueueId; 6]>,
    user_levels: PathLevels,
    group_levels: PathLevels,
    /// What the application has added to its trackers.
    pub usage: Resource,
    /// Whether it is counted as running at every level of its path.
    pub running: bool,
    user_caps: AppCaps,
    group_caps: AppCaps,
    slack: Slacks,
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
    /// Links, by application sequence number.
    pub apps: FastMap<u64, AppLink>,
    /// Asks in the "user quota failed" state (limits.md 4.2), by
    /// application sequence number and allocation key.
    pub quota_failed: FastSet<(u64, Arc<str>)>,
}

/// What [`Ugm::fits`] found for an ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// Inside every cap.
    Fits,
    /// Over the user's or the group's headroom.
    Over,
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

    /// Links an application to its user and (resolved once, 2.3) its
    /// group, and counts what it already holds. Does nothing when no limits
    /// are configured or it is linked already.
    pub fn link(&mut self, app: &Application, tree: &QueueTree) {
        if !self.enabled() || self.apps.contains_key(&app.seq) {
            return;
        }
        let group = self.caps.resolve_group(tree, app.queue, &app.user.groups);
        self.link_as(app, tree, group);
    }

    fn link_as(&mut self, app: &Application, tree: &QueueTree, group: Option<Arc<str>>) {
        let path = path_of(tree, app.queue);
        let user_name: Arc<str> = Arc::from(app.user.user.as_str());
        let (user_caps, group_caps) = self.caps_for(&path, &user_name, group.as_deref());
        let user = self.users.link(&user_name);
        let gix = group.as_ref().map(|g| self.groups.link(g));
        let user_levels = hold(self.users.at_mut(user), &path);
        let group_levels = gix.map_or_else(PathLevels::new, |g| hold(self.groups.at_mut(g), &path));
        self.apps.insert(
            app.seq,
            AppLink {
                app: app.id.clone(),
                user,
                group: gix,
                group_name: group,
                path,
                user_levels,
                group_levels,
                usage: Resource::new(),
                running: false,
                user_caps,
                group_caps,
                slack: Slacks::new(),
            },
        );
        self.sync(app);
        self.refresh(app.seq);
    }

    /// Recomputes the cached slack of one link from its capped levels.
    fn refresh(&mut self, seq: u64) {
        let Some(link) = self.apps.get(&seq) else {
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
                            user_spent: user.spent.get(ty),
                            group_spent: group.map_or(0, |g| g.spent.get(ty)),
                        }),
                    }
                }
            }
        };
        fold(user, &link.user_levels, &link.user_caps);
        if let Some(g) = group {
            fold(g, &link.group_levels, &link.group_caps);
        }
        if let Some(link) = self.apps.get_mut(&seq) {
            link.slack = slack;
        }
    }

    /// Brings the trackers in line with the application's allocations and
    /// running state (limits.md 3.2, 3.4); called after every change of
    /// its allocations or state. Nothing is refused here: recovered
    /// allocations and resizes may go over a cap.
    pub fn sync(&mut self, app: &Application) {
        let Some(link) = self.apps.get_mut(&app.seq) else {
            return;
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
            return;
        }
        let delta = app.allocated().add(placeholders).sub(&link.usage);
        let runs = i64::from(running) - i64::from(link.running);
        link.usage.add_assign(&delta);
        link.running = running;
        apply(
            self.users.at_mut(link.user),
            &link.user_levels,
            &delta,
            runs,
        );
        if let Some(g) = link.group {
            apply(self.groups.at_mut(g), &link.group_levels, &delta, runs);
        }
        if !link.slack.is_empty() {
            self.refresh(app.seq);
        }
    }

    /// A new allocation of `res` for an application (the pass's commit):
    /// counted at once on every level of its path for the user and the
    /// group, and the running slot taken at the first. Indexes only.
    #[inline]
    pub fn charge(&mut self, app: &Application, res: &Resource) {
        let Some(link) = self.apps.get_mut(&app.seq) else {
            return;
        };
        let runs = i64::from(!link.running);
        link.running = true;
        link.usage.add_assign(res);
        if res.has_negative() {
            apply(self.users.at_mut(link.user), &link.user_levels, res, runs);
            if let Some(g) = link.group {
                apply(self.groups.at_mut(g), &link.group_levels, res, runs);
            }
        } else {
            add_levels(self.users.at_mut(link.user), &link.user_levels, res, runs);
            if let Some(g) = link.group {
                add_levels(self.groups.at_mut(g), &link.group_levels, res, runs);
            }
        }
        if link.slack.is_empty() {
            return;
        }
        // Re-cache once half of the cached room is gone, so that far from
        // the caps nothing is walked and near them the bound stays tight.
        let stale = !slack_all(&self.users, &self.groups, link, |_, room, bound| {
            bound > room / 2
        });
        if stale {
            self.refresh(app.seq);
        }
    }

    /// The application leaves: everything it still counts is taken off
    /// (quirk Q9's fix: always, pending or not) and its links go.
    pub fn unlink(&mut self, seq: u64) {
        let Some(link) = self.apps.remove(&seq) else {
            return;
        };
        let delta = Resource::new().sub(&link.usage);
        let runs = -i64::from(link.running);
        let user = self.users.at_mut(link.user);
        apply(user, &link.user_levels, &delta, runs);
        for &i in &link.user_levels {
            user.release(i);
        }
        self.users.unlink(link.user);
        if let Some(g) = link.group {
            let group = self.groups.at_mut(g);
            apply(group, &link.group_levels, &delta, runs);
            for &i in &link.group_levels {
                group.release(i);
            }
            self.groups.unlink(g);
        }
        if !self.quota_failed.is_empty() {
            self.quota_failed.retain(|(s, _)| *s != seq);
        }
    }

    /// Whether `ask` fits the application's user and group headroom
    /// (limits.md 2.5, 2.6). An unlinked application has no caps.
    #[inline]
    pub fn fits(&self, seq: u64, ask: &Resource) -> Fit {
        let Some(link) = self.apps.get(&seq) else {
            return Fit::Fits;
        };
        // Far from every cap: the cached slack answers.
        if slack_all(&self.users, &self.groups, link, |ty, _, bound| {
            let want = ask.get(ty);
            want <= 0 || want <= bound
        }) {
            return Fit::Fits;
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
    pub fn headroom(&self, seq: u64) -> Option<Resource> {
        let link = self.apps.get(&seq)?;
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
    /// and its group.
    #[inline]
    pub fn can_run(&self, seq: u64) -> bool {
        let Some(link) = self.apps.get(&seq) else {
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
    /// with it (quirks Q3-Q5 fixed).
    pub fn reload<'a>(
        &mut self,
        caps: Caps,
        tree: &QueueTree,
        apps: impl Iterator<Item = &'a Application>,
    ) {
        let old = std::mem::take(&mut self.apps);
        let failed = std::mem::take(&mut self.quota_failed);
        *self = Ugm {
            caps,
            quota_failed: failed,
            ..Ugm::default()
        };
        if !self.enabled() {
            return;
        }
        for app in apps {
            let path = path_of(tree, app.queue);
            let kept = old
                .get(&app.seq)
                .and_then(|l| l.group_name.clone())
                .filter(|g| self.caps.group_on_path(&path, g));
            let group = match kept {
                Some(g) => Some(g),
                None => self.caps.resolve_group(tree, app.queue, &app.user.groups),
            };
            let was_running = old.get(&app.seq).is_some_and(|l| l.running);
            self.link_as(app, tree, group);
            // Keep a slot held only by pending asks (Q2) across the reload.
            if was_running {
                if let Some(l) = self.apps.get(&app.seq) {
                    if !l.running && !app.pending.is_zero() {
                        let (u, g) = (l.user, l.group);
                        let (ul, gl) = (l.user_levels.clone(), l.group_levels.clone());
                        apply(self.users.at_mut(u), &ul, &Resource::new(), 1);
                        if let Some(g) = g {
                            apply(self.groups.at_mut(g), &gl, &Resource::new(), 1);
                        }
                        if let Some(l) = self.apps.get_mut(&app.seq) {
                            l.running = true;
                        }
                    }
                }
            }
        }
    }

    /// The user tracker index and group of an application, for reports.
    pub fn link_of(&self, seq: u64) -> Option<&AppLink> {
        self.apps.get(&seq)
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
        let mut used = user.get(s.ty).saturating_sub(s.user_spent);
        if let Some(g) = group {
            used = used.saturating_add(g.get(s.ty).saturating_sub(s.group_spent));
        }
        f(s.ty, s.room, s.room.saturating_sub(used))
    })
}

/// Holds the levels of `path` in `t` for a new link.
fn hold(t: &mut Tracker, path: &[QueueId]) -> PathLevels {
    path.iter().map(|q| t.acquire(*q)).collect()
}

/// [`apply`] for an allocation (nothing negative): adds with no checks.
#[inline]
fn add_levels(t: &mut Tracker, levels: &[u32], res: &Resource, runs: i64) {
    t.spent.add_assign(res);
    for &i in levels {
        let Some(Some(level)) = t.slots.get_mut(i as usize) else {
            continue;
        };
        level.usage.add_assign(res);
        if runs > 0 {
            level.running = level.running.saturating_add(1);
        }
    }
}

fn apply(t: &mut Tracker, levels: &[u32], delta: &Resource, runs: i64) {
    let zero = delta.is_zero();
    if !zero {
        if delta.has_negative() {
            for (ty, v) in delta.iter().filter(|&(_, v)| v > 0) {
                t.spent.set(ty, t.spent.get(ty).saturating_add(v));
            }
        } else {
            t.spent.add_assign(delta);
        }
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
