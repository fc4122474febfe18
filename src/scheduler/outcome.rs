//! What the core tells a resource manager, collected in production order.

use std::sync::Arc;
use std::time::Instant;

use super::alloc_uuid::AllocUuid;
use super::resource::Resource;
use crate::proto::si::v1 as si;

/// A new allocation as the core records it: shared strings only, so the
/// core thread pays no copies; the dispatcher turns it into an
/// `si.v1.Allocation` off the scheduling path.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAllocation {
    /// Allocation key of the ask.
    pub key: Arc<str>,
    /// The allocation's UUID (SI v1.x: the allocation key), 16 bytes when
    /// it is a canonical UUID (every one the core mints).
    pub uuid: AllocUuid,
    /// Node it was placed on.
    pub node: Arc<str>,
    /// Application, queue, partition and task group: one pointer shared
    /// with the other allocations of the application's task group
    /// ([`NewAllocation::app`] and the others read it).
    pub ctx: Arc<AllocCtx>,
    /// Resource per allocation.
    pub resource: Resource,
    /// The ask's priority.
    pub priority: i32,
    /// The ask's tags (shared with the ask).
    pub tags: crate::scheduler::tags::Tags,
    /// Gang placeholder.
    pub placeholder: bool,
    /// SI v1.x `preemptionPolicy.allowPreemptSelf`: `false` makes the
    /// allocation a last-resort victim (it can still be preempted); SI
    /// v0.12 allocations are true.
    pub preempt_self: bool,
    /// SI v1.x `preemptionPolicy.allowPreemptOther` of its request.
    pub preempt_other: bool,
    /// SI v1.x `originator`: the application's first task, a last-resort
    /// victim.
    pub originator: bool,
}

/// What the allocations of one application's task group have in common,
/// held once for all of them (the partition keeps one per application
/// and task group: `Partition::ctx_of`).
#[derive(Debug, Clone, PartialEq)]
pub struct AllocCtx {
    /// Owning application.
    pub app: Arc<str>,
    /// The application's queue path.
    pub queue: Arc<str>,
    /// The partition's plain name.
    pub partition: Arc<str>,
    /// Gang task group (empty when none).
    pub task_group: Arc<str>,
}

impl AllocCtx {
    /// A context of its own (tests and one-off records).
    pub fn new(app: &str, queue: &str, partition: &str, task_group: &str) -> Arc<AllocCtx> {
        Arc::new(AllocCtx {
            app: Arc::from(app),
            queue: Arc::from(queue),
            partition: Arc::from(partition),
            task_group: Arc::from(task_group),
        })
    }
}

impl NewAllocation {
    /// A record of application `app` in `root.a` with no resource, as the
    /// unit tests build one (they set the fields they need after).
    #[cfg(test)]
    pub fn for_test(key: &str, uuid: &str, node: &str, app: &str) -> NewAllocation {
        NewAllocation {
            key: key.into(),
            uuid: uuid.into(),
            node: node.into(),
            ctx: AllocCtx::new(app, "root.a", "default", ""),
            resource: Default::default(),
            priority: 0,
            tags: Default::default(),
            placeholder: false,
            preempt_self: true,
            preempt_other: true,
            originator: false,
        }
    }

    /// Owning application.
    pub fn app(&self) -> &Arc<str> {
        &self.ctx.app
    }

    /// The application's queue path.
    pub fn queue(&self) -> &Arc<str> {
        &self.ctx.queue
    }

    /// The partition's plain name.
    pub fn partition(&self) -> &Arc<str> {
        &self.ctx.partition
    }

    /// Gang task group (empty when none).
    pub fn task_group(&self) -> &Arc<str> {
        &self.ctx.task_group
    }

    /// The wire form.
    pub fn to_proto(&self) -> si::Allocation {
        si::Allocation {
            allocation_key: self.key.to_string(),
            allocation_tags: self.tags.to_map(),
            uuid: self.uuid.to_string(),
            resource_per_alloc: Some(self.resource.to_proto()),
            priority: Some(si::Priority {
                priority: Some(si::priority::Priority::PriorityValue(self.priority)),
            }),
            queue_name: self.queue().to_string(),
            node_id: self.node.to_string(),
            application_id: self.app().to_string(),
            partition_name: self.partition().to_string(),
            task_group_name: self.task_group().to_string(),
            placeholder: self.placeholder,
        }
    }
}

/// One message for the RM's `UpdateAllocation`, `UpdateApplication` or
/// `UpdateNode` callback.
#[derive(Debug, Clone, PartialEq)]
pub enum OutMsg {
    /// For `UpdateAllocation`.
    Allocation(si::AllocationResponse),
    /// For `UpdateAllocation`: new allocations, batched (the records the
    /// partition keeps, shared).
    NewAllocations(Vec<Arc<NewAllocation>>),
    /// For `UpdateAllocation`: new allocations whose `ReSyncSchedulerCache`
    /// went before (on the core thread, or as an [`OutMsg::Assume`] ahead
    /// of this message; see [`super::resync`]): the `UpdateAllocation` only.
    NewAllocationsResynced(Vec<Arc<NewAllocation>>),
    /// Tells the RM's cache of allocations whose announcement follows as
    /// [`OutMsg::NewAllocationsResynced`] (the port's `assume`: a
    /// `ReSyncSchedulerCache`, or SI v1.x's `new`): what a pass decided
    /// after its last check, delivered off the core thread.
    Assume(Vec<Arc<NewAllocation>>),
    /// For `UpdateApplication`.
    Application(si::ApplicationResponse),
    /// For `UpdateNode`.
    Node(si::NodeResponse),
}

