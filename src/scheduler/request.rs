//! Requests in the core's own terms, converted from the wire messages on
//! the RM's calling thread, so the core thread receives interned resources
//! and shared strings instead of doing the conversion itself.
//!
//! # The SI v1.x contract (partitions whose edition is `V1`)
//!
//! The v1 edge translates each v1.8 `Allocation` of an `AllocationRequest`
//! into one of the shapes below, and every v1.8 release into a v0.12
//! `AllocationRelease` in [`AllocationUpdate::releases`]
//! (`allocationsToRelease`, with `uuid` = the allocation key). The core
//! applies them by key (`scheduler::partition`, `merge.rs`):
//!
//! - **Identity.** The allocation's UUID is its key; one request gives at
//!   most one allocation ([`AskRequest::max_allocations`] must be 1).
//! - **Asks** ([`AllocationUpdate::asks`], no node): unknown key → a
//!   pending request; pending key → the request is replaced (resized);
//!   allocated key with other resources → the allocation is resized (node,
//!   queue and application usage follow, a grow is counted even past
//!   capacity); same resources → nothing.
//! - **Placed** ([`PlacedAllocation`]): see there.
//! - **Foreign** ([`ForeignAllocation`]): see there.
//! - **Releases**: no application → foreign allocation `uuid` goes;
//!   `STOPPED_BY_RM` (or any type but the ones below) → the request and
//!   the allocation of the key go, each allocation answered in `released`
//!   with `STOPPED_BY_RM`; an empty key → every request and allocation of
//!   the application; `TIMEOUT` or `PREEMPTED_BY_SCHEDULER` of an
//!   allocation the core released itself → removed with no message (the
//!   RM's confirmation); `PLACEHOLDER_REPLACED` → the gang swap completes
//!   and the real allocation is reported in `new`. A release naming
//!   nothing the core holds (the confirmation of a pending placeholder's
//!   `TIMEOUT`, which the core reported as a `releasedAsks` entry) is
//!   silent.
//! - **Failures** are answered as `AllocationResponse.rejected`
//!   (`RejectedAllocationAsk {key, application, reason}`; the application
//!   is empty for a foreign allocation), which the edge maps to
//!   `rejectedAllocations`.

use std::sync::Arc;

use super::objects::application::{shared_str, TAG_REQUIRED_NODE};
use super::resource::Resource;
use super::tags::Tags;
use crate::proto::si::v1 as si;

/// SI v0.12 ask tag opting an allocation out of being a preferred
/// preemption victim (policy/preemption.md 14.1).
pub const TAG_ALLOW_PREEMPTION: &str = "yunikorn.apache.org/allow-preemption";
/// The same as a pod label, as k8shim v0.12 sends labels.
pub const TAG_ALLOW_PREEMPTION_LABEL: &str =
    "kubernetes.io/label/yunikorn.apache.org/allow-preemption";

/// `allowPreemptSelf` of a v0.12 ask: true unless either allow-preemption
/// tag says `false` (any case).
pub fn allow_preemption_tag(tags: &Tags) -> bool {
    if tags.is_empty() {
        return true;
    }
    ![TAG_ALLOW_PREEMPTION, TAG_ALLOW_PREEMPTION_LABEL]
        .iter()
        .any(|k| tags.get(k).is_some_and(|v| v.eq_ignore_ascii_case("false")))
}

/// The priority value of an ask: only `priorityValue` counts; a priority
/// class name or no priority is 0 (spec 7.2).
pub fn priority_of(p: Option<&si::Priority>) -> i32 {
    match p.and_then(|p| p.priority.as_ref()) {
        Some(si::priority::Priority::PriorityValue(v)) => *v,
        _ => 0,
    }
}

/// One `AllocationAsk`, converted (SI v1.x: an `Allocation` without a
/// node, with `max_allocations` 1; see the module doc).
#[derive(Debug, Clone, PartialEq)]
pub struct AskRequest {
    /// Allocation key.
    pub key: Arc<str>,
    /// Application id.
    pub app: Arc<str>,
    /// Partition name as the RM sent it.
    pub partition: Arc<str>,
    /// Resource per allocation, or why it could not be converted.
    pub resource: Result<Resource, String>,
    /// Repeat count as sent.
    pub max_allocations: i32,
    /// Priority value.
    pub priority: i32,
    /// Tags, shared with the ask and its allocations.
    pub tags: Tags,
    /// Node the ask is pinned to.
    pub required_node: Option<String>,
    /// Gang task group.
    pub task_group: Arc<str>,
    /// Gang placeholder.
    pub placeholder: bool,
    /// May trigger guarantee preemption: SI v1.x
    /// `preemptionPolicy.allowPreemptOther` (absent = false); SI v0.12
    /// has no such field and every ask may (policy/summary.md 3.3).
    pub preempt_other: bool,
    /// May be a preferred victim: SI v1.x
    /// `preemptionPolicy.allowPreemptSelf` (absent = false); SI v0.12:
    /// true unless the tag `yunikorn.apache.org/allow-preemption` (or the
    /// pod label form `kubernetes.io/label/yunikorn.apache.org/allow-preemption`)
    /// is `false` (policy/preemption.md 14.1).
    pub preempt_self: bool,
    /// SI v1.x `originator` (the application's first task); SI v0.12: false.
    pub originator: bool,
}

