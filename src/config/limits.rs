//! Validation of user and group `limits` as YuniKorn v1.8 does it
//! (limits.md 1.2-1.4), in both editions: the limits are enforced, and the
//! v0.12 checks left the wildcard and hierarchy semantics undefined.
//! Messages are the reference's, typos included.

use std::collections::{BTreeMap, HashSet};
use std::sync::OnceLock;

use regex::Regex;

use super::{format_resource, ConfigError, LimitConfig, QueueConfig, Res};
use crate::security::WILDCARD;

/// The v1.8 user name pattern for limits.
fn user_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^[_a-zA-Z][a-zA-Z0-9:#/_.@-]*[$]?$").expect("valid regex"))
}

/// The v1.8 group name pattern for limits.
fn group_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^[_a-zA-Z][a-zA-Z0-9:_.-]*$").expect("valid regex"))
}

/// Whether `name` is a user name v1.8 accepts in a limit (also used by the
/// REST usage endpoints).
pub fn is_limit_user_name(name: &str) -> bool {
    user_regex().is_match(name)
}

/// Whether `name` is a group name v1.8 accepts in a limit.
pub fn is_limit_group_name(name: &str) -> bool {
    group_regex().is_match(name)
}

/// Partition limits are root's (1.2): folded into root when root has none,
/// an error when both are set and differ.
pub(super) fn fold_partition_limits(
    partition: &[LimitConfig],
    root: &mut QueueConfig,
) -> Result<(), ConfigError> {
    if partition.is_empty() {
        return Ok(());
    }
    if root.limits.is_empty() {
        root.limits = partition.to_vec();
        return Ok(());
    }
    if root.limits != partition {
        return Err(ConfigError::new(
            "partition limits and root queue limits are not equivalent",
        ));
    }
    Ok(())
}

/// The per-queue checks of 1.3, over one queue's list with the names seen
/// shared across its entries.
pub(super) fn check_queue_limits(queue: &QueueConfig, is_root: bool) -> Result<(), ConfigError> {
    let mut users: HashSet<&str> = HashSet::new();
    let mut groups: HashSet<&str> = HashSet::new();
    for limit in &queue.limits {
        check_limit(limit, &mut users, &mut groups, queue, is_root)?;
    }
    Ok(())
}

fn check_limit<'a>(
    limit: &'a LimitConfig,
    users: &mut HashSet<&'a str>,
    groups: &mut HashSet<&'a str>,
    queue: &QueueConfig,
    is_root: bool,
) -> Result<(), ConfigError> {
    let err = |m: String| Err(ConfigError::new(m));
    if limit.users.is_empty() && limit.groups.is_empty() {
        return err(format!(
            "empty user and group lists defined in limit '{}'",
            limit.limit
        ));
    }
    for name in &limit.users {
        if name != WILDCARD && !is_limit_user_name(name) {
            return err(format!(
                "invalid limit user name '{name}' in limit definition"
            ));
        }
        if !users.insert(name) {
            return err(format!("duplicated user name '{name}', already exists"));
        }
        if users.contains(WILDCARD) && name != WILDCARD {
            return err(format!(
                "should not set no wildcard user {name} after wildcard user limit"
            ));
        }
    }
    for name in &limit.groups {
        if name != WILDCARD && !is_limit_group_name(name) {
            return err(format!(
                "invalid limit group name '{name}' in limit definition"
            ));
        }
        if !groups.insert(name) {
            return err(format!("duplicated group name '{name}'"));
        }
        if groups.contains(WILDCARD) && name != WILDCARD {
            return err(format!(
                "should not set no wildcard group {name} after wildcard group limit"
            ));
        }
    }
    if groups.contains(WILDCARD) && groups.len() == 1 {
        return err("should not specify only one group limit that is using the wildcard. There must be at least one limit with a group name defined ".into());
    }
    let max = &limit.max_resources;
    let positive = max.values().any(|v| *v > 0) && max.values().all(|v| *v >= 0);
    if !max.is_empty() && !positive {
        return err(format!(
            "MaxResources should be greater than zero in '{}' limit",
            limit.limit
        ));
    }
    if limit.max_applications == 0 && max.is_empty() {
        return err(format!(
            "invalid resource combination for limit {} all resource limits are null",
            limit.limit
        ));
    }
    if queue.max_applications != 0 && queue.max_applications < limit.max_applications {
        return err(format!(
            "invalid MaxApplications settings for limit {} exceed current the queue MaxApplications",
            limit.limit
        ));
    }
    if !is_root {
        let queue_max = queue.resources.max.clone().unwrap_or_default();
        if !super::fits_max_undefined(max, &queue_max) {
            return err(format!(
                "invalid MaxResources settings for limit {} exeecd current the queue MaxResources",
                limit.limit
            ));
        }
    }
    Ok(())
}

