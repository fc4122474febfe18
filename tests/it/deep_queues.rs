//! Queue paths at and past the depth bound (docs/configuration.md, "Queue
//! path bounds"): the deepest accepted dynamic path schedules, dumps and
//! reads over REST; one level deeper, or a path too long, is refused with a
//! reason naming the bound and creates nothing.

use crate::common::*;

// The bounds of sicore::config::bounds, written out so that this test also
// builds (and fails) on code from before the bounds.
const MAX_QUEUE_LEVELS: usize = 32;
const MAX_QUEUE_PATH_LEN: usize = 1024;

fn deep_path(levels: usize) -> String {
    std::iter::once("root".to_string())
        .chain((1..levels).map(|i| format!("q{i}")))
        .collect::<Vec<_>>()
        .join(".")
}

fn harness() -> Harness {
    let yaml = partition_yaml(
        "    placementrules:\n      - {name: provided, create: true}\n",
        "          - name: a\n",
    );
    let mut o = yaml_options(&yaml);
    o.rest_address = "127.0.0.1:0".into();
    Harness::configured(o, 1)
}

#[test]
fn deepest_accepted_path_schedules_dumps_and_reads() {
    let h = harness();
    let deepest = deep_path(MAX_QUEUE_LEVELS);
    assert_eq!(h.submit(app("deep", &deepest)), Ok(()));
    // Its first ask walks the whole chain for headroom.
    assert_eq!(
        h.asks(vec![ask("deep", "k1", 10, 1, 1)]).0,
        sicore::ffi::sicore_status::SICORE_OK
    );
    h.wait("deep ask placed", |s| {
        s.allocations.iter().any(|a| a.application_id == "deep")
    });
    let dump = h.dump();
    assert_eq!(memory_of(&dump, &deepest), 10, "{dump:#}");

    let addr = crate::restkit::rest_address(h.sched);
    let health = crate::restkit::http(&addr, "GET", "/ws/v1/scheduler/healthcheck", &[], b"");
    assert_eq!(health.status, 200, "{}", health.body);
    let queues = crate::restkit::get_json(&addr, "/ws/v1/partition/default/queues");
    let leaf = crate::restkit::queue_entry(&queues, &deepest).expect("deepest queue over REST");
    assert_eq!(leaf["isLeaf"], true);
    let full = crate::restkit::get_json(&addr, "/ws/v1/fullstatedump");
    assert!(full.to_string().contains(&deepest));
}

#[test]
fn a_level_past_the_bound_is_refused_and_creates_nothing() {
    let h = harness();
    let too_deep = deep_path(MAX_QUEUE_LEVELS + 1);
    let reason = h.submit(app("deeper", &too_deep)).unwrap_err();
    assert!(
        reason.contains(&format!("more than the {MAX_QUEUE_LEVELS} allowed")),
        "{reason}"
    );
    assert!(
        reason.len() < 300,
        "the reason does not echo the path: {reason}"
    );
    // The 18 KB path of the report: refused by length before anything else.
    let huge = deep_path(3000);
    let reason = h.submit(app("huge", &huge)).unwrap_err();
    assert!(
        reason.contains(&format!("more than the {MAX_QUEUE_PATH_LEN} allowed")),
        "{reason}"
    );
    let dump = h.dump();
    assert!(
        find_queue(&dump, "default", "root.q1").is_none(),
        "nothing created: {dump:#}"
    );
}

/// Flow collections nested 32,000 deep in 64 KB: cost the old parser
/// seconds on the REST runtime thread.
fn nested_flow() -> String {
    format!("partitions: {}", "[".repeat(32_000))
}

#[test]
fn nested_configuration_text_is_refused_before_parsing_over_rest() {
    let h = harness();
    let addr = crate::restkit::rest_address(h.sched);
    let body = nested_flow();
    // validate-conf stays open (no token): its cost is bounded instead.
    let v = crate::restkit::http(&addr, "POST", "/ws/v1/validate-conf", &[], body.as_bytes());
    assert_eq!(v.status, 200, "{}", v.body);
    let v = v.json();
    assert_eq!(v["allowed"], false, "{v}");
    let reason = v["reason"].as_str().unwrap();
    assert!(
        reason.contains("flow collections") && reason.contains("128 levels"),
        "{reason}"
    );
    let dry = crate::restkit::http(
        &addr,
        "POST",
        "/ws/v1/config?dry_run=1",
        &[],
        body.as_bytes(),
    );
    assert!(
        dry.body.contains("128 levels"),
        "{} {}",
        dry.status,
        dry.body
    );
    let health = crate::restkit::http(&addr, "GET", "/ws/v1/scheduler/healthcheck", &[], b"");
    assert_eq!(health.status, 200, "{}", health.body);
}

#[test]
fn nested_configuration_text_is_refused_on_the_rm_path() {
    let h = harness();
    let (st, msg) = crate::restkit::set_policy_config(h.sched, "queues", &nested_flow());
    assert_ne!(st, sicore::ffi::sicore_status::SICORE_OK);
    assert!(msg.contains("128 levels"), "{msg}");
}

#[test]
fn a_configured_queue_past_the_depth_bound_is_refused() {
    // 33 levels of configured queues, each under the one before.
    let mut queues = String::new();
    for i in 1..MAX_QUEUE_LEVELS {
        let pad = " ".repeat(10 + 4 * (i - 1));
        queues.push_str(&format!("{pad}- name: c{i}\n{pad}  queues:\n"));
    }
    let pad = " ".repeat(10 + 4 * (MAX_QUEUE_LEVELS - 1));
    queues.push_str(&format!("{pad}- name: last\n"));
    let h = harness();
    let (st, msg) =
        crate::restkit::set_policy_config(h.sched, "queues", &partition_yaml("", &queues));
    assert_ne!(st, sicore::ffi::sicore_status::SICORE_OK);
    assert!(msg.contains("more than the 32 allowed"), "{msg}");
}
