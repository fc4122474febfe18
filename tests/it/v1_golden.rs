//! Golden decode tests of the SI v1.x wire: messages encoded by
//! golang/protobuf with the generated types of the SI Go module v1.8.0
//! (`tests/golden/v1/gen`), decoded with the library's v1 types and
//! compared field by field, then fed through the C family as an RM would
//! send them.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use prost::Message;
use sicore::ffi::sicore_status::*;
use sicore::ffi::*;
use sicore::proto::si18::v1 as si18;
use sicore_c_rm::v1::{self as rmv1, RmV1};
use sicore_c_rm::Handle;

const REGISTER: &[u8] = include_bytes!("../golden/v1/register.bin");
const NODES: &[u8] = include_bytes!("../golden/v1/nodes.bin");
const APPLICATIONS: &[u8] = include_bytes!("../golden/v1/applications.bin");
const ALLOCATIONS: &[u8] = include_bytes!("../golden/v1/allocations.bin");
const UPDATE_CONFIGURATION: &[u8] = include_bytes!("../golden/v1/update_configuration.bin");

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn register_request_decodes_field_by_field() {
    let r = si18::RegisterResourceManagerRequest::decode(REGISTER).unwrap();
    assert_eq!(r.rm_id, "golden-rm");
    assert_eq!(r.version, "v1.8.0");
    assert_eq!(r.policy_group, "queues");
    assert_eq!(
        r.build_info,
        map(&[("buildVersion", "1.8.0"), ("isPluginVersion", "false")])
    );
    assert!(r.config.starts_with("partitions:\n  - name: default\n"));
    assert_eq!(
        r.extra_config,
        map(&[("event.trackingEnabled", "false"), ("log.level", "-1")])
    );
}

#[test]
fn node_request_decodes_with_create_drain() {
    let r = si18::NodeRequest::decode(NODES).unwrap();
    assert_eq!(r.rm_id, "golden-rm");
    assert_eq!(r.nodes.len(), 2);
    let n = &r.nodes[0];
    assert_eq!(n.node_id, "node-1");
    assert_eq!(n.action, si18::node_info::ActionFromRm::CreateDrain as i32);
    assert_eq!(n.action, 6);
    assert_eq!(
        n.attributes,
        map(&[("si.io/hostname", "node-1"), ("si.io/rackname", "/rack-1")])
    );
    let res = &n.schedulable_resource.as_ref().unwrap().resources;
    assert_eq!((res["memory"].value, res["vcore"].value), (8000, 8));
    assert_eq!(
        r.nodes[1].action,
        si18::node_info::ActionFromRm::DrainToSchedulable as i32
    );
    assert!(r.nodes[1].schedulable_resource.is_none());
}

#[test]
fn application_request_decodes_and_matches_the_v012_types() {
    let r = si18::ApplicationRequest::decode(APPLICATIONS).unwrap();
    let a = &r.new[0];
    assert_eq!(
        (
            a.application_id.as_str(),
            a.queue_name.as_str(),
            a.partition_name.as_str()
        ),
        ("app-1", "root.golden", "default")
    );
    let ugi = a.ugi.as_ref().unwrap();
    assert_eq!(
        (ugi.user.as_str(), ugi.groups.as_slice()),
        ("alice", &["dev".to_string(), "ops".to_string()][..])
    );
    assert_eq!(a.tags, map(&[("namespace", "golden")]));
    assert_eq!(a.execution_timeout_milli_seconds, 60000);
    assert_eq!(
        a.placeholder_ask.as_ref().unwrap().resources["memory"].value,
        100
    );
    assert_eq!(a.gang_scheduling_style, "Hard");
    assert_eq!(r.remove[0].application_id, "app-0");
    // The C family decodes this message with the v0.12 types: same wire.
    let v0 = sicore::proto::si::v1::ApplicationRequest::decode(APPLICATIONS).unwrap();
    assert_eq!(v0.rm_id, r.rm_id);
    assert_eq!(v0.new[0].gang_scheduling_style, "Hard");
    assert_eq!(v0.new[0].execution_timeout_milli_seconds, 60000);
    assert_eq!(v0.remove[0].partition_name, "default");
}

