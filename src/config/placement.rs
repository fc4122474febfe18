//! The validation side of placement rules (spec 2.7, 5.5): building a
//! rule from its configuration checks it, so configuration validation and
//! the scheduler's placement manager share one build and cannot disagree.
//! Placing an application with the built rules is the scheduler's
//! (`scheduler::placement`).

use std::collections::HashSet;
use std::sync::OnceLock;

use regex::Regex;

use super::{FilterConfig, PlacementRuleConfig};
use crate::security::{is_valid_group_name, is_valid_user_name, UserGroup};

/// Name of the root queue.
pub(crate) const ROOT: &str = "root";

/// Characters whose presence turns a single filter entry into a regexp (5.5).
fn special_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"[\^$*+?()\[{}|]").expect("static pattern"))
}

/// Whether a single filter entry is meant as a regular expression.
pub fn is_filter_regexp(entry: &str) -> bool {
    special_regex().is_match(entry)
}

/// One side (users or groups) of a filter.
#[derive(Debug, Clone, Default)]
pub(crate) struct NameMatcher {
    pub(crate) names: HashSet<String>,
    pub(crate) exp: Option<Regex>,
}

impl NameMatcher {
    pub(crate) fn new(list: &[String], valid: fn(&str) -> bool) -> NameMatcher {
        let mut m = NameMatcher::default();
        if let [single] = list {
            if is_filter_regexp(single) {
                // An uncompilable expression only gets here when validation was
                // bypassed; it then matches nothing.
                m.exp = Regex::new(single).ok();
            } else if valid(single) {
                m.names.insert(single.clone());
            }
        } else {
            m.names = list.iter().filter(|n| valid(n)).cloned().collect();
        }
        m
    }

    pub(crate) fn matches(&self, name: &str) -> bool {
        self.names.contains(name) || self.exp.as_ref().is_some_and(|e| e.is_match(name))
    }
}

/// A user/group filter (spec 5.5).
#[derive(Debug, Clone)]
pub struct Filter {
    pub(crate) allow: bool,
    /// No users and no groups configured.
    pub(crate) empty: bool,
    pub(crate) users: NameMatcher,
    pub(crate) groups: NameMatcher,
}

impl Filter {
    pub(crate) fn new(conf: &FilterConfig) -> Filter {
        Filter {
            // Case-insensitive on purpose: the reference compared exactly, so
            // `Deny` silently acted as allow (spec 5.5 quirk).
            allow: !conf.filter_type.eq_ignore_ascii_case("deny"),
            // Decided on the configured lists, so a list whose only entries are
            // invalid matches nobody instead of turning into "everyone".
            empty: conf.users.is_empty() && conf.groups.is_empty(),
            users: NameMatcher::new(&conf.users, is_valid_user_name),
            groups: NameMatcher::new(&conf.groups, is_valid_group_name),
        }
    }

    /// Whether the filter lets `user` through.
    pub fn allows(&self, user: &UserGroup) -> bool {
        if self.empty {
            return self.allow;
        }
        if self.users.matches(&user.user) || user.groups.iter().any(|g| self.groups.matches(g)) {
            return self.allow;
        }
        !self.allow
    }
}

/// What a rule does.
#[derive(Debug, Clone)]
pub enum RuleKind {
    Provided,
    User,
    Fixed { queue: String, qualified: bool },
    Tag { tag: String },
    Test,
}

/// One built placement rule.
#[derive(Debug, Clone)]
pub struct Rule {
    pub(crate) kind: RuleKind,
    pub(crate) create: bool,
    pub(crate) filter: Filter,
    pub(crate) parent: Option<Box<Rule>>,
}

impl Rule {
    /// Builds and checks one rule (and its parent rules).
    pub fn build(conf: &PlacementRuleConfig) -> Result<Rule, String> {
        let kind = match conf.name.to_lowercase().as_str() {
            "provided" => RuleKind::Provided,
            "user" => RuleKind::User,
            "fixed" => {
                let queue = conf.value.to_lowercase();
                if queue.is_empty() {
                    return Err("a fixed queue rule must have a queue name set".to_string());
                }
                // The reference tests the prefix `root` (not `root.`): keep it.
                let qualified = queue.starts_with(ROOT);
                if qualified && conf.parent.is_some() {
                    return Err(format!(
                        "cannot have a fixed queue rule with qualified queue getName and a parent rule: {}",
                        describe_rule(conf)
                    ));
                }
                RuleKind::Fixed { queue, qualified }
            }
            "tag" => {
                let tag = conf.value.to_lowercase();
                if tag.is_empty() {
                    return Err("a tag queue rule must have a tag name set".to_string());
                }
                RuleKind::Tag { tag }
            }
            "test" => RuleKind::Test,
            _ => {
                return Err(format!(
                    "unknown rule name specified {}, failing placement rule config",
                    conf.name
                ))
            }
        };
        let parent = match &conf.parent {
            Some(p) => Some(Box::new(Rule::build(p)?)),
            None => None,
        };
        Ok(Rule {
            kind,
            create: conf.create,
            filter: Filter::new(&conf.filter),
            parent,
        })
    }
}

/// Short, stable text of a rule config for error messages.
fn describe_rule(conf: &PlacementRuleConfig) -> String {
    let mut s = format!(
        "{{name: {}, create: {}, value: {}",
        conf.name, conf.create, conf.value
    );
    if let Some(p) = &conf.parent {
        s.push_str(&format!(", parent: {}", describe_rule(p)));
    }
    s.push('}');
    s
}

/// Builds every rule of a partition, in order; the first rule that cannot
/// be built is the error (spec 2.7).
pub fn build_rules(rules: &[PlacementRuleConfig]) -> Result<Vec<Rule>, String> {
    rules.iter().map(Rule::build).collect()
}
