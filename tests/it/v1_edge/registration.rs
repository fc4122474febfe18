//! v1 edge: registration, its configuration text and the callback table it is given.

use super::*;

#[test]
fn registration_takes_config_text_and_ignores_unknown_extra_keys() {
    let rm = V1Rm::new(CONFIG, false);
    let dump = rm.dump();
    assert_eq!(
        rm_entry(&dump, "rm1")["config_source"],
        "RegisterResourceManager request"
    );
    let text = dump.to_string();
    assert!(
        text.contains("root.a"),
        "the sent queue is configured: {text}"
    );
}

#[test]
fn an_empty_config_is_the_built_in_v1_default() {
    let rm = V1Rm::new("", false);
    let dump = rm.dump();
    assert_eq!(
        rm_entry(&dump, "rm1")["config_source"],
        "built-in SI v1.x default"
    );
    // The default places by namespace tag, creating the queue.
    let (st, msg) = call(
        rm.sched,
        sicore_v1_update_application,
        &si18::ApplicationRequest {
            new: vec![si18::AddApplicationRequest {
                tags: [("namespace".to_string(), "ns1".to_string())].into(),
                ..rmv1::app("app-1", "", "alice")
            }],
            rm_id: "rm1".into(),
            ..Default::default()
        },
    );
    assert_eq!(st, SICORE_OK, "{msg}");
    rm.rec.wait("app accepted", |s| {
        s.apps_accepted.iter().any(|a| a == "app-1")
    });
    let text = rm.dump().to_string();
    assert!(text.contains("root.ns1"), "placed by namespace: {text}");
}

#[test]
fn invalid_yaml_fails_registration_and_update_and_the_old_queues_stay() {
    let sched = Handle(sicore_c_rm::new_scheduler(&options()).unwrap());
    let rec = Arc::new(Recorder::default());
    let table = rmv1::table(&rec, false);
    let (st, msg) = rmv1::register(
        sched.0,
        &register_req("rm1", "partitions: [\n  - name"),
        &table,
    );
    assert_eq!(st, SICORE_REJECTED);
    assert!(msg.contains("rm1"), "{msg}");
    // Not registered: its calls are refused.
    let (st, _) = call(
        sched.0,
        sicore_v1_update_node,
        &si18::NodeRequest {
            nodes: vec![rmv1::node("n1", 10, 1)],
            rm_id: "rm1".into(),
        },
    );
    assert_eq!(st, SICORE_REJECTED);

    let rm = V1Rm::new(CONFIG, false);
    let before = rm_entry(&rm.dump(), "rm1")["config_checksum"].clone();
    let (st, msg) = rm.update_config("partitions:\n  - name: default\n    queues: {{{");
    assert_eq!(st, SICORE_REJECTED, "{msg}");
    assert!(msg.contains("old configuration stays"), "{msg}");
    let dump = rm.dump();
    assert_eq!(rm_entry(&dump, "rm1")["config_checksum"], before);
    assert!(dump.to_string().contains("root.a"));

    // The same text again: a no-op, the source label included.
    assert_eq!(rm.update_config(CONFIG).0, SICORE_OK);
    let dump = rm.dump();
    assert_eq!(rm_entry(&dump, "rm1")["config_checksum"], before);
    assert_eq!(
        rm_entry(&dump, "rm1")["config_source"],
        "RegisterResourceManager request"
    );

    // A changed text applies.
    let changed = CONFIG.replace("- name: a", "- name: b");
    let (st, msg) = rm.update_config(&changed);
    assert_eq!(st, SICORE_OK, "{msg}");
    let dump = rm.dump();
    assert_ne!(rm_entry(&dump, "rm1")["config_checksum"], before);
    assert_eq!(
        rm_entry(&dump, "rm1")["config_source"],
        "UpdateConfiguration request"
    );
    assert!(dump.to_string().contains("root.b"), "{dump}");
}

