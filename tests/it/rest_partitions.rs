//! Two RMs with a partition of one name (issue 34 item 10): the plain name
//! keeps reaching the first RM's, `[rmID]name` reaches each RM's
//! (docs/rest-and-metrics.md, "Partition addresses").

use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore_c_rm::call;

fn add_node(sched: *mut sicore_scheduler, rm: &str, rec: &std::sync::Arc<Recorder>, id: &str) {
    let st = call(
        sched,
        sicore_update_node,
        &si::NodeRequest {
            nodes: vec![node(id, 1000, 10)],
            rm_id: rm.into(),
        },
    );
    assert_eq!(st.0, SICORE_OK, "{}", st.1);
    rec.wait("node", |s| s.nodes_accepted.iter().any(|n| n == id));
}

fn node_ids(addr: &str, partition: &str) -> Vec<String> {
    let v = crate::restkit::get_json(addr, &format!("/ws/v1/partition/{partition}/nodes"));
    v.as_array()
        .unwrap()
        .iter()
        .map(|n| n["nodeID"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn each_rms_partition_has_a_rest_address() {
    let mut o = yaml_options(&partition_yaml("", "          - name: a\n"));
    o.rest_address = "127.0.0.1:0".into();
    let h = Harness::new(o);
    assert_eq!(h.register("rm1", "queues").0, SICORE_OK);
    let rec2 = new_recorder(h.sched, Behaviour::default());
    let cbs2 = callbacks_for(&rec2);
    let (st, msg) = sicore_c_rm::register(h.sched, "rm2", "queues", "test", &cbs2);
    assert_eq!(st, SICORE_OK, "{msg}");
    add_node(h.sched, "rm1", &h.rec, "n-of-rm1");
    add_node(h.sched, "rm2", &rec2, "n-of-rm2");
    let addr = crate::restkit::rest_address(h.sched);
    assert_eq!(
        node_ids(&addr, "default"),
        ["n-of-rm1"],
        "plain: the first RM's"
    );
    assert_eq!(node_ids(&addr, "%5Brm1%5Ddefault"), ["n-of-rm1"]);
    assert_eq!(node_ids(&addr, "%5Brm2%5Ddefault"), ["n-of-rm2"]);
    let queues = crate::restkit::get_json(&addr, "/ws/v1/partition/%5Brm2%5Ddefault/queues");
    assert!(
        crate::restkit::queue_entry(&queues, "root.a").is_some(),
        "{queues}"
    );
    let usage = crate::restkit::http(
        &addr,
        "GET",
        "/ws/v1/partition/%5Brm2%5Ddefault/usage/users",
        &[],
        b"",
    );
    assert_eq!(usage.status, 200, "{}", usage.body);
    let none = crate::restkit::http(
        &addr,
        "GET",
        "/ws/v1/partition/%5Brm3%5Ddefault/nodes",
        &[],
        b"",
    );
    assert_eq!(none.status, 404, "{}", none.body);
}