#[test]
fn allocation_request_decodes_every_shape() {
    let r = si18::AllocationRequest::decode(ALLOCATIONS).unwrap();
    assert_eq!(r.rm_id, "golden-rm");
    assert_eq!(r.allocations.len(), 4);
    let pending = &r.allocations[0];
    assert_eq!(pending.allocation_key, "pod-pending");
    assert_eq!(
        pending.priority, -100,
        "int32 priority, negative, at field 6"
    );
    assert!(pending.node_id.is_empty());
    assert!(pending.originator);
    assert_eq!(
        pending.preemption_policy,
        Some(si18::PreemptionPolicy {
            allow_preempt_self: true,
            allow_preempt_other: false
        })
    );
    assert_eq!(
        pending.allocation_tags,
        map(&[
            ("creationTime", "1700000000"),
            ("kubernetes.io/meta/namespace", "golden")
        ])
    );
    let placed = &r.allocations[1];
    assert_eq!((placed.node_id.as_str(), placed.priority), ("node-1", 1000));
    let foreign = &r.allocations[2];
    assert_eq!(foreign.allocation_tags, map(&[("foreign", "static")]));
    assert!(foreign.application_id.is_empty());
    let res = &foreign.resource_per_alloc.as_ref().unwrap().resources;
    assert_eq!(res["memory"].value, 100);
    assert_eq!(res.get("vcore").map(|q| q.value), Some(0));
    let ph = &r.allocations[3];
    assert!(ph.placeholder);
    assert_eq!(ph.task_group_name, "tg");
    let rel = &r.releases.as_ref().unwrap().allocations_to_release[0];
    assert_eq!(rel.allocation_key, "pod-old");
    assert_eq!(rel.application_id, "app-1");
    assert_eq!(rel.partition_name, "default");
    assert_eq!(rel.message, "pod deleted");
    assert_eq!(
        rel.termination_type,
        si18::TerminationType::StoppedByRm as i32
    );
    // Read with the v0.12 schema the allocations (field 4) vanish as an
    // unknown field: why the edition is chosen by the function family.
    let v0 = sicore::proto::si::v1::AllocationRequest::decode(ALLOCATIONS).unwrap();
    assert!(v0.asks.is_empty());
}

#[test]
fn update_configuration_request_decodes() {
    let r = si18::UpdateConfigurationRequest::decode(UPDATE_CONFIGURATION).unwrap();
    assert_eq!(r.rm_id, "golden-rm");
    assert_eq!(r.policy_group, "queues");
    assert_eq!(r.config, "partitions:\n  - name: default\n");
    assert_eq!(r.extra_config, map(&[("log.level", "info")]));
}

#[derive(Default)]
struct Rec {
    seen: Mutex<(Vec<String>, Vec<String>, Vec<String>)>,
    cv: Condvar,
}

impl RmV1 for Rec {
    fn update_allocation(&self, m: si18::AllocationResponse) -> Result<(), String> {
        let mut s = self.seen.lock().unwrap();
        s.0.extend(m.new.into_iter().map(|a| a.allocation_key));
        s.2.extend(m.rejected_allocations.into_iter().map(|a| a.allocation_key));
        self.cv.notify_all();
        Ok(())
    }

    fn update_node(&self, m: si18::NodeResponse) -> Result<(), String> {
        let mut s = self.seen.lock().unwrap();
        s.1.extend(m.accepted.into_iter().map(|a| a.node_id));
        s.1.extend(
            m.rejected
                .into_iter()
                .map(|a| format!("rejected:{}", a.node_id)),
        );
        self.cv.notify_all();
        Ok(())
    }
}

impl Rec {
    fn wait(&self, what: &str, cond: impl Fn(&(Vec<String>, Vec<String>, Vec<String>)) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut s = self.seen.lock().unwrap();
        while !cond(&s) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "timed out waiting for {what}: {:?}", *s);
            s = self.cv.wait_timeout(s, left).unwrap().0;
        }
    }
}

#[test]
fn golden_bytes_drive_the_c_family() {
    let sched = Handle(sicore_c_rm::new_scheduler(&Default::default()).unwrap());
    let rec = Arc::new(Rec::default());
    let table = rmv1::table(&rec, false);
    let mut resp = sicore_buffer::empty();
    let mut err = sicore_buffer::empty();
    let st = sicore_v1_register_resource_manager(
        sched.0,
        REGISTER.as_ptr(),
        REGISTER.len(),
        &table,
        &mut resp,
        &mut err,
    );
    sicore_buffer_free(resp);
    let msg = sicore_c_rm::take_string(err);
    assert_eq!(st, SICORE_OK, "{msg}");
    // node-1 is created draining; node-2 is unknown, answered as rejected.
    let (st, msg) = sicore_c_rm::raw(sched.0, sicore_v1_update_node, NODES);
    assert_eq!(st, SICORE_OK, "{msg}");
    rec.wait("both nodes answered", |s| s.1.len() == 2);
    assert!(rec.seen.lock().unwrap().1.contains(&"node-1".to_string()));
    let (st, msg) = sicore_c_rm::raw(sched.0, sicore_v1_update_application, APPLICATIONS);
    assert_eq!(st, SICORE_OK, "{msg}");
    let (st, msg) = sicore_c_rm::raw(sched.0, sicore_v1_update_allocation, ALLOCATIONS);
    assert_eq!(st, SICORE_OK, "{msg}");
    // The placed pod is echoed in `new`; the foreign one never is.
    rec.wait("the placed pod echoed", |s| {
        s.0.contains(&"pod-placed".to_string())
    });
    let (st, msg) = sicore_c_rm::raw(
        sched.0,
        sicore_v1_update_configuration,
        UPDATE_CONFIGURATION,
    );
    assert_eq!(st, SICORE_REJECTED, "the update names no queues: {msg}");
    assert!(!rec
        .seen
        .lock()
        .unwrap()
        .0
        .contains(&"pod-foreign".to_string()));
}
