//! Which user or group limit holds an application or an ask, for the
//! reason an ask waits (objects/pending.rs). Only read when a check has
//! already failed: never on the path of an ask that fits.

use std::sync::Arc;

use super::{AppCaps, AppLink, PathLevels, Tracker, Ugm};
use crate::scheduler::objects::application::Application;
use crate::scheduler::objects::pending::Scope;
use crate::scheduler::objects::queue::QueueId;
use crate::scheduler::resource::{ResId, Resource};

/// A user or group resource limit an ask does not fit.
#[derive(Debug, Clone)]
pub struct LimitShort {
    /// User or group.
    pub scope: Scope,
    /// Its name.
    pub name: Arc<str>,
    /// The queue the limit is set on.
    pub queue: QueueId,
    /// The type lacking room.
    pub resource: ResId,
    /// Asked.
    pub asked: i64,
    /// Free under the limit.
    pub free: i64,
}

/// A user or group `maxapplications` limit with no free slot.
#[derive(Debug, Clone)]
pub struct AppsFull {
    /// User or group.
    pub scope: Scope,
    /// Its name.
    pub name: Arc<str>,
    /// The queue the limit is set on.
    pub queue: QueueId,
    /// The limit.
    pub limit: u64,
}

impl Ugm {
    /// The first capped level (user first, then group, root first) whose
    /// room `ask` does not fit; `None` when every level has room.
    pub fn explain_over(&self, app: &Application, ask: &Resource) -> Option<LimitShort> {
        let link = self.link_of(app)?;
        let short = |t: &Tracker, levels: &PathLevels, caps: &AppCaps| {
            caps.iter().find_map(|(pos, cap)| {
                let max = cap.max.as_ref()?;
                let usage = &t.at(levels[*pos]).usage;
                max.iter().find_map(|(ty, m)| {
                    let want = ask.get(ty);
                    let free = m.saturating_sub(usage.get(ty)).max(0);
                    (want > 0 && want > free).then_some((link.path[*pos], ty, want, free))
                })
            })
        };
        let found = |scope, name: &Arc<str>, (queue, resource, asked, free)| LimitShort {
            scope,
            name: name.clone(),
            queue,
            resource,
            asked,
            free,
        };
        if let Some(s) = short(self.users.at(link.user), &link.user_levels, &link.user_caps) {
            return Some(found(Scope::User, self.user_name(link), s));
        }
        let g = link.group?;
        let s = short(self.groups.at(g), &link.group_levels, &link.group_caps)?;
        Some(found(Scope::Group, &self.groups.at(g).name, s))
    }

    /// The first capped level (user first, then group) with no running
    /// slot left for the application; `None` when it may run.
    pub fn explain_held(&self, app: &Application) -> Option<AppsFull> {
        let link: &AppLink = self.link_of(app)?;
        if link.running {
            return None;
        }
        let full = |t: &Tracker, levels: &PathLevels, caps: &AppCaps| {
            caps.iter().find_map(|(pos, cap)| {
                (cap.max_apps > 0 && t.at(levels[*pos]).running.saturating_add(1) > cap.max_apps)
                    .then_some((link.path[*pos], cap.max_apps))
            })
        };
        if let Some((queue, limit)) =
            full(self.users.at(link.user), &link.user_levels, &link.user_caps)
        {
            return Some(AppsFull {
                scope: Scope::User,
                name: self.user_name(link).clone(),
                queue,
                limit,
            });
        }
        let g = link.group?;
        let (queue, limit) = full(self.groups.at(g), &link.group_levels, &link.group_caps)?;
        Some(AppsFull {
            scope: Scope::Group,
            name: self.groups.at(g).name.clone(),
            queue,
            limit,
        })
    }
}
