//! The inbound half of the v1.8 edge: v1 requests converted, on the RM's
//! calling thread, into the core's commands, which keep the v0.12 shape.
//!
//! - an `Allocation` without a node is a request ([`AskRequest`], one
//!   allocation); with a node it is a [`PlacedAllocation`]; tagged
//!   `foreign` it is a [`ForeignAllocation`] (an empty node is left for
//!   the core to reject, through the callbacks);
//! - a placeholder without a task group is dropped, as the v1.8 core does;
//! - an `AllocationRelease` names the key; it travels as one v0.12 release
//!   whose `uuid` is that key (in a v1 partition every uuid is the key);
//! - `NodeInfo` keeps its raw action value (`CREATE_DRAIN` is 6).

use std::sync::Arc;

use super::super::wire::{share, share_recent};
use crate::error::Error;
use crate::proto::si::v1 as si;
use crate::proto::si18::v1 as si18;
use crate::scheduler::objects::application::{shared_str, TAG_REQUIRED_NODE};
use crate::scheduler::outcome::NewAllocation;
use crate::scheduler::partition_key::check_partition_owner;
use crate::scheduler::request::{
    AllocationUpdate, AskRequest, ForeignAllocation, PlacedAllocation,
};
use crate::scheduler::resource::Resource;
use crate::scheduler::tags::Tags;

/// The allocation tag that marks an allocation the core did not schedule.
pub const TAG_FOREIGN: &str = "foreign";
/// `foreign` value of a preemptable foreign allocation.
pub const FOREIGN_DEFAULT: &str = "default";

/// A v1 resource in the v0.12 shape (the same message on the wire).
pub fn resource_to_v0(r: si18::Resource) -> si::Resource {
    si::Resource {
        resources: r
            .resources
            .into_iter()
            .map(|(k, q)| (k, si::Quantity { value: q.value }))
            .collect(),
    }
}

/// A v0.12 resource in the v1 shape.
pub fn resource_to_v1(r: si::Resource) -> si18::Resource {
    si18::Resource {
        resources: r
            .resources
            .into_iter()
            .map(|(k, q)| (k, si18::Quantity { value: q.value }))
            .collect(),
    }
}

/// Interns the names straight from the v1 map (no v0.12 copy of it).
fn resource_of(r: Option<&si18::Resource>) -> Result<Resource, String> {
    match r {
        None => Ok(Resource::default()),
        Some(r) => Resource::from_pairs(r.resources.iter().map(|(k, q)| (k.as_str(), q.value))),
    }
}

fn require(present: bool, what: impl FnOnce() -> String) -> Result<(), Error> {
    if !present {
        Err(Error::invalid(format!("{} must not be empty", what())))
    } else {
        Ok(())
    }
}

fn own_partition(rm_id: &str, name: &str, what: impl FnOnce() -> String) -> Result<(), Error> {
    check_partition_owner(rm_id, name).map_err(|e| Error::rejected(format!("{}: {e}", what())))
}

/// The shape check of allocation `i` of a request from `rm_id` (see
/// [`check_allocation`]): whether it has a key and an application, and
/// is foreign.
pub(super) fn check_one_allocation(
    rm_id: &str,
    i: usize,
    (has_key, has_app, foreign): (bool, bool, bool),
    partition: &str,
) -> Result<(), Error> {
    require(has_key, || {
        format!("AllocationRequest.allocations[{i}].allocationKey")
    })?;
    if !foreign {
        require(has_app, || {
            format!("AllocationRequest.allocations[{i}].applicationID")
        })?;
    }
    own_partition(rm_id, partition, || {
        format!("AllocationRequest.allocations[{i}].partitionName")
    })
}

/// The shape check of release `i` of a request from `rm_id` (see
/// [`check_allocation`]): whether it has a key or an application.
pub(super) fn check_one_release(
    rm_id: &str,
    i: usize,
    has_key_or_app: bool,
    partition: &str,
) -> Result<(), Error> {
    if !has_key_or_app {
        return Err(Error::invalid(format!(
            "AllocationRequest.releases.allocationsToRelease[{i}]: allocationKey and applicationID must not both be empty"
        )));
    }
    own_partition(rm_id, partition, || {
        format!("AllocationRequest.releases.allocationsToRelease[{i}].partitionName")
    })
}

/// Shape checks of a v1 `AllocationRequest`, before anything is converted:
/// every allocation names its key, and every one that is not foreign its
/// application; every partition is the caller's own. A release may leave
/// the key empty (the whole application) or the application empty (a
/// foreign allocation by key).
pub fn check_allocation(r: &si18::AllocationRequest) -> Result<(), Error> {
    for (i, a) in r.allocations.iter().enumerate() {
        check_one_allocation(
            &r.rm_id,
            i,
            (
                !a.allocation_key.is_empty(),
                !a.application_id.is_empty(),
                a.allocation_tags.contains_key(TAG_FOREIGN),
            ),
            &a.partition_name,
        )?;
    }
    if let Some(rel) = &r.releases {
        for (i, a) in rel.allocations_to_release.iter().enumerate() {
            let has_key_or_app = !a.allocation_key.is_empty() || !a.application_id.is_empty();
            check_one_release(&r.rm_id, i, has_key_or_app, &a.partition_name)?;
        }
    }
    Ok(())
}

