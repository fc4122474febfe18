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

use crate::error::Error;
use crate::proto::si::v1 as si;
use crate::proto::si18::v1 as si18;
use crate::scheduler::objects::application::{shared_str, shared_tags, TAG_REQUIRED_NODE};
use crate::scheduler::partition_key::resolve_partition;
use crate::scheduler::request::{
    AllocationUpdate, AskRequest, ForeignAllocation, PlacedAllocation,
};
use crate::scheduler::resource::Resource;

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

/// The last string handed out again when the next one is equal: the
/// allocations of one request mostly share their application and partition.
fn share(slot: &mut Option<Arc<str>>, s: String) -> Arc<str> {
    match slot {
        Some(a) if **a == *s => a.clone(),
        _ => {
            let a: Arc<str> = Arc::from(s);
            *slot = Some(a.clone());
            a
        }
    }
}

fn require(value: &str, what: impl FnOnce() -> String) -> Result<(), Error> {
    if value.is_empty() {
        Err(Error::invalid(format!("{} must not be empty", what())))
    } else {
        Ok(())
    }
}

fn own_partition(rm_id: &str, name: &str, what: impl FnOnce() -> String) -> Result<(), Error> {
    resolve_partition(rm_id, name)
        .map(|_| ())
        .map_err(|e| Error::rejected(format!("{}: {e}", what())))
}

/// Shape checks of a v1 `AllocationRequest`, before anything is converted:
/// every allocation names its key, and every one that is not foreign its
/// application; every partition is the caller's own. A release may leave
/// the key empty (the whole application) or the application empty (a
/// foreign allocation by key).
pub fn check_allocation(r: &si18::AllocationRequest) -> Result<(), Error> {
    for (i, a) in r.allocations.iter().enumerate() {
        require(&a.allocation_key, || {
            format!("AllocationRequest.allocations[{i}].allocationKey")
        })?;
        if !a.allocation_tags.contains_key(TAG_FOREIGN) {
            require(&a.application_id, || {
                format!("AllocationRequest.allocations[{i}].applicationID")
            })?;
        }
        own_partition(&r.rm_id, &a.partition_name, || {
            format!("AllocationRequest.allocations[{i}].partitionName")
        })?;
    }
    if let Some(rel) = &r.releases {
        for (i, a) in rel.allocations_to_release.iter().enumerate() {
            if a.application_id.is_empty() && a.allocation_key.is_empty() {
                return Err(Error::invalid(format!(
                    "AllocationRequest.releases.allocationsToRelease[{i}]: allocationKey and applicationID must not both be empty"
                )));
            }
            own_partition(&r.rm_id, &a.partition_name, || {
                format!("AllocationRequest.releases.allocationsToRelease[{i}].partitionName")
            })?;
        }
    }
    Ok(())
}

/// Converts a checked v1 `AllocationRequest` (see [`check_allocation`]).
pub fn allocation_update(r: si18::AllocationRequest) -> AllocationUpdate {
    let mut update = AllocationUpdate {
        rm_id: r.rm_id,
        asks: Vec::new(),
        placed: Vec::new(),
        foreign: Vec::new(),
        releases: r.releases.map(releases),
    };
    let (mut app, mut partition) = (None, None);
    for a in r.allocations {
        if let Some(kind) = a.allocation_tags.get(TAG_FOREIGN) {
            update.foreign.push(ForeignAllocation {
                preemptable: kind == FOREIGN_DEFAULT,
                key: Arc::from(a.allocation_key),
                partition: share(&mut partition, a.partition_name),
                node: Arc::from(a.node_id),
                resource: resource_of(a.resource_per_alloc.as_ref()),
            });
            continue;
        }
        if a.placeholder && a.task_group_name.is_empty() {
            log::debug!(
                "placeholder {} of application {} has no task group: dropped",
                a.allocation_key,
                a.application_id
            );
            continue;
        }
        let node = a.node_id;
        let ask = AskRequest {
            key: Arc::from(a.allocation_key),
            app: share(&mut app, a.application_id),
            partition: share(&mut partition, a.partition_name),
            resource: resource_of(a.resource_per_alloc.as_ref()),
            max_allocations: 1,
            priority: a.priority,
            required_node: a.allocation_tags.get(TAG_REQUIRED_NODE).cloned(),
            tags: shared_tags(&a.allocation_tags),
            task_group: shared_str(&a.task_group_name),
            placeholder: a.placeholder,
            preempt_other: a
                .preemption_policy
                .as_ref()
                .is_some_and(|p| p.allow_preempt_other),
            preempt_self: a
                .preemption_policy
                .as_ref()
                .is_some_and(|p| p.allow_preempt_self),
            originator: a.originator,
        };
        if node.is_empty() {
            update.asks.push(ask);
        } else {
            update.placed.push(PlacedAllocation {
                ask,
                node: Arc::from(node),
            });
        }
    }
    update
}

/// v1 releases as v0.12 allocation releases, the key in `uuid`.
fn releases(r: si18::AllocationReleasesRequest) -> si::AllocationReleasesRequest {
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
