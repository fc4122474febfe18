//! The caps of one partition, built from its validated configuration: for
//! each configured queue with `limits`, the named and wildcard user and
//! group caps at that level (limits.md 2.1-2.4), and the group resolution
//! of 2.3.

use std::sync::Arc;

use crate::config::{LimitConfig, PartitionConfig, QueueConfig};
use crate::scheduler::objects::queue::{QueueId, QueueTree};
use crate::scheduler::resource::Resource;
use crate::scheduler::FastMap;

/// The wildcard user or group name.
pub const WILDCARD: &str = "*";

/// Most of a user's groups read for group resolution (docs/limits.md):
/// far above real directories, and it bounds the work of one submission.
pub const MAX_USER_GROUPS: usize = 1024;

/// One cap at one level.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Cap {
    /// Resource cap; `None` when absent or all zero (no resource cap). Zero
    /// entries next to a positive one are kept: they block that type.
    pub max: Option<Resource>,
    /// Running-application cap; 0 = none.
    pub max_apps: u64,
}

impl Cap {
    fn from_config(l: &LimitConfig) -> Result<Cap, String> {
        let r = Resource::from_pairs(l.max_resources.iter().map(|(k, v)| (k.as_str(), *v)))?;
        Ok(Cap {
            max: (!r.is_zero()).then_some(r),
            max_apps: l.max_applications,
        })
    }
}

/// The caps configured at one queue.
#[derive(Debug, Clone, Default)]
pub struct LevelCaps {
    /// Named user caps.
    pub users: FastMap<Arc<str>, Cap>,
    /// The wildcard user cap (for every user not named here).
    pub user_wildcard: Option<Cap>,
    /// Named group caps, in configuration order (the order group
    /// resolution walks).
    pub groups: Vec<(Arc<str>, Cap)>,
    /// The wildcard group cap (one shared tracker `*`).
    pub group_wildcard: Option<Cap>,
    /// The entries as configured (REST queue entries show them).
    pub config: Vec<LimitConfig>,
}

impl LevelCaps {
    /// The cap of user `name` here: named, else the wildcard; the flag says
    /// whether it came from the wildcard.
    pub fn user(&self, name: &str) -> Option<(&Cap, bool)> {
        match self.users.get(name) {
            Some(c) => Some((c, false)),
            None => self.user_wildcard.as_ref().map(|c| (c, true)),
        }
    }

    /// The cap of group `name` (`*` for the wildcard group) here.
    pub fn group(&self, name: &str) -> Option<&Cap> {
        if name == WILDCARD {
            return self.group_wildcard.as_ref();
        }
        self.groups
            .iter()
            .find(|(g, _)| &**g == name)
            .map(|(_, c)| c)
    }
}

/// Every configured level with limits, by queue id, plus the paths (the
/// REST view shows caps per path).
#[derive(Debug, Clone, Default)]
pub struct Caps {
    /// Levels with at least one limit entry.
    pub levels: FastMap<QueueId, LevelCaps>,
}

impl Caps {
    /// Builds the caps of a validated partition configuration against its
    /// live queue tree. Partition-level limits are root's (validation folded
    /// them in; an older configuration value is folded here too).
    pub fn build(cfg: &PartitionConfig, tree: &QueueTree) -> Result<Caps, String> {
        let mut caps = Caps::default();
        let Some(root) = cfg.queues.first() else {
            return Ok(caps);
        };
        let root_limits = if root.limits.is_empty() {
            &cfg.limits
        } else {
            &root.limits
        };
        caps.add_level("root", root_limits, tree)?;
        for child in &root.queues {
            caps.walk(child, "root", tree)?;
        }
        Ok(caps)
    }

    fn walk(&mut self, q: &QueueConfig, parent: &str, tree: &QueueTree) -> Result<(), String> {
        let path = format!("{parent}.{}", q.name.to_ascii_lowercase());
        self.add_level(&path, &q.limits, tree)?;
        for child in &q.queues {
            self.walk(child, &path, tree)?;
        }
        Ok(())
    }

    fn add_level(
        &mut self,
        path: &str,
        limits: &[LimitConfig],
        tree: &QueueTree,
    ) -> Result<(), String> {
        if limits.is_empty() {
            return Ok(());
        }
        let Some(id) = tree.lookup(path) else {
            return Ok(());
        };
        let mut level = LevelCaps {
            config: limits.to_vec(),
            ..LevelCaps::default()
        };
        for l in limits {
            let cap = Cap::from_config(l)?;
            for u in &l.users {
                if u == WILDCARD {
                    level.user_wildcard = Some(cap.clone());
                } else {
                    level.users.insert(Arc::from(u.as_str()), cap.clone());
                }
            }
            for g in &l.groups {
                if g == WILDCARD {
                    level.group_wildcard = Some(cap.clone());
                } else if !level.groups.iter().any(|(n, _)| &**n == g.as_str()) {
                    level.groups.push((Arc::from(g.as_str()), cap.clone()));
                }
            }
        }
        self.levels.insert(id, level);
        Ok(())
    }

    /// Whether any limit is configured (the one branch the pass pays when
    /// none is).
    pub fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }

    /// Group resolution (limits.md 2.3) for an application in leaf `leaf`
    /// run by a user with `groups`: the first configured group (config
    /// order) among the user's groups at the leaf, else the wildcard group
    /// there, else the same one level up; `None` when nothing matches. Only
    /// the first [`MAX_USER_GROUPS`] of the user's groups are read.
    pub fn resolve_group(
        &self,
        tree: &QueueTree,
        leaf: QueueId,
        groups: &[String],
    ) -> Option<Arc<str>> {
        if groups.is_empty() {
            return None;
        }
        // One set of the user's groups, read at most MAX_USER_GROUPS deep:
        // each level then costs its configured groups, not their product.
        let mine: std::collections::HashSet<&str> = groups
            .iter()
            .take(MAX_USER_GROUPS)
            .map(String::as_str)
            .collect();
        let mut cur = Some(leaf);
        while let Some(q) = cur {
            if let Some(level) = self.levels.get(&q) {
                if let Some((g, _)) = level.groups.iter().find(|(g, _)| mine.contains(&**g)) {
                    return Some(g.clone());
                }
                if level.group_wildcard.is_some() {
                    return Some(Arc::from(WILDCARD));
                }
            }
            cur = tree.get(q).parent;
        }
        None
    }

    /// Whether group `g` still has a cap somewhere on `path` (a reload keeps
    /// such a link; others are resolved again).
    pub fn group_on_path(&self, path: &[QueueId], g: &str) -> bool {
        path.iter()
            .filter_map(|q| self.levels.get(q))
            .any(|l| l.group(g).is_some())
    }
}