/// One v1 `Allocation` as decoded, whichever decoder read it (prost's
/// message or the request's bytes, see [`super::wire`]).
pub(super) struct Fields<'a> {
    pub key: &'a str,
    pub app: &'a str,
    pub partition: &'a str,
    pub node: &'a str,
    pub task_group: &'a str,
    pub tags: Tags,
    pub priority: i32,
    pub placeholder: bool,
    pub originator: bool,
    pub preempt_self: bool,
    pub preempt_other: bool,
}

/// Builds the [`AllocationUpdate`] of a checked request one allocation at
/// a time, in the order sent. Consecutive allocations share their
/// application, partition, task group and node strings.
pub(super) struct Builder {
    update: AllocationUpdate,
    app: Option<Arc<str>>,
    partition: Option<Arc<str>>,
    task_group: Option<Arc<str>>,
    node: Option<Arc<str>>,
}

impl Builder {
    /// Room for `asks` requests, `placed` allocations with a node and
    /// `foreign` ones.
    pub fn with_capacity(rm_id: String, asks: usize, placed: usize, foreign: usize) -> Self {
        Builder {
            update: AllocationUpdate {
                rm_id,
                asks: Vec::with_capacity(asks),
                placed: Vec::with_capacity(placed),
                foreign: Vec::with_capacity(foreign),
                releases: None,
            },
            app: None,
            partition: None,
            task_group: None,
            node: None,
        }
    }

    /// Adds one allocation; `resource` interns its resource, and is not
    /// called for an allocation that is dropped.
    pub fn push(&mut self, a: Fields<'_>, resource: impl FnOnce() -> Result<Resource, String>) {
        if let Some(kind) = a.tags.get(TAG_FOREIGN) {
            self.update.foreign.push(ForeignAllocation {
                preemptable: kind == FOREIGN_DEFAULT,
                key: Arc::from(a.key),
                partition: share_recent(&mut self.partition, a.partition),
                node: share(&mut self.node, a.node),
                resource: resource(),
            });
            return;
        }
        if a.placeholder && a.task_group.is_empty() {
            log::debug!(
                "placeholder {} of application {} has no task group: dropped",
                a.key,
                a.app
            );
            return;
        }
        let ask = AskRequest {
            key: Arc::from(a.key),
            app: share_recent(&mut self.app, a.app),
            partition: share_recent(&mut self.partition, a.partition),
            resource: resource(),
            max_allocations: 1,
            priority: a.priority,
            required_node: a.tags.get(TAG_REQUIRED_NODE).map(str::to_string),
            tags: a.tags,
            task_group: if a.task_group.is_empty() {
                shared_str("")
            } else {
                share(&mut self.task_group, a.task_group)
            },
            placeholder: a.placeholder,
            preempt_other: a.preempt_other,
            preempt_self: a.preempt_self,
            originator: a.originator,
        };
        if a.node.is_empty() {
            self.update.asks.push(ask);
        } else {
            self.update.placed.push(PlacedAllocation {
                ask,
                node: share(&mut self.node, a.node),
            });
        }
    }

    /// The update, with the request's releases.
    pub fn finish(mut self, releases: Option<si18::AllocationReleasesRequest>) -> AllocationUpdate {
        self.update.releases = releases.map(convert_releases);
        self.update
    }
}

/// Converts a checked v1 `AllocationRequest` (see [`check_allocation`]).
pub fn allocation_update(r: si18::AllocationRequest) -> AllocationUpdate {
    let mut b = Builder::with_capacity(r.rm_id, r.allocations.len(), 0, 0);
    for mut a in r.allocations {
        let resource = a.resource_per_alloc.take();
        let policy = a.preemption_policy.unwrap_or_default();
        let fields = Fields {
            key: &a.allocation_key,
            app: &a.application_id,
            partition: &a.partition_name,
            node: &a.node_id,
            task_group: &a.task_group_name,
            tags: Tags::from(&a.allocation_tags),
            priority: a.priority,
            placeholder: a.placeholder,
            originator: a.originator,
            preempt_self: policy.allow_preempt_self,
            preempt_other: policy.allow_preempt_other,
        };
        b.push(fields, || resource_of(resource.as_ref()));
    }
    b.finish(r.releases)
}

/// v1 releases as v0.12 allocation releases, the key in `uuid`.
fn convert_releases(r: si18::AllocationReleasesRequest) -> si::AllocationReleasesRequest {
    si::AllocationReleasesRequest {
        allocations_to_release: r
            .allocations_to_release
            .into_iter()
            .map(|a| si::AllocationRelease {
                partition_name: a.partition_name,
                application_id: a.application_id,
                uuid: a.allocation_key,
                termination_type: a.termination_type,
                message: a.message,
            })
            .collect(),
        allocation_asks_to_release: Vec::new(),
    }
}

