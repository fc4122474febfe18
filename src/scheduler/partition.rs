//! A partition: an independent scheduling domain with its own queue tree,
//! nodes and applications. Every RM request and every scheduling decision
//! for the partition goes through here, on the core thread.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::ops::Bound;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::application::{
    transition, AppEvent, AppState, Application, Ask, AskOrderKey, TAG_REQUIRED_NODE,
};
use super::node::{Node, NodeKey, NodeSortPolicy};
use super::outcome::{AppTimer, Outcomes};
use super::placement::{PlacementManager, QueueView};
use super::queue::{AppSortPolicy, QueueId, QueueState, QueueTree, ROOT};
use super::resource::{compare_shares, shares, Resource};
use crate::api::ResourceManagerCallback;
use crate::config::PartitionConfig;
use crate::proto::si::v1 as si;
use crate::security::{resolve_user, UserGroup};

use si::node_info::ActionFromRm;

/// How many terminated applications a partition remembers for the dump.
pub const COMPLETED_HISTORY: usize = 1000;

/// Application timers, from the scheduler options.
#[derive(Debug, Clone, Copy)]
pub struct AppTimeouts {
    /// `Starting` -> `Running`.
    pub start: std::time::Duration,
    /// `Completing` -> `Completed`.
    pub completing: std::time::Duration,
}

/// An allocation: an ask placed on a node.
#[derive(Debug, Clone)]
pub struct Allocation {
    /// Allocation id, chosen by the core (or recovered from the RM).
    pub uuid: Arc<str>,
    /// The ask's key.
    pub key: Arc<str>,
    /// Owning application.
    pub app_id: Arc<str>,
    /// Node it runs on.
    pub node_id: Arc<str>,
    /// Resource held.
    pub resource: Resource,
    /// The application's leaf queue.
    pub queue: QueueId,
    /// Tags copied from the ask.
    pub tags: HashMap<String, String>,
    /// Priority copied from the ask.
    pub priority: i32,
    /// Gang task group.
    pub task_group: String,
    /// Gang placeholder.
    pub placeholder: bool,
}

/// A terminated application kept for the state dump.
#[derive(Debug, Clone)]
pub struct FinishedApp {
    /// Application id.
    pub id: Arc<str>,
    /// Queue path it ran in.
    pub queue: String,
    /// Final state.
    pub state: AppState,
    /// When it terminated, ns since the epoch.
    pub finished_ns: i64,
}

/// Bookkeeping for one scheduling pass: asks, applications and queues that
/// cannot make progress until the pass ends. Within a pass free capacity
/// only shrinks, so what failed once keeps failing.
#[derive(Default)]
struct PassState {
    /// Per application: every ask up to and including this key has failed.
    ask_cursor: HashMap<Arc<str>, AskOrderKey>,
    exhausted_apps: HashSet<Arc<str>>,
    exhausted_queues: HashSet<QueueId>,
    /// Ask shapes that fit no node (only used without predicates).
    unfit_shapes: HashSet<Resource>,
}

/// A partition.
pub struct Partition {
    /// The name the RM uses.
    pub name: String,
    /// `[rmID]name`.
    pub internal_name: String,
    /// Owning RM.
    pub rm_id: String,
    /// Queue tree.
    pub queues: QueueTree,
    /// Placement rules.
    pub placement: PlacementManager,
    /// Node order policy.
    pub node_policy: NodeSortPolicy,
    /// Whether preemption is enabled (stored; inert as in v0.12).
    pub preemption_enabled: bool,
    /// Nodes by id.
    pub nodes: HashMap<Arc<str>, Node>,
    /// Nodes in policy order.
    pub node_order: BTreeSet<NodeKey>,
    /// Sum of node capacities (root's max).
    pub total: Resource,
    /// Active applications by id.
    pub apps: HashMap<Arc<str>, Application>,
    /// Live allocations by UUID.
    pub allocations: HashMap<Arc<str>, Allocation>,
    /// Recently terminated applications, newest last.
    pub finished: VecDeque<FinishedApp>,
    /// Allocations made since the partition was created.
    pub allocation_count: u64,
    seq: u64,
    timeouts: AppTimeouts,
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

struct TreeView<'a>(&'a QueueTree);

