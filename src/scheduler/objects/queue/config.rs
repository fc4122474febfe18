//! Building the tree from configuration and applying a new one to a live
//! tree (spec 2.8).

use std::collections::BTreeMap;

use super::*;
use crate::config::{ChildTemplateConfig, QueueConfig};

fn positive(r: Option<&BTreeMap<String, i64>>) -> Result<Option<Resource>, String> {
    match r {
        None => Ok(None),
        Some(m) => {
            let r = Resource::from_pairs(m.iter().map(|(k, v)| (k.as_str(), *v)))?;
            Ok(r.is_strictly_positive().then_some(r))
        }
    }
}

fn template_from(cfg: &ChildTemplateConfig) -> Result<Option<ChildTemplate>, String> {
    let t = ChildTemplate {
        properties: cfg
            .properties
            .iter()
            .filter(|(k, v)| !k.is_empty() && !v.is_empty())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        guaranteed: positive(cfg.resources.guaranteed.as_ref())?,
        max: positive(cfg.resources.max.as_ref())?,
        max_applications: cfg.max_applications,
    };
    let empty = t.properties.is_empty()
        && t.guaranteed.is_none()
        && t.max.is_none()
        && t.max_applications == 0;
    Ok((!empty).then_some(t))
}

impl QueueTree {
    /// Builds the managed tree from a validated root queue config.
    pub fn from_config(root: &QueueConfig) -> Result<Self, String> {
        let mut tree = QueueTree {
            slots: Vec::new(),
            free: Vec::new(),
            by_path: Default::default(),
            journal_on: false,
            journal: Vec::new(),
            unfiled: Vec::new(),
        };
        tree.add_managed(None, root)?;
        Ok(tree)
    }

    fn add_managed(
        &mut self,
        parent: Option<QueueId>,
        cfg: &QueueConfig,
    ) -> Result<QueueId, String> {
        let name = cfg.name.to_ascii_lowercase();
        let path = match parent {
            None => "root".to_string(),
            Some(p) => format!("{}.{}", self.get(p).path, name),
        };
        let leaf = parent.is_some() && !cfg.parent && cfg.queues.is_empty();
        let mut q = Queue::blank(&name, path.clone(), parent, leaf);
        q.managed = true;
        self.apply_config(&mut q, parent, cfg)?;
        let id = self.store(q);
        self.by_path.insert(path, id);
        if let Some(p) = parent {
            self.get_mut(p).children.insert(name, id);
        }
        if self.journal_on {
            let path = self.get(id).path.clone();
            self.journal.push(QueueChange::Added {
                path,
                managed: true,
            });
        }
        for child in &cfg.queues {
            self.add_managed(Some(id), child)?;
        }
        Ok(id)
    }

    fn apply_config(
        &self,
        q: &mut Queue,
        parent: Option<QueueId>,
        cfg: &QueueConfig,
    ) -> Result<(), String> {
        let acl = |text: &str| {
            Acl::parse(text)
                .map(|a| (text.to_string(), a))
                .map_err(|e| format!("configured queue creation failed: {e}"))
        };
        q.submit_acl = acl(&cfg.submit_acl)?;
        q.admin_acl = acl(&cfg.admin_acl)?;
        if parent.is_some() {
            q.guaranteed = positive(cfg.resources.guaranteed.as_ref())?;
            q.max = positive(cfg.resources.max.as_ref())?;
        }
        q.max_applications = cfg.max_applications;
        // Recomputed from the parent's (already updated) properties and the
        // queue's own on every reload, and every value re-derived with
        // defaults for absent keys: a removed property leaves no stale value
        // behind (the reference's reload keeps them, priority.md Q1).
        let mut props = parent
            .map(|p| inherited(&self.get(p).properties))
            .unwrap_or_default();
        props.extend(cfg.properties.iter().map(|(k, v)| (k.clone(), v.clone())));
        q.properties = props;
        q.sort_policy = AppSortPolicy::from_property(q.properties.get(PROP_APP_SORT_POLICY));
        q.priority = PrioritySettings::from_properties(&q.path, &q.properties);
        if !q.leaf {
            q.child_template = match &cfg.child_template {
                Some(t) => template_from(t)?,
                None => parent.and_then(|p| self.get(p).child_template.clone()),
            };
        }
        Ok(())
    }