/// Per-type minimum; a type on one side only keeps its value.
fn min_permissive(a: &Res, b: &Res) -> Res {
    super::min_permissive(a, b)
}

/// The hierarchical checks of 1.3: a child's cap for a name must fit the
/// cap its ancestors set for that name (or their wildcard), first for
/// resources over the whole tree, then for applications.
pub(super) fn check_limit_hierarchy(root: &QueueConfig) -> Result<(), ConfigError> {
    resources_walk(root, &Inherited::default(), &Inherited::default())?;
    apps_walk(root, &BTreeMap::new(), &BTreeMap::new())
}

type Inherited = BTreeMap<String, Res>;

fn resources_walk(
    q: &QueueConfig,
    users: &Inherited,
    groups: &Inherited,
) -> Result<(), ConfigError> {
    let mut my_users = users.clone();
    let mut my_groups = groups.clone();
    for limit in &q.limits {
        let cap = &limit.max_resources;
        for (kind, names, parent, mine) in [
            ("user", &limit.users, users, &mut my_users),
            ("group", &limit.groups, groups, &mut my_groups),
        ] {
            for n in names {
                if let Some(inherited) = parent.get(n) {
                    if !super::fits_max_undefined(cap, inherited) {
                        return Err(ConfigError::new(format!(
                            "{kind} {n} max resource {} of queue {} is greater than immediate or ancestor parent maximum resource {}",
                            format_resource(cap),
                            q.name,
                            format_resource(inherited)
                        )));
                    }
                    mine.insert(n.clone(), min_permissive(cap, inherited));
                } else if let Some(wild) = parent.get(WILDCARD).filter(|_| n != WILDCARD) {
                    if !super::fits_max_undefined(cap, wild) {
                        return Err(ConfigError::new(format!(
                            "{kind} {n} max resource {} of queue {} is greater than wildcard maximum resource {} of immediate or ancestor parent queue",
                            format_resource(cap),
                            q.name,
                            format_resource(wild)
                        )));
                    }
                    mine.insert(n.clone(), cap.clone());
                } else {
                    mine.insert(n.clone(), cap.clone());
                }
            }
        }
    }
    for child in &q.queues {
        resources_walk(child, &my_users, &my_groups)?;
    }
    Ok(())
}

fn apps_walk(
    q: &QueueConfig,
    users: &BTreeMap<String, u64>,
    groups: &BTreeMap<String, u64>,
) -> Result<(), ConfigError> {
    let mut my_users = users.clone();
    let mut my_groups = groups.clone();
    for limit in &q.limits {
        let v = limit.max_applications;
        for (kind, names, parent, mine) in [
            ("user", &limit.users, users, &mut my_users),
            ("group", &limit.groups, groups, &mut my_groups),
        ] {
            for n in names {
                if let Some(&p) = parent.get(n) {
                    if p != 0 && (p < v || v == 0) {
                        return Err(ConfigError::new(format!(
                            "{kind} {n} max applications {v} of queue {} is greater than immediate or ancestor parent max applications {p}",
                            q.name
                        )));
                    }
                } else if let Some(&w) = parent.get(WILDCARD).filter(|_| n != WILDCARD) {
                    if w != 0 && (w < v || v == 0) {
                        return Err(ConfigError::new(format!(
                            "{kind} {n} max applications {v} of queue {} is greater than wildcard max applications {w} of immediate or ancestor parent queue",
                            q.name
                        )));
                    }
                }
                mine.insert(n.clone(), v);
            }
        }
    }
    for child in &q.queues {
        apps_walk(child, &my_users, &my_groups)?;
    }
    Ok(())
}
