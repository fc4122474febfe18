//! TEMPORARY STUB — replaced by the full implementation from branch config-work.
#![allow(missing_docs)]
use std::collections::{BTreeMap, HashMap};
use std::fmt;

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SchedulerConfig { #[serde(default)] pub partitions: Vec<PartitionConfig>, #[serde(default)] pub checksum: String }
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PartitionConfig {
    #[serde(default)] pub name: String,
    #[serde(default)] pub queues: Vec<QueueConfig>,
    #[serde(default, rename = "placementrules")] pub placement_rules: Vec<PlacementRuleConfig>,
    #[serde(default)] pub limits: Vec<LimitConfig>,
    #[serde(default)] pub preemption: PreemptionConfig,
    #[serde(default, rename = "nodesortpolicy")] pub node_sort_policy: NodeSortPolicyConfig,
}
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PreemptionConfig { #[serde(default)] pub enabled: bool }
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NodeSortPolicyConfig { #[serde(default, rename = "type")] pub policy_type: String, #[serde(default, rename = "resourceweights")] pub resource_weights: BTreeMap<String, f64> }
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct QueueConfig {
    pub name: String, #[serde(default)] pub parent: bool, #[serde(default)] pub resources: ResourcesConfig,
    #[serde(default, rename = "maxapplications")] pub max_applications: u64,
    #[serde(default)] pub properties: BTreeMap<String, String>,
    #[serde(default, rename = "adminacl")] pub admin_acl: String, #[serde(default, rename = "submitacl")] pub submit_acl: String,
    #[serde(default, rename = "childtemplate")] pub child_template: Option<ChildTemplateConfig>,
    #[serde(default)] pub queues: Vec<QueueConfig>, #[serde(default)] pub limits: Vec<LimitConfig>,
}
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ResourcesConfig { #[serde(default)] pub guaranteed: Option<BTreeMap<String, i64>>, #[serde(default)] pub max: Option<BTreeMap<String, i64>> }
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChildTemplateConfig { #[serde(default, rename = "maxapplications")] pub max_applications: u64, #[serde(default)] pub properties: BTreeMap<String, String>, #[serde(default)] pub resources: ResourcesConfig }
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PlacementRuleConfig { pub name: String, #[serde(default)] pub create: bool, #[serde(default)] pub filter: FilterConfig, #[serde(default)] pub parent: Option<Box<PlacementRuleConfig>>, #[serde(default)] pub value: String }
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FilterConfig { #[serde(default, rename = "type")] pub filter_type: String, #[serde(default)] pub users: Vec<String>, #[serde(default)] pub groups: Vec<String> }
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LimitConfig { #[serde(default)] pub limit: String, #[serde(default)] pub users: Vec<String>, #[serde(default)] pub groups: Vec<String>, #[serde(default, rename = "maxresources")] pub max_resources: BTreeMap<String, i64>, #[serde(default, rename = "maxapplications")] pub max_applications: u64 }

#[derive(Debug, Clone)]
pub struct ConfigError(pub String);
impl fmt::Display for ConfigError { fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(&self.0) } }
impl std::error::Error for ConfigError {}

pub const DEFAULT_CONFIG: &str = "partitions:\n  - name: default\n    placementrules:\n      - name: provided\n        create: true\n    queues:\n      - name: root\n        submitacl: \"*\"\n";

pub fn checksum(_text: &str) -> String { String::new() }

pub fn parse(text: &str) -> Result<SchedulerConfig, ConfigError> {
    let mut c: SchedulerConfig = serde_yaml_ng::from_str(text).map_err(|e| ConfigError(e.to_string()))?;
    if c.partitions.is_empty() { return Err(ConfigError("no partitions".into())); }
    for p in &mut c.partitions {
        if p.name.is_empty() || p.name.eq_ignore_ascii_case("default") { p.name = "default".into(); }
        if p.queues.len() != 1 || !p.queues[0].name.eq_ignore_ascii_case("root") {
            let children = std::mem::take(&mut p.queues);
            p.queues = vec![QueueConfig { name: "root".into(), parent: true, queues: children, ..Default::default() }];
        }
        p.queues[0].name = "root".into();
    }
    c.checksum = checksum(text);
    Ok(c)
}

pub struct LoadedConfig { pub config: SchedulerConfig, pub text: String, pub source: String }

pub fn load(policy_group: &str, config_dir: &str, policy_configs: &HashMap<String, String>) -> Result<LoadedConfig, ConfigError> {
    let (text, source) = if let Some(t) = policy_configs.get(policy_group) { (t.clone(), "in-memory".to_string()) }
        else if !config_dir.is_empty() { let p = format!("{config_dir}/{policy_group}.yaml"); (std::fs::read_to_string(&p).map_err(|e| ConfigError(format!("{p}: {e}")))?, p) }
        else { (DEFAULT_CONFIG.to_string(), "embedded default".to_string()) };
    Ok(LoadedConfig { config: parse(&text)?, text, source })
}
