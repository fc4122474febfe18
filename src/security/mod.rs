//! Users, groups and ACLs (spec section 4).
//!
//! * [`resolve_user`] turns the application's UGI into a [`UserGroup`].
//! * [`Acl`] parses an ACL string (`"<users> <groups>"`) and answers whether a
//!   user is allowed by it.
//! * [`any_allows`] is the union check used for the upward walk over a queue
//!   path (the queue tree decides which ACLs to pass in).

use std::collections::BTreeSet;
use std::sync::OnceLock;

use regex::Regex;

/// The "everyone" marker in ACLs and limits.
pub const WILDCARD: &str = "*";

/// Pattern a user name must match (spec 4.1 / 16).
pub const USER_NAME_PATTERN: &str = r"^[_a-zA-Z][a-zA-Z0-9_.@-]*[$]?$";
/// Pattern a group name must match (spec 4.1 / 16).
pub const GROUP_NAME_PATTERN: &str = r"^[_a-zA-Z][a-zA-Z0-9_-]*$";

fn user_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(USER_NAME_PATTERN).expect("static pattern"))
}

fn group_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(GROUP_NAME_PATTERN).expect("static pattern"))
}

/// Whether `s` is a valid user name (used by ACLs, filters and limits).
pub fn is_valid_user_name(s: &str) -> bool {
    user_regex().is_match(s)
}

/// Whether `s` is a valid group name (used by ACLs, filters and limits).
pub fn is_valid_group_name(s: &str) -> bool {
    group_regex().is_match(s)
}

/// A resolved user: the user name and the groups it belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub struct UserGroup {
    /// The user name, never empty once resolved.
    pub user: String,
    /// The groups of the user, in the order supplied.
    pub groups: Vec<String>,
}

impl UserGroup {
    /// Convenience constructor (does not resolve; see [`resolve_user`]).
    pub fn new(user: &str, groups: &[&str]) -> UserGroup {
        UserGroup {
            user: user.to_string(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }
}

/// Converts an application's UGI into a [`UserGroup`] (spec 4.1).
///
/// An empty user is rejected with `empty user cannot resolve`. Supplied groups
/// are used as-is. Without groups the user is a member of exactly one group
/// named like the user, which is what the reference's default resolver does.
///
/// There is deliberately no cache: the reference caches supplied groups per
/// user and returns them to later applications that send no groups, but its
/// cache never expires (a quirk). Using the supplied groups directly keeps each
/// application's identity self-contained and avoids the stale-cache issue.
pub fn resolve_user(user: &str, groups: &[String]) -> Result<UserGroup, String> {
    if user.is_empty() {
        return Err("empty user cannot resolve".to_string());
    }
    let groups = if groups.is_empty() {
        vec![user.to_string()]
    } else {
        groups.to_vec()
    };
    Ok(UserGroup {
        user: user.to_string(),
        groups,
    })
}

/// A parsed access control list (spec 4.2).
///
/// The default value denies everyone, like an empty ACL string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Acl {
    all_allowed: bool,
    users: BTreeSet<String>,
    groups: BTreeSet<String>,
}

impl Acl {
    /// Parses an ACL string: `<user list>` or `<user list> <group list>`,
    /// separated by exactly one space, lists comma separated.
    ///
    /// Fails with `multiple spaces found in ACL: '<acl>'` when the string splits
    /// into more than two parts on single spaces. Invalid names are dropped.
    pub fn parse(text: &str) -> Result<Acl, String> {
        let mut acl = Acl::default();
        if text.trim() == WILDCARD {
            acl.all_allowed = true;
            return Ok(acl);
        }
        // Split on single spaces before any trimming so that a double space is
        // detected as an extra (empty) field.
        let fields: Vec<&str> = text.split(' ').collect();
        if fields.len() > 2 {
            return Err(format!("multiple spaces found in ACL: '{text}'"));
        }
        acl.set_list(fields[0], true);
        if let Some(groups) = fields.get(1) {
            acl.set_list(groups, false);
        }
        Ok(acl)
    }

    fn set_list(&mut self, list: &str, users: bool) {
        // A list that is exactly the wildcard opens the ACL; a wildcard inside a
        // longer list is just an invalid name and is dropped below.
        if list == WILDCARD {
            self.all_allowed = true;
            return;
        }
        for entry in list.split(',') {
            if entry.is_empty() {
                continue;
            }
            if users && is_valid_user_name(entry) {
                self.users.insert(entry.to_string());
            } else if !users && is_valid_group_name(entry) {
                self.groups.insert(entry.to_string());
            }
        }
    }

    /// Whether the ACL grants access to everyone.
    pub fn allows_all(&self) -> bool {
        self.all_allowed
    }

    /// Whether the ACL grants access to `user`: allow-all, the user name is
    /// listed, or one of the user's groups is listed. Matching is exact.
    pub fn allows(&self, user: &UserGroup) -> bool {
        if self.all_allowed {
            return true;
        }
        if self.users.contains(&user.user) {
            return true;
        }
        user.groups.iter().any(|g| self.groups.contains(g))
    }

