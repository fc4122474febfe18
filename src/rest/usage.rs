//! The user and group usage endpoints of YuniKorn v1.x
//! (`/ws/v1/partition/{p}/usage/...`): the partition's trackers in the
//! reference's shapes. Unlike the reference, the partition segment selects
//! the partition (trackers are per partition in sicore, limits.md Q1).

use serde_json::Value;

use super::snapshot::PartitionSnap;
use crate::config::limits::{is_limit_group_name, is_limit_user_name};

/// Which usage document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsageQuery {
    /// Every user tracker.
    Users,
    /// One user's tracker.
    User(String),
    /// Every group tracker.
    Groups,
    /// One group's tracker.
    Group(String),
}

/// The reference's message for a user name its pattern refuses.
pub const INVALID_USER_NAME: &str = "Invalid user name";
/// The reference's message for a group name its pattern refuses.
pub const INVALID_GROUP_NAME: &str = "Invalid group name";
/// The reference's message for a user without a tracker.
pub const USER_NOT_FOUND: &str = "User not found";
/// The reference's message for a group without a tracker.
pub const GROUP_NOT_FOUND: &str = "Group not found";

/// An answer that is not a document: HTTP status code and message.
pub type UsageError = (u16, &'static str);

/// Renders one usage document of partition `p`.
pub fn render(p: &PartitionSnap, q: &UsageQuery) -> Result<Value, UsageError> {
    let to = |v: serde_json::Result<Value>| v.map_err(|_| (500, "encoding failed"));
    match q {
        UsageQuery::Users => to(serde_json::to_value(&p.usage.users)),
        UsageQuery::Groups => to(serde_json::to_value(&p.usage.groups)),
        UsageQuery::User(u) => {
            if !is_limit_user_name(u) {
                return Err((400, INVALID_USER_NAME));
            }
            let t = p.usage.users.iter().find(|t| t.user_name == *u);
            to(serde_json::to_value(t.ok_or((404, USER_NOT_FOUND))?))
        }
        UsageQuery::Group(g) => {
            if !is_limit_group_name(g) {
                return Err((400, INVALID_GROUP_NAME));
            }
            let t = p.usage.groups.iter().find(|t| t.group_name == *g);
            to(serde_json::to_value(t.ok_or((404, GROUP_NOT_FOUND))?))
        }
    }
}
