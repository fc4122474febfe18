//! A partition: an independent scheduling domain with its own queue tree,
//! nodes and applications. Every RM request and every scheduling decision
//! for the partition goes through here, on the core thread.

mod admission; // the user/group checks of the pass
pub(crate) mod apps;
mod asks;
mod commit;
mod ctx; // the allocation records' shared part
mod cycle;
mod explain; // why asks wait (objects/pending.rs)
pub use explain::{gang_counts, gang_waiting};
mod gang; // placeholders, swaps and the placeholder timeout
mod held; // REQUEST records of the causes no pass finds
mod lifecycle;
mod merge; // SI v1.x: allocations merged by key
mod nodes;
mod outstanding; // the outstanding-request check (spec 8.12)
mod place; // the allocation path of every pass
pub mod preempt; // guarantee, required-node and quota-change preemption
mod records; // USERGROUP and QUEUE records (SI v1.x)
pub use outstanding::{TriedAsks, OUTSTANDING_REASON, OUTSTANDING_REPORT_BUDGET};
mod releases;
mod reserved; // the reserved pass
mod trace; // allocations got and lost, preemptions: the REST history's trace
mod views; // read-only views for readers outside the partition

use std::collections::VecDeque;
use std::sync::Arc;

use super::clock::SharedClock;
use super::objects::application::{
    shared_str, transition, AppEvent, AppState, Application, Ask, AskOrderKey,
};
use super::objects::ask::AskEntry;
use super::objects::keyed::{KeyedSlab, Slot};
use super::objects::node::{Node, NodeSlot, NodeTable};
use super::objects::queue::{QueueId, QueueTree, ROOT};
use super::objects::reservation::{Reservations, ReservedAsk};
use super::outcome::{AppTimer, NewAllocation, Outcomes};
use super::placement::{PlacementManager, QueueView};
use super::policies::{AppSortPolicy, NodeSortPolicy};
use super::request::priority_of;
use super::resource::Resource;
use super::{FastMap, FastSet};
use crate::config::PartitionConfig;
use crate::proto::si::v1 as si;
use crate::security::{resolve_user, UserGroup};
use gang::GangBook;

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
    /// Age an ask must reach before it may reserve a node; `None` turns
    /// reservations off.
    pub reservation_delay: Option<std::time::Duration>,
    /// `Completed`/`Failed` -> `Expired`.
    pub terminated: std::time::Duration,
    /// Gang placeholder timeout when the application sets none.
    pub placeholder: std::time::Duration,
    /// The event record types wanted (the gang path skips building the
    /// others: up to three per replacement).
    pub events: crate::events::EventTypes,
}

impl AppTimeouts {
    /// The timers from the scheduler options.
    pub fn from_options(o: &crate::options::Options) -> Self {
        AppTimeouts {
            start: o.app_start_timeout,
            completing: o.app_completing_timeout,
            terminated: o.app_terminated_timeout,
            placeholder: o.placeholder_timeout,
            events: if o.disable_events {
                crate::events::EventTypes::of(&[])
            } else {
                o.event_types
            },
            reservation_delay: (!o.disable_reservation).then_some(o.reservation_delay),
        }
    }
}

pub use super::objects::allocs::{AllocTable, Allocation};

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
    /// Submitting user (empty for a rejection before the user was read).
    pub user: String,
    /// The user's groups.
    pub groups: Vec<String>,
    /// When it was submitted, Unix ns.
    pub submitted_ns: i64,
    /// States entered with their times (the application's log).
    pub state_log: Vec<(AppState, i64)>,
    /// Why it was rejected (rejections only).
    pub message: String,
}