/// A v1 `NodeRequest` in the v0.12 shape; the action value passes as sent.
pub fn node_request(r: si18::NodeRequest) -> si::NodeRequest {
    si::NodeRequest {
        rm_id: r.rm_id,
        nodes: r
            .nodes
            .into_iter()
            .map(|n| si::NodeInfo {
                node_id: n.node_id,
                action: n.action,
                attributes: n.attributes,
                schedulable_resource: n.schedulable_resource.map(resource_to_v0),
                occupied_resource: None,
                existing_allocations: Vec::new(),
            })
            .collect(),
    }
}

/// A v1 `ApplicationRequest` in the v0.12 shape (the same message).
pub fn application_request(r: si18::ApplicationRequest) -> si::ApplicationRequest {
    si::ApplicationRequest {
        rm_id: r.rm_id,
        new: r
            .new
            .into_iter()
            .map(|a| si::AddApplicationRequest {
                application_id: a.application_id,
                queue_name: a.queue_name,
                partition_name: a.partition_name,
                ugi: a.ugi.map(|u| si::UserGroupInformation {
                    user: u.user,
                    groups: u.groups,
                }),
                tags: a.tags,
                execution_timeout_milli_seconds: a.execution_timeout_milli_seconds,
                placeholder_ask: a.placeholder_ask.map(resource_to_v0),
                gang_scheduling_style: a.gang_scheduling_style,
            })
            .collect(),
        remove: r
            .remove
            .into_iter()
            .map(|a| si::RemoveApplicationRequest {
                application_id: a.application_id,
                partition_name: a.partition_name,
            })
            .collect(),
    }
}

/// A decided allocation in its v1 form: the key is the identity.
pub fn new_allocation(a: &NewAllocation) -> si18::Allocation {
    si18::Allocation {
        allocation_key: a.key.to_string(),
        allocation_tags: a.tags.to_map(),
        resource_per_alloc: Some(resource_to_v1(a.resource.to_proto())),
        priority: a.priority,
        node_id: a.node.to_string(),
        application_id: a.app().to_string(),
        partition_name: a.partition().to_string(),
        task_group_name: a.task_group().to_string(),
        placeholder: a.placeholder,
        // Echoed as the reference's core does (its request's values).
        originator: a.originator,
        preemption_policy: Some(si18::PreemptionPolicy {
            allow_preempt_self: a.preempt_self,
            allow_preempt_other: a.preempt_other,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alloc(key: &str, node: &str) -> si18::Allocation {
        si18::Allocation {
            allocation_key: key.into(),
            application_id: "app".into(),
            node_id: node.into(),
            priority: -7,
            resource_per_alloc: Some(si18::Resource {
                resources: [("memory".to_string(), si18::Quantity { value: 10 })].into(),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn allocations_split_into_requests_placed_and_foreign() {
        let mut foreign = alloc("f", "n1");
        foreign.application_id.clear();
        foreign
            .allocation_tags
            .insert(TAG_FOREIGN.into(), "static".into());
        let mut bad_ph = alloc("ph", "");
        bad_ph.placeholder = true;
        let req = si18::AllocationRequest {
            rm_id: "rm".into(),
            allocations: vec![alloc("a", ""), alloc("b", "n2"), foreign, bad_ph],
            releases: Some(si18::AllocationReleasesRequest {
                allocations_to_release: vec![si18::AllocationRelease {
                    application_id: "app".into(),
                    allocation_key: "a".into(),
                    termination_type: si18::TerminationType::StoppedByRm as i32,
                    message: "gone".into(),
                    ..Default::default()
                }],
            }),
        };
        check_allocation(&req).unwrap();
        let u = allocation_update(req);
        assert_eq!(u.asks.len(), 1);
        assert_eq!(&*u.asks[0].key, "a");
        assert_eq!(u.asks[0].max_allocations, 1);
        assert_eq!(u.asks[0].priority, -7);
        assert_eq!(u.placed.len(), 1);
        assert_eq!(&*u.placed[0].node, "n2");
        assert_eq!(u.foreign.len(), 1);
        assert!(!u.foreign[0].preemptable);
        let rel = &u.releases.unwrap().allocations_to_release;
        assert_eq!(rel.len(), 1);
        assert_eq!(rel[0].uuid, "a");
        assert_eq!(rel[0].message, "gone");
    }

    #[test]
    fn shape_checks_refuse_missing_keys_and_other_rms_partitions() {
        let mut req = si18::AllocationRequest {
            rm_id: "rm".into(),
            allocations: vec![alloc("", "")],
            releases: None,
        };
        assert!(check_allocation(&req).is_err());
        req.allocations = vec![alloc("k", "")];
        req.allocations[0].partition_name = "[other]default".into();
        assert!(check_allocation(&req).is_err());
        req.allocations[0].partition_name.clear();
        req.allocations[0].application_id.clear();
        assert!(check_allocation(&req).is_err());
    }
}
