//! Configuration: the v0.12 `queues.yaml` schema, validation, checksum and loading.
//!
//! [`parse`] is the single entry point for configuration text: a strict YAML
//! parse followed by the normalisation and validation of spec 2.3/2.4 and the
//! placement rule build checks of 2.7. [`load`] finds the text for a policy
//! group (spec 1.3) and parses it.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::security::{is_valid_group_name, is_valid_user_name, Acl};
pub use load::{
    check_policy_group, from_text, from_text_with, load, load_with, read, LoadedConfig,
    SOURCE_EMBEDDED_DEFAULT, SOURCE_IN_MEMORY,
};
pub use quantity::QuantityGrammar;

pub mod bounds;
mod de;
pub mod limits;
mod load;
pub(crate) mod placement;
pub mod quantity;
#[cfg(test)]
mod tests;

/// Name of the default partition.
pub const DEFAULT_PARTITION: &str = "default";
/// Name of the root queue.
pub const ROOT_QUEUE: &str = "root";
/// Default directory searched for `<policyGroup>.yaml`.
pub const DEFAULT_CONFIG_DIR: &str = "/etc/yunikorn";
/// Node sort policy used when none is configured.
pub const DEFAULT_NODE_SORT_POLICY: &str = "fair";
/// Pattern for configured and dynamic queue names (spec 3.1).
pub const QUEUE_NAME_PATTERN: &str = r"^[a-zA-Z0-9_-]{1,64}$";
/// Pattern for placement rule names (spec 2.4).
pub const RULE_NAME_PATTERN: &str = r"^[_a-zA-Z][a-zA-Z0-9_]*$";

/// The configuration used when no file exists for a policy group: one
/// `default` partition, root open to everyone, and a `provided` rule that
/// creates the requested queue.
pub const DEFAULT_CONFIG: &str = r#"partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: "*"
"#;

/// The SI v1.x edition's built-in configuration, used when a registering
/// RM sends an empty `config`: one `default` partition, root open to
/// everyone, and a `tag` rule on `namespace` that creates the queue (as the
/// YuniKorn v1.x core's default).
pub const DEFAULT_CONFIG_V1: &str = r#"partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: "*"
"#;

fn queue_name_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(QUEUE_NAME_PATTERN).expect("static pattern"))
}

fn rule_name_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(RULE_NAME_PATTERN).expect("static pattern"))
}

/// Whether `name` is a valid queue name (one path segment).
pub fn is_valid_queue_name(name: &str) -> bool {
    queue_name_regex().is_match(name)
}

/// A parsed, normalised and validated configuration.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct SchedulerConfig {
    /// Partitions in file order.
    pub partitions: Vec<PartitionConfig>,
    /// SHA-256 of the text (spec 2.6), 64 upper-case hex digits.
    pub checksum: String,
}

/// One partition.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionConfig {
    /// Normalised: empty or any-case `default` becomes `default`.
    #[serde(default)]
    pub name: String,
    /// After normalisation exactly one element: the root queue, named `root`.
    #[serde(default)]
    pub queues: Vec<QueueConfig>,
    /// Placement rules, in evaluation order.
    #[serde(default, rename = "placementrules")]
    pub placement_rules: Vec<PlacementRuleConfig>,
    /// User/group limits (validated, not enforced in v0.12).
    #[serde(default)]
    pub limits: Vec<LimitConfig>,
    /// Preemption switch (stored, no effect in v0.12).
    #[serde(default)]
    pub preemption: PreemptionConfig,
    /// Node ordering. Normalised: empty type becomes `fair`, empty weights
    /// become `{memory: 1, vcore: 1}`.
    #[serde(default, rename = "nodesortpolicy")]
    pub node_sort_policy: NodeSortPolicyConfig,
}

/// Preemption settings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreemptionConfig {
    /// Whether guarantee preemption is enabled; `None` when the key is
    /// absent (off in the v0.12 edition, on in the v1.8 edition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Whether quota-change preemption is enabled (SI v1.x's
    /// `quotapreemptionenabled`; absent = off in both editions).
    #[serde(
        default,
        rename = "quotapreemptionenabled",
        skip_serializing_if = "Option::is_none"
    )]
    pub quota_enabled: Option<bool>,
}

/// Node sort policy settings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSortPolicyConfig {
    /// `fair` or `binpacking`.
    #[serde(default, rename = "type")]
    pub policy_type: String,
    /// Resource name to non-negative weight.
    #[serde(default, rename = "resourceweights")]
    pub resource_weights: BTreeMap<String, f64>,
}

