//! The checks a pass makes against the caps: fits, headroom and whether
//! an application may run.

use super::{level_fits, slack_all, AppCaps, Fit, PathLevels, Tracker, Ugm};
use crate::scheduler::objects::application::Application;
use crate::scheduler::resource::Resource;

impl Ugm {
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
}
