//! The user and group checks of the pass (limits.md 4.1, 4.2), with the
//! records their transitions give.

use std::sync::Arc;

use super::*;
use crate::scheduler::ugm::{Fit, APP_CANNOTRUN_QUOTA, APP_RUNNABLE_QUOTA};

impl Partition {
    /// User/group `maxapplications` admission of an application with
    /// demand (limits.md 4.1): whether it may be tried. A change of its
    /// "held" state gives one APP record (6.2), noted in `flips` (applied
    /// when the pass ends; later visits of the pass read it there).
    pub(super) fn admitted_by_limits(
        &self,
        a: &Application,
        flips: &mut FastMap<u64, (bool, Arc<str>)>,
        events: &mut Vec<si::EventRecord>,
    ) -> bool {
        let runnable = self.runnable_by_limits(a);
        if runnable && self.ugm.held.is_empty() && flips.is_empty() {
            return true;
        }
        let held = match flips.get(&a.seq) {
            Some((h, _)) => *h,
            None => self.ugm.held.contains(&a.seq),
        };
        if held == runnable {
            flips.insert(a.seq, (!runnable, a.id.clone()));
            let (reason, message) = if runnable {
                (
                    APP_RUNNABLE_QUOTA,
                    format!("Application {} is runnable: its user and group are within their maxapplications limits", a.id),
                )
            } else {
                (
                    APP_CANNOTRUN_QUOTA,
                    format!("Application {} cannot run: its user or group is at its maxapplications limit", a.id),
                )
            };
            events.push(crate::events::record(
                si::event_record::Type::App,
                &a.id,
                "",
                reason,
                message,
            ));
        }
        runnable
    }

    /// The user/group headroom check of one ask (limits.md 4.2). A
    /// transition into or out of "user quota failed" gives one REQUEST
    /// event (6.1) and is applied when the pass ends.
    pub(super) fn user_quota_check(
        &self,
        app: &Application,
        ask: &Ask,
        pass: &mut PassState,
    ) -> Fit {
        let fit = self.ugm.fits(app, &ask.resource);
        if fit == Fit::Unsure {
            return fit;
        }
        let fits = fit == Fit::Fits;
        let failed = !self.ugm.quota_failed.is_empty()
            && self.ugm.quota_failed.contains(&(app.seq, ask.key.clone()));
        if fits == failed {
            let message = if fits {
                format!("Request '{}' fits in the available user quota", ask.key)
            } else {
                let available = self.ugm.headroom(app).unwrap_or_default();
                format!(
                    "Request '{}' exceeds the available user quota (requested {}, available {available})",
                    ask.key, ask.resource
                )
            };
            let reason = if fits {
                "UserQuotaAvailable"
            } else {
                "UserQuotaExceeded"
            };
            pass.events.push(crate::events::record(
                si::event_record::Type::Request,
                &ask.key,
                &app.id,
                reason,
                message,
            ));
            pass.quota_flips.push((app.seq, ask.key.clone(), !fits));
        }
        fit
    }

    /// Whether any queue in this partition has demand.
    pub fn has_pending(&self) -> bool {
        self.queues.get(ROOT).pending.is_strictly_positive() && !self.nodes.is_empty()
    }
}