/// One queue of the tree.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    /// Queue name, stored lower-case.
    #[serde(default)]
    pub name: String,
    /// Force a parent queue even without children.
    #[serde(default)]
    pub parent: bool,
    /// Guaranteed and max resources.
    #[serde(default)]
    pub resources: ResourcesConfig,
    /// Parsed, not enforced in v0.12.
    #[serde(default, rename = "maxapplications")]
    pub max_applications: u64,
    /// Queue properties (scalar values are taken as their text).
    #[serde(default, deserialize_with = "de::string_map")]
    pub properties: BTreeMap<String, String>,
    /// Admin ACL text.
    #[serde(default, rename = "adminacl")]
    pub admin_acl: String,
    /// Submit ACL text.
    #[serde(default, rename = "submitacl")]
    pub submit_acl: String,
    /// Template for dynamically created children.
    #[serde(default, rename = "childtemplate")]
    pub child_template: Option<ChildTemplateConfig>,
    /// Child queues.
    #[serde(default)]
    pub queues: Vec<QueueConfig>,
    /// User/group limits (validated, not enforced in v0.12).
    #[serde(default)]
    pub limits: Vec<LimitConfig>,
}

/// Guaranteed and max resources; `None` when the key is absent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourcesConfig {
    /// Guaranteed quantities.
    #[serde(default, deserialize_with = "de::opt_quantities")]
    pub guaranteed: Option<BTreeMap<String, i64>>,
    /// Maximum quantities.
    #[serde(default, deserialize_with = "de::opt_quantities")]
    pub max: Option<BTreeMap<String, i64>>,
}

/// Template applied to dynamic children of a parent queue (spec 3.2).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChildTemplateConfig {
    /// `maxapplications` of the dynamic leaves created from the template
    /// (0 = none).
    #[serde(default, rename = "maxapplications")]
    pub max_applications: u64,
    /// Properties for the dynamic children.
    #[serde(default, deserialize_with = "de::string_map")]
    pub properties: BTreeMap<String, String>,
    /// Resources for the dynamic children.
    #[serde(default)]
    pub resources: ResourcesConfig,
}

/// One placement rule.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlacementRuleConfig {
    /// `provided`, `user`, `fixed`, `tag` or `test` (any case).
    #[serde(default)]
    pub name: String,
    /// Whether the rule may create the queue it names.
    #[serde(default)]
    pub create: bool,
    /// User/group filter; the default allows everyone.
    #[serde(default)]
    pub filter: FilterConfig,
    /// Rule producing the parent queue.
    #[serde(default)]
    pub parent: Option<Box<PlacementRuleConfig>>,
    /// Queue name for `fixed`, tag name for `tag`.
    #[serde(default)]
    pub value: String,
}

/// A placement rule filter.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterConfig {
    /// `""`, `allow` or `deny` (any case).
    #[serde(default, rename = "type")]
    pub filter_type: String,
    /// User names, or a single regexp.
    #[serde(default)]
    pub users: Vec<String>,
    /// Group names, or a single regexp.
    #[serde(default)]
    pub groups: Vec<String>,
}

/// A user/group limit.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitConfig {
    /// Free-text description.
    #[serde(default)]
    pub limit: String,
    /// User names or `*`.
    #[serde(default)]
    pub users: Vec<String>,
    /// Group names or `*`.
    #[serde(default)]
    pub groups: Vec<String>,
    /// Resource cap.
    #[serde(default, rename = "maxresources", deserialize_with = "de::quantities")]
    pub max_resources: BTreeMap<String, i64>,
    /// Application cap.
    #[serde(default, rename = "maxapplications")]
    pub max_applications: u64,
}

/// The file as read: the queue list is optional here so that an absent list
/// can be told apart from an empty one (spec 2.3).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    partitions: Vec<RawPartition>,
    /// Ignored on input, always recomputed.
    #[serde(default)]
    #[allow(dead_code)]
    checksum: Option<serde_yaml_ng::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPartition {
    #[serde(default)]
    name: String,
    #[serde(default)]
    queues: Option<Vec<QueueConfig>>,
    #[serde(default)]
    placementrules: Vec<PlacementRuleConfig>,
    #[serde(default)]
    limits: Vec<LimitConfig>,
    #[serde(default)]
    preemption: PreemptionConfig,
    #[serde(default)]
    nodesortpolicy: NodeSortPolicyConfig,
}

/// A configuration that could not be read, parsed or validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The user-facing reason.
    pub message: String,
}

