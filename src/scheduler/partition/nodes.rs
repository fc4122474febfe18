//! Nodes: creation with recovery, updates, draining and removal (spec 11).
//! Adopting an allocation the RM placed is shared by v0.12 recovery and
//! SI v1.x placed allocations (`merge.rs`).

use std::sync::Arc;

use super::*;
use crate::scheduler::edition::Edition;

/// An allocation the RM placed, in the core's terms (see
/// [`Partition::adopt_allocation`]).
pub(crate) struct Adopted<'a> {
    /// Allocation key.
    pub key: Arc<str>,
    /// Its UUID (SI v1.x: the key).
    pub uuid: crate::scheduler::alloc_uuid::AllocUuid,
    /// Owning application.
    pub app: &'a str,
    /// Resource held.
    pub resource: Resource,
    /// Priority value.
    pub priority: i32,
    /// Tags.
    pub tags: crate::scheduler::tags::Tags,
    /// Gang task group.
    pub task_group: Arc<str>,
    /// Gang placeholder.
    pub placeholder: bool,
    /// `allowPreemptSelf` (v0.12 recovery: true, spec 14.7).
    pub preempt_self: bool,
    /// `allowPreemptOther` (v0.12 recovery: true).
    pub preempt_other: bool,
    /// SI v1.x `originator`.
    pub originator: bool,
}

impl Partition {
    /// Adds a node, recovering its existing allocations (spec 11.3).
    pub fn add_node(&mut self, info: &si::NodeInfo, out: &mut Outcomes) -> Result<(), String> {
        let node_id = info.node_id.as_str();
        let wrap =
            |e: String| format!("Failure while adding new node, node rejected with error {e}");
        if node_id.is_empty() {
            return Err(wrap("node ID must not be empty".into()));
        }
        // Unlimited nodes (spec 11.6): only with reservations off, and
        // alone in their partition.
        let unlimited = crate::scheduler::objects::node::is_unlimited(&info.attributes);
        if unlimited && self.timeouts.reservation_delay.is_some() {
            return Err("Reservation is enabled, registering unlimited node is forbidden".into());
        }
        if self.has_unlimited_node() {
            return Err(
                "The partition has an unlimited node registered, registering other nodes is forbidden"
                    .into(),
            );
        }
        if unlimited && !self.nodes.is_empty() {
            return Err("The unlimited node should be registered first, there are other nodes registered in the partition".into());
        }
        if self.nodes.contains_key(node_id) {
            return Err(wrap(format!(
                "failed to add node {node_id} to partition {p}, error: partition {p} has an existing node {node_id}, node name must be unique",
                p = self.internal_name
            )));
        }
        let capacity = self.node_capacity(
            Resource::from_proto_opt(info.schedulable_resource.as_ref())?.unwrap_or_default(),
        );
        let occupied =
            Resource::from_proto_opt(info.occupied_resource.as_ref())?.unwrap_or_default();
        if capacity.has_negative() || occupied.has_negative() {
            return Err(wrap(format!(
                "node {node_id} reports a negative resource: schedulable {capacity}, occupied {occupied}"
            )));
        }
        // Check every recovered allocation before changing anything, so a
        // rejected node leaves no trace.
        let mut uuids = std::collections::HashSet::new();
        for a in &info.existing_allocations {
            if a.placeholder && a.task_group_name.is_empty() {
                continue;
            }
            if a.uuid.is_empty() {
                return Err(wrap(format!(
                    "failing to restore allocation {} for application {}: missing UUID",
                    a.allocation_key, a.application_id
                )));
            }
            // Normally the node being created; another registered node
            // may be named too. An empty id means this node.
            if !a.node_id.is_empty()
                && a.node_id != node_id
                && !self.nodes.contains_key(a.node_id.as_str())
            {
                return Err(wrap(format!("failed to find node {}", a.node_id)));
            }
            if !self.apps.contains_key(a.application_id.as_str()) {
                return Err(wrap(format!(
                    "failed to find application {}",
                    a.application_id
                )));
            }
            if self.allocations.contains_key(a.uuid.as_str()) || !uuids.insert(a.uuid.as_str()) {
                return Err(wrap(format!("allocation {} already exists", a.uuid)));
            }
            let r = Resource::from_proto_opt(a.resource_per_alloc.as_ref())?.unwrap_or_default();
            if r.has_negative() {
                return Err(wrap(format!(
                    "allocation {} has a negative resource {r}",
                    a.uuid
                )));
            }
        }
        // The partition total and usage are subtracted from later: refuse
        // a node whose capacity or recovered allocations they cannot hold.
        let Some(new_total) = self.total.checked_add(&capacity) else {
            return Err(wrap(format!(
                "node {node_id}: capacity {capacity} would overflow the partition total {}",
                self.total
            )));
        };
        let mut recovered_sum = Resource::new();
        for a in &info.existing_allocations {
            let r = Resource::from_proto_opt(a.resource_per_alloc.as_ref())?.unwrap_or_default();
            let Some(app) = self.apps.get(a.application_id.as_str()) else {
                continue;
            };
            let overflow = || {
                wrap(format!(
                    "node {node_id}: recovered allocation {} would overflow a usage total",
                    a.uuid
                ))
            };
            recovered_sum = recovered_sum.checked_add(&r).ok_or_else(overflow)?;
            app.allocated()
                .checked_add(&recovered_sum)
                .ok_or_else(overflow)?;
            self.queues
                .check_add(app.queue, &recovered_sum, true)
                .map_err(|e| {
                    wrap(format!(
                        "node {node_id}: recovered allocation {}: {e}",
                        a.uuid
                    ))
                })?;
        }
        let node = Node::new(node_id, info.attributes.clone(), capacity.clone(), occupied);
        let id = node.id.clone();
        self.nodes.insert(node);
        self.total = new_total;
        self.update_root_max();
        for a in &info.existing_allocations {
            if a.placeholder && a.task_group_name.is_empty() {
                continue;
            }
            let on: Arc<str> = if a.node_id.is_empty() || a.node_id == node_id {
                id.clone()
            } else {
                self.nodes
                    .get(a.node_id.as_str())
                    .map(|n| n.id.clone())
                    .expect("checked above")
            };
            self.recover_allocation(&on, a, out);
        }
        let recovered = info.existing_allocations.len();
        self.node_capacity_event(
            node_id,
            "NodeAdded",
            format!(
                "Node {node_id} added with capacity {capacity}, {recovered} existing allocation(s)"
            ),
            &capacity,
            out,
        );
        Ok(())
    }

