//! What a Kubernetes shim puts on nodes and asks, so that the REST
//! service and the web UI show the simulated cluster as they show a real
//! one.

use std::collections::BTreeMap;

use sicore::proto::si::v1 as si;

/// Nodes per simulated rack.
pub(crate) const NODES_PER_RACK: usize = 20;

/// The host and rack attributes a Kubernetes shim sends, which the REST
/// service reports as `hostName` and `rackName` (web UI: node list).
pub(crate) fn node_attributes(index: usize, node_id: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("si.io/hostname".to_string(), node_id.to_string()),
        (
            "si.io/rackname".to_string(),
            format!("/rack-{:03}", index / NODES_PER_RACK),
        ),
    ])
}

/// The namespace and pod-name tags a Kubernetes shim puts on an ask; the
/// web UI shows `<namespace>/<podName>` as the allocation's display name.
pub(crate) fn pod_tags(namespace: &str, pod: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "kubernetes.io/meta/namespace".to_string(),
            namespace.to_string(),
        ),
        ("kubernetes.io/meta/podName".to_string(), pod.to_string()),
    ])
}

pub(crate) fn resource(memory: i64, vcore: i64) -> Option<si::Resource> {
    sicore_c_rm::res(&[("memory", memory), ("vcore", vcore)])
}
