//! Bad input through the C ABI: each call fails with the right status and a
//! message that names the problem, and the scheduler keeps working, shown
//! by a successful allocation afterwards.

use crate::common::*;
use prost::Message;
use sicore::ffi::sicore_status::*;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

/// One more allocation proves the scheduler still works.
fn still_allocates(h: &Harness, key: &str) {
    let before = h.seen(|s| s.allocations.len());
    assert_eq!(h.asks(vec![ask("app-1", key, 10, 1, 1)]).0, SICORE_OK);
    h.wait("allocation after bad input", |s| {
        s.allocations.len() == before + 1
    });
}

#[test]
fn null_pointers_are_refused_with_a_message() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    let bytes = si::AllocationRequest {
        rm_id: "rm".into(),
        ..Default::default()
    }
    .encode_to_vec();
    let mut err = sicore_buffer::empty();

    let st = sicore_update_allocation(std::ptr::null_mut(), bytes.as_ptr(), bytes.len(), &mut err);
    assert_eq!(st, SICORE_INVALID_ARGUMENT);
    assert_eq!(
        take_string(std::mem::replace(&mut err, sicore_buffer::empty())),
        "scheduler is a null pointer"
    );

    for f in [
        sicore_update_allocation,
        sicore_update_application,
        sicore_update_node,
    ] {
        let st = f(h.sched, std::ptr::null(), 10, &mut err);
        assert_eq!(st, SICORE_INVALID_ARGUMENT);
        assert!(
            take_string(std::mem::replace(&mut err, sicore_buffer::empty()))
                .contains("null pointer")
        );
    }
    let st = sicore_update_configuration(h.sched, std::ptr::null(), 0, &mut err);
    assert_eq!(st, SICORE_INVALID_ARGUMENT);
    take_string(std::mem::replace(&mut err, sicore_buffer::empty()));

    let req = si::RegisterResourceManagerRequest {
        rm_id: "x".into(),
        policy_group: "queues".into(),
        ..Default::default()
    }
    .encode_to_vec();
    let st = sicore_register_resource_manager(
        h.sched,
        req.as_ptr(),
        req.len(),
        std::ptr::null(),
        std::ptr::null_mut(),
        &mut err,
    );
    assert_eq!(st, SICORE_INVALID_ARGUMENT);
    assert_eq!(
        take_string(std::mem::replace(&mut err, sicore_buffer::empty())),
        "callbacks is a null pointer"
    );

    let st = sicore_state_dump(h.sched, std::ptr::null_mut(), &mut err);
    assert_eq!(st, SICORE_INVALID_ARGUMENT);
    take_string(std::mem::replace(&mut err, sicore_buffer::empty()));

    let st = sicore_new(std::ptr::null(), 0, std::ptr::null_mut(), &mut err);
    assert_eq!(st, SICORE_INVALID_ARGUMENT);
    take_string(err);

    // A null error_out is allowed: only the status comes back.
    assert_eq!(
        sicore_update_node(h.sched, std::ptr::null(), 1, std::ptr::null_mut()),
        SICORE_INVALID_ARGUMENT
    );
    sicore_free(std::ptr::null_mut());
    sicore_buffer_free(sicore_buffer::empty());
    still_allocates(&h, "after-nulls");
}

#[test]
fn undecodable_bytes_are_decode_errors() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    let garbage: &[u8] = &[0xff, 0xff, 0xff, 0xff];
    for f in [
        sicore_update_allocation,
        sicore_update_application,
        sicore_update_node,
    ] {
        let (st, msg) = h.raw(f, garbage);
        assert_eq!(st, SICORE_DECODE_ERROR);
        assert!(msg.contains("not a valid encoding"), "{msg}");
    }
    // A valid message cut short.
    let full = si::AllocationRequest {
        asks: vec![ask("app-1", "k", 10, 1, 1)],
        rm_id: "rm".into(),
        ..Default::default()
    }
    .encode_to_vec();
    let (st, msg) = h.raw(sicore_update_allocation, &full[..full.len() / 2]);
    assert_eq!(st, SICORE_DECODE_ERROR);
    assert!(msg.contains("AllocationRequest"), "{msg}");
    // A NodeRequest whose nodes field holds a string where a message belongs
    // is not a valid ApplicationRequest either (field 1 must be a message).
    let wrong = si::UpdateConfigurationRequest {
        configs: "x".repeat(3),
    }
    .encode_to_vec();
    let (st, _) = h.raw(sicore_update_application, &wrong);
    assert_eq!(st, SICORE_DECODE_ERROR);
    // Bad options to sicore_new.
    let mut s = std::ptr::null_mut();
    let mut err = sicore_buffer::empty();
    assert_eq!(
        sicore_new(garbage.as_ptr(), garbage.len(), &mut s, &mut err),
        SICORE_DECODE_ERROR
    );
    assert!(take_string(err).contains("SchedulerOptions"));
    assert!(s.is_null());
    still_allocates(&h, "after-garbage");
}