    /// A `NODE` event record (in the spirit of YuniKorn v1).
    fn node_event(&self, node_id: &str, reason: &str, message: String, out: &mut Outcomes) {
        out.event(self.node_record(node_id, reason, message));
    }

    fn node_record(&self, node_id: &str, reason: &str, message: String) -> si::EventRecord {
        crate::events::record(
            si::event_record::Type::Node,
            node_id,
            &self.name,
            reason,
            message,
        )
    }

    /// A `NODE` record that tells an SI v1.x RM the node's capacity as
    /// its resource (the v1.8 core's NODE ADD and NODE_CAPACITY records
    /// do); the v0.12 record is the same as [`Self::node_event`]'s.
    fn node_capacity_event(
        &self,
        node_id: &str,
        reason: &str,
        message: String,
        capacity: &Resource,
        out: &mut Outcomes,
    ) {
        let record = crate::events::Record::from(self.node_record(node_id, reason, message));
        out.record(record.with_v1_resource(capacity.to_proto()));
    }

    pub(crate) fn recover_allocation(
        &mut self,
        node_id: &Arc<str>,
        a: &si::Allocation,
        out: &mut Outcomes,
    ) {
        let resource = Resource::from_proto_opt(a.resource_per_alloc.as_ref())
            .ok()
            .flatten()
            .unwrap_or_default();
        self.adopt_allocation(
            node_id,
            Adopted {
                key: Arc::from(a.allocation_key.as_str()),
                uuid: crate::scheduler::alloc_uuid::AllocUuid::from_rm(&a.uuid),
                app: &a.application_id,
                resource,
                priority: priority_of(a.priority.as_ref()),
                tags: (&a.allocation_tags).into(),
                task_group: shared_str(&a.task_group_name),
                placeholder: a.placeholder,
                preempt_self: true,
                preempt_other: true,
                originator: false,
            },
            out,
        );
    }

