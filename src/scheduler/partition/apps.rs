//! Applications: adding, placement, the state machine and removal (spec 5, 6).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Instant;

use super::*;

impl Partition {
    /// Adds one application (spec 6.1); `Err` is the rejection reason.
    pub fn add_application(&mut self, req: &si::AddApplicationRequest) -> Result<(), String> {
        let app_id = req.application_id.as_str();
        if app_id.is_empty() {
            return Err("application ID must not be empty".into());
        }
        let ugi = req.ugi.clone().unwrap_or_default();
        let user = resolve_user(&ugi.user, &ugi.groups)?;
        if self.apps.contains_key(app_id) {
            return Err(format!(
                "adding application {app_id} to partition {}, but application already existed",
                self.internal_name
            ));
        }
        let placeholder_ask = Resource::from_proto_opt(req.placeholder_ask.as_ref())?;
        let queue = self.place(app_id, &req.queue_name, &user, &req.tags)?;
        if self.queues.get(queue).state == QueueState::Draining {
            return Err(format!(
                "queue {} is draining, it does not accept new application {app_id}",
                self.queues.get(queue).path
            ));
        }
        let seq = self.next_seq();
        let id: Arc<str> = Arc::from(app_id);
        self.queues.get_mut(queue).apps.insert(seq, id.clone());
        self.apps.insert(
            id.clone(),
            Application {
                id,
                queue,
                user,
                tags: req.tags.clone(),
                state: AppState::New,
                seq,
                submitted: Instant::now(),
                asks: Default::default(),
                ask_order: BTreeSet::new(),
                pending: Resource::new(),
                allocated: Resource::new(),
                allocations: BTreeSet::new(),
                state_epoch: 0,
                placeholder_ask,
            },
        );
        Ok(())
    }

    /// Placement (spec 5): returns the leaf queue, creating it if a rule allows.
    pub(super) fn place(
        &mut self,
        app_id: &str,
        requested: &str,
        user: &UserGroup,
        tags: &HashMap<String, String>,
    ) -> Result<QueueId, String> {
        let path = if self.placement.is_empty() {
            match self.queues.lookup(requested) {
                Some(_) => requested.to_ascii_lowercase(),
                None => {
                    return Err(format!(
                        "application '{app_id}' rejected, cannot create queue '{requested}' without placement rules"
                    ))
                }
            }
        } else {
            let placed =
                self.placement
                    .place(app_id, requested, user, tags, &TreeView(&self.queues))?;
            if self.queues.lookup(&placed).is_none() {
                self.queues.create_dynamic(&placed, user).map_err(|e| {
                    log::info!("queue creation for {app_id} failed: {e}");
                    format!("failed to create rule based queue {placed} for application {app_id}")
                })?;
            }
            placed
        };
        match self.queues.lookup(&path) {
            Some(q) if self.queues.get(q).leaf && self.queues.can_submit(q, user) => Ok(q),
            _ => Err(format!(
                "failed to find queue {path} for application {app_id}"
            )),
        }
    }
}
