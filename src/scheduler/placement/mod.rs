//! Placement rules (spec 5.2–5.5).
//!
//! A [`PlacementManager`] is built from the partition's configured rules and
//! turns an application's requested queue, user and tags into a queue path.
//! It only reads the queue tree through [`QueueView`]; creating the placed
//! queue (5.6) and the no-rules case (5.1) belong to the core.

use std::collections::BTreeMap;

use crate::config::placement::{build_rules, Rule, RuleKind, ROOT};
use crate::config::PlacementRuleConfig;
use crate::security::UserGroup;
#[cfg(test)]
use {
    crate::config::{placement::Filter, FilterConfig},
    std::collections::HashSet,
};
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

/// The ordered placement rules of one partition.
#[derive(Debug, Clone, Default)]
pub struct PlacementManager {
    rules: Vec<Rule>,
}

impl PlacementManager {
    /// Builds the rules from config. Errors as spec 2.7: unknown rule name,
    /// `fixed`/`tag` without value, qualified `fixed` value with a parent rule.
    pub fn new(rules: &[PlacementRuleConfig]) -> Result<PlacementManager, String> {
        let rules = build_rules(rules)?;
        Ok(PlacementManager { rules })
    }

    /// True when no rules are configured (the core then uses 5.1).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Number of top-level rules.
    #[cfg(test)]
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
