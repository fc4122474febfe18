//! `/metrics` with two RMs and two partitions of one RM (issue 34 item 4):
//! every series is unique (no metric name announced twice, no two samples
//! with one name and label set); with one RM and one partition the names
//! and labels stay YuniKorn's (docs/rest-and-metrics.md).

use std::collections::HashSet;
use std::sync::Arc;

use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore_c_rm::call;

const YAML: &str = "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        limits:
          - {users: [alice], maxresources: {memory: 1000}}
        queues:
          - name: a
  - name: gpu
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
";

fn options() -> sicore::proto::sicore::v1::SchedulerOptions {
    let mut o = yaml_options(YAML);
    o.rest_address = "127.0.0.1:0".into();
    o
}

/// One RM's node and application of alice in `root.a` of `default`,
/// holding `memory`.
fn run_alice(sched: *mut sicore_scheduler, rm: &str, rec: &Arc<Recorder>, memory: i64) {
    let st = call(
        sched,
        sicore_update_node,
        &si::NodeRequest {
            nodes: vec![node(&format!("{rm}-n"), 1000, 10)],
            rm_id: rm.into(),
        },
    );
    assert_eq!(st.0, SICORE_OK, "{}", st.1);
    rec.wait("node", |s| s.nodes_accepted.len() == 1);
    let st = call(
        sched,
        sicore_update_application,
        &si::ApplicationRequest {
            new: vec![app(&format!("{rm}-app"), "root.a")],
            rm_id: rm.into(),
            ..Default::default()
        },
    );
    assert_eq!(st.0, SICORE_OK, "{}", st.1);
    let st = call(
        sched,
        sicore_update_allocation,
        &si::AllocationRequest {
            asks: vec![ask(&format!("{rm}-app"), "k", memory, 1, 1)],
            rm_id: rm.into(),
            ..Default::default()
        },
    );
    assert_eq!(st.0, SICORE_OK, "{}", st.1);
    rec.wait("allocated", |s| s.allocations.len() == 1);
}

/// Every `# TYPE` name once, every sample line (name and labels) once.
fn assert_unique(text: &str) {
    let mut types = HashSet::new();
    let mut series = HashSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let name = rest.split(' ').next().unwrap();
            assert!(types.insert(name), "{name} announced twice in\n{text}");
        } else if !line.starts_with('#') && !line.is_empty() {
            let key = line.rsplit_once(' ').unwrap().0;
            assert!(series.insert(key), "{key} twice in\n{text}");
        }
    }
}

/// `/metrics` once every one of `needles` is in it.
fn scrape(addr: &str, needles: &[&str]) -> String {
    let fetch = || {
        let r = crate::restkit::http(addr, "GET", "/metrics", &[], b"");
        assert_eq!(r.status, 200);
        r.body
    };
    crate::restkit::scrape_until(needles, fetch, |t, n| t.contains(n))
}

#[test]
fn two_rms_and_two_partitions_give_unique_series() {
    let h = Harness::new(options());
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    let rec2 = new_recorder(h.sched, Behaviour::default());
    let cbs2 = callbacks_for(&rec2);
    let (st, msg) = sicore_c_rm::register(h.sched, "rm2", "queues", "test", &cbs2);
    assert_eq!(st, SICORE_OK, "{msg}");
    run_alice(h.sched, "rm", &h.rec, 40);
    run_alice(h.sched, "rm2", &rec2, 70);
    let addr = crate::restkit::rest_address(h.sched);
    let needles = [
        "yunikorn_scheduler_user_resource_usage{partition=\"default\",rm=\"rm\",user=\"alice\",queue=\"root.a\",resource=\"memory\"} 40",
        "yunikorn_scheduler_user_resource_usage{partition=\"default\",rm=\"rm2\",user=\"alice\",queue=\"root.a\",resource=\"memory\"} 70",
        "yunikorn_queue_root_a_used_resource{partition=\"default\",rm=\"rm2\",resource=\"memory\"} 70",
    ];
    // The once-a-second refresh writes the user usage before the queue
    // gauges: wait for every series, not the first that shows the quantity.
    let text = scrape(&addr, &needles);
    assert_unique(&text);
    for needle in needles {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
}

#[test]
fn one_rm_and_one_partition_keep_the_reference_labels() {
    let yaml = YAML.split("  - name: gpu").next().unwrap();
    let mut o = yaml_options(yaml);
    o.rest_address = "127.0.0.1:0".into();
    let h = Harness::new(o);
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    run_alice(h.sched, "rm", &h.rec, 40);
    let addr = crate::restkit::rest_address(h.sched);
    let needles = [
        "yunikorn_scheduler_user_resource_usage{partition=\"default\",user=\"alice\",queue=\"root.a\",resource=\"memory\"} 40",
        "yunikorn_queue_root_a_used_resource{resource=\"memory\"} 40",
    ];
    // As above: the queue gauge may lag the user usage by one refresh.
    let text = scrape(&addr, &needles);
    assert_unique(&text);
    for needle in needles {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
}