impl AskRequest {
    /// Converts a wire ask.
    pub fn from_proto(a: si::AllocationAsk) -> Self {
        let tags = Tags::from(&a.tags);
        AskRequest {
            key: Arc::from(a.allocation_key),
            app: Arc::from(a.application_id),
            partition: Arc::from(a.partition_name),
            resource: Resource::from_proto_opt(a.resource_ask.as_ref())
                .map(Option::unwrap_or_default),
            max_allocations: a.max_allocations,
            priority: priority_of(a.priority.as_ref()),
            required_node: a.tags.get(TAG_REQUIRED_NODE).cloned(),
            preempt_self: allow_preemption_tag(&tags),
            tags,
            task_group: shared_str(&a.task_group_name),
            placeholder: a.placeholder,
            preempt_other: true,
            originator: false,
        }
    }
}

/// SI v1.x: an allocation the RM sent with a node ID. Unknown key: placed
/// by the RM (recovery, or bound outside the core), added at once to node,
/// queue and application with no capacity or max check, and echoed in
/// `new`. Known pending key: the RM placed that request; it becomes the
/// allocation on that node (with the resources sent) and is echoed in
/// `new`. Known allocated key with other resources: a resize (the node is
/// not changed). Otherwise a no-op. Rejected: unknown partition,
/// application or node, a zero or negative resource, a key allocated to
/// another application or naming a foreign allocation, usage that would
/// not fit an i64. Placeholders follow the gang rules of recovery (booked,
/// they may start the gang); one without a task group is dropped silently.
#[derive(Debug, Clone, PartialEq)]
pub struct PlacedAllocation {
    /// The request part (`max_allocations` is 1).
    pub ask: AskRequest,
    /// The node the RM placed it on.
    pub node: Arc<str>,
}

/// SI v1.x: an allocation tagged `foreign` (not scheduled by the core):
/// tracked per node, the node's occupied resource being the sum of its
/// foreign allocations (so its free resource and its place in the node
/// order follow); never echoed. Re-sending the key resizes it (or moves it
/// to the node named); a release with an empty application and `uuid` =
/// the key removes it; the node's removal takes it. Rejected: empty key or
/// node, unknown partition or node, a negative resource, a key allocated
/// by the core, an occupied sum that would not fit an i64. A zero
/// resource is tracked (it occupies nothing).
#[derive(Debug, Clone, PartialEq)]
pub struct ForeignAllocation {
    /// Allocation key.
    pub key: Arc<str>,
    /// Partition name as the RM sent it.
    pub partition: Arc<str>,
    /// The node it runs on (required).
    pub node: Arc<str>,
    /// Its resource, or why it could not be converted.
    pub resource: Result<Resource, String>,
    /// `foreign: default` (preemptable) rather than `static`.
    pub preemptable: bool,
}

/// An `AllocationRequest`, converted: asks first, then releases (spec 7.1).
#[derive(Debug, Clone, PartialEq)]
pub struct AllocationUpdate {
    /// The RM that sent it.
    pub rm_id: String,
    /// Asks to add or replace.
    pub asks: Vec<AskRequest>,
    /// SI v1.x: allocations sent with a node ID (empty from v0.12).
    pub placed: Vec<PlacedAllocation>,
    /// SI v1.x: foreign allocations (empty from v0.12).
    pub foreign: Vec<ForeignAllocation>,
    /// Asks and allocations to release, as sent.
    pub releases: Option<si::AllocationReleasesRequest>,
}

impl AllocationUpdate {
    /// Converts a wire request.
    pub fn from_proto(r: si::AllocationRequest) -> Self {
        AllocationUpdate {
            rm_id: r.rm_id,
            asks: r.asks.into_iter().map(AskRequest::from_proto).collect(),
            placed: Vec::new(),
            foreign: Vec::new(),
            releases: r.releases,
        }
    }
}
