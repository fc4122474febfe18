//! Linking applications to their trackers, and moving their usage to
//! the levels: link, charge, flush and unlink.

use std::sync::Arc;

use smallvec::SmallVec;

use super::{
    apply, hold, note_usage, path_of, spend, spent_of, AppCaps, AppLink, PathLevels, Slack, Slacks,
    Tracker, UgChange, Ugm,
};
use crate::scheduler::objects::application::{AppState, Application};
use crate::scheduler::objects::queue::QueueTree;
use crate::scheduler::resource::Resource;

impl Ugm {
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
    pub(crate) fn link_as(
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
    pub(super) fn settle(&mut self, id: u32) {
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
    pub(super) fn refresh(&mut self, id: u32) {
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
    pub(super) fn sync_link(&mut self, id: u32, app: &Application, count: bool) -> bool {
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
}