impl QueueView for TreeView<'_> {
    fn is_leaf(&self, path: &str) -> Option<bool> {
        self.0.lookup(path).map(|id| self.0.get(id).leaf)
    }
    fn can_submit(&self, path: &str, user: &UserGroup) -> bool {
        self.0
            .lookup(path)
            .is_some_and(|id| self.0.can_submit(id, user))
    }
}

fn priority_of(p: Option<&si::Priority>) -> i32 {
    match p.and_then(|p| p.priority.as_ref()) {
        Some(si::priority::Priority::PriorityValue(v)) => *v,
        _ => 0,
    }
}

impl Partition {
    /// Creates a partition from validated configuration.
    pub fn new(rm_id: &str, cfg: &PartitionConfig, timeouts: AppTimeouts) -> Result<Self, String> {
        let root = cfg
            .queues
            .first()
            .filter(|q| q.name == "root")
            .ok_or("partition cannot be created without root queue")?;
        Ok(Partition {
            name: cfg.name.clone(),
            internal_name: format!("[{rm_id}]{}", cfg.name),
            rm_id: rm_id.to_string(),
            queues: QueueTree::from_config(root)?,
            placement: PlacementManager::new(&cfg.placement_rules)?,
            node_policy: NodeSortPolicy::new(
                &cfg.node_sort_policy.policy_type,
                &cfg.node_sort_policy.resource_weights,
            )?,
            preemption_enabled: cfg.preemption.enabled,
            nodes: HashMap::new(),
            node_order: BTreeSet::new(),
            total: Resource::new(),
            apps: HashMap::new(),
            allocations: HashMap::new(),
            finished: VecDeque::new(),
            allocation_count: 0,
            seq: 0,
            timeouts,
        })
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn update_root_max(&mut self) {
        let max = (!self.nodes.is_empty()).then(|| self.total.clone());
        self.queues.get_mut(ROOT).max = max;
    }

    // ----- applications -------------------------------------------------

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
                asks: HashMap::new(),
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
    fn place(
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

    /// Fires an application event and reports a real change (spec 6.2).
    pub fn fire(&mut self, app_id: &str, event: AppEvent, info: Option<&str>, out: &mut Outcomes) {
        let Some(app) = self.apps.get_mut(app_id) else {
            return;
        };
        let from = app.state;
        let Some(to) = transition(from, event) else {
            log::warn!(
                "application {app_id}: event {} is not valid in state {}",
                event.as_str(),
                from.as_str()
            );
            return;
        };
        if to == from {
            return;
        }
        app.state = to;
        app.state_epoch += 1;
        let epoch = app.state_epoch;
        let skip_start = app.stateaware_disabled();
        let id = app.id.clone();
        out.app_updated(si::UpdatedApplication {
            application_id: app_id.to_string(),
            state: to.as_str().to_string(),
            state_transition_timestamp: now_ns(),
            message: info.unwrap_or(event.as_str()).to_string(),
        });
        let timer = |d| AppTimer {
            at: Instant::now() + d,
            partition: self.internal_name.clone(),
            app: id.clone(),
            epoch,
        };
        match to {
            AppState::Starting if skip_start || self.timeouts.start.is_zero() => {
                self.fire(app_id, AppEvent::Run, None, out)
            }
            AppState::Starting => out.timers.push(timer(self.timeouts.start)),
            AppState::Completing => out.timers.push(timer(self.timeouts.completing)),
            AppState::Completed | AppState::Failed => self.terminate(app_id),
            _ => {}
        }
    }

    /// A state timer fired: acts only if the application is still in the
    /// state the timer was set for.
    pub fn on_timer(&mut self, app_id: &str, epoch: u64, out: &mut Outcomes) {
        let Some(app) = self.apps.get(app_id) else {
            return;
        };
        if app.state_epoch != epoch {
            return;
        }
        match app.state {
            AppState::Starting => self.fire(app_id, AppEvent::Run, None, out),
            AppState::Completing => self.fire(app_id, AppEvent::Complete, None, out),
            _ => {}
        }
    }

    /// The application leaves the partition (spec 6.6).
    fn terminate(&mut self, app_id: &str) {
        let Some(app) = self.apps.remove(app_id) else {
            return;
        };
        self.queues.sub_pending(app.queue, &app.pending);
        self.queues.sub_allocated(app.queue, &app.allocated);
        self.queues.get_mut(app.queue).apps.remove(&app.seq);
        if self.finished.len() >= COMPLETED_HISTORY {
            self.finished.pop_front();
        }
        self.finished.push_back(FinishedApp {
            id: app.id.clone(),
            queue: self.queues.get(app.queue).path.clone(),
            state: app.state,
            finished_ns: now_ns(),
        });
        let q = app.queue;
        if !self.queues.get(q).managed {
            self.cleanup_queue(q);
        }
    }

    /// Removes empty dynamic queues from `q` upwards.
    fn cleanup_queue(&mut self, q: QueueId) {
        let mut cur = Some(q);
        while let Some(c) = cur {
            let parent = self.queues.get(c).parent;
            if !self.queues.remove_if_unused(c) {
                break;
            }
            cur = parent;
        }
    }

    /// Runs the completion check of spec 6.3 after demand or usage dropped.
    fn check_completion(&mut self, app_id: &str, out: &mut Outcomes) {
        let idle = self.apps.get(app_id).is_some_and(|a| {
            a.pending.is_zero()
                && a.allocations.is_empty()
                && !matches!(a.state, AppState::Failing | AppState::Completing)
        });
        if idle {
            self.fire(app_id, AppEvent::Complete, None, out);
        }
    }

    /// Removes an application with everything it holds (spec 6.7).
    pub fn remove_application(&mut self, app_id: &str, out: &mut Outcomes) {
        let Some(app) = self.apps.get(app_id) else {
            return;
        };
        let keys: Vec<Arc<str>> = app.asks.keys().cloned().collect();
        let uuids: Vec<Arc<str>> = app.allocations.iter().cloned().collect();
        let had_work = !keys.is_empty() || !uuids.is_empty();
        for k in keys {
            self.remove_ask(app_id, &k);
        }
        let mut released = Vec::new();
        for u in uuids {
            if let Some(a) = self.remove_allocation(&u) {
                released.push(si::AllocationRelease {
                    partition_name: self.name.clone(),
                    application_id: app_id.to_string(),
                    uuid: a.uuid.to_string(),
                    termination_type: si::TerminationType::StoppedByRm as i32,
                    message: format!("Application {app_id} Removed"),
                });
            }
        }
        if !released.is_empty() {
            out.new_allocation_message(si::AllocationResponse {
                released,
                ..Default::default()
            });
        }
        // The RM asked for removal: finish the application rather than
        // leaving it in Completing (the reference's quirk, 6.7).
        if had_work {
            self.fire(app_id, AppEvent::Complete, None, out);
            self.fire(app_id, AppEvent::Complete, None, out);
        }
        self.terminate(app_id);
    }

    // ----- asks ---------------------------------------------------------

    /// Adds or replaces an ask (spec 7.1); `Err` is the rejection reason.
    pub fn add_ask(&mut self, ask: &si::AllocationAsk, out: &mut Outcomes) -> Result<(), String> {
        let app_id = ask.application_id.as_str();
        let key = ask.allocation_key.as_str();
        if !self.apps.contains_key(app_id) {
            return Err(format!(
                "failed to find application {app_id}, for allocation ask {key}"
            ));
        }
        if key.is_empty() {
            return Err(format!(
                "invalid ask added to app {app_id}: empty allocation key"
            ));
        }
        if ask.placeholder && ask.task_group_name.is_empty() {
            return Err(format!("ask cannot be nil when added to app {app_id}"));
        }
        let resource = Resource::from_proto_opt(ask.resource_ask.as_ref())?.unwrap_or_default();
        if ask.max_allocations <= 0 || !resource.is_strictly_positive() {
            return Err(format!(
                "invalid ask added to app {app_id}: ask {key} has resource {resource} and maxAllocations {} (need a positive resource and maxAllocations > 0)",
                ask.max_allocations
            ));
        }
        if matches!(
            self.apps[app_id].state,
            AppState::New | AppState::Completing
        ) {
            self.fire(app_id, AppEvent::Run, None, out);
        }
        let key: Arc<str> = Arc::from(key);
        self.remove_ask(app_id, &key);
        let seq = self.next_seq();
        let new = Ask {
            key: key.clone(),
            resource: resource.clone(),
            pending_repeat: ask.max_allocations,
            priority: priority_of(ask.priority.as_ref()),
            seq,
            created: Instant::now(),
            required_node: ask.tags.get(TAG_REQUIRED_NODE).cloned(),
            tags: ask.tags.clone(),
            task_group: ask.task_group_name.clone(),
            placeholder: ask.placeholder,
        };
        let demand = resource.mul(ask.max_allocations as i64);
        let app = self.apps.get_mut(app_id).expect("checked above");
        app.ask_order.insert(new.order_key());
        app.asks.insert(key, new);
        app.pending.add_assign(&demand);
        let q = app.queue;
        self.queues.add_pending(q, &demand);
        Ok(())
    }

    /// Removes one ask and its outstanding demand. Returns whether it existed.
    fn remove_ask(&mut self, app_id: &str, key: &str) -> bool {
        let Some(app) = self.apps.get_mut(app_id) else {
            return false;
        };
        let Some(old) = app.asks.remove(key) else {
            return false;
        };
        app.ask_order.remove(&old.order_key());
        let demand = old.resource.mul(old.pending_repeat.max(0) as i64);
        app.pending = app.pending.sub_clamped(&demand);
        let q = app.queue;
        self.queues.sub_pending(q, &demand);
        true
    }

    /// Releases asks (spec 7.4). Nothing is sent back.
    pub fn release_asks(&mut self, rel: &si::AllocationAskRelease, out: &mut Outcomes) {
        if rel.termination_type == si::TerminationType::Timeout as i32 {
            return;
        }
        let app_id = rel.application_id.as_str();
        let Some(app) = self.apps.get(app_id) else {
            return;
        };
        let keys: Vec<Arc<str>> = if rel.allocationkey.is_empty() {
            app.asks.keys().cloned().collect()
        } else {
            vec![Arc::from(rel.allocationkey.as_str())]
        };
        let mut removed = false;
        for k in keys {
            removed |= self.remove_ask(app_id, &k);
        }
        if removed {
            self.check_completion(app_id, out);
        }
    }

    // ----- allocations and releases -------------------------------------

    fn reposition_node(&mut self, node_id: &str) {
        if let Some(n) = self.nodes.get_mut(node_id) {
            self.node_order.remove(&n.key);
            let key = n.refresh(&self.node_policy);
            self.node_order.insert(key);
        }
    }

    /// Removes an allocation from node, queue, application and partition.
    fn remove_allocation(&mut self, uuid: &str) -> Option<Allocation> {
        let a = self.allocations.remove(uuid)?;
        if let Some(n) = self.nodes.get_mut(&a.node_id) {
            n.allocations.remove(uuid);
            n.allocated = n.allocated.sub_clamped(&a.resource);
            let id = a.node_id.clone();
            self.reposition_node(&id);
        }
        self.queues.sub_allocated(a.queue, &a.resource);
        if let Some(app) = self.apps.get_mut(&a.app_id) {
            app.allocations.remove(uuid);
            app.allocated = app.allocated.sub_clamped(&a.resource);
        }
        Some(a)
    }

    /// RM-initiated allocation releases (spec 10.2). Returns the keys to forget.
    pub fn release_allocations(&mut self, rel: &si::AllocationRelease, out: &mut Outcomes) {
        let app_id = rel.application_id.as_str();
        let Some(app) = self.apps.get(app_id) else {
            return;
        };
        let uuids: Vec<Arc<str>> = if rel.uuid.is_empty() {
            app.allocations.iter().cloned().collect()
        } else if app.allocations.contains(rel.uuid.as_str()) {
            vec![Arc::from(rel.uuid.as_str())]
        } else {
            Vec::new()
        };
        let mut released = Vec::new();
        for u in uuids {
            if let Some(a) = self.remove_allocation(&u) {
                out.forget.push(si::ForgotAllocation {
                    allocation_key: a.key.to_string(),
                });
                released.push(si::AllocationRelease {
                    partition_name: self.name.clone(),
                    application_id: app_id.to_string(),
                    uuid: a.uuid.to_string(),
                    termination_type: si::TerminationType::StoppedByRm as i32,
                    message: "allocation remove as per RM request".into(),
                });
            }
        }
        if !released.is_empty() {
            out.new_allocation_message(si::AllocationResponse {
                released,
                ..Default::default()
            });
            self.check_completion(app_id, out);
        }
    }

    // ----- nodes --------------------------------------------------------

    /// Adds a node, recovering its existing allocations (spec 11.3).
    pub fn add_node(&mut self, info: &si::NodeInfo, out: &mut Outcomes) -> Result<(), String> {
        let node_id = info.node_id.as_str();
        let wrap =
            |e: String| format!("Failure while adding new node, node rejected with error {e}");
        if node_id.is_empty() {
            return Err(wrap("node ID must not be empty".into()));
        }
        if self.nodes.contains_key(node_id) {
            return Err(wrap(format!(
                "failed to add node {node_id} to partition {p}, error: partition {p} has an existing node {node_id}, node name must be unique",
                p = self.internal_name
            )));
        }
        let capacity =
            Resource::from_proto_opt(info.schedulable_resource.as_ref())?.unwrap_or_default();
        let occupied =
            Resource::from_proto_opt(info.occupied_resource.as_ref())?.unwrap_or_default();
        if capacity.has_negative() || occupied.has_negative() {
            return Err(wrap(format!(
                "node {node_id} reports a negative resource: schedulable {capacity}, occupied {occupied}"
            )));
        }
        // Check every recovered allocation before changing anything, so a
        // rejected node leaves no trace.
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
            if !a.node_id.is_empty() && a.node_id != node_id {
                return Err(wrap(format!("failed to find node {}", a.node_id)));
            }
            if !self.apps.contains_key(a.application_id.as_str()) {
                return Err(wrap(format!(
                    "failed to find application {}",
                    a.application_id
                )));
            }
            if self.allocations.contains_key(a.uuid.as_str()) {
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
        let node = Node::new(
            node_id,
            info.attributes.clone(),
            capacity.clone(),
            occupied,
            &self.node_policy,
        );
        let id = node.id.clone();
        self.node_order.insert(node.key.clone());
        self.nodes.insert(id.clone(), node);
        self.total.add_assign(&capacity);
        self.update_root_max();
        for a in &info.existing_allocations {
            if a.placeholder && a.task_group_name.is_empty() {
                continue;
            }
            self.recover_allocation(&id, a, out);
        }
        Ok(())
    }

    fn recover_allocation(&mut self, node_id: &Arc<str>, a: &si::Allocation, out: &mut Outcomes) {
        let app_id = a.application_id.as_str();
        let resource = Resource::from_proto_opt(a.resource_per_alloc.as_ref())
            .ok()
            .flatten()
            .unwrap_or_default();
        let key: Arc<str> = Arc::from(a.allocation_key.as_str());
        // A stand-in ask with no repeats left, as the reference keeps one.
        self.remove_ask(app_id, &key);
        if self.apps[app_id].state == AppState::New {
            self.fire(app_id, AppEvent::Run, None, out);
        }
        let seq = self.next_seq();
        let app = self.apps.get_mut(app_id).expect("checked by add_node");
        app.asks.insert(
            key.clone(),
            Ask {
                key: key.clone(),
                resource: resource.clone(),
                pending_repeat: 0,
                priority: priority_of(a.priority.as_ref()),
                seq,
                created: Instant::now(),
                tags: a.allocation_tags.clone(),
                task_group: a.task_group_name.clone(),
                placeholder: a.placeholder,
                required_node: None,
            },
        );
        let uuid: Arc<str> = Arc::from(a.uuid.as_str());
        app.allocations.insert(uuid.clone());
        app.allocated.add_assign(&resource);
        let queue = app.queue;
        self.queues.add_allocated(queue, &resource);
        let node = self.nodes.get_mut(node_id).expect("just added");
        node.allocations.insert(uuid.clone());
        node.allocated.add_assign(&resource);
        self.reposition_node(node_id);
        self.allocations.insert(
            uuid.clone(),
            Allocation {
                uuid,
                key,
                app_id: Arc::from(app_id),
                node_id: node_id.clone(),
                resource,
                queue,
                tags: a.allocation_tags.clone(),
                priority: priority_of(a.priority.as_ref()),
                task_group: a.task_group_name.clone(),
                placeholder: a.placeholder,
            },
        );
        if !a.placeholder {
            self.fire(app_id, AppEvent::Run, None, out);
        }
    }

    /// UPDATE, DRAIN_NODE, DRAIN_TO_SCHEDULABLE and DECOMISSION (spec 11.4-11.5).
    /// Unknown nodes and actions are logged and ignored.
    pub fn update_node(&mut self, info: &si::NodeInfo, out: &mut Outcomes) {
        let node_id = info.node_id.as_str();
        if !self.nodes.contains_key(node_id) {
            log::warn!(
                "node update for unknown node {node_id} in partition {} ignored",
                self.internal_name
            );
            return;
        }
        match ActionFromRm::try_from(info.action) {
            Ok(ActionFromRm::Update) => {
                let cap = Resource::from_proto_opt(info.schedulable_resource.as_ref());
                let occ = Resource::from_proto_opt(info.occupied_resource.as_ref());
                let (Ok(cap), Ok(occ)) = (cap, occ) else {
                    log::warn!("node update for {node_id} ignored: bad resource");
                    return;
                };
                if cap.as_ref().is_some_and(Resource::has_negative)
                    || occ.as_ref().is_some_and(Resource::has_negative)
                {
                    log::warn!("node update for {node_id} ignored: negative resource");
                    return;
                }
                let node = self.nodes.get_mut(node_id).expect("checked");
                if let Some(cap) = cap {
                    self.total = self.total.sub(&node.capacity).add(&cap);
                    node.capacity = cap;
                }
                if let Some(occ) = occ {
                    node.occupied = occ;
                }
                self.update_root_max();
                self.reposition_node(node_id);
            }
            Ok(ActionFromRm::DrainNode) => {
                self.nodes.get_mut(node_id).expect("checked").schedulable = false;
            }
            Ok(ActionFromRm::DrainToSchedulable) => {
                self.nodes.get_mut(node_id).expect("checked").schedulable = true;
            }
            Ok(ActionFromRm::Decomission) => self.remove_node(node_id, out),
            _ => log::debug!("node {node_id}: action {} ignored", info.action),
        }
    }

    /// Removes a node and releases its allocations to the RM (spec 11.5).
    pub fn remove_node(&mut self, node_id: &str, out: &mut Outcomes) {
        let Some(node) = self.nodes.get(node_id) else {
            return;
        };
        let uuids: Vec<Arc<str>> = node.allocations.iter().cloned().collect();
        let mut released = Vec::new();
        let mut touched = Vec::new();
        for u in uuids {
            if let Some(a) = self.remove_allocation(&u) {
                released.push(si::AllocationRelease {
                    partition_name: self.name.clone(),
                    application_id: a.app_id.to_string(),
                    uuid: a.uuid.to_string(),
                    termination_type: si::TerminationType::StoppedByRm as i32,
                    message: format!("Node {node_id} Removed"),
                });
                touched.push(a.app_id.clone());
            }
        }
        let node = self.nodes.remove(node_id).expect("checked");
        self.node_order.remove(&node.key);
        self.total = self.total.sub(&node.capacity);
        self.update_root_max();
        if !released.is_empty() {
            out.new_allocation_message(si::AllocationResponse {
                released,
                ..Default::default()
            });
        }
        touched.dedup();
        for app in touched {
            self.check_completion(&app, out);
        }
    }

    // ----- scheduling ---------------------------------------------------

    /// Runs one scheduling pass: up to `budget` allocations, each decided on
    /// the state the previous one left. Returns the number made.
    pub fn schedule(
        &mut self,
        cb: Option<&dyn ResourceManagerCallback>,
        budget: usize,
        out: &mut Outcomes,
    ) -> usize {
        let root = self.queues.get(ROOT);
        if root.max.is_none() || !root.pending.is_strictly_positive() {
            return 0;
        }
        let cb = cb.filter(|c| c.has_predicates());
        let mut pass = PassState::default();
        let mut made = 0;
        while made < budget {
            let Some((app_id, key, node_id)) = self.find_in_queue(ROOT, cb, &mut pass) else {
                break;
            };
            self.commit(&app_id, &key, &node_id, out);
            made += 1;
        }
        made
    }

    /// Depth-first search for the next allocation in fair queue order.
    fn find_in_queue(
        &self,
        q: QueueId,
        cb: Option<&dyn ResourceManagerCallback>,
        pass: &mut PassState,
    ) -> Option<(Arc<str>, Arc<str>, Arc<str>)> {
        let queue = self.queues.get(q);
        if !queue.leaf {
            for child in self.queues.sorted_children(q) {
                if pass.exhausted_queues.contains(&child) {
                    continue;
                }
                if let Some(found) = self.find_in_queue(child, cb, pass) {
                    return Some(found);
                }
            }
            pass.exhausted_queues.insert(q);
            return None;
        }
        let headroom = self.queues.headroom(q);
        for app_id in self.app_order(q) {
            if pass.exhausted_apps.contains(&app_id) {
                continue;
            }
            if let Some((key, node)) = self.find_for_app(&app_id, headroom.as_ref(), cb, pass) {
                return Some((app_id, key, node));
            }
            pass.exhausted_apps.insert(app_id);
        }
        pass.exhausted_queues.insert(q);
        None
    }

    /// Candidate applications of a leaf in its policy's order (spec 8.4).
    fn app_order(&self, q: QueueId) -> Vec<Arc<str>> {
        let queue = self.queues.get(q);
        let apps = queue.apps.values().filter_map(|id| self.apps.get(id));
        match queue.sort_policy {
            AppSortPolicy::Fifo => apps
                .filter(|a| a.has_pending())
                .map(|a| a.id.clone())
                .collect(),
            AppSortPolicy::Fair => {
                let mut v: Vec<_> = apps
                    .filter(|a| a.has_pending())
                    .map(|a| (shares(&a.allocated, queue.guaranteed.as_ref()), a))
                    .collect();
                v.sort_by(|(sa, a), (sb, b)| {
                    compare_shares(sa, sb)
                        .then(a.seq.cmp(&b.seq))
                        .then(a.id.cmp(&b.id))
                });
                v.into_iter().map(|(_, a)| a.id.clone()).collect()
            }
            AppSortPolicy::StateAware => {
                let all: Vec<&Application> = apps.collect();
                let starting = all.iter().any(|a| a.state == AppState::Starting);
                let mut admitted_accepted = false;
                let mut out = Vec::new();
                for a in all {
                    if !a.has_pending() {
                        continue;
                    }
                    if a.state == AppState::Accepted {
                        if starting || admitted_accepted {
                            continue;
                        }
                        admitted_accepted = true;
                    }
                    out.push(a.id.clone());
                }
                out
            }
        }
    }

    /// Tries the asks of one application in order (spec 8.5).
    fn find_for_app(
        &self,
        app_id: &Arc<str>,
        headroom: Option<&Resource>,
        cb: Option<&dyn ResourceManagerCallback>,
        pass: &mut PassState,
    ) -> Option<(Arc<str>, Arc<str>)> {
        let app = &self.apps[app_id];
        let start = match pass.ask_cursor.get(app_id) {
            Some(k) => Bound::Excluded(k.clone()),
            None => Bound::Unbounded,
        };
        for okey in app.ask_order.range((start, Bound::Unbounded)) {
            let ask = &app.asks[&okey.2];
            let fits_queue = headroom.is_none_or(|h| ask.resource.fits_in_max_undef(h));
            if fits_queue {
                if let Some(node) = self.find_node(ask, cb, pass) {
                    return Some((ask.key.clone(), node));
                }
            }
            pass.ask_cursor.insert(app_id.clone(), okey.clone());
        }
        None
    }

    /// The first node in policy order that takes the ask (spec 8.7).
    fn find_node(
        &self,
        ask: &Ask,
        cb: Option<&dyn ResourceManagerCallback>,
        pass: &mut PassState,
    ) -> Option<Arc<str>> {
        let try_node = |n: &Node| -> bool {
            if !n.fits_available(&ask.resource) {
                return false;
            }
            match cb {
                None => true,
                Some(cb) => {
                    let args = si::PredicatesArgs {
                        allocation_key: ask.key.to_string(),
                        node_id: n.id.to_string(),
                        allocate: true,
                    };
                    match cb.predicates(&args) {
                        Ok(()) => true,
                        Err(reason) => {
                            log::debug!("predicates refused {} on {}: {reason}", ask.key, n.id);
                            false
                        }
                    }
                }
            }
        };
        if let Some(required) = &ask.required_node {
            let n = self.nodes.get(required.as_str())?;
            return try_node(n).then(|| n.id.clone());
        }
        let shape_cacheable = cb.is_none();
        if shape_cacheable && pass.unfit_shapes.contains(&ask.resource) {
            return None;
        }
        for key in &self.node_order {
            let n = &self.nodes[&key.id];
            if n.schedulable && try_node(n) {
                return Some(n.id.clone());
            }
        }
        if shape_cacheable {
            pass.unfit_shapes.insert(ask.resource.clone());
        }
        None
    }

    /// Makes the allocation (spec 8.7 step 3 and 8.8) and queues its report.
    fn commit(
        &mut self,
        app_id: &Arc<str>,
        key: &Arc<str>,
        node_id: &Arc<str>,
        out: &mut Outcomes,
    ) {
        let app = self.apps.get_mut(app_id).expect("found by the search");
        let ask = app.asks.get_mut(key).expect("found by the search");
        let resource = ask.resource.clone();
        app.ask_order.remove(&ask.order_key());
        ask.pending_repeat -= 1;
        if ask.pending_repeat > 0 {
            app.ask_order.insert(ask.order_key());
        }
        let ask = ask.clone();
        app.pending = app.pending.sub_clamped(&resource);
        app.allocated.add_assign(&resource);
        let uuid: Arc<str> = Arc::from(uuid::Uuid::new_v4().to_string());
        app.allocations.insert(uuid.clone());
        let queue = app.queue;
        self.queues.sub_pending(queue, &resource);
        self.queues.add_allocated(queue, &resource);
        let node = self.nodes.get_mut(node_id).expect("found by the search");
        node.allocated.add_assign(&resource);
        node.allocations.insert(uuid.clone());
        self.reposition_node(node_id);
        self.allocation_count += 1;
        out.assumed.push(si::AssumedAllocation {
            allocation_key: key.to_string(),
            node_id: node_id.to_string(),
        });
        out.allocation().new.push(si::Allocation {
            allocation_key: key.to_string(),
            allocation_tags: ask.tags.clone(),
            uuid: uuid.to_string(),
            resource_per_alloc: Some(resource.to_proto()),
            priority: Some(si::Priority {
                priority: Some(si::priority::Priority::PriorityValue(ask.priority)),
            }),
            queue_name: self.queues.get(queue).path.clone(),
            node_id: node_id.to_string(),
            application_id: app_id.to_string(),
            partition_name: self.name.clone(),
            task_group_name: ask.task_group.clone(),
            placeholder: ask.placeholder,
        });
        self.allocations.insert(
            uuid.clone(),
            Allocation {
                uuid,
                key: key.clone(),
                app_id: app_id.clone(),
                node_id: node_id.clone(),
                resource,
                queue,
                tags: ask.tags,
                priority: ask.priority,
                task_group: ask.task_group,
                placeholder: ask.placeholder,
            },
        );
        if !ask.placeholder {
            self.fire(app_id, AppEvent::Run, None, out);
        }
    }

    /// Whether any queue in this partition has demand.
    pub fn has_pending(&self) -> bool {
        self.queues.get(ROOT).pending.is_strictly_positive() && !self.nodes.is_empty()
    }
}

impl Partition {
    /// Applies a new configuration to this live partition (spec 2.8).
    pub fn reconfigure(&mut self, cfg: &PartitionConfig) -> Result<(), String> {
        let root = cfg
            .queues
            .first()
            .filter(|q| q.name == "root")
            .ok_or("partition cannot be created without root queue")?;
        let placement = PlacementManager::new(&cfg.placement_rules)?;
        let policy = NodeSortPolicy::new(
            &cfg.node_sort_policy.policy_type,
            &cfg.node_sort_policy.resource_weights,
        )?;
        self.queues.reconfigure(root)?;
        self.queues.remove_unused();
        self.placement = placement;
        self.node_policy = policy;
        let ids: Vec<Arc<str>> = self.nodes.keys().cloned().collect();
        for id in ids {
            self.reposition_node(&id);
        }
        Ok(())
    }
}