#[test]
fn unknown_rm_ids_are_rejected() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    let req = si::AllocationRequest {
        rm_id: "ghost".into(),
        ..Default::default()
    }
    .encode_to_vec();
    let (st, msg) = h.raw(sicore_update_allocation, &req);
    assert_eq!(st, SICORE_REJECTED);
    assert_eq!(
        msg,
        "received AllocationRequest, but RmID=\"ghost\" not registered"
    );
    let req = si::ApplicationRequest {
        rm_id: "ghost".into(),
        ..Default::default()
    }
    .encode_to_vec();
    assert!(h
        .raw(sicore_update_application, &req)
        .1
        .contains("ApplicationRequest"));
    let req = si::NodeRequest {
        rm_id: String::new(),
        ..Default::default()
    }
    .encode_to_vec();
    assert_eq!(h.raw(sicore_update_node, &req).0, SICORE_REJECTED);
    let (st, msg) = h.reload("ghost");
    assert_eq!(st, SICORE_REJECTED);
    assert_eq!(
        msg,
        "failed to reload configuration, because RM ghost is unknown to the scheduler"
    );
    still_allocates(&h, "after-unknown");
}

#[test]
fn missing_required_fields_are_invalid_arguments() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    let (st, msg) = h.asks(vec![ask("app-1", "", 10, 1, 1)]);
    assert_eq!(st, SICORE_INVALID_ARGUMENT);
    assert_eq!(
        msg,
        "AllocationRequest.asks[0].allocationKey must not be empty"
    );
    let (st, msg) = h.nodes(vec![node("", 10, 1)]);
    assert_eq!(st, SICORE_INVALID_ARGUMENT);
    assert_eq!(msg, "NodeRequest.nodes[0].nodeID must not be empty");
    let (st, msg) = h.register("", "queues");
    assert_eq!(st, SICORE_INVALID_ARGUMENT);
    assert!(msg.contains("rmID"));
    let (st, _) = h.raw(sicore_update_configuration, b"\xff\xfe");
    assert_eq!(st, SICORE_INVALID_ARGUMENT);
    still_allocates(&h, "after-missing");
}

#[test]
fn invalid_configuration_is_rejected_and_named() {
    let mut opts = SchedulerOptions::default();
    opts.policy_configs
        .insert("broken".into(), "partitions: [ this is : not valid".into());
    opts.policy_configs.insert(
        "badqueue".into(),
        "partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n          - name: a.b\n".into(),
    );
    opts.policy_configs.insert(
        "unknownkey".into(),
        "partitions:\n  - name: default\n    queus: []\n".into(),
    );
    let dir = std::env::temp_dir().join(format!("sicore-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    opts.config_dir = dir.to_string_lossy().into_owned();
    let h = Harness::new(opts);
    let (st, msg) = h.register("rm", "broken");
    assert_eq!(st, SICORE_REJECTED);
    assert!(msg.contains("policy group 'broken'"), "{msg}");
    let (st, msg) = h.register("rm", "badqueue");
    assert_eq!(st, SICORE_REJECTED);
    assert!(msg.contains("invalid child name a.b"), "{msg}");
    let (st, msg) = h.register("rm", "unknownkey");
    assert_eq!(st, SICORE_REJECTED);
    assert!(msg.contains("queus"), "{msg}");
    // An explicit config directory without the file is an error naming it.
    let (st, msg) = h.register("rm", "nofile");
    assert_eq!(st, SICORE_REJECTED);
    assert!(msg.contains("nofile.yaml"), "{msg}");
    // A failed registration leaves the RM unregistered.
    assert_eq!(h.nodes(vec![node("n", 10, 1)]).0, SICORE_REJECTED);
    // A valid file in the directory works.
    std::fs::write(
        dir.join("good.yaml"),
        "partitions:\n  - name: default\n    placementrules:\n      - name: provided\n        create: true\n    queues:\n      - name: root\n        submitacl: '*'\n",
    )
    .unwrap();
    assert_eq!(h.register("rm", "good").0, SICORE_OK);
    assert_eq!(h.nodes(vec![node("n", 100, 1)]).0, SICORE_OK);
    assert_eq!(h.apps(vec![app("app-1", "root.a")], vec![]).0, SICORE_OK);
    still_allocates(&h, "after-bad-config");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn impossible_resources_are_rejected_without_harm() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    // Larger than any node: stays pending, blocks nothing else.
    assert_eq!(
        h.asks(vec![ask("app-1", "too-big", 1 << 40, 1, 1)]).0,
        SICORE_OK
    );
    // Negative quantities in an ask are rejected.
    let mut neg = ask("app-1", "neg", 10, 1, 1);
    neg.resource_ask = res(&[("memory", -10), ("vcore", 1)]);
    assert_eq!(h.asks(vec![neg]).0, SICORE_OK);
    h.wait("negative ask rejected", |s| s.rejected_asks.len() == 1);
    still_allocates(&h, "after-impossible");
}