    /// Adds an allocation the RM placed (v0.12 recovery, SI v1.x `placed`)
    /// to node, queue and application at once, with no capacity or max
    /// check: it runs already. A stand-in ask with no repeats left is kept
    /// under its key, as the reference keeps one. The caller has checked
    /// that the application and the node exist, that the UUID is new and
    /// that the usage totals can hold it. Returns the record.
    pub(crate) fn adopt_allocation(
        &mut self,
        node_id: &Arc<str>,
        a: Adopted<'_>,
        out: &mut Outcomes,
    ) -> Arc<NewAllocation> {
        let app_id = a.app;
        let resource = a.resource;
        let key = a.key;
        self.remove_ask(app_id, &key);
        if self.apps[app_id].state == AppState::New {
            self.fire(app_id, AppEvent::Run, None, out);
        }
        let seq = self.next_seq();
        let app = self.apps.get_mut(app_id).expect("checked by the caller");
        let standin = Ask {
            key: key.clone(),
            resource: resource.clone(),
            pending_repeat: 0,
            priority: a.priority,
            seq,
            created: self.clock.now(),
            tags: a.tags.clone(),
            task_group: a.task_group.clone(),
            placeholder: a.placeholder,
            required_node: None,
            preempt_other: false,
            preempt_self: a.preempt_self,
            originator: a.originator,
            alloc_hash: None,
            pending: None,
        };
        // Compact when it may be (place.rs): it is never reopened.
        let entry = if standin.placeholder {
            standin.into()
        } else {
            let listed = place::pending_lists(&self.queues, app.queue, &app.pending, &resource);
            AskEntry::placed_of(&standin, listed)
        };
        app.asks.insert(key.clone(), entry);
        let uuid = a.uuid;
        if !a.placeholder {
            app.allocate(&resource, self.queues.get_mut(app.queue));
        }
        app.started = true;
        let queue = app.queue;
        let app_shared = app.id.clone();
        self.queues.add_allocated(queue, &resource);
        let node_slot = self.nodes.slot_of(node_id).expect("checked by the caller");
        self.nodes.allocate(node_slot, &resource);
        let app_slot = self.apps.slot_of(app_id).expect("checked by the caller");
        let record = Arc::new(NewAllocation {
            uuid: uuid.clone(),
            key,
            node: node_id.clone(),
            ctx: self.ctx_of(app_slot, &a.task_group),
            resource: resource.clone(),
            tags: a.tags,
            priority: a.priority,
            placeholder: a.placeholder,
            preempt_self: a.preempt_self,
            preempt_other: a.preempt_other,
            originator: a.originator,
        });
        let group = record.task_group().clone();
        self.stamp_hour();
        self.allocations.insert(
            Allocation {
                record: record.clone(),
                queue,
            },
            &mut self.apps.at_mut(app_slot).allocations,
            &mut self.nodes.at_mut(node_slot).allocations,
        );
        // After the insert: whether it counts as running depends on it.
        apps::sync_active(self.apps.at_mut(app_slot), &mut self.queues, &mut self.ugm);
        if a.placeholder {
            self.placeholder_added(&app_shared, &uuid, &group, &resource, out);
            if let Some(app) = self.apps.get(&app_shared) {
                self.ugm.sync(app); // placeholders count against limits too
            }
        } else {
            self.fire(app_id, AppEvent::Run, None, out);
        }
        // Usage the RM brought may pass a max (v1.9 quota arming, 5.3).
        self.quota_arm_on_growth(queue);
        record
    }

    /// UPDATE, DRAIN_NODE, DRAIN_TO_SCHEDULABLE and DECOMISSION (spec 11.4-11.5).
    /// `Err` says why nothing was done (unknown node or action, bad
    /// resource): v0.12 only logs it, SI v1.x answers it as a rejection.
    /// A node's capacity as the RM's edition keeps it: SI v1 drops zero
    /// quantities, as YuniKorn v1.9 does (REST, the NODE records and the
    /// partition total list no `name: 0` entries; fit is unchanged, since
    /// a missing type is zero on a node). v0.12 keeps what it was sent.
    fn node_capacity(&self, reported: Resource) -> Resource {
        match self.edition {
            Edition::V012 => reported,
            Edition::V1 => reported.without_zeros(),
        }
    }

    /// In SI v1.x an UPDATE sets the capacity only: the node's occupied
    /// resource is the sum of its foreign allocations.
    pub fn update_node(&mut self, info: &si::NodeInfo, out: &mut Outcomes) -> Result<(), String> {
        let node_id = info.node_id.as_str();
        if !self.nodes.contains_key(node_id) {
            return Err(format!(
                "node update for unknown node {node_id} in partition {} ignored",
                self.internal_name
            ));
        }
        match ActionFromRm::try_from(info.action) {
            Ok(ActionFromRm::Update) => {
                let cap = Resource::from_proto_opt(info.schedulable_resource.as_ref());
                let occ = match self.edition {
                    Edition::V012 => Resource::from_proto_opt(info.occupied_resource.as_ref()),
                    Edition::V1 => Ok(None),
                };
                let (Ok(cap), Ok(occ)) = (cap, occ) else {
                    return Err(format!("node update for {node_id} ignored: bad resource"));
                };
                let cap = cap.map(|c| self.node_capacity(c));
                if cap.as_ref().is_some_and(Resource::has_negative)
                    || occ.as_ref().is_some_and(Resource::has_negative)
                {
                    return Err(format!(
                        "node update for {node_id} ignored: negative resource"
                    ));
                }
                let slot = self.nodes.slot_of(node_id).expect("checked");
                let node = &self.nodes[slot];
                let capacity = match cap {
                    Some(cap) => {
                        let Some(total) = self.total.sub(node.capacity()).checked_add(&cap) else {
                            return Err(format!(
                                "node update for {node_id} ignored: capacity {cap} would overflow the partition total"
                            ));
                        };
                        self.total = total;
                        cap
                    }
                    None => node.capacity().clone(),
                };
                let occupied = occ.unwrap_or_else(|| node.occupied().clone());
                self.nodes.set_resources(slot, capacity, occupied);
                self.update_root_max();
                let n = &self.nodes[slot];
                let message = format!(
                    "Node {node_id} updated: capacity {}, occupied {}",
                    n.capacity(),
                    n.occupied()
                );
                let capacity = n.capacity().clone();
                self.node_capacity_event(node_id, "NodeUpdated", message, &capacity, out);
            }
            Ok(ActionFromRm::DrainNode) => self.drain_node(node_id, out),
            Ok(ActionFromRm::DrainToSchedulable) => {
                self.nodes.get_mut(node_id).expect("checked").schedulable = true;
                let message = format!("Node {node_id} is schedulable again");
                self.node_event(node_id, "NodeSchedulable", message, out);
            }
            Ok(ActionFromRm::Decomission) => self.remove_node(node_id, out),
            _ => return Err(format!("node {node_id}: action {} ignored", info.action)),
        }
        Ok(())
    }

