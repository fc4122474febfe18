//! Placement rules (spec 5.2–5.5).
//!
//! A [`PlacementManager`] is built from the partition's configured rules and
//! turns an application's requested queue, user and tags into a queue path.
//! It only reads the queue tree through [`QueueView`]; creating the placed
//! queue (5.6) and the no-rules case (5.1) belong to the core.

use std::collections::{BTreeMap, HashSet};
use std::sync::OnceLock;

use regex::Regex;

use crate::config::{FilterConfig, PlacementRuleConfig};
use crate::security::{is_valid_group_name, is_valid_user_name, UserGroup};

/// Name of the root queue.
const ROOT: &str = "root";
/// Prefix of a fully qualified queue path.
const ROOT_DOT: &str = "root.";
/// Replacement for `.` in generated (unqualified) queue names.
pub const DOT_REPLACEMENT: &str = "_dot_";

/// What placement needs to know about the live queue tree.
pub trait QueueView {
    /// `Some(true)` for an existing leaf, `Some(false)` for an existing parent,
    /// `None` if absent. Paths are full dotted paths; compare case-insensitively.
    fn is_leaf(&self, path: &str) -> Option<bool>;
    /// Submit access (union of submit and admin ACLs from this queue up to
    /// root) on an existing queue.
    fn can_submit(&self, path: &str, user: &UserGroup) -> bool;
}

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
struct NameMatcher {
    names: HashSet<String>,
    exp: Option<Regex>,
}

