//! Gang scheduling, the application side (spec 9): the style, the
//! placeholder books and the task groups of one application. The partition
//! side (books, replacement, confirmation, timeout) is a chapter of the
//! partition: `partition/gang/`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use super::resource::Resource;

/// Info passed with the timeout's state change (spec 9.4).
pub const INFO_RESERVATION_TIMEOUT: &str = "ResourceReservationTimeout";
/// Message of placeholder releases on timeout.
pub const MSG_PLACEHOLDER_TIMEOUT: &str = "releasing allocated placeholders on placeholder timeout";
/// Message of ask releases on timeout.
pub const MSG_ASK_TIMEOUT: &str = "releasing placeholders asks on placeholder timeout";

/// What happens to an application whose gang never assembled (spec 9.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GangStyle {
    /// Back to `Accepted` through `Resuming`; the RM may resubmit plainly.
    #[default]
    Soft,
    /// `Failing`, then `Failed`.
    Hard,
}

impl GangStyle {
    /// Exactly `Hard` is hard; anything else is soft (spec 6.8).
    pub fn parse(s: &str) -> Self {
        if s == "Hard" {
            GangStyle::Hard
        } else {
            GangStyle::Soft
        }
    }

    /// The style as the RM spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            GangStyle::Soft => "Soft",
            GangStyle::Hard => "Hard",
        }
    }
}

/// One task group of an application.
#[derive(Debug, Clone, Default)]
pub struct TaskGroup {
    /// Placeholders that a real ask may replace: held, not being replaced
    /// and not being released. Replacement takes the first.
    pub free: BTreeSet<crate::scheduler::alloc_uuid::AllocUuid>,
    /// Placeholder allocations held (including those being replaced or
    /// released, until the RM confirms).
    pub placeholders: usize,
    /// Real allocations that replaced a placeholder of this group.
    pub real: usize,
}

/// The gang state of one application.
#[derive(Debug, Clone, Default)]
pub struct AppGang {
    /// Soft or hard.
    pub style: GangStyle,
    /// `executionTimeoutMilliSeconds` as sent (<= 0: the default).
    pub timeout_ms: i64,
    /// Sum of the placeholder allocations held (not in `allocated`).
    pub placeholder_allocated: Resource,
    /// Placeholder allocations held.
    pub placeholders: usize,
    /// Of those, how many are free to be replaced.
    pub free: usize,
    /// Task groups by name.
    pub groups: BTreeMap<Arc<str>, TaskGroup>,
    /// Identifies the armed placeholder timer; 0 when none is armed.
    pub timer_epoch: u64,
    /// When the placeholder timeout fired (Unix ns) and what it did, for
    /// the reason its asks wait (snapshot/reason.rs).
    pub timed_out: Option<(i64, &'static str)>,
}

/// The application tag holding its creation time in Unix seconds; the
/// SI v1 RM (the k8shim) sets it from the pod's creation time.
pub const CREATION_TIME_TAG: &str = "yunikorn.apache.org/creationTime";

/// The placeholder timeout of an application created at `created` (the
/// text of [`CREATION_TIME_TAG`], Unix seconds), seen at `now_unix_ns`:
/// what is left of `timeout` since then, so that a gang resubmitted after a
/// scheduler restart keeps its first deadline. A deadline already past
/// leaves 1 ms (the timeout then fires at once); a creation time that does
/// not parse leaves `timeout` whole; a negative one counts as 1970, as the
/// YuniKorn v1.x core reads it.
pub fn timeout_since_creation(timeout: Duration, created: &str, now_unix_ns: i64) -> Duration {
    let Ok(secs) = created.trim().parse::<i64>() else {
        return timeout;
    };
    let deadline_ns = i128::from(secs.max(0)) * 1_000_000_000 + timeout.as_nanos() as i128;
    let left_ns = deadline_ns - i128::from(now_unix_ns);
    if left_ns <= 0 {
        return Duration::from_millis(1);
    }
    Duration::from_nanos(u64::try_from(left_ns).unwrap_or(u64::MAX))
}

impl AppGang {
    /// The application's placeholder timeout; `default` when it sets none.
    pub fn timeout(&self, default: Duration) -> Duration {
        if self.timeout_ms > 0 {
            Duration::from_millis(self.timeout_ms as u64)
        } else {
            default
        }
    }