    /// Marks node `node_id` unschedulable (DRAIN_NODE; SI v1.x's
    /// CREATE_DRAIN after the create): its allocations stay, new asks skip
    /// it unless they require it by name.
    pub fn drain_node(&mut self, node_id: &str, out: &mut Outcomes) {
        let Some(n) = self.nodes.get_mut(node_id) else {
            return;
        };
        n.schedulable = false;
        let message = format!("Node {node_id} is draining: no new allocations");
        self.node_event(node_id, "NodeDraining", message, out);
    }

    /// Removes a node and releases its allocations to the RM (spec 11.5).
    pub fn remove_node(&mut self, node_id: &str, out: &mut Outcomes) {
        let Some(node) = self.nodes.get(node_id) else {
            return;
        };
        // Before the node leaves: its slot may be reused.
        if let Some(slot) = self.nodes.slot_of(node_id) {
            self.reservations.cancel_node(slot);
        }
        let uuids: Vec<crate::scheduler::alloc_uuid::AllocUuid> =
            self.allocations.uuids(&node.allocations).cloned().collect();
        self.nodes.get_mut(node_id).expect("checked").schedulable = false;
        let mut released = Vec::new();
        // Per application: (real removed, placeholder removed).
        let mut touched: Vec<(Arc<str>, bool, bool)> = Vec::new();
        let mut confirmed = Vec::new();
        for u in uuids {
            // Gang swaps in flight first (spec 11.5, gang/timeout.rs).
            match self.node_removal_swap(&u, out) {
                super::gang::NodeSwapAction::None => {}
                super::gang::NodeSwapAction::Handled => continue,
                super::gang::NodeSwapAction::Confirmed(real) => {
                    // The placeholder went with its node: the RM, still
                    // waiting to confirm it, is told it is gone (spec 11.5).
                    released.push(si::AllocationRelease {
                        partition_name: self.name.clone(),
                        application_id: real.app().to_string(),
                        uuid: u.to_string(),
                        termination_type: si::TerminationType::StoppedByRm as i32,
                        message: format!("Node {node_id} Removed"),
                    });
                    confirmed.push(real);
                    continue;
                }
            }
            if let Some(a) = self.remove_allocation(&u) {
                match touched.iter_mut().find(|t| t.0 == *a.app()) {
                    Some(t) => {
                        t.1 |= !a.placeholder;
                        t.2 |= a.placeholder;
                    }
                    None => touched.push((a.app().clone(), !a.placeholder, a.placeholder)),
                }
                if self.tracing() {
                    let why = format!("node {node_id} removed");
                    self.trace_removed(&a, crate::events::Detail::AllocNodeRemoved, &why, out);
                }
                released.push(si::AllocationRelease {
                    partition_name: self.name.clone(),
                    application_id: a.app().to_string(),
                    uuid: a.uuid.to_string(),
                    termination_type: si::TerminationType::StoppedByRm as i32,
                    message: format!("Node {node_id} Removed"),
                });
            }
        }
        // remove_allocation repositions the node; take it out for good.
        let node = self.nodes.remove(node_id).expect("checked");
        self.total = self.total.sub(node.capacity());
        self.update_root_max();
        // Reservation hook (spec 11.5 step 3): reservations on this node are
        // cancelled here once reservations exist.
        let count = released.len();
        if !released.is_empty() {
            out.new_allocation_message(si::AllocationResponse {
                released,
                ..Default::default()
            });
        }
        for (app, real, placeholder) in touched {
            self.after_allocations_removed(&app, real, placeholder, false, out);
        }
        // Then the swaps this removal confirmed: ReSync plus `new`.
        self.node_removal_confirmed(confirmed, out);
        self.node_event(
            node_id,
            "NodeRemoved",
            format!("Node {node_id} decommissioned, {count} allocation(s) released"),
            out,
        );
    }
}
