//! The trackers as published: the shapes YuniKorn v1.8 serves at
//! `/ws/v1/partition/{p}/usage/...` (field names are that wire's), used
//! as they are by the state dump and the REST service.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use super::{named, Named};
use crate::scheduler::objects::queue::{QueueId, QueueTree, ROOT};
use crate::scheduler::partition::Partition;
use crate::scheduler::ugm::{Cap, LevelCaps, Tracker, Ugm};
use crate::scheduler::FastMap;

/// One level of a tracker's queue tree.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUsageSnap {
    /// Full queue path.
    pub queue_path: String,
    /// Usage in this subtree.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_usage: Named,
    /// Applications counted as running in this subtree.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub running_applications: Vec<String>,
    /// The resource cap at this level, if any.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub max_resources: Named,
    /// The application cap at this level; 0 = none.
    #[serde(skip_serializing_if = "is_zero")]
    pub max_applications: u64,
    /// Levels below with usage.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<ResourceUsageSnap>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// One user tracker.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct UserUsageSnap {
    /// User name.
    pub user_name: String,
    /// Application id -> the group it is linked to.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub groups: BTreeMap<String, String>,
    /// The queue tree from root.
    pub queues: ResourceUsageSnap,
}

/// One group tracker.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GroupUsageSnap {
    /// Group name (`*` for the wildcard group).
    pub group_name: String,
    /// Applications linked to the group.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub applications: Vec<String>,
    /// The queue tree from root.
    pub queues: ResourceUsageSnap,
}

/// A partition's trackers, sorted by name.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct UsageSnap {
    /// Whether limits are configured (and so groups tracked).
    pub limits: bool,
    /// User trackers.
    pub users: Vec<UserUsageSnap>,
    /// Group trackers.
    pub groups: Vec<GroupUsageSnap>,
}

type Running = FastMap<(usize, QueueId), Vec<String>>;

fn level_tree(
    tree: &QueueTree,
    ugm: &Ugm,
    t: &Tracker,
    running: &Running,
    ix: usize,
    q: QueueId,
    cap: &dyn Fn(&LevelCaps) -> Option<Cap>,
) -> ResourceUsageSnap {
    let level = t.level(q).cloned().unwrap_or_default();
    let c = ugm.caps.levels.get(&q).and_then(cap).unwrap_or_default();
    let mut apps = running.get(&(ix, q)).cloned().unwrap_or_default();
    apps.sort();
    let queue = tree.get(q);
    ResourceUsageSnap {
        queue_path: queue.path.to_string(),
        resource_usage: named(&level.usage)
            .into_iter()
            .filter(|(_, v)| *v != 0)
            .collect(),
        running_applications: apps,
        max_resources: c.max.as_ref().map(named).unwrap_or_default(),
        max_applications: c.max_apps,
        children: queue
            .children
            .values()
            .filter(|c| t.level(**c).is_some())
            .map(|c| level_tree(tree, ugm, t, running, ix, *c, cap))
            .collect(),
    }
}

impl UsageSnap {
    /// The trackers of a partition. Without limits nothing is tracked live,
    /// so the user usage is counted from the applications here (groups are
    /// tracked only for a group limit, as upstream).
    pub fn of(p: &Partition) -> UsageSnap {
        if p.ugm().enabled() {
            return Self::from_ugm(p.ugm(), p.queues(), true);
        }
        let mut derived = Ugm::default();
        for (slot, app) in p.apps().slots() {
            derived.link_as(app, slot, p.queues(), None);
        }
        Self::from_ugm(&derived, p.queues(), false)
    }

    fn from_ugm(ugm: &Ugm, tree: &QueueTree, limits: bool) -> UsageSnap {
        let mut user_running = Running::default();
        let mut group_running = Running::default();
        let mut user_groups: FastMap<usize, BTreeMap<String, String>> = FastMap::default();
        let mut group_apps: FastMap<usize, Vec<String>> = FastMap::default();
        for link in ugm.links() {
            if let (Some(g), Some(name)) = (link.group_index(), &link.group_name) {
                user_groups
                    .entry(link.user_index())
                    .or_default()
                    .insert(link.app.to_string(), name.to_string());
                group_apps.entry(g).or_default().push(link.app.to_string());
            }
            if !link.running {
                continue;
            }
            for q in &link.path {
                user_running
                    .entry((link.user_index(), *q))
                    .or_default()
                    .push(link.app.to_string());
                if let Some(g) = link.group_index() {
                    group_running
                        .entry((g, *q))
                        .or_default()
                        .push(link.app.to_string());
                }
            }
        }
        let mut users: Vec<UserUsageSnap> = ugm
            .users
            .live()
            .map(|(i, t)| {
                let name = t.name.clone();
                let cap = move |l: &LevelCaps| l.user(&name).map(|(c, _)| c.clone());
                UserUsageSnap {
                    user_name: t.name.to_string(),
                    groups: user_groups.remove(&i).unwrap_or_default(),
                    queues: level_tree(tree, ugm, t, &user_running, i, ROOT, &cap),
                }
            })
            .collect();
        users.sort_by(|a, b| a.user_name.cmp(&b.user_name));
        let mut groups: Vec<GroupUsageSnap> = ugm
            .groups
            .live()
            .map(|(i, t)| {
                let name: Arc<str> = t.name.clone();
                let cap = move |l: &LevelCaps| l.group(&name).cloned();
                let mut applications = group_apps.remove(&i).unwrap_or_default();
                applications.sort();
                GroupUsageSnap {
                    group_name: t.name.to_string(),
                    applications,
                    queues: level_tree(tree, ugm, t, &group_running, i, ROOT, &cap),
                }
            })
            .collect();
        groups.sort_by(|a, b| a.group_name.cmp(&b.group_name));
        UsageSnap {
            limits,
            users,
            groups,
        }
    }
}
