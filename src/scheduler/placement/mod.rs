//! TEMPORARY STUB — replaced by the full implementation from branch config-work.
#![allow(missing_docs)]
use std::collections::HashMap;
use crate::config::PlacementRuleConfig;
use crate::security::UserGroup;
pub trait QueueView { fn is_leaf(&self, path: &str) -> Option<bool>; fn can_submit(&self, path: &str, user: &UserGroup) -> bool; }
pub struct PlacementManager { rules: Vec<PlacementRuleConfig> }
impl PlacementManager {
    pub fn new(rules: &[PlacementRuleConfig]) -> Result<PlacementManager, String> { Ok(PlacementManager { rules: rules.to_vec() }) }
    pub fn is_empty(&self) -> bool { self.rules.is_empty() }
    pub fn place(&self, app_id: &str, requested_queue: &str, user: &UserGroup, _tags: &HashMap<String, String>, view: &dyn QueueView) -> Result<String, String> {
        for r in &self.rules {
            if r.name == "provided" && !requested_queue.is_empty() {
                let q = requested_queue.to_lowercase();
                let path = if q.starts_with("root.") { q } else { format!("root.{}", q.replace('.', "_dot_")) };
                match view.is_leaf(&path) { Some(true) if view.can_submit(&path, user) => return Ok(path), None if r.create => return Ok(path), _ => {} }
            }
        }
        Err(format!("failed to place application {app_id}: application rejected: no placment rule matched"))
    }
}