#[test]
fn each_family_refuses_the_other_editions_rm_naming_its_edition() {
    let mut o = options();
    o.policy_configs.insert("queues".into(), CONFIG.into());
    let sched = Handle(sicore_c_rm::new_scheduler(&o).unwrap());
    let v1 = register_on(sched.0, "rm1", CONFIG, false);
    let v0 = Arc::new(NoopV0);
    let table = sicore_c_rm::table(&v0, sicore_c_rm::Installed::default());
    let (st, msg) = sicore_c_rm::register(sched.0, "rm0", "queues", "0.12", &table);
    assert_eq!(st, SICORE_OK, "{msg}");

    // Each entry point with its own message, naming the v1 RM.
    let v0_calls: [(sicore_c_rm::UpdateFn, Vec<u8>); 3] = [
        (
            sicore_update_node,
            si::NodeRequest {
                nodes: vec![sicore_c_rm::node("n1", 10, 1)],
                rm_id: "rm1".into(),
            }
            .encode_to_vec(),
        ),
        (
            sicore_update_allocation,
            si::AllocationRequest {
                rm_id: "rm1".into(),
                ..Default::default()
            }
            .encode_to_vec(),
        ),
        (
            sicore_update_application,
            si::ApplicationRequest {
                rm_id: "rm1".into(),
                ..Default::default()
            }
            .encode_to_vec(),
        ),
    ];
    for (f, bytes) in v0_calls {
        let (st, msg) = sicore_c_rm::raw(sched.0, f, &bytes);
        assert_eq!(st, SICORE_REJECTED, "v0.12 call for a v1 RM: {msg}");
        assert!(msg.contains("SI v1.x"), "{msg}");
    }
    let (st, msg) = sicore_c_rm::reload(sched.0, "rm1");
    assert_eq!(st, SICORE_REJECTED);
    assert!(msg.contains("SI v1.x"), "{msg}");

    let v1_calls: [(sicore_c_rm::UpdateFn, Vec<u8>); 3] = [
        (
            sicore_v1_update_node,
            si18::NodeRequest {
                nodes: vec![rmv1::node("n1", 10, 1)],
                rm_id: "rm0".into(),
            }
            .encode_to_vec(),
        ),
        (
            sicore_v1_update_allocation,
            si18::AllocationRequest {
                rm_id: "rm0".into(),
                ..Default::default()
            }
            .encode_to_vec(),
        ),
        (
            sicore_v1_update_application,
            si18::ApplicationRequest {
                rm_id: "rm0".into(),
                ..Default::default()
            }
            .encode_to_vec(),
        ),
    ];
    for (f, bytes) in v1_calls {
        let (st, msg) = sicore_c_rm::raw(sched.0, f, &bytes);
        assert_eq!(st, SICORE_REJECTED, "v1 call for a v0.12 RM: {msg}");
        assert!(msg.contains("SI v0.12"), "{msg}");
    }
    let (st, msg) = rmv1::update_configuration(
        sched.0,
        &si18::UpdateConfigurationRequest {
            rm_id: "rm0".into(),
            config: CONFIG.into(),
            ..Default::default()
        },
    );
    assert_eq!(st, SICORE_REJECTED);
    assert!(msg.contains("SI v0.12"), "{msg}");
    // Nothing reached either RM's nodes.
    std::thread::sleep(Duration::from_millis(100));
    assert!(v1.copy().nodes_accepted.is_empty());
}

struct NoopV0;
impl sicore_c_rm::Rm for NoopV0 {}

#[test]
fn a_short_v1_table_is_refused_and_not_taken() {
    let sched = Handle(sicore_c_rm::new_scheduler(&options()).unwrap());
    let rec = Arc::new(Recorder::default());
    let mut table = rmv1::table(&rec, false);
    table.struct_size = std::mem::offset_of!(sicore_v1_callbacks, update_node);
    let (st, msg) = rmv1::register(sched.0, &register_req("rm1", CONFIG), &table);
    assert_eq!(st, SICORE_INVALID_ARGUMENT);
    assert!(msg.contains("struct_size"), "{msg}");
    // Not taken: the test still owns the reference the table holds.
    // SAFETY: the pointer `table` made for a Recorder; the library refused it.
    drop(unsafe { Arc::from_raw(table.user_data as *const Recorder) });
    assert_eq!(Arc::strong_count(&rec), 1);
}
