//! Shape checks made on the caller's thread before a request is queued: a
//! request missing a required field is refused whole, and nothing of it is
//! applied.

use crate::error::Error;
use crate::proto::si::v1 as si;
use crate::scheduler::partition_key::resolve_partition;
use crate::scheduler::request::AllocationUpdate;

/// A partition name must name one of the caller's own partitions: a name
/// with another RM's `[rmID]` prefix refuses the whole request (issue 16).
fn own_partition(rm_id: &str, name: &str, what: impl FnOnce() -> String) -> Result<(), Error> {
    resolve_partition(rm_id, name)
        .map(|_| ())
        .map_err(|e| Error::rejected(format!("{}: {e}", what())))
}

fn require(value: &str, what: impl FnOnce() -> String) -> Result<(), Error> {
    if value.is_empty() {
        Err(Error::invalid(format!("{} must not be empty", what())))
    } else {
        Ok(())
    }
}

/// RegisterResourceManagerRequest: rmID and policyGroup are required.
pub fn register(r: &si::RegisterResourceManagerRequest) -> Result<(), Error> {
    require(&r.rm_id, || "RegisterResourceManagerRequest.rmID".into())?;
    require(&r.policy_group, || {
        "RegisterResourceManagerRequest.policyGroup".into()
    })
}

/// AllocationRequest: every ask names its key and application; every
/// release names its application.
pub fn allocation(r: &si::AllocationRequest) -> Result<(), Error> {
    let asks = r.asks.iter().map(|a| {
        (
            a.allocation_key.as_str(),
            a.application_id.as_str(),
            a.partition_name.as_str(),
        )
    });
    allocation_parts(&r.rm_id, asks, r.releases.as_ref())
}

/// [`allocation`] for a request decoded straight into core terms.
pub fn allocation_update(r: &AllocationUpdate) -> Result<(), Error> {
    let asks = r.asks.iter().map(|a| (&*a.key, &*a.app, &*a.partition));
    allocation_parts(&r.rm_id, asks, r.releases.as_ref())
}

fn allocation_parts<'a>(
    rm_id: &str,
    asks: impl Iterator<Item = (&'a str, &'a str, &'a str)>,
    releases: Option<&si::AllocationReleasesRequest>,
) -> Result<(), Error> {
    for (i, (key, app, partition)) in asks.enumerate() {
        require(key, || format!("AllocationRequest.asks[{i}].allocationKey"))?;
        require(app, || format!("AllocationRequest.asks[{i}].applicationID"))?;
        own_partition(rm_id, partition, || {
            format!("AllocationRequest.asks[{i}].partitionName")
        })?;
    }
    if let Some(rel) = releases {
        for (i, a) in rel.allocations_to_release.iter().enumerate() {
            require(&a.application_id, || {
                format!("AllocationRequest.releases.allocationsToRelease[{i}].applicationID")
            })?;
            own_partition(rm_id, &a.partition_name, || {
                format!("AllocationRequest.releases.allocationsToRelease[{i}].partitionName")
            })?;
        }
        for (i, a) in rel.allocation_asks_to_release.iter().enumerate() {
            require(&a.application_id, || {
                format!("AllocationRequest.releases.allocationAsksToRelease[{i}].applicationID")
            })?;
            own_partition(rm_id, &a.partition_name, || {
                format!("AllocationRequest.releases.allocationAsksToRelease[{i}].partitionName")
            })?;
        }
    }
    Ok(())
}

/// ApplicationRequest: every entry names its application.
pub fn application(r: &si::ApplicationRequest) -> Result<(), Error> {
    for (i, a) in r.new.iter().enumerate() {
        require(&a.application_id, || {
            format!("ApplicationRequest.new[{i}].applicationID")
        })?;
        own_partition(&r.rm_id, &a.partition_name, || {
            format!("ApplicationRequest.new[{i}].partitionName")
        })?;
    }
    for (i, a) in r.remove.iter().enumerate() {
        require(&a.application_id, || {
            format!("ApplicationRequest.remove[{i}].applicationID")
        })?;
        own_partition(&r.rm_id, &a.partition_name, || {
            format!("ApplicationRequest.remove[{i}].partitionName")
        })?;
    }
    Ok(())
}

/// NodeRequest: every node has an id.
pub fn node(r: &si::NodeRequest) -> Result<(), Error> {
    for (i, n) in r.nodes.iter().enumerate() {
        require(&n.node_id, || format!("NodeRequest.nodes[{i}].nodeID"))?;
        let partition = n
            .attributes
            .get(crate::scheduler::objects::node::ATTR_PARTITION)
            .map_or("", String::as_str);
        own_partition(&r.rm_id, partition, || {
            format!("NodeRequest.nodes[{i}].attributes[si/node-partition]")
        })?;
    }
    Ok(())
}
