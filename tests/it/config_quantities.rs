//! Resource quantities in `queues.yaml` as each edition's RMs write them,
//! through the C ABI: an SI v1 RM (the k8shim) writes YuniKorn v1.x
//! quantities (units, `vcore` in cores) in queue resources, child
//! templates and user/group limits, at registration, in
//! `UpdateConfiguration` and in REST validation; an SI v0.12 RM keeps the
//! plain integers of v0.12.

use crate::common::v1::{v1_options, V1Rm};
use crate::common::{find_queue, Harness};
use sicore::ffi::sicore_status::*;
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1 as sicore_pb;
use sicore_c_rm::v1 as rmv1;

/// Every place a quantity can be, written the v1.x way.
const V1_CONFIG: &str = "
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
    limits:
      - limit: everyone
        users: ['*']
        maxresources: {memory: 1Gi, vcore: '4'}
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources:
              guaranteed: {memory: 400M, vcore: 500m}
              max: {memory: 1Gi, vcore: 2}
            limits:
              - limit: alice
                users: [alice]
                maxresources: {memory: 512Mi, vcore: 1500m}
          - name: parent
            parent: true
            childtemplate:
              resources:
                max: {memory: 2k, vcore: ' 1 k '}
";

fn named(q: &serde_json::Value, key: &str, name: &str) -> i64 {
    q[key][name]
        .as_i64()
        .unwrap_or_else(|| panic!("{key}.{name} in {q}"))
}

#[test]
fn a_v1_rm_writes_units_and_vcore_in_cores_everywhere() {
    let rm = V1Rm::new(V1_CONFIG);
    let dump = rm.dump();
    let a = find_queue(&dump, "default", "root.a").expect("root.a");
    assert_eq!(named(&a, "max", "memory"), 1 << 30);
    assert_eq!(named(&a, "max", "vcore"), 2000);
    assert_eq!(named(&a, "guaranteed", "memory"), 400_000_000);
    assert_eq!(named(&a, "guaranteed", "vcore"), 500);
    let limit = &a["limits"][0]["maxResources"];
    assert_eq!(limit["memory"].as_i64(), Some(512 << 20), "{a}");
    assert_eq!(limit["vcore"].as_i64(), Some(1500), "{a}");
    let root = find_queue(&dump, "default", "root").expect("root");
    let everyone = &root["limits"][0]["maxResources"];
    assert_eq!(everyone["memory"].as_i64(), Some(1 << 30), "{root}");
    assert_eq!(everyone["vcore"].as_i64(), Some(4000), "{root}");

    // A pod of one core fits the queue whose max is "2" cores: the k8shim
    // sends vcore in millicores.
    let (st, msg) = rm.nodes(vec![rmv1::node("n1", 4 << 30, 8000)]);
    assert_eq!(st, SICORE_OK, "{msg}");
    rm.rec.wait("node answered", |s| {
        s.nodes_accepted.iter().any(|n| n == "n1")
    });
    let ready = rmv1::node_action("n1", si18::node_info::ActionFromRm::DrainToSchedulable);
    assert_eq!(rm.nodes(vec![ready]).0, SICORE_OK);
    rm.app("app-1", "root.a");
    rm.allocate(vec![rmv1::ask("app-1", "k1", 100 << 20, 1000)], vec![]);
    rm.rec.wait("one core allocated", |s| {
        s.new.iter().any(|a| a.allocation_key == "k1")
    });

    // A dynamic child of the template gets its quantities in stored units.
    rm.app("app-2", "root.parent.child");
    let dump = rm.dump();
    let child = find_queue(&dump, "default", "root.parent.child").expect("child");
    assert_eq!(named(&child, "max", "memory"), 2000);
    assert_eq!(named(&child, "max", "vcore"), 1_000_000);
}

