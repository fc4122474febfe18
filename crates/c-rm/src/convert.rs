//! Converters from the v0.12 messages a workload is written in to the SI
//! v1 messages, so one workload drives either edition.

use sicore::proto::si::v1 as si;
use sicore::proto::si18::v1 as si18;

/// A v0.12 node of the workload as the v1 RM sends it.
pub fn v1_node(n: si::NodeInfo) -> si18::NodeInfo {
    si18::NodeInfo {
        node_id: n.node_id,
        attributes: n.attributes,
        action: si18::node_info::ActionFromRm::Create as i32,
        schedulable_resource: n.schedulable_resource.map(v1_resource),
    }
}

/// A v0.12 resource as the v1 wire carries it.
pub fn v1_resource(r: si::Resource) -> si18::Resource {
    si18::Resource {
        resources: r
            .resources
            .into_iter()
            .map(|(k, q)| (k, si18::Quantity { value: q.value }))
            .collect(),
    }
}

/// A one-allocation ask of the workload as a v1 request.
pub fn v1_request(a: &si::AllocationAsk) -> si18::Allocation {
    si18::Allocation {
        allocation_key: a.allocation_key.clone(),
        application_id: a.application_id.clone(),
        allocation_tags: a.tags.clone(),
        partition_name: a.partition_name.clone(),
        resource_per_alloc: a.resource_ask.clone().map(v1_resource),
        ..Default::default()
    }
}