/// A state timer of one application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppTimer {
    /// When it fires.
    pub at: Instant,
    /// The partition it belongs to.
    pub partition: super::partition_key::PartitionKey,
    /// Application id.
    pub app: std::sync::Arc<str>,
    /// The application's state epoch when the timer was set.
    pub epoch: u64,
    /// What the timer is for.
    pub kind: TimerKind,
}

/// The two kinds of application timer (spec 6.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerKind {
    /// The state timer of an active application (`Starting`, `Completing`).
    State,
    /// `Completed`/`Failed` -> `Expired` for the history entry that
    /// terminated at this time (ns since the epoch).
    Expire(i64),
    /// The gang placeholder timer (spec 9.4); `epoch` is the application's
    /// placeholder timer epoch.
    Placeholder,
}

/// Outcomes for one RM, in the order they were produced.
#[derive(Debug, Default)]
pub struct Outcomes {
    /// Messages for the dispatcher, in order.
    pub messages: Vec<OutMsg>,
    /// Allocation keys to forget through `ReSyncSchedulerCache`.
    pub forget: Vec<si::ForgotAllocation>,
    /// Timers to arm.
    pub timers: Vec<AppTimer>,
    /// Event records for the event system (spec 13).
    pub events: Vec<crate::events::Record>,
    /// How many of `messages`, from the front, the pass's barrier already
    /// handed to the RM's order, ahead of a decision it told the RM of (see
    /// [`super::resync`]); the core posts the rest. All of them are counted
    /// and seen by step-driven tests.
    pub delivered: usize,
}

/// The most allocations one `UpdateAllocation` (or ReSync) carries. A pass
/// that places more sends several messages in a row, as the reference does
/// (it sends one per allocation): each stays small enough for the edges'
/// reused encode buffer and for the RM's decode, where one message for a
/// whole large pass costs fresh memory on both sides every time.
pub const MAX_BATCH: usize = 256;

impl Outcomes {
    /// Reports a new allocation, batched with the new allocations just
    /// before it (batching keeps the relative order of everything else).
    pub fn new_allocation(&mut self, a: Arc<NewAllocation>) {
        match self.messages.last_mut() {
            Some(OutMsg::NewAllocations(v)) if v.len() < MAX_BATCH => v.push(a),
            _ => self.messages.push(OutMsg::NewAllocations(vec![a])),
        }
    }

    /// Starts a separate allocation response (for echoes the reference sends
    /// one per release entry).
    pub fn new_allocation_message(&mut self, r: si::AllocationResponse) {
        self.messages.push(OutMsg::Allocation(r));
    }

    /// Queues an event record for the event system.
    pub fn event(&mut self, record: si::EventRecord) {
        self.events.push(record.into());
    }

    /// Queues a record that carries more for SI v1.x than the v0.12 one.
    pub fn record(&mut self, record: crate::events::Record) {
        self.events.push(record);
    }

    /// Reports an application state change.
    pub fn app_updated(&mut self, update: si::UpdatedApplication) {
        self.messages
            .push(OutMsg::Application(si::ApplicationResponse {
                updated: vec![update],
                ..Default::default()
            }));
    }
}

/// Which registration of an RM something is for: a number the core gives
/// each registration, so that what was made for an RM that registered
/// again does not reach the new registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RmKey(pub u64);

/// Something the core hands to an RM callback, in the order it produced
/// them, addressed by the RM's [`RmKey`]: whoever delivers resolves the key
/// to the RM's order (`super::order::RmOrder`), which delivers them in
/// that order; a step-driven test can read them as they are.
#[derive(Debug)]
pub enum Outbound {
    /// A response for `update_allocation`, `update_application` or `update_node`.
    Message(RmKey, OutMsg),
    /// A `resync_scheduler_cache` call.
    Resync(RmKey, si::ReSyncSchedulerCacheArgs),
    /// A batch for `send_event` (each edge maps the records).
    Events(RmKey, Vec<crate::events::Record>),
    /// One `update_container_scheduling_state` call.
    ContainerState(RmKey, si::UpdateContainerSchedulingStateRequest),
}

impl Outbound {
    /// The registration it is for.
    pub fn key(&self) -> RmKey {
        match self {
            Outbound::Message(k, _)
            | Outbound::Resync(k, _)
            | Outbound::Events(k, _)
            | Outbound::ContainerState(k, _) => *k,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The allocation record's size budget. A live allocation holds one
    /// `Arc<NewAllocation>`: the record plus the `Arc`'s two counters (16
    /// bytes). The bundled mimalloc (v3, `src/page-queue.c`) rounds a
    /// block above 64 bytes up to one of four sizes per power of two
    /// (..., 128, 160, 192, 224, 256): the `Arc` has to stay at 160 bytes
    /// or less, so the record at 144. At 1M allocations each 32-byte class
    /// is ~30 MiB.
    #[test]
    fn the_allocation_record_fits_its_size_class() {
        let record = std::mem::size_of::<NewAllocation>();
        assert!(
            record <= 144,
            "NewAllocation is {record} bytes, over its budget of 144"
        );
        // The Arc's block: the counters and the record.
        assert!(2 * std::mem::size_of::<usize>() + record <= 160);
    }
}