/// Bookkeeping for one scheduling pass: asks, applications and queues that
/// cannot make progress until the pass ends. Within a pass free capacity
/// only shrinks, so what failed once keeps failing.
#[derive(Default)]
struct PassState {
    /// Per application: every ask up to and including this key has failed.
    /// Keyed by application sequence number: integers hash faster than ids.
    ask_cursor: FastMap<u64, AskOrderKey>,
    /// The headroom of the leaf being searched, kept so that its buffers
    /// serve every visit (`QueueTree::headroom_into`).
    headroom: Resource,
    exhausted_apps: FastSet<u64>,
    exhausted_queues: FastSet<QueueId>,
    /// Ask shapes that found no node and no reservation candidate (only
    /// used without predicates); indexed by whether the ask could reserve.
    unfit_shapes: [FastMap<Resource, explain::UnfitShape>; 2],
    /// Event records of the pass (REQUEST events, spec 13.2).
    events: Vec<si::EventRecord>,
    /// Whether the pass notes the asks it tries without placing them in
    /// `tried` (for the outstanding check).
    track_tried: bool,
    tried: Vec<(Arc<str>, Arc<str>)>,
    /// Asks whose "user quota failed" state flips in this pass (limits.md
    /// 4.2), applied when the pass ends: `true` = entered.
    quota_flips: Vec<(u64, Arc<str>, bool)>,
    /// Applications whose "held by a user/group maxapplications" state
    /// flips in this pass (limits.md 4.1, 6.2), applied when it ends:
    /// sequence number -> (held now, id).
    held_flips: FastMap<u64, (bool, Arc<str>)>,
    /// Whether guarantee preemption runs in this pass.
    preempt_on: bool,
    /// Set by an attempt that found the barrier dormant (cycle.rs): the
    /// search returns to wake it.
    wake_barrier: bool,
    /// Per leaf: whether it or an ancestor has a guarantee (preempt/guarantee.rs).
    preempt_leaf: FastMap<QueueId, bool>,
    /// Per leaf: preemption attempts made in this pass (spec 2.3).
    preempt_attempts: FastMap<QueueId, u32>,
    /// Requests whose preconditions passed in this pass (check time).
    preempt_checked: Vec<(Arc<str>, Arc<str>)>,
    /// Stale reservations attempts found (spec 7.1), cancelled before the
    /// next commit and when the pass ends.
    preempt_stale: Vec<(NodeSlot, ReservedAsk)>,
    /// Outcomes of the pass's attempts that did not commit (preempt/guarantee.rs).
    preempt_counts: preempt::PreemptionCounters,
    /// Why the asks the pass tried and did not place wait (explain.rs),
    /// given to them when the pass ends.
    reasons: Vec<explain::Noted>,
    /// The partition's cause ids, for the pass (explain.rs).
    cause_ids: super::objects::pending::CauseIds,
    /// Unix ns of the pass: the time its notes carry.
    now_ns: i64,
    /// Whether REQUEST records are wanted (a due record needs a note).
    records: bool,
}

/// A partition.
pub struct Partition {
    /// The name the RM uses.
    name: String,
    /// The plain name, shared into every new allocation's report.
    name_shared: Arc<str>,
    /// Per application slot, the contexts its allocation records share
    /// (ctx.rs).
    ctxs: Vec<Vec<Arc<super::outcome::AllocCtx>>>,
    /// `[rmID]name`, for messages only: ambiguous as a key.
    internal_name: String,
    /// The key the core finds it by.
    key: super::partition_key::PartitionKey,
    /// Owning RM.
    rm_id: String,
    /// The interface edition of the owning RM (set at registration).
    edition: crate::scheduler::edition::Edition,
    /// Queue tree.
    queues: QueueTree,
    /// Placement rules.
    placement: PlacementManager,
    /// Preemption: the switch, victims in flight, per-request marks.
    preempt: preempt::PreemptionBook,
    /// Nodes: by slot, by id and in the order of the node sort policy.
    nodes: NodeTable,
    /// Sum of node capacities (root's max).
    total: Resource,
    /// Active applications by slot and by id.
    apps: KeyedSlab<Application>,
    /// Live allocations by slot, with one index by UUID; nodes and
    /// applications list their slots.
    allocations: AllocTable,
    /// Recently terminated applications, newest last.
    finished: VecDeque<FinishedApp>,
    /// Recently rejected applications, newest last (at most
    /// [`COMPLETED_HISTORY`]; REST shows them for the terminated timeout).
    rejected: VecDeque<FinishedApp>,
    /// Allocations made since the partition was created.
    allocation_count: u64,
    /// Nodes held by asks that fit nowhere else (spec 8.9).
    reservations: Reservations,
    /// Gang swaps in flight and placeholders being released (spec 9).
    gang: GangBook,
    /// Asks with allocations still to make (in their application's
    /// `ask_order`), over all applications: what the per-RM limit
    /// `max_asks_per_rm` counts.
    waiting_asks: usize,
    /// Asks passes tried without placing them, for the outstanding check.
    tried: TriedAsks,
    /// The list the passes note why asks wait in (explain.rs), kept empty
    /// between passes so that its room is reused.
    reason_buffer: Vec<explain::Noted>,
    /// Asks whose last allocation a pass made (application slot and seq,
    /// ask slot and seq): made compact stand-ins when the pass ends, once
    /// its readers of the whole ask (the reasons) are done (place.rs).
    placed_whole: Vec<(Slot, u64, Slot, u64)>,
    /// Ids of the causes asks wait for, kept between passes so that a
    /// pass finding an ask's cause again can tell (objects/pending/stamp.rs).
    cause_ids: super::objects::pending::CauseIds,
    /// Applications whose asks may wait for a cause no pass finds (held
    /// by `maxapplications`, gang members), by id: what the check of held
    /// causes walks (held.rs). Each is marked (`Application::held_watch`).
    held_watch: FastSet<Arc<str>>,
    /// Unix ns of the next check of held causes.
    next_held_check_ns: i64,
    /// User and group limits: caps and trackers (limits.md).
    ugm: super::ugm::Ugm,
    seq: u64,
    timeouts: AppTimeouts,
    /// The partition's only source of time (timers, ages, timestamps).
    clock: SharedClock,
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

impl Partition {
    /// Creates a partition from validated configuration; it reads time
    /// only from `clock`.
    pub fn new(
        rm_id: &str,
        cfg: &PartitionConfig,
        timeouts: AppTimeouts,
        clock: SharedClock,
    ) -> Result<Self, String> {
        let root = cfg
            .queues
            .first()
            .filter(|q| q.name == "root")
            .ok_or("partition cannot be created without root queue")?;
        let mut queues = QueueTree::from_config(root)?;
        let mut ugm = super::ugm::Ugm::default();
        // The configuration's queues and caps are the first records.
        records::start(&mut queues, &mut ugm, timeouts.events);
        ugm.reload(
            super::ugm::Caps::build(cfg, &queues)?,
            &queues,
            std::iter::empty(),
        );
        Ok(Partition {
            name: cfg.name.clone(),
            name_shared: Arc::from(cfg.name.as_str()),
            ctxs: Vec::new(),
            internal_name: format!("[{rm_id}]{}", cfg.name),
            key: super::partition_key::PartitionKey {
                rm_id: rm_id.to_string(),
                name: cfg.name.clone(),
            },
            rm_id: rm_id.to_string(),
            edition: crate::scheduler::edition::Edition::V012,
            queues,
            placement: PlacementManager::new(&cfg.placement_rules)?,
            preempt: preempt::PreemptionBook {
                configured: cfg.preemption.enabled,
                quota: preempt::quota::QuotaBook {
                    enabled: cfg.preemption.quota_enabled.unwrap_or(false),
                    ..Default::default()
                },
                instance: preempt::next_instance(),
                ..Default::default()
            },
            nodes: NodeTable::new(NodeSortPolicy::new(
                &cfg.node_sort_policy.policy_type,
                &cfg.node_sort_policy.resource_weights,
            )?),
            total: Resource::new(),
            apps: KeyedSlab::default(),
            allocations: AllocTable::default(),
            finished: VecDeque::new(),
            rejected: VecDeque::new(),
            allocation_count: 0,
            reservations: Reservations::default(),
            gang: GangBook::default(),
            waiting_asks: 0,
            tried: TriedAsks::default(),
            reason_buffer: Vec::new(),
            placed_whole: Vec::new(),
            cause_ids: Default::default(),
            held_watch: FastSet::default(),
            next_held_check_ns: 0,
            ugm,
            seq: 0,
            timeouts,
            clock,
        })
    }