impl ConfigError {
    fn new(message: impl Into<String>) -> ConfigError {
        ConfigError {
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

impl From<String> for ConfigError {
    fn from(message: String) -> ConfigError {
        ConfigError { message }
    }
}

/// Formats a resource map for messages, e.g. `map[memory:10 vcore:2]`.
pub fn format_resource(res: &BTreeMap<String, i64>) -> String {
    let parts: Vec<String> = res.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    format!("map[{}]", parts.join(" "))
}

/// Formats a name list for messages, e.g. `[alice bob]`.
fn format_list(list: &[String]) -> String {
    format!("[{}]", list.join(" "))
}

/// Computes the configuration checksum (spec 2.6): SHA-256 over the text with
/// the checksum entry removed, as 64 upper-case hex digits.
pub fn checksum(text: &str) -> String {
    let stripped = strip_checksum(text.as_bytes());
    let digest = Sha256::digest(&stripped);
    digest.iter().map(|b| format!("{b:02X}")).collect()
}

/// Removes the `checksum: <value>` entry. Works on bytes because the cut at
/// 74 bytes may fall inside a multi-byte character, as it does upstream.
fn strip_checksum(text: &[u8]) -> Vec<u8> {
    const MARKER: &[u8] = b"checksum: ";
    const MAX_LEN: usize = MARKER.len() + 64;
    let Some(start) = find(text, MARKER, 0) else {
        return text.to_vec();
    };
    let mut entry = text[start..].to_vec();
    while entry.last() == Some(&b'\n') {
        entry.pop();
    }
    entry.truncate(MAX_LEN);
    let mut out = Vec::with_capacity(text.len());
    let mut pos = 0;
    while let Some(at) = find(text, &entry, pos) {
        out.extend_from_slice(&text[pos..at]);
        pos = at + entry.len();
    }
    out.extend_from_slice(&text[pos..]);
    out
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if needle.is_empty() || from > haystack.len() {
        return None;
    }
    haystack[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Strict parse, normalisation and validation of configuration text.
///
/// Beyond the reference validator this also rejects: placement rules that
/// cannot be built (spec 2.7), ACLs with more than one separating space, and a
/// configuration without partitions. Child template quantities are checked by
/// the strict quantity parse. The checksum (2.6) is computed from `text`.
pub fn parse(text: &str) -> Result<SchedulerConfig, ConfigError> {
    parse_with(text, QuantityGrammar::Integer)
}

/// [`parse`] with the quantities written in `grammar`: the SI v1 edition
/// reads them as YuniKorn v1.x does ([`QuantityGrammar::Units`]).
pub fn parse_with(text: &str, grammar: QuantityGrammar) -> Result<SchedulerConfig, ConfigError> {
    let failed =
        |e: serde_yaml_ng::Error| ConfigError::new(format!("failed to parse configuration: {e}"));
    bounds::check_nesting(text).map_err(ConfigError::new)?;
    let raw: RawConfig = match grammar {
        QuantityGrammar::Integer => serde_yaml_ng::from_str(text).map_err(failed)?,
        QuantityGrammar::Units => {
            let mut tree: serde_yaml_ng::Value = serde_yaml_ng::from_str(text).map_err(failed)?;
            quantity::rewrite_units(&mut tree).map_err(ConfigError::new)?;
            serde_yaml_ng::from_value(tree).map_err(failed)?
        }
    };
    if raw.partitions.is_empty() {
        return Err(ConfigError::new("configuration has no partitions defined"));
    }
    let mut seen = HashSet::new();
    let mut partitions = Vec::with_capacity(raw.partitions.len());
    for raw_partition in raw.partitions {
        let partition = validate_partition(raw_partition, &mut seen)?;
        partitions.push(partition);
    }
    Ok(SchedulerConfig {
        partitions,
        checksum: checksum(text),
    })
}

fn validate_partition(
    raw: RawPartition,
    seen: &mut HashSet<String>,
) -> Result<PartitionConfig, ConfigError> {
    // 1. name
    let name = if raw.name.is_empty() || raw.name.eq_ignore_ascii_case(DEFAULT_PARTITION) {
        DEFAULT_PARTITION.to_string()
    } else {
        raw.name
    };
    // An RM names an already normalised partition as `[rmID]name`, so a
    // configured name starting with `[` could never be reached.
    if name.starts_with('[') {
        return Err(ConfigError::new(format!(
            "partition name {name} must not start with '[' (reserved for the [rmID] prefix)"
        )));
    }
    if !seen.insert(name.to_lowercase()) {
        return Err(ConfigError::new(format!(
            "duplicate partition name found with name {name}"
        )));
    }
    // 2. queue structure
    let Some(queues) = raw.queues else {
        return Err(ConfigError::new("queue config is not set"));
    };
    let mut root = match <[QueueConfig; 1]>::try_from(queues) {
        Ok([q]) if q.name.eq_ignore_ascii_case(ROOT_QUEUE) => q,
        Ok([q]) => synthetic_root(vec![q]),
        Err(queues) => synthetic_root(queues),
    };
    root.name = ROOT_QUEUE.to_string();
    root.parent = true;
    if root.resources.guaranteed.is_some() || root.resources.max.is_some() {
        return Err(ConfigError::new(
            "root queue must not have resource limits set",
        ));
    }
    limits::fold_partition_limits(&raw.limits, &mut root)?;
    check_queue_structure(&root, 1)?;
    // 3. resources
    check_queue_resources(&root, None)?;
    // 4. placement rules
    for rule in &raw.placementrules {
        check_rule(rule)?;
    }
    placement::build_rules(&raw.placementrules).map_err(ConfigError::new)?;
    // 5. partition limits: folded into root's and checked with them
    // (limits.md 1.2).
    // 6. node sort policy
    let mut policy = raw.nodesortpolicy;
    match policy.policy_type.as_str() {
        "" | "fair" | "binpacking" => {}
        other => return Err(ConfigError::new(format!("undefined policy: {other}"))),
    }
    if let Some((name, _)) = policy.resource_weights.iter().find(|(_, w)| **w < 0.0) {
        return Err(ConfigError::new(format!(
            "negative resource weight for {name} is not allowed"
        )));
    }
    // 7. user/group limits against their ancestors' (v1.8, limits.md 1.3)
    limits::check_limit_hierarchy(&root)?;
    if policy.policy_type.is_empty() {
        policy.policy_type = DEFAULT_NODE_SORT_POLICY.to_string();
    }
    if policy.resource_weights.is_empty() {
        policy.resource_weights = default_resource_weights();
    }
    lowercase_names(&mut root);
    Ok(PartitionConfig {
        name,
        queues: vec![root],
        placement_rules: raw.placementrules,
        limits: raw.limits,
        preemption: raw.preemption,
        node_sort_policy: policy,
    })
}

/// The node resource weights used when none are configured.
pub fn default_resource_weights() -> BTreeMap<String, f64> {
    BTreeMap::from([("memory".to_string(), 1.0), ("vcore".to_string(), 1.0)])
}

fn synthetic_root(children: Vec<QueueConfig>) -> QueueConfig {
    QueueConfig {
        name: ROOT_QUEUE.to_string(),
        parent: true,
        queues: children,
        ..QueueConfig::default()
    }
}

fn lowercase_names(queue: &mut QueueConfig) {
    queue.name = queue.name.to_lowercase();
    for child in &mut queue.queues {
        lowercase_names(child);
    }
}

fn check_acl(acl: &str) -> Result<(), ConfigError> {
    // Validation uses the same single-space split as queue creation, so a
    // double space is caught here rather than when the queue is created.
    Acl::parse(acl).map(|_| ()).map_err(ConfigError::new)
}

fn check_queue_structure(queue: &QueueConfig, level: usize) -> Result<(), ConfigError> {
    // The deserializer's depth limit keeps this recursion short; the
    // explicit bound is the one dynamic queues get too.
    bounds::check_queue_level(&queue.name, level).map_err(ConfigError::new)?;
    check_acl(&queue.admin_acl)?;
    check_acl(&queue.submit_acl)?;
    limits::check_queue_limits(queue, level == 1)?;
    let mut names = HashSet::new();
    for child in &queue.queues {
        if !is_valid_queue_name(&child.name) {
            return Err(ConfigError::new(format!(
                "invalid child name {}, a name must only have alphanumeric characters, - or _, and be no longer than 64 characters",
                child.name
            )));
        }
        if !names.insert(child.name.to_lowercase()) {
            return Err(ConfigError::new(format!(
                "duplicate child name found with name {}, level {level}",
                child.name
            )));
        }
    }
    for child in &queue.queues {
        check_queue_structure(child, level + 1)?;
    }
    Ok(())
}

type Res = BTreeMap<String, i64>;

/// `small` fits in `large`; types missing from `large` are unlimited.
fn fits_max_undefined(small: &Res, large: &Res) -> bool {
    small
        .iter()
        .all(|(k, v)| large.get(k).is_none_or(|limit| v <= limit))
}

/// `small` fits in `large`; types missing from `large` count as zero.
fn fits_missing_zero(small: &Res, large: &Res) -> bool {
    small
        .iter()
        .all(|(k, v)| *v <= large.get(k).copied().unwrap_or(0))
}

fn is_zero(res: &Res) -> bool {
    res.values().all(|v| *v == 0)
}

/// Per-type minimum; a type present in only one side keeps its value.
fn min_permissive(a: &Res, b: &Res) -> Res {
    let mut out = a.clone();
    for (k, v) in b {
        out.entry(k.clone())
            .and_modify(|cur| *cur = (*cur).min(*v))
            .or_insert(*v);
    }
    out
}

/// Checks the resources of `queue` and its subtree (spec 2.4, queue resources)
/// and returns the queue's reported guarantee.
fn check_queue_resources(
    queue: &QueueConfig,
    parent_max: Option<&Res>,
) -> Result<Res, ConfigError> {
    let empty = Res::new();
    let guaranteed = queue.resources.guaranteed.clone().unwrap_or_default();
    let max = queue.resources.max.clone().unwrap_or_default();
    let parent_max = parent_max.unwrap_or(&empty);
    if !fits_max_undefined(&guaranteed, &max) {
        return Err(ConfigError::new(format!(
            "guaranteed resource {} is larger than maximum resource {} for queue {}",
            format_resource(&guaranteed),
            format_resource(&max),
            queue.name
        )));
    }
    if !fits_max_undefined(&max, parent_max) {
        return Err(ConfigError::new(format!(
            "max resource of parent {} is smaller than maximum resource {} for queue {}",
            format_resource(parent_max),
            format_resource(&max),
            queue.name
        )));
    }
    let effective_max = min_permissive(&max, parent_max);
    let mut sum = Res::new();
    for child in &queue.queues {
        for (k, v) in check_queue_resources(child, Some(&effective_max))? {
            let total = sum.entry(k.clone()).or_insert(0);
            *total = total.checked_add(v).ok_or_else(|| {
                ConfigError::new(format!(
                    "sum of guaranteed resources of the children of queue {} overflows a 64-bit quantity for resource {}",
                    queue.name, k
                ))
            })?;
        }
    }
    if !is_zero(&guaranteed) && !fits_missing_zero(&sum, &guaranteed) {
        return Err(ConfigError::new(format!(
            "guaranteed resource of parent {} is smaller than sum of guaranteed resources {} of the children for queue {}",
            format_resource(&guaranteed),
            format_resource(&sum),
            queue.name
        )));
    }
    if !fits_max_undefined(&sum, &effective_max) {
        return Err(ConfigError::new(format!(
            "max resource {} is smaller than sum of guaranteed resources {} of the children for queue {}",
            format_resource(&effective_max),
            format_resource(&sum),
            queue.name
        )));
    }
    Ok(if is_zero(&guaranteed) {
        sum
    } else {
        guaranteed
    })
}

fn check_rule(rule: &PlacementRuleConfig) -> Result<(), ConfigError> {
    if !rule_name_regex().is_match(&rule.name) {
        return Err(ConfigError::new(format!(
            "invalid rule name {}, a name must be a valid identifier",
            rule.name
        )));
    }
    let filter = &rule.filter;
    let t = filter.filter_type.to_lowercase();
    if !(t.is_empty() || t == "allow" || t == "deny") {
        return Err(ConfigError::new(format!(
            "invalid rule filter type {}, filter type  must be either '', allow or deny",
            filter.filter_type
        )));
    }
    if !single_filter_entry_ok(&filter.users, is_valid_user_name) {
        return Err(ConfigError::new(format!(
            "invalid rule filter user list is not a proper list or regexp: {}",
            format_list(&filter.users)
        )));
    }
    if !single_filter_entry_ok(&filter.groups, is_valid_group_name) {
        return Err(ConfigError::new(format!(
            "invalid rule filter group list is not a proper list or regexp: {}",
            format_list(&filter.groups)
        )));
    }
    if let Some(parent) = &rule.parent {
        check_rule(parent)?;
    }
    Ok(())
}

/// A single-entry list must be a valid name or a compilable regexp with at
/// least one special character; longer lists are not checked.
fn single_filter_entry_ok(list: &[String], valid: fn(&str) -> bool) -> bool {
    match list {
        [single] => {
            valid(single) || (placement::is_filter_regexp(single) && Regex::new(single).is_ok())
        }
        _ => true,
    }
}
