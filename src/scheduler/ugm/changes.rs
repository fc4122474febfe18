//! Reloads of the caps, and the changes an SI v1.x RM hears of as
//! USERGROUP records.

use std::sync::Arc;

use super::caps::{self, Caps};
use super::{apply, path_of, AppLink, UgChange, Ugm};
use crate::scheduler::objects::application::Application;
use crate::scheduler::objects::queue::{QueueId, QueueTree};
use crate::scheduler::resource::Resource;

impl Ugm {
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
}

/// What a reload did to one application's link, `prev` (in `old`) to
/// `now` (in `new`): usage that moved to or from a tracker, a group link
/// made or dropped. An unchanged link notes nothing.
pub(super) fn relink_changes(
    changes: &mut Vec<UgChange>,
    old: &Ugm,
    prev: Option<&AppLink>,
    new: &Ugm,
    now: Option<&AppLink>,
) {
    let none = Resource::new();
    pub(super) fn usage<'a>(l: Option<&'a AppLink>, none: &'a Resource) -> &'a Resource {
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
pub(super) fn limit_changes(changes: &mut Vec<UgChange>, old: &Ugm, new: &Ugm, tree: &QueueTree) {
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