    /// Books a placeholder allocation.
    pub fn add_placeholder(
        &mut self,
        group: &Arc<str>,
        uuid: &crate::scheduler::alloc_uuid::AllocUuid,
        resource: &Resource,
    ) {
        self.placeholder_allocated.add_assign(resource);
        self.placeholders += 1;
        let g = self.groups.entry(group.clone()).or_default();
        g.placeholders += 1;
        if g.free.insert(uuid.clone()) {
            self.free += 1;
        }
    }

    /// Takes a placeholder out of its group's free set (it is being
    /// replaced or released). Returns whether it was free.
    pub fn take_free(
        &mut self,
        group: &str,
        uuid: &crate::scheduler::alloc_uuid::AllocUuid,
    ) -> bool {
        let taken = self
            .groups
            .get_mut(group)
            .is_some_and(|g| g.free.remove(uuid));
        if taken {
            self.free -= 1;
        }
        taken
    }

    /// Puts a placeholder back in its group's free set.
    pub fn give_back(&mut self, group: &Arc<str>, uuid: &crate::scheduler::alloc_uuid::AllocUuid) {
        if let Some(g) = self.groups.get_mut(group) {
            if g.free.insert(uuid.clone()) {
                self.free += 1;
            }
        }
    }

    /// Unbooks a placeholder allocation that left the application.
    pub fn remove_placeholder(
        &mut self,
        group: &str,
        uuid: &crate::scheduler::alloc_uuid::AllocUuid,
        resource: &Resource,
    ) {
        self.take_free(group, uuid);
        self.placeholder_allocated.sub_clamped_assign(resource);
        self.placeholders = self.placeholders.saturating_sub(1);
        if let Some(g) = self.groups.get_mut(group) {
            g.placeholders = g.placeholders.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn style_is_exact_and_defaults_to_soft() {
        assert_eq!(GangStyle::parse("Hard"), GangStyle::Hard);
        assert_eq!(GangStyle::parse("hard"), GangStyle::Soft);
        assert_eq!(GangStyle::parse(""), GangStyle::Soft);
        assert_eq!(GangStyle::parse("Soft"), GangStyle::Soft);
    }

    #[test]
    fn placeholder_books_balance() {
        use crate::scheduler::alloc_uuid::AllocUuid;
        let mut g = AppGang::default();
        let r = Resource::from_pairs([("memory", 10)]).unwrap();
        let tg: Arc<str> = "tg".into();
        let (a, b): (AllocUuid, AllocUuid) = ("a".into(), "b".into());
        g.add_placeholder(&tg, &a, &r);
        g.add_placeholder(&tg, &b, &r);
        assert_eq!((g.placeholders, g.free), (2, 2));
        assert!(g.take_free("tg", &a));
        assert!(!g.take_free("tg", &a), "taken once");
        assert_eq!(g.free, 1);
        g.give_back(&tg, &a);
        assert_eq!(g.free, 2);
        g.remove_placeholder("tg", &a, &r);
        g.remove_placeholder("tg", &b, &r);
        assert_eq!((g.placeholders, g.free), (0, 0));
        assert!(g.placeholder_allocated.is_zero());
        assert_eq!(g.timeout(Duration::from_secs(1)), Duration::from_secs(1));
        g.timeout_ms = 5;
        assert_eq!(g.timeout(Duration::from_secs(1)), Duration::from_millis(5));
    }

    #[test]
    fn a_creation_time_shortens_the_timeout_to_what_is_left() {
        let t = Duration::from_secs(900);
        let now = 1_700_000_600 * 1_000_000_000;
        // Created 600 s ago: 300 s left of 900.
        let left = timeout_since_creation(t, "1700000000", now);
        assert_eq!(left, Duration::from_secs(300));
        // Past its deadline: the smallest timeout, it fires at once.
        assert_eq!(
            timeout_since_creation(t, "1699990000", now),
            Duration::from_millis(1)
        );
        assert_eq!(
            timeout_since_creation(t, "-5", now),
            Duration::from_millis(1)
        );
        // Unreadable: the whole timeout.
        assert_eq!(timeout_since_creation(t, "soon", now), t);
        assert_eq!(timeout_since_creation(t, "", now), t);
        // In the future (clock skew): more than the timeout, as the reference.
        assert_eq!(
            timeout_since_creation(t, "1700000700", now),
            Duration::from_secs(1000)
        );
        assert_eq!(
            timeout_since_creation(t, &i64::MAX.to_string(), now),
            Duration::from_nanos(u64::MAX)
        );
    }
}