    /// The user names in the ACL (empty when it allows all).
    pub fn users(&self) -> impl Iterator<Item = &str> {
        self.users.iter().map(String::as_str)
    }

    /// The group names in the ACL (empty when it allows all).
    pub fn groups(&self) -> impl Iterator<Item = &str> {
        self.groups.iter().map(String::as_str)
    }
}

/// True if any of the given ACLs allows `user`; used for the union of submit
/// and admin ACLs from a queue up to root (spec 4.3).
pub fn any_allows<'a>(acls: impl IntoIterator<Item = &'a Acl>, user: &UserGroup) -> bool {
    acls.into_iter().any(|acl| acl.allows(user))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ug(user: &str, groups: &[&str]) -> UserGroup {
        UserGroup::new(user, groups)
    }

    #[test]
    fn resolve_empty_user_fails() {
        assert_eq!(
            resolve_user("", &["g".to_string()]).unwrap_err(),
            "empty user cannot resolve"
        );
    }

    #[test]
    fn resolve_without_groups_uses_user_as_group() {
        let u = resolve_user("alice", &[]).unwrap();
        assert_eq!(u, ug("alice", &["alice"]));
    }

    #[test]
    fn resolve_with_groups_uses_them_as_is() {
        let u = resolve_user("alice", &["dev".to_string(), "ops".to_string()]).unwrap();
        assert_eq!(u, ug("alice", &["dev", "ops"]));
        // No cache: a later call without groups does not see the earlier ones.
        assert_eq!(resolve_user("alice", &[]).unwrap().groups, vec!["alice"]);
    }

    #[test]
    fn user_name_pattern() {
        for ok in [
            "alice", "_a", "john.doe", "bob@corp", "a-b", "machine$", "A1",
        ] {
            assert!(is_valid_user_name(ok), "{ok}");
        }
        for bad in ["", "1abc", ".a", "@a", "-a", "a$b", "a b", "*", "a,b"] {
            assert!(!is_valid_user_name(bad), "{bad}");
        }
    }

    #[test]
    fn group_name_pattern() {
        for ok in ["dev", "_g", "g-1", "G_2"] {
            assert!(is_valid_group_name(ok), "{ok}");
        }
        for bad in ["", "1g", "g.x", "g@x", "g$", "-g", "*"] {
            assert!(!is_valid_group_name(bad), "{bad}");
        }
    }

    /// The table of spec 4.2: (acl, users, groups, allows all).
    #[test]
    fn acl_table() {
        let table: &[(&str, &[&str], &[&str], bool)] = &[
            ("", &[], &[], false),
            ("*", &[], &[], true),
            (" *", &[], &[], true),
            ("* ", &[], &[], true),
            ("alice,bob", &["alice", "bob"], &[], false),
            (
                "alice,bob dev,ops",
                &["alice", "bob"],
                &["dev", "ops"],
                false,
            ),
            (" dev", &[], &["dev"], false),
            ("alice ", &["alice"], &[], false),
            ("alice *", &[], &[], true),
            ("alice,* dev", &["alice"], &["dev"], false),
            // extra rows: empty entries skipped, invalid names dropped
            ("alice,,bob", &["alice", "bob"], &[], false),
            ("1bad,ok dev,g.x", &["ok"], &["dev"], false),
            ("* dev", &[], &[], true),
        ];
        for (text, users, groups, all) in table {
            let acl = Acl::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(acl.allows_all(), *all, "{text:?}");
            if !*all {
                assert_eq!(acl.users().collect::<Vec<_>>(), *users, "{text:?}");
                assert_eq!(acl.groups().collect::<Vec<_>>(), *groups, "{text:?}");
            }
        }
    }

    #[test]
    fn acl_multiple_spaces_rejected() {
        for text in ["alice  dev", "a b c", "  dev", "alice dev "] {
            assert_eq!(
                Acl::parse(text).unwrap_err(),
                format!("multiple spaces found in ACL: '{text}'")
            );
        }
    }

    #[test]
    fn acl_access_checks() {
        let acl = Acl::parse("alice,bob dev").unwrap();
        assert!(acl.allows(&ug("alice", &["x"])));
        assert!(acl.allows(&ug("carol", &["x", "dev"])));
        assert!(!acl.allows(&ug("carol", &["carol"])));
        // case sensitive
        assert!(!acl.allows(&ug("Alice", &["DEV"])));
        // empty ACL denies everyone, default too
        assert!(!Acl::parse("").unwrap().allows(&ug("alice", &["alice"])));
        assert!(!Acl::default().allows(&ug("alice", &["alice"])));
        assert!(Acl::parse("*").unwrap().allows(&ug("anyone", &[])));
        // a user whose group is named like the user matches a group entry
        assert!(Acl::parse(" alice")
            .unwrap()
            .allows(&resolve_user("alice", &[]).unwrap()));
    }

    #[test]
    fn union_of_acls() {
        let deny = Acl::default();
        let admin = Acl::parse("root").unwrap();
        let u = ug("root", &[]);
        assert!(any_allows([&deny, &admin], &u));
        assert!(!any_allows([&deny, &deny], &u));
        assert!(!any_allows(std::iter::empty(), &u));
    }
}