    /// Logs the warnings of the queues' priority properties (bad values
    /// fall back to defaults), for a tree built quietly that goes live.
    pub fn warn_properties(&self) {
        for (_, q) in self.iter() {
            PrioritySettings::from_properties(&q.path, &q.properties);
        }
    }

    /// Applies a new configuration to the live tree (spec 2.8): existing
    /// queues take their new settings, new ones are created, and managed
    /// queues missing from the config start draining. Usage is kept.
    pub fn reconfigure(&mut self, root: &QueueConfig) -> Result<(), String> {
        // Check everything first so a bad queue leaves the live tree
        // untouched.
        self.check_reconfigure(root)?;
        self.reconfigure_queue(ROOT, root)
    }

    /// Checks, without changing anything, that `root` can be applied to the
    /// live tree: beyond what building a fresh tree checks, a leaf that
    /// holds applications cannot turn into a parent.
    pub fn check_reconfigure(&self, root: &QueueConfig) -> Result<(), String> {
        // A trial: the live apply warns about bad properties.
        super::quietly(|| QueueTree::from_config(root))?;
        self.check_queue(ROOT, root)
    }

    fn check_queue(&self, id: QueueId, cfg: &QueueConfig) -> Result<(), String> {
        let q = self.get(id);
        let parent = id == ROOT || cfg.parent || !cfg.queues.is_empty();
        if q.leaf && parent && !q.apps.is_empty() {
            return Err(format!(
                "queue {} has applications and cannot become a parent queue",
                q.path
            ));
        }
        for child in &cfg.queues {
            if let Some(c) = q.children.get(&child.name.to_ascii_lowercase()) {
                self.check_queue(*c, child)?;
            }
        }
        Ok(())
    }

    fn reconfigure_queue(&mut self, id: QueueId, cfg: &QueueConfig) -> Result<(), String> {
        let parent = self.get(id).parent;
        let mut q = self.get(id).clone();
        q.leaf = parent.is_some() && !cfg.parent && cfg.queues.is_empty() && q.children.is_empty();
        q.managed = true;
        q.state = QueueState::Active;
        self.apply_config(&mut q, parent, cfg)?;
        if parent.is_none() {
            // Root's max is the partition size, never configured.
            q.max = self.get(id).max.clone();
        }
        if self.journal_on {
            let was = self.get(id);
            let (leaf, max, guaranteed) = (
                was.leaf != q.leaf,
                was.max != q.max,
                was.guaranteed != q.guaranteed,
            );
            let path = q.path.clone();
            if leaf {
                self.journal.push(QueueChange::Type {
                    path: path.clone(),
                    leaf: q.leaf,
                });
            }
            if max {
                self.journal.push(QueueChange::Max {
                    path: path.clone(),
                    max: q.max.clone(),
                });
            }
            if guaranteed {
                self.journal.push(QueueChange::Guaranteed {
                    path,
                    guaranteed: q.guaranteed.clone(),
                });
            }
        }
        *self.get_mut(id) = q;
        // The guarantee may have changed: re-file in the parent's order.
        self.rekey(id);
        let mut seen = std::collections::HashSet::new();
        for child in &cfg.queues {
            let name = child.name.to_ascii_lowercase();
            seen.insert(name.clone());
            match self.get(id).children.get(&name).copied() {
                Some(c) => self.reconfigure_queue(c, child)?,
                None => {
                    self.add_managed(Some(id), child)?;
                }
            }
        }
        let gone: Vec<QueueId> = self
            .get(id)
            .children
            .iter()
            .filter(|(n, _)| !seen.contains(*n))
            .map(|(_, c)| *c)
            .collect();
        for c in gone {
            self.mark_draining(c);
        }
        Ok(())
    }

    fn mark_draining(&mut self, id: QueueId) {
        if !self.get(id).managed {
            return;
        }
        self.get_mut(id).state = QueueState::Draining;
        let kids: Vec<QueueId> = self.get(id).children.values().copied().collect();
        for k in kids {
            self.mark_draining(k);
        }
    }

    /// Removes empty draining and dynamic queues, children first.
    pub fn remove_unused(&mut self) {
        // Children before parents, in tree order: ids of reused slots say
        // nothing about depth.
        let mut order = Vec::new();
        let mut stack = vec![ROOT];
        while let Some(id) = stack.pop() {
            order.push(id);
            stack.extend(self.get(id).children.values().copied());
        }
        for id in order.into_iter().rev() {
            if self.slots[id].is_some() {
                self.remove_if_unused(id);
            }
        }
    }
}
