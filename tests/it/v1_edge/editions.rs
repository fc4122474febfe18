//! v1 edge: RMs of both editions side by side, REST config updates, malformed requests.

use super::*;

#[test]
fn rms_of_both_editions_share_a_scheduler_and_see_only_their_own() {
    let mut o = options();
    o.policy_configs.insert("queues".into(), CONFIG.into());
    let sched = Handle(sicore_c_rm::new_scheduler(&o).unwrap());
    let v1 = register_on(sched.0, "rm1", CONFIG, false);
    let v0 = Arc::new(V0Recorder::default());
    let table = sicore_c_rm::table(&v0, sicore_c_rm::Installed::default());
    let (st, msg) = sicore_c_rm::register(sched.0, "rm0", "queues", "0.12", &table);
    assert_eq!(st, SICORE_OK, "{msg}");

    // The same node and application ids on both sides.
    let v1rm = V1Rm {
        sched: sched.0,
        _owner: None,
        rec: v1.clone(),
        rm_id: "rm1".into(),
    };
    v1rm.ready_nodes(&["n1"]);
    v1rm.app("app-1", "root.a");
    let st = call(
        sched.0,
        sicore_update_node,
        &si::NodeRequest {
            nodes: vec![sicore_c_rm::node("n1", 1000, 10)],
            rm_id: "rm0".into(),
        },
    );
    assert_eq!(st.0, SICORE_OK, "{}", st.1);
    let st = call(
        sched.0,
        sicore_update_application,
        &si::ApplicationRequest {
            new: vec![sicore_c_rm::app("app-1", "root.a", "bob")],
            rm_id: "rm0".into(),
            ..Default::default()
        },
    );
    assert_eq!(st.0, SICORE_OK, "{}", st.1);
    let ask0 = si::AllocationAsk {
        allocation_key: "v0-ask".into(),
        application_id: "app-1".into(),
        resource_ask: sicore_c_rm::res(&[("memory", 100), ("vcore", 1)]),
        max_allocations: 1,
        ..Default::default()
    };
    let st = call(
        sched.0,
        sicore_update_allocation,
        &si::AllocationRequest {
            asks: vec![ask0],
            rm_id: "rm0".into(),
            ..Default::default()
        },
    );
    assert_eq!(st.0, SICORE_OK, "{}", st.1);
    assert_eq!(
        v1rm.allocate(vec![rmv1::ask("app-1", "v1-pod", 100, 1)], vec![])
            .0,
        SICORE_OK
    );
    v1.wait("v1 pod placed", |s| s.new.len() == 1);
    let deadline = Instant::now() + WAIT;
    while v0.keys.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "the v0.12 ask was not placed");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(*v0.keys.lock().unwrap(), ["v0-ask"]);
    assert_eq!(v1.copy().new[0].allocation_key, "v1-pod");
    // Each RM's partition holds its own allocation only.
    let dump = sicore_c_rm::dump(sched.0).unwrap();
    let parts = dump["partitions"].as_array().unwrap();
    let keys_of = |rm: &str| -> Vec<String> {
        parts
            .iter()
            .filter(|p| p["rm_id"] == rm)
            .flat_map(|p| p["nodes"].as_array().unwrap().iter())
            .flat_map(|n| n["allocations"].as_array().unwrap().iter())
            .map(|a| a["allocation_key"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(keys_of("rm0"), ["v0-ask"], "{dump}");
    assert_eq!(keys_of("rm1"), ["v1-pod"], "{dump}");
}

#[derive(Default)]
struct V0Recorder {
    keys: Mutex<Vec<String>>,
}

impl sicore_c_rm::Rm for V0Recorder {
    fn update_allocation(&self, m: si::AllocationResponse) -> Result<(), String> {
        self.keys
            .lock()
            .unwrap()
            .extend(m.new.into_iter().map(|a| a.allocation_key));
        Ok(())
    }
}

#[test]
fn rest_config_updates_are_refused_for_a_v1_rm_and_change_nothing() {
    let mut o = options();
    o.rest_address = "127.0.0.1:0".into();
    let sched = Handle(sicore_c_rm::new_scheduler(&o).unwrap());
    let _rec = register_on(sched.0, "rm1", CONFIG, false);
    let addr = crate::restkit::rest_address(sched.0);
    let base = crate::restkit::config_checksum(&addr);
    let text = format!(
        "{}          - name: b\nchecksum: {base}\n",
        CONFIG.trim_start()
    );
    let r = crate::restkit::http(&addr, "PUT", "/ws/v1/config", &[], text.as_bytes());
    assert_ne!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("SI v1.x"), "{}", r.body);
    assert_eq!(crate::restkit::config_checksum(&addr), base);
    let dump = sicore_c_rm::dump(sched.0).unwrap();
    assert!(!dump.to_string().contains("root.b"), "{dump}");
}

#[test]
fn a_malformed_or_refused_v1_request_gets_its_error_and_interns_nothing() {
    let rm = V1Rm::new(CONFIG, false);
    let name = "example.com/v1-edge-refused";
    let with_name = |key: &str| si18::Allocation {
        allocation_key: key.into(),
        application_id: "app-1".into(),
        resource_per_alloc: Some(si18::Resource {
            resources: [(name.to_string(), si18::Quantity { value: 1 })].into(),
        }),
        ..Default::default()
    };
    let request = |rm_id: &str, allocations: Vec<si18::Allocation>| {
        si18::AllocationRequest {
            rm_id: rm_id.into(),
            allocations,
            releases: None,
        }
        .encode_to_vec()
    };
    let mut no_key = with_name("");
    no_key.allocation_key.clear();
    let mut other_partition = with_name("k2");
    other_partition.partition_name = "[other]default".into();
    // A truncated allocation at the end.
    let truncated = |mut b: Vec<u8>| {
        b.extend_from_slice(&[0x22, 0x05, b'x']);
        b
    };
    let cases = [
        (
            request("rm1", vec![with_name("k1"), no_key.clone()]),
            SICORE_INVALID_ARGUMENT,
            "allocations[1].allocationKey must not be empty",
        ),
        (
            request("rm1", vec![with_name("k1"), other_partition]),
            SICORE_REJECTED,
            "allocations[1].partitionName",
        ),
        // Malformed bytes come first, before the checks and the rmID.
        (
            truncated(request("rm1", vec![no_key.clone()])),
            SICORE_DECODE_ERROR,
            "request (SI v1.x AllocationRequest): not a valid encoding",
        ),
        (
            truncated(request("nobody", vec![with_name("k1")])),
            SICORE_DECODE_ERROR,
            "not a valid encoding",
        ),
        (
            request("nobody", vec![with_name("k1")]),
            SICORE_REJECTED,
            "nobody",
        ),
    ];
    for (bytes, status, text) in cases {
        let (st, msg) = sicore_c_rm::raw(rm.sched, sicore_v1_update_allocation, &bytes);
        assert_eq!(st, status, "{msg}");
        assert!(msg.contains(text), "{msg}");
        assert!(
            !sicore::testing::process_holds_name(name),
            "a refused request left {name} behind ({msg})"
        );
    }
    let mut err = sicore_buffer::empty();
    let st = sicore_v1_update_allocation(rm.sched, std::ptr::null(), 1, &mut err);
    assert_eq!(st, SICORE_INVALID_ARGUMENT);
    sicore_buffer_free(err);
    // The same allocation in a valid request is taken in.
    let (st, msg) = sicore_c_rm::raw(
        rm.sched,
        sicore_v1_update_allocation,
        &request("rm1", vec![with_name("k1")]),
    );
    assert_eq!(st, SICORE_OK, "{msg}");
    assert!(sicore::testing::process_holds_name(name));
}