impl NameMatcher {
    fn new(list: &[String], valid: fn(&str) -> bool) -> NameMatcher {
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

    fn matches(&self, name: &str) -> bool {
        self.names.contains(name) || self.exp.as_ref().is_some_and(|e| e.is_match(name))
    }
}

/// A user/group filter (spec 5.5).
#[derive(Debug, Clone)]
struct Filter {
    allow: bool,
    /// No users and no groups configured.
    empty: bool,
    users: NameMatcher,
    groups: NameMatcher,
}

impl Filter {
    fn new(conf: &FilterConfig) -> Filter {
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

    fn allows(&self, user: &UserGroup) -> bool {
        if self.empty {
            return self.allow;
        }
        if self.users.matches(&user.user) || user.groups.iter().any(|g| self.groups.matches(g)) {
            return self.allow;
        }
        !self.allow
    }
}

#[derive(Debug, Clone)]
enum RuleKind {
    Provided,
    User,
    Fixed { queue: String, qualified: bool },
    Tag { tag: String },
    Test,
}

/// One built placement rule.
#[derive(Debug, Clone)]
struct Rule {
    kind: RuleKind,
    create: bool,
    filter: Filter,
    parent: Option<Box<Rule>>,
}

/// Everything a rule looks at while placing one application.
struct Ctx<'a> {
    requested_queue: &'a str,
    user: &'a UserGroup,
    tags: &'a BTreeMap<String, String>,
    view: &'a dyn QueueView,
}

fn replace_dot(name: &str) -> String {
    name.replace('.', DOT_REPLACEMENT)
}

impl Rule {
    fn build(conf: &PlacementRuleConfig) -> Result<Rule, String> {
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

    /// Runs the parent rule (if any) and returns the qualified parent path,
    /// `None` for "no match". Without a parent rule the parent is `root`.
    fn parent_path(&self, ctx: &Ctx) -> Result<Option<String>, String> {
        let Some(parent) = &self.parent else {
            return Ok(Some(ROOT.to_string()));
        };
        let Some(mut path) = parent.place(ctx)? else {
            return Ok(None);
        };
        if !path.starts_with(ROOT_DOT) {
            path = format!("{ROOT_DOT}{path}");
        }
        // Applications can only live in leaves, so a leaf cannot be extended.
        if ctx.view.is_leaf(&path) == Some(true) {
            return Err(format!("parent rule returned a leaf queue: {path}"));
        }
        Ok(Some(path))
    }

    /// Builds `<parent>.<name>` for an unqualified name, or `None` if the
    /// parent rule did not match.
    fn under_parent(&self, ctx: &Ctx, name: &str) -> Result<Option<String>, String> {
        Ok(self
            .parent_path(ctx)?
            .map(|parent| format!("{parent}.{name}")))
    }

    /// Candidate queue path, `None` for "no match", `Err` aborts placement.
    fn place(&self, ctx: &Ctx) -> Result<Option<String>, String> {
        let candidate = match &self.kind {
            RuleKind::Provided => {
                let queue = ctx.requested_queue;
                if queue.is_empty() || !self.filter.allows(ctx.user) {
                    return Ok(None);
                }
                if queue.starts_with(ROOT_DOT) {
                    Some(queue.to_string())
                } else {
                    self.under_parent(ctx, &replace_dot(queue))?
                }
            }
            RuleKind::User => {
                if !self.filter.allows(ctx.user) {
                    return Ok(None);
                }
                self.under_parent(ctx, &replace_dot(&ctx.user.user))?
            }
            RuleKind::Fixed { queue, qualified } => {
                if !self.filter.allows(ctx.user) {
                    return Ok(None);
                }
                if *qualified {
                    Some(queue.clone())
                } else {
                    // A configured value's dots are hierarchy separators, as in
                    // the reference: only generated names are dot-replaced.
                    self.under_parent(ctx, queue)?
                }
            }
            RuleKind::Tag { tag } => {
                let value = ctx
                    .tags
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(tag))
                    .map(|(_, v)| v.as_str())
                    .unwrap_or("");
                // The tag must be present before the filter is consulted.
                if value.is_empty() || !self.filter.allows(ctx.user) {
                    return Ok(None);
                }
                if value.starts_with(ROOT_DOT) {
                    Some(value.to_string())
                } else {
                    self.under_parent(ctx, &replace_dot(value))?
                }
            }
            RuleKind::Test => {
                // Testing aid: no filter, parent or create handling.
                let queue = ctx.requested_queue;
                return Ok(Some(if queue.is_empty() {
                    "test".to_string()
                } else {
                    replace_dot(queue)
                }));
            }
        };
        let Some(path) = candidate else {
            return Ok(None);
        };
        if !self.create && ctx.view.is_leaf(&path).is_none() {
            return Ok(None);
        }
        Ok(Some(path))
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

/// The ordered placement rules of one partition.
#[derive(Debug, Clone, Default)]
pub struct PlacementManager {
    rules: Vec<Rule>,
}

impl PlacementManager {
    /// Builds the rules from config. Errors as spec 2.7: unknown rule name,
    /// `fixed`/`tag` without value, qualified `fixed` value with a parent rule.
    pub fn new(rules: &[PlacementRuleConfig]) -> Result<PlacementManager, String> {
        let rules = rules.iter().map(Rule::build).collect::<Result<_, _>>()?;
        Ok(PlacementManager { rules })
    }

    /// True when no rules are configured (the core then uses 5.1).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Number of top-level rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Places an application (spec 5.2). Returns the lower-cased full queue
    /// path, or the rejection reason (`failed to place application <app>:
    /// <err>`). Tag keys are matched case-insensitively.
    pub fn place(
        &self,
        app_id: &str,
        requested_queue: &str,
        user: &UserGroup,
        tags: &BTreeMap<String, String>,
        view: &dyn QueueView,
    ) -> Result<String, String> {
        let ctx = Ctx {
            requested_queue,
            user,
            tags,
            view,
        };
        for rule in &self.rules {
            let candidate = rule
                .place(&ctx)
                .map_err(|e| format!("failed to place application {app_id}: {e}"))?;
            let Some(path) = candidate else { continue };
            let path = path.to_lowercase();
            let accessible = match view.is_leaf(&path) {
                // Applications cannot be placed in a parent queue.
                Some(false) => false,
                Some(true) => view.can_submit(&path, user),
                // The queue will be created: access is decided on the deepest
                // existing ancestor. Without any existing ancestor (a path not
                // under root) the rule cannot be satisfied.
                None => deepest_existing_ancestor(&path, view)
                    .is_some_and(|anc| view.can_submit(anc, user)),
            };
            if accessible {
                return Ok(path);
            }
        }
        Err(format!(
            "failed to place application {app_id}: application rejected: no placment rule matched"
        ))
    }
}

fn deepest_existing_ancestor<'p>(path: &'p str, view: &dyn QueueView) -> Option<&'p str> {
    let mut current = path;
    while let Some(idx) = current.rfind('.') {
        current = &current[..idx];
        if view.is_leaf(current).is_some() {
            return Some(current);
        }
    }
    None
}

#[cfg(test)]
mod tests;
