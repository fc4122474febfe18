//! Requests in the core's own terms, converted from the wire messages on
//! the RM's calling thread, so the core thread receives interned resources
//! and shared strings instead of doing the conversion itself.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::objects::application::{shared_str, shared_tags, TAG_REQUIRED_NODE};
use super::resource::Resource;
use crate::proto::si::v1 as si;

/// The priority value of an ask: only `priorityValue` counts; a priority
/// class name or no priority is 0 (spec 7.2).
pub fn priority_of(p: Option<&si::Priority>) -> i32 {
    match p.and_then(|p| p.priority.as_ref()) {
        Some(si::priority::Priority::PriorityValue(v)) => *v,
        _ => 0,
    }
}

/// One `AllocationAsk`, converted.
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
    pub tags: Arc<BTreeMap<String, String>>,
    /// Node the ask is pinned to.
    pub required_node: Option<String>,
    /// Gang task group.
    pub task_group: Arc<str>,
    /// Gang placeholder.
    pub placeholder: bool,
}

impl AskRequest {
    /// Converts a wire ask.
    pub fn from_proto(a: si::AllocationAsk) -> Self {
        AskRequest {
            key: Arc::from(a.allocation_key),
            app: Arc::from(a.application_id),
            partition: Arc::from(a.partition_name),
            resource: Resource::from_proto_opt(a.resource_ask.as_ref())
                .map(Option::unwrap_or_default),
            max_allocations: a.max_allocations,
            priority: priority_of(a.priority.as_ref()),
            required_node: a.tags.get(TAG_REQUIRED_NODE).cloned(),
            tags: shared_tags(&a.tags),
            task_group: shared_str(&a.task_group_name),
            placeholder: a.placeholder,
        }
    }
}

/// SI v1.8: an allocation the RM sent with a node ID. Unknown key: placed
/// by the RM (recovery, or bound outside the core), added at once and
/// echoed in `new`. Known pending key: the RM placed that request. Known
/// allocated key with other resources: a resize. Otherwise a no-op.
#[derive(Debug, Clone, PartialEq)]
pub struct PlacedAllocation {
    /// The request part (`max_allocations` is 1).
    pub ask: AskRequest,
    /// The node the RM placed it on.
    pub node: Arc<str>,
}

/// SI v1.8: an allocation tagged `foreign` (not scheduled by the core):
/// tracked per node as its occupied resource, never echoed; re-sending the
/// key with other resources resizes it, releasing the key removes it.
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
    /// SI v1.8: allocations sent with a node ID (empty from v0.12).
    pub placed: Vec<PlacedAllocation>,
    /// SI v1.8: foreign allocations (empty from v0.12).
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
