//! Queue priority (YuniKorn v1.2+ semantics, spec `policy/priority.md`):
//! the three queue properties, the priority a queue reports to its parent,
//! and the per-queue count of priorities below it that keeps the maximum
//! without a scan.

use std::cell::Cell;
use std::collections::BTreeMap;

use super::{Queue, QueueId, QueueTree};
use crate::scheduler::policies::{PriorityPolicy, PROP_PRIORITY_POLICY};

thread_local! {
    /// Nesting depth of [`quietly`] on this thread.
    static QUIET: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f` with the property warnings off: for the trial builds of a
/// configuration (the checks before a reload), whose queues the live
/// apply parses, and warns about, once more.
pub fn quietly<T>(f: impl FnOnce() -> T) -> T {
    struct Loud;
    impl Drop for Loud {
        fn drop(&mut self) {
            QUIET.with(|q| q.set(q.get().saturating_sub(1)));
        }
    }
    QUIET.with(|q| q.set(q.get().saturating_add(1)));
    let _loud = Loud;
    f()
}

fn warn(msg: std::fmt::Arguments<'_>) {
    if QUIET.with(Cell::get) == 0 {
        log::warn!("{msg}");
    }
}

/// "No priority": what an application without pending requests and an
/// idle queue report. Also the lowest request priority.
pub const MIN_PRIORITY: i32 = i32::MIN;

/// Queue property: an int32 added to the queue's priority.
pub const PROP_PRIORITY_OFFSET: &str = "priority.offset";
/// Queue property: `enabled` (priority first) or `disabled` (tie-break).
pub const PROP_APP_SORT_PRIORITY: &str = "application.sort.priority";

/// A queue's priority settings, parsed from its effective properties.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrioritySettings {
    /// `priority.policy`.
    pub policy: PriorityPolicy,
    /// `priority.offset`.
    pub offset: i32,
    /// `application.sort.priority` (true = enabled).
    pub sort: bool,
}

impl Default for PrioritySettings {
    fn default() -> Self {
        PrioritySettings {
            policy: PriorityPolicy::Default,
            offset: 0,
            sort: true,
        }
    }
}

impl PrioritySettings {
    /// Parses the three properties; absent keys take their default, and
    /// so do bad values (nothing is validated: a configuration never fails
    /// on them), with a warning.
    pub fn from_properties(path: &str, props: &BTreeMap<String, String>) -> Self {
        let mut s = PrioritySettings::default();
        if let Some(v) = props.get(PROP_PRIORITY_POLICY) {
            match PriorityPolicy::parse(v) {
                Ok(p) => s.policy = p,
                Err(e) => warn(format_args!("queue {path}: {e}, using default")),
            }
        }
        if let Some(v) = props.get(PROP_PRIORITY_OFFSET) {
            match v.parse::<i32>() {
                Ok(o) => s.offset = o,
                Err(_) => warn(format_args!(
                    "queue {path}: invalid {PROP_PRIORITY_OFFSET} {v:?}, using 0"
                )),
            }
        }
        if let Some(v) = props.get(PROP_APP_SORT_PRIORITY) {
            if v.eq_ignore_ascii_case("disabled") {
                s.sort = false;
            } else if !v.eq_ignore_ascii_case("enabled") {
                warn(format_args!(
                    "queue {path}: unknown {PROP_APP_SORT_PRIORITY} {v:?}, using enabled"
                ));
            }
        }
        s
    }

    /// What a queue whose highest priority below is `raw` reports.
    pub fn reported(self, raw: i32) -> i32 {
        if raw == MIN_PRIORITY {
            return MIN_PRIORITY; // idle stays "no priority"
        }
        match self.policy {
            PriorityPolicy::Fence => self.offset,
            PriorityPolicy::Default => {
                let sum = i64::from(raw) + i64::from(self.offset);
                sum.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
            }
        }
    }
}

/// The properties a configured child inherits from `parent`: all of them,
/// except that the policy and the offset go back to their defaults (offsets
/// add up along the path; inheriting them would count them twice).
pub fn inherited(parent: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut props = parent.clone();
    if let Some(v) = props.get_mut(PROP_PRIORITY_POLICY) {
        *v = PriorityPolicy::Default.name().to_string();
    }
    if let Some(v) = props.get_mut(PROP_PRIORITY_OFFSET) {
        *v = "0".to_string();
    }
    props
}

/// Counts one more value `p` (no priority is not counted).
fn count_in(counts: &mut BTreeMap<i32, u32>, p: i32) {
    if p != MIN_PRIORITY {
        *counts.entry(p).or_insert(0) += 1;
    }
}

/// Counts one value `p` less.
fn count_out(counts: &mut BTreeMap<i32, u32>, p: i32) {
    if p == MIN_PRIORITY {
        return;
    }
    if let std::collections::btree_map::Entry::Occupied(mut e) = counts.entry(p) {
        if *e.get() <= 1 {
            e.remove();
        } else {
            *e.get_mut() -= 1;
        }
    }
}

impl Queue {
    /// The highest priority of the applications (leaf) or of the children's
    /// reported priorities (parent).
    pub fn raw_priority(&self) -> i32 {
        self.prio_counts
            .last_key_value()
            .map_or(MIN_PRIORITY, |(p, _)| *p)
    }

    /// The priority the queue shows its parent (and REST).
    pub fn current_priority(&self) -> i32 {
        self.reported
    }
}

impl QueueTree {
    /// An application of leaf `id` (or a child of parent `id`) now has
    /// priority `new` instead of `old`: the new maximum goes up the tree,
    /// each queue re-filed in its parent's order, and stops at the first
    /// queue whose reported value does not change.
    pub fn priority_changed(&mut self, id: QueueId, old: i32, new: i32) {
        let (mut cur, mut old, mut new) = (id, old, new);
        loop {
            let q = self.get_mut(cur);
            count_out(&mut q.prio_counts, old);
            count_in(&mut q.prio_counts, new);
            let reported = q.priority.reported(q.raw_priority());
            if reported == q.reported {
                return;
            }
            old = std::mem::replace(&mut q.reported, reported);
            new = reported;
            let Some(parent) = q.parent else {
                return;
            };
            self.rekey(cur);
            cur = parent;
        }
    }

    /// Recomputes every queue's priority from its applications' priorities
    /// (`apps`: leaf and application priority) bottom-up, then re-files
    /// every queue in its parent's order: after a reload changed offsets,
    /// policies or which ordering comes first.
    pub fn recompute_priorities(&mut self, apps: impl Iterator<Item = (QueueId, i32)>) {
        let mut order = Vec::new();
        let mut stack = vec![super::ROOT];
        while let Some(id) = stack.pop() {
            order.push(id);
            let q = self.get_mut(id);
            q.prio_counts.clear();
            stack.extend(q.children.values().copied());
        }
        for (leaf, p) in apps {
            count_in(&mut self.get_mut(leaf).prio_counts, p);
        }
        // Children before parents.
        for &id in order.iter().rev() {
            let q = self.get_mut(id);
            q.reported = q.priority.reported(q.raw_priority());
            let (reported, parent) = (q.reported, q.parent);
            if let Some(p) = parent {
                count_in(&mut self.get_mut(p).prio_counts, reported);
            }
        }
        for &id in &order {
            self.rekey(id);
        }
    }
}

#[cfg(test)]
#[path = "priority_tests.rs"]
mod scenarios;

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// PR1 (`TestQueueProps`).
    #[test]
    fn properties_parse_and_fall_back_to_defaults() {
        let s = PrioritySettings::from_properties("root.a", &BTreeMap::new());
        assert_eq!(s, PrioritySettings::default());
        assert_eq!(
            (s.policy, s.offset, s.sort),
            (PriorityPolicy::Default, 0, true)
        );
        let s = PrioritySettings::from_properties(
            "root.a",
            &props(&[
                (PROP_PRIORITY_POLICY, "default"),
                (PROP_PRIORITY_OFFSET, "3"),
                (PROP_APP_SORT_PRIORITY, "enabled"),
            ]),
        );
        assert_eq!(
            (s.policy, s.offset, s.sort),
            (PriorityPolicy::Default, 3, true)
        );
        let s = PrioritySettings::from_properties(
            "root.a",
            &props(&[
                (PROP_PRIORITY_POLICY, "FENCE"),
                (PROP_PRIORITY_OFFSET, "-3"),
                (PROP_APP_SORT_PRIORITY, "Disabled"),
            ]),
        );
        assert_eq!(
            (s.policy, s.offset, s.sort),
            (PriorityPolicy::Fence, -3, false)
        );
        let s = PrioritySettings::from_properties(
            "root.a",
            &props(&[
                (PROP_PRIORITY_POLICY, "invalid"),
                (PROP_PRIORITY_OFFSET, "invalid"),
                (PROP_APP_SORT_PRIORITY, "invalid"),
            ]),
        );
        assert_eq!(s, PrioritySettings::default());
        // Out of the int32 range is as bad as not a number.
        for bad in ["2147483648", "-2147483649", "1.5", ""] {
            let s =
                PrioritySettings::from_properties("root.a", &props(&[(PROP_PRIORITY_OFFSET, bad)]));
            assert_eq!(s.offset, 0, "{bad}");
        }
        let s = PrioritySettings::from_properties(
            "root.a",
            &props(&[(PROP_PRIORITY_OFFSET, "2147483647")]),
        );
        assert_eq!(s.offset, i32::MAX);
    }

    /// PR15 (`TestPriorityPolicyFromString`).
    #[test]
    fn policy_parsing() {
        assert_eq!(PriorityPolicy::parse(""), Ok(PriorityPolicy::Default));
        assert_eq!(
            PriorityPolicy::parse("default"),
            Ok(PriorityPolicy::Default)
        );
        assert_eq!(PriorityPolicy::parse("fence"), Ok(PriorityPolicy::Fence));
        assert!(PriorityPolicy::parse("invalid").is_err());
    }

    /// PR2 (`TestInheritedQueueProps`), the filter part.
    #[test]
    fn policy_and_offset_are_not_inherited() {
        let parent = props(&[
            (PROP_PRIORITY_POLICY, "fence"),
            (PROP_PRIORITY_OFFSET, "100"),
            (PROP_APP_SORT_PRIORITY, "disabled"),
            ("key", "value"),
        ]);
        let child = inherited(&parent);
        assert_eq!(
            child,
            props(&[
                (PROP_PRIORITY_POLICY, "default"),
                (PROP_PRIORITY_OFFSET, "0"),
                (PROP_APP_SORT_PRIORITY, "disabled"),
                ("key", "value"),
            ])
        );
        let s = PrioritySettings::from_properties("root.p.c", &child);
        assert_eq!(
            (s.policy, s.offset, s.sort),
            (PriorityPolicy::Default, 0, false)
        );
        // Nothing is added when the parent has none of them.
        assert_eq!(
            inherited(&props(&[("key", "value")])),
            props(&[("key", "value")])
        );
    }

    #[test]
    fn reported_priority() {
        let d = |offset| PrioritySettings {
            offset,
            ..Default::default()
        };
        let f = |offset| PrioritySettings {
            policy: PriorityPolicy::Fence,
            offset,
            sort: true,
        };
        assert_eq!(d(3).reported(MIN_PRIORITY), MIN_PRIORITY);
        assert_eq!(f(3).reported(MIN_PRIORITY), MIN_PRIORITY);
        assert_eq!(d(3).reported(5), 8);
        assert_eq!(f(3).reported(5), 3);
        assert_eq!(d(10).reported(i32::MAX - 1), i32::MAX);
        assert_eq!(d(-10).reported(i32::MIN + 1), i32::MIN);
    }
}