    pub(crate) fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn update_root_max(&mut self) {
        // An unlimited node leaves the partition without a size: root has
        // no max (the scheduling pass knows, see `has_unlimited_node`).
        let max =
            (!self.nodes.is_empty() && !self.has_unlimited_node()).then(|| self.total.clone());
        self.queues.get_mut(ROOT).max = max;
    }

    /// Whether the partition's node is an unlimited one (spec 11.6; it is
    /// then the only node).
    pub fn has_unlimited_node(&self) -> bool {
        self.nodes.len() == 1 && self.nodes.values().all(|n| n.unlimited)
    }
}

impl Partition {
    /// Checks, without changing anything, that `cfg` can be applied to this
    /// live partition.
    pub fn check_reconfigure(&self, cfg: &PartitionConfig) -> Result<(), String> {
        let root = cfg
            .queues
            .first()
            .filter(|q| q.name == "root")
            .ok_or("partition cannot be created without root queue")?;
        self.queues.check_reconfigure(root)
    }

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
        // The caps' names are checked against the live tree first; the
        // caps are built again once the tree has the new queues.
        super::ugm::Caps::build(cfg, &self.queues)?;
        // Every check comes before the first change (nothing half-applied).
        // Queues that left the configuration drain until the queue
        // cleaner removes them (spec 3.7).
        let quota_before = self.quota_before_reload();
        self.queues.reconfigure(root)?;
        // Lowered maxes arm quota-change preemption (preempt/quota.rs).
        self.quota_after_reload(quota_before);
        // Headroom is recomputed from the new caps; links are rebuilt
        // (limits.md 5, docs/limits.md for where sicore differs).
        let caps = super::ugm::Caps::build(cfg, &self.queues)?;
        self.ugm.reload(caps, &self.queues, self.apps.slots_mut());
        self.placement = placement;
        self.nodes.set_policy(policy);
        self.preempt.configured = cfg.preemption.enabled;
        self.preempt.quota.enabled = cfg.preemption.quota_enabled.unwrap_or(false);
        // Policies, guarantees and priority properties may have changed.
        self.rebuild_app_orders();
        Ok(())
    }
}

#[cfg(test)]
mod explain_tests;
#[cfg(test)]
mod held_tests;
#[cfg(test)]
mod limits_tests;
#[cfg(test)]
mod nothing_fits_bench;
#[cfg(test)]
mod standin_tests;
#[cfg(test)]
mod tests;