#[test]
fn a_malformed_v1_quantity_is_refused_naming_the_queue_and_the_value() {
    let cases = [
        (
            "max: {memory: 400X}",
            "queue root.a resources.max: memory '400X'",
            "unknown unit 'X'",
        ),
        (
            "max: {memory: 500m}",
            "memory '500m'",
            "only valid for vcore",
        ),
        ("max: {vcore: 10E}", "vcore '10E'", "out of range"),
        (
            "guaranteed: {memory: '-1'}",
            "resources.guaranteed: memory '-1'",
            "non-negative",
        ),
        (
            "max: {memory: 1.5}",
            "memory '1.5'",
            "non-negative whole number",
        ),
    ];
    for (resources, place, why) in cases {
        let config = format!(
            "partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n          - name: a\n            resources: {{{resources}}}\n"
        );
        let sched = sicore_c_rm::new_scheduler(&v1_options()).unwrap();
        let rec = std::sync::Arc::new(crate::common::v1::V1Recorder::default());
        let table = rmv1::table(&rec, false);
        let req = si18::RegisterResourceManagerRequest {
            rm_id: "rm1".into(),
            version: "1.9.0".into(),
            policy_group: "queues".into(),
            config,
            ..Default::default()
        };
        let (st, msg) = rmv1::register(sched, &req, &table);
        assert_eq!(st, SICORE_REJECTED, "{resources}: {msg}");
        assert!(
            msg.contains(place) && msg.contains(why),
            "{resources}: {msg}"
        );
        sicore::ffi::sicore_free(sched);
    }
}

#[test]
fn update_configuration_reads_units_and_a_refusal_keeps_the_old_one() {
    let rm = V1Rm::new(V1_CONFIG);
    let changed = V1_CONFIG.replace(
        "max: {memory: 1Gi, vcore: 2}",
        "max: {memory: 3G, vcore: 3}",
    );
    let (st, msg) = rm.update_config(&changed);
    assert_eq!(st, SICORE_OK, "{msg}");
    let a = find_queue(&rm.dump(), "default", "root.a").unwrap();
    assert_eq!(named(&a, "max", "memory"), 3_000_000_000);
    assert_eq!(named(&a, "max", "vcore"), 3000);
    let broken = V1_CONFIG.replace("max: {memory: 1Gi, vcore: 2}", "max: {memory: 3Q}");
    let (st, msg) = rm.update_config(&broken);
    assert_eq!(st, SICORE_REJECTED, "{msg}");
    assert!(msg.contains("root.a") && msg.contains("'3Q'"), "{msg}");
    let a = find_queue(&rm.dump(), "default", "root.a").unwrap();
    assert_eq!(
        named(&a, "max", "vcore"),
        3000,
        "the old configuration stays"
    );
}

#[test]
fn a_v012_rm_keeps_plain_integers() {
    let h = Harness::new(sicore_pb::SchedulerOptions::default());
    let plain = "partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n          - name: a\n            resources: {max: {memory: 400, vcore: 2}}\n";
    assert_eq!(
        crate::restkit::set_policy_config(h.sched, "queues", plain).0,
        SICORE_OK
    );
    let (st, msg) = h.register("rm", "queues");
    assert_eq!(st, SICORE_OK, "{msg}");
    let a = find_queue(&h.dump(), "default", "root.a").unwrap();
    assert_eq!(
        named(&a, "max", "vcore"),
        2,
        "v0.12 stores the number as written"
    );
    let units = plain.replace("memory: 400", "memory: 400M");
    let (st, msg) = crate::restkit::set_policy_config(h.sched, "queues", &units);
    assert_eq!(st, SICORE_REJECTED, "{msg}");
    assert!(msg.contains("400M"), "{msg}");
}

#[test]
fn rest_validation_reads_the_quantities_of_the_registered_edition() {
    let mut options = v1_options();
    options.rest_address = "127.0.0.1:0".into();
    let rm = V1Rm::with(options, V1_CONFIG, false, |_| {});
    let addr = crate::restkit::rest_address(rm.sched);
    let post = |body: &str| {
        crate::restkit::http(&addr, "POST", "/ws/v1/validate-conf", &[], body.as_bytes()).json()
    };
    assert_eq!(post(V1_CONFIG)["allowed"], true);
    let broken = post(&V1_CONFIG.replace("1500m", "1500x"));
    assert_eq!(broken["allowed"], false);
    let reason = broken["reason"].as_str().unwrap();
    assert!(
        reason.contains("root.a") && reason.contains("'1500x'"),
        "{reason}"
    );
}
