//! A hostile or buggy RM (issue 16): every request that reaches outside its
//! own RM, or that would exhaust or corrupt shared state, is refused with a
//! reason, and the other RMs and schedulers in the process carry on.

use std::sync::Arc;

use crate::common::*;
use prost::Message;
use sicore::ffi::sicore_status::*;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

/// Registers a further RM `rm` on `h`'s scheduler, recording into `rec`.
fn register_as(
    h: &Harness,
    rm: &str,
    policy_group: &str,
    rec: &Arc<Recorder>,
) -> (sicore_status, String) {
    let req = si::RegisterResourceManagerRequest {
        rm_id: rm.into(),
        version: "test".into(),
        policy_group: policy_group.into(),
    }
    .encode_to_vec();
    let cbs = callbacks_for(rec);
    let mut err = sicore_buffer::empty();
    let st = sicore_register_resource_manager(
        h.sched,
        req.as_ptr(),
        req.len(),
        &cbs,
        std::ptr::null_mut(),
        &mut err,
    );
    (st, take_string(err))
}

fn node_req(rm: &str, nodes: Vec<si::NodeInfo>) -> Vec<u8> {
    si::NodeRequest {
        nodes,
        rm_id: rm.into(),
    }
    .encode_to_vec()
}

/// The dump's partition of RM `rm` named `name`.
fn partition<'a>(d: &'a serde_json::Value, rm: &str, name: &str) -> Option<&'a serde_json::Value> {
    d["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["rm_id"] == rm && p["name"] == name)
}

#[test]
fn an_rm_cannot_touch_another_rms_partition() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    let rec2 = new_recorder(h.sched, Behaviour::default());
    let (st, msg) = register_as(&h, "rm2", "queues", &rec2);
    assert_eq!(st, SICORE_OK, "{msg}");
    assert_eq!(h.asks(vec![ask("app-1", "k1", 10, 1, 1)]).0, SICORE_OK);
    h.wait("rm's allocation", |s| s.allocations.len() == 1);
    let alloc = h.seen(|s| s.allocations[0].clone());

    // rm2 releases rm's allocation by naming rm's internal partition.
    let release = si::AllocationRequest {
        rm_id: "rm2".into(),
        releases: Some(si::AllocationReleasesRequest {
            allocations_to_release: vec![si::AllocationRelease {
                partition_name: "[rm]default".into(),
                application_id: "app-1".into(),
                uuid: alloc.uuid.clone(),
                termination_type: si::TerminationType::StoppedByRm as i32,
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec();
    let (st, msg) = h.raw(sicore_update_allocation, &release);
    assert_eq!(st, SICORE_REJECTED, "{msg}");
    assert!(
        msg.contains("[rm]default") && msg.contains("does not belong to RM rm2"),
        "{msg}"
    );

    // rm2 removes rm's application.
    let remove = si::ApplicationRequest {
        rm_id: "rm2".into(),
        remove: vec![si::RemoveApplicationRequest {
            application_id: "app-1".into(),
            partition_name: "[rm]default".into(),
        }],
        ..Default::default()
    }
    .encode_to_vec();
    let (st, msg) = h.raw(sicore_update_application, &remove);
    assert_eq!(st, SICORE_REJECTED, "{msg}");
    assert!(
        msg.contains("ApplicationRequest.remove[0].partitionName"),
        "{msg}"
    );

    // rm2 adds a node to rm's partition, or asks in it.
    let (st, msg) = h.raw(
        sicore_update_node,
        &node_req("rm2", vec![node_in("intruder", "[rm]default", 1000, 10)]),
    );
    assert_eq!(st, SICORE_REJECTED, "{msg}");
    assert!(msg.contains("si/node-partition"), "{msg}");
    let mut a = ask("app-1", "k2", 10, 1, 1);
    a.partition_name = "[rm]default".into();
    let asks = si::AllocationRequest {
        rm_id: "rm2".into(),
        asks: vec![a],
        ..Default::default()
    }
    .encode_to_vec();
    let (st, msg) = h.raw(sicore_update_allocation, &asks);
    assert_eq!(st, SICORE_REJECTED, "{msg}");

    // rm2 may use the prefixed form of its own partition.
    let (st, msg) = h.raw(
        sicore_update_node,
        &node_req("rm2", vec![node_in("own", "[rm2]default", 1000, 10)]),
    );
    assert_eq!(st, SICORE_OK, "{msg}");
    rec2.wait("rm2's own node", |s| s.nodes_accepted == ["own"]);

    // Nothing of rm changed, and nobody was told otherwise.
    let d = h.dump();
    let p = partition(&d, "rm", "default").unwrap();
    assert_eq!(p["nodes"].as_array().unwrap().len(), 1);
    assert_eq!(p["applications"][0]["id"], "app-1");
    assert_eq!(p["applications"][0]["allocations"][0], alloc.uuid.as_str());
    assert!(h.seen(|s| s.released.is_empty()));
    assert!(rec2.seen.lock().unwrap().released.is_empty());
}

#[test]
fn partition_names_of_different_rms_never_collide() {
    let mut o = SchedulerOptions::default();
    o.policy_configs.insert(
        "plain".into(),
        "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: '*'\n"
            .into(),
    );
    o.policy_configs.insert(
        "tricky".into(),
        "partitions:\n  - name: y]default\n    queues:\n      - name: root\n        submitacl: '*'\n".into(),
    );
    let h = Harness::new(o);
    let victim = new_recorder(h.sched, Behaviour::default());
    let (st, msg) = register_as(&h, "x]y", "plain", &victim);
    assert_eq!(st, SICORE_OK, "{msg}");
    let (st, msg) = h.raw(
        sicore_update_node,
        &node_req("x]y", vec![node("n1", 1000, 10)]),
    );
    assert_eq!(st, SICORE_OK, "{msg}");
    victim.wait("victim's node", |s| s.nodes_accepted == ["n1"]);

    let attacker = new_recorder(h.sched, Behaviour::default());
    let (st, msg) = register_as(&h, "x", "tricky", &attacker);
    assert_eq!(st, SICORE_OK, "{msg}");
    // The attacker reaches its own `y]default` through the prefixed name.
    let (st, msg) = h.raw(
        sicore_update_node,
        &node_req("x", vec![node_in("n2", "[x]y]default", 500, 5)]),
    );
    assert_eq!(st, SICORE_OK, "{msg}");
    attacker.wait("attacker's node", |s| s.nodes_accepted == ["n2"]);

    let d = h.dump();
    let victim_p = partition(&d, "x]y", "default").expect("the victim's partition survives");
    assert_eq!(victim_p["nodes"][0]["id"], "n1");
    assert_eq!(victim_p["total"]["memory"], 1000);
    let attacker_p = partition(&d, "x", "y]default").expect("the attacker's partition exists");
    assert_eq!(attacker_p["nodes"][0]["id"], "n2");
    assert_eq!(d["partitions"].as_array().unwrap().len(), 2);
}

#[test]
fn a_configured_partition_name_may_not_look_prefixed() {
    let mut o = SchedulerOptions::default();
    o.policy_configs.insert(
        "queues".into(),
        "partitions:\n  - name: '[other]default'\n    queues:\n      - name: root\n".into(),
    );
    let h = Harness::new(o);
    let (st, msg) = h.register("rm", "queues");
    assert_eq!(st, SICORE_REJECTED);
    assert!(msg.contains("must not start with '['"), "{msg}");
}

/// `levels` nested groups in unknown field 99.
fn nested_groups(levels: usize) -> Vec<u8> {
    use prost::encoding::{encode_key, WireType};
    let mut b = Vec::new();
    for _ in 0..levels {
        encode_key(99, WireType::StartGroup, &mut b);
    }
    for _ in 0..levels {
        encode_key(99, WireType::EndGroup, &mut b);
    }
    b
}

/// A length-delimited field `tag` holding `body`.
fn field(tag: u32, body: &[u8]) -> Vec<u8> {
    use prost::encoding::{encode_key, encode_varint, WireType};
    let mut b = Vec::new();
    encode_key(tag, WireType::LengthDelimited, &mut b);
    encode_varint(body.len() as u64, &mut b);
    b.extend_from_slice(body);
    b
}

#[test]
fn nested_unknown_groups_are_refused_where_prost_refuses_them() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    let rm = field(3, b"rm");
    for levels in [1, 97, 98, 99, 100, 101] {
        // Groups at the top level, inside an ask, and inside its resource.
        let mut in_ask = ask("app-1", &format!("g{levels}"), 1, 0, 1).encode_to_vec();
        in_ask.extend(nested_groups(levels));
        let mut res = res(&[("memory", 1)]).unwrap().encode_to_vec();
        res.extend(nested_groups(levels));
        let mut in_res = ask("app-1", &format!("r{levels}"), 1, 0, 1);
        in_res.resource_ask = None;
        let mut in_res = in_res.encode_to_vec();
        in_res.extend(field(4, &res));
        let mut top = rm.clone();
        top.extend(nested_groups(levels));
        for (place, bytes) in [
            ("top level", top),
            ("ask", [field(1, &in_ask), rm.clone()].concat()),
            ("resource", [field(1, &in_res), rm.clone()].concat()),
        ] {
            let prost_ok = si::AllocationRequest::decode(bytes.as_slice()).is_ok();
            let (st, msg) = h.raw(sicore_update_allocation, &bytes);
            let want = if prost_ok {
                SICORE_OK
            } else {
                SICORE_DECODE_ERROR
            };
            assert_eq!(st, want, "{levels} groups in the {place}: {msg}");
            if !prost_ok {
                assert!(msg.contains("recursion limit"), "{msg}");
            }
        }
    }
    // prost refuses 100 levels inside an ask (the case of the report).
    let mut in_ask = ask("app-1", "x", 1, 0, 1).encode_to_vec();
    in_ask.extend(nested_groups(100));
    let (st, _) = h.raw(sicore_update_allocation, &[field(1, &in_ask), rm].concat());
    assert_eq!(st, SICORE_DECODE_ERROR);
}

/// A Rust RM with a bug: dropping it panics. The core drops the old
/// callback object inside a re-registration, on its own thread.
struct PanicsOnDrop;

impl sicore::ResourceManagerCallback for PanicsOnDrop {}

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("the RM's callback object blew up when dropped");
    }
}

#[derive(Default)]
struct CountingRm(std::sync::Mutex<usize>);

impl sicore::ResourceManagerCallback for CountingRm {
    fn update_allocation(&self, r: &si::AllocationResponse) -> Result<(), String> {
        *self.0.lock().unwrap() += r.new.len();
        Ok(())
    }
}

#[test]
fn a_panic_in_a_synchronous_call_is_internal_and_the_scheduler_goes_on() {
    use sicore::{Options, ResourceManagerCallback, Scheduler, SchedulerApi, Status};
    let sched = Scheduler::new(Options::default()).unwrap();
    let register = |cb: Arc<dyn ResourceManagerCallback>| {
        sched.register_resource_manager(
            si::RegisterResourceManagerRequest {
                rm_id: "rm".into(),
                policy_group: "queues".into(),
                ..Default::default()
            },
            cb,
        )
    };
    register(Arc::new(PanicsOnDrop)).unwrap();
    let rm = Arc::new(CountingRm::default());
    let err = register(rm.clone()).unwrap_err();
    assert_eq!(err.status, Status::Internal, "{err}");
    assert!(err.message.contains("blew up when dropped"), "{err}");
    assert_eq!(
        sicore::ffi::sicore_status::from(err.status),
        SICORE_INTERNAL
    );

    // The scheduler keeps running: the RM registers again and is served.
    register(rm.clone()).unwrap();
    sched
        .update_node(si::NodeRequest {
            nodes: vec![node("n1", 1000, 10)],
            rm_id: "rm".into(),
        })
        .unwrap();
    sched
        .update_application(si::ApplicationRequest {
            new: vec![app("app-1", "root.a")],
            rm_id: "rm".into(),
            ..Default::default()
        })
        .unwrap();
    sched
        .update_allocation(si::AllocationRequest {
            asks: vec![ask("app-1", "k1", 10, 1, 1)],
            rm_id: "rm".into(),
            ..Default::default()
        })
        .unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    while *rm.0.lock().unwrap() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no allocation after the panic"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let d: serde_json::Value = serde_json::from_str(&sched.state_dump().unwrap()).unwrap();
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 10);
}

#[test]
fn a_config_whose_child_guarantees_overflow_is_rejected() {
    let yaml = "partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: parent
            queues:
              - name: a
                resources:
                  guaranteed: {memory: 9223372036854775807}
              - name: b
                resources:
                  guaranteed: {memory: 9223372036854775807}
";
    let h = Harness::new(yaml_options(yaml));
    let (st, msg) = h.register("rm", "queues");
    assert_eq!(st, SICORE_REJECTED, "{msg}");
    assert!(msg.contains("overflows") && msg.contains("parent"), "{msg}");
    // The scheduler is fine: a valid registration succeeds afterwards.
    let h2 = Harness::configured(SchedulerOptions::default(), 1);
    assert_eq!(h2.dump()["rms"][0]["rm_id"], "rm");
}

#[test]
fn racing_registrations_of_one_rm_agree_with_the_core() {
    let mut o = SchedulerOptions::default();
    o.policy_configs
        .insert("bad".into(), "partitions: [".into());
    let app_req = |id: &str| {
        si::ApplicationRequest {
            new: vec![app(id, "root.a")],
            rm_id: "rm".into(),
            ..Default::default()
        }
        .encode_to_vec()
    };
    for trial in 0..1000 {
        let h = Harness::new(o.clone());
        let mut probes_ok = Vec::new();
        std::thread::scope(|scope| {
            let good = scope.spawn(|| register_as(&h, "rm", "queues", &h.rec).0);
            let bad = scope.spawn(|| register_as(&h, "rm", "bad", &h.rec).0);
            for j in 0..4 {
                let id = format!("probe-{j}");
                if h.raw(sicore_update_application, &app_req(&id)).0 == SICORE_OK {
                    probes_ok.push(id);
                }
            }
            assert_eq!(good.join().unwrap(), SICORE_OK);
            assert_eq!(bad.join().unwrap(), SICORE_REJECTED);
        });
        // An update that returned OK was applied, never dropped: its
        // verdict reaches the RM.
        h.wait("a verdict for every accepted probe", |s| {
            probes_ok.iter().all(|id| {
                s.apps_accepted.contains(id)
                    || s.apps_rejected.iter().any(|r| &r.application_id == id)
            })
        });
        // After both calls: the core holds the RM exactly when updates are taken.
        let holds = h.dump()["rms"].as_array().unwrap().len() == 1;
        let (st, msg) = h.raw(sicore_update_application, &app_req("final"));
        assert_eq!(
            st == SICORE_OK,
            holds,
            "trial {trial}: core holds the RM: {holds}, update: {st:?} {msg}"
        );
    }
}

/// user_data of a predicates callback that dumps another scheduler.
struct DumpsOther {
    other: std::sync::atomic::AtomicPtr<sicore_scheduler>,
    statuses: std::sync::Mutex<Vec<sicore_status>>,
}

unsafe extern "C" fn predicates_dumping_other(
    ud: *mut std::ffi::c_void,
    _msg: *const u8,
    _len: usize,
    _err: *mut sicore_reply,
) -> i32 {
    // SAFETY: a leaked DumpsOther, freed by `release` after the last callback.
    let d = unsafe { &*(ud as *const DumpsOther) };
    let mut json = sicore_buffer::empty();
    let st = sicore_state_dump(
        d.other.load(std::sync::atomic::Ordering::SeqCst),
        &mut json,
        std::ptr::null_mut(),
    );
    sicore_buffer_free(json);
    d.statuses.lock().unwrap().push(st);
    0
}

/// The library's `release` for a [`DumpsOther`]: it runs once, after the
/// last callback, when the scheduler is freed.
unsafe extern "C" fn release_dumps_other(ud: *mut std::ffi::c_void) {
    // SAFETY: `ud` came from `Box::leak` in the test and is released once.
    drop(unsafe { Box::from_raw(ud as *mut DumpsOther) });
}

#[test]
fn callbacks_of_two_schedulers_cannot_deadlock_each_other() {
    let a = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    let b = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    let mut users = Vec::new();
    for (h, other) in [(&a, b.sched), (&b, a.sched)] {
        let ud: &'static DumpsOther = Box::leak(Box::new(DumpsOther {
            other: std::sync::atomic::AtomicPtr::new(other),
            statuses: std::sync::Mutex::new(Vec::new()),
        }));
        users.push(ud);
        // A second RM on each scheduler whose predicates dump the other.
        let cbs = sicore_callbacks {
            struct_size: std::mem::size_of::<sicore_callbacks>(),
            user_data: ud as *const DumpsOther as *mut std::ffi::c_void,
            update_allocation: None,
            update_application: None,
            update_node: None,
            predicates: Some(predicates_dumping_other),
            resync_scheduler_cache: None,
            send_event: None,
            update_container_scheduling_state: None,
            update_configuration: None,
            release: Some(release_dumps_other),
        };
        let req = si::RegisterResourceManagerRequest {
            rm_id: "dumper".into(),
            policy_group: "queues".into(),
            ..Default::default()
        }
        .encode_to_vec();
        let st = sicore_register_resource_manager(
            h.sched,
            req.as_ptr(),
            req.len(),
            &cbs,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        assert_eq!(st, SICORE_OK);
        let nodes = node_req("dumper", vec![node("d1", 1000, 10)]);
        assert_eq!(h.raw(sicore_update_node, &nodes).0, SICORE_OK);
        let apps = si::ApplicationRequest {
            new: vec![app("dapp", "root.a")],
            rm_id: "dumper".into(),
            ..Default::default()
        }
        .encode_to_vec();
        assert_eq!(h.raw(sicore_update_application, &apps).0, SICORE_OK);
    }
    // Both schedulers call predicates, each dumping the other, at once.
    for (i, h) in [&a, &b].into_iter().enumerate() {
        let asks = si::AllocationRequest {
            asks: (0..20)
                .map(|k| ask("dapp", &format!("k{i}-{k}"), 1, 0, 1))
                .collect(),
            rm_id: "dumper".into(),
            ..Default::default()
        }
        .encode_to_vec();
        assert_eq!(h.raw(sicore_update_allocation, &asks).0, SICORE_OK);
    }
    let deadline = std::time::Instant::now() + WAIT;
    while users.iter().any(|u| u.statuses.lock().unwrap().len() < 20) {
        assert!(
            std::time::Instant::now() < deadline,
            "predicates calls did not finish"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    for u in &users {
        assert!(u
            .statuses
            .lock()
            .unwrap()
            .iter()
            .all(|s| *s == SICORE_WOULD_DEADLOCK));
    }
    // Both schedulers still answer from an ordinary thread.
    assert_eq!(a.dump()["rms"].as_array().unwrap().len(), 2);
    assert_eq!(b.dump()["rms"].as_array().unwrap().len(), 2);
    // Freeing the schedulers releases the user data (LSan checks it).
    drop(users);
    drop(a);
    drop(b);
}

#[test]
fn shutdown_stops_racing_callers_and_makes_free_safe() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 2);
    let sched = h.sched as usize;
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let mut callers = Vec::new();
        for t in 0..4 {
            let stop = &stop;
            let h = &h;
            callers.push(scope.spawn(move || {
                let mut stopped_seen = 0;
                let mut i = 0;
                loop {
                    let (st, _) = h.asks(vec![ask("app-1", &format!("t{t}-{i}"), 1, 0, 1)]);
                    i += 1;
                    let mut json = sicore_buffer::empty();
                    let dump = sicore_state_dump(sched as *mut _, &mut json, std::ptr::null_mut());
                    sicore_buffer_free(json);
                    for s in [st, dump] {
                        assert!(s == SICORE_OK || s == SICORE_STOPPED, "{s:?}");
                    }
                    if st == SICORE_STOPPED && dump == SICORE_STOPPED {
                        stopped_seen += 1;
                    }
                    if stop.load(std::sync::atomic::Ordering::SeqCst) && stopped_seen > 0 {
                        return i;
                    }
                }
            }));
        }
        h.wait("some allocations", |s| s.allocations.len() > 10);
        let mut err = sicore_buffer::empty();
        assert_eq!(sicore_shutdown(h.sched, &mut err), SICORE_OK);
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        for c in callers {
            assert!(c.join().unwrap() > 0);
        }
    });
    // After shutdown everything is STOPPED, and a second shutdown is a no-op.
    assert_eq!(
        h.asks(vec![ask("app-1", "late", 1, 0, 1)]).0,
        SICORE_STOPPED
    );
    assert_eq!(h.register("rm", "queues").0, SICORE_STOPPED);
    assert_eq!(sicore_shutdown(h.sched, std::ptr::null_mut()), SICORE_OK);
    assert_eq!(h.rec.releases.load(std::sync::atomic::Ordering::SeqCst), 1);
    // The harness's drop frees it.
}

#[test]
fn a_slow_report_callback_neither_piles_up_reports_nor_delays_allocations() {
    let o = SchedulerOptions {
        outstanding_check_interval_ms: 5,
        ..Default::default()
    };
    let b = Behaviour {
        slow_container_state: Some(std::time::Duration::from_millis(1)),
        ..Default::default()
    };
    let h = Harness::standard(o, b, 1);
    // 300 asks that fit no node: each is reported every 5 ms, while the
    // RM takes 1 ms per report (a round of reports takes 300 ms).
    let waiting = (0..300)
        .map(|i| ask("app-1", &format!("big-{i}"), 5000, 1, 1))
        .collect();
    assert_eq!(h.asks(waiting).0, SICORE_OK);
    h.wait("a full round of reports", |s| {
        s.container_states.len() >= 300
    });
    let before = h.seen(|s| s.container_states.len());
    assert_eq!(h.asks(vec![ask("app-1", "small", 10, 1, 1)]).0, SICORE_OK);
    h.wait("the allocation", |s| s.allocations.len() == 1);
    // Some 60 rounds (18,000 reports) were produced meanwhile; the
    // allocation was not queued behind them.
    let at_allocation = h.seen(|s| s.container_states.len());
    assert!(
        at_allocation < before + 300,
        "{} reports were delivered ahead of the allocation",
        at_allocation - before
    );
    // Coalesced: every ask keeps being reported, none far more than others.
    h.wait("two more rounds", |s| {
        s.container_states.len() >= at_allocation + 600
    });
    h.seen(|s| {
        let mut per_ask = std::collections::HashMap::new();
        // The small ask may be reported once too if a check runs before
        // the pass that places it (seen under ASan): count the big ones.
        for r in s
            .container_states
            .iter()
            .filter(|r| r.allocation_key.starts_with("big-"))
        {
            *per_ask.entry(r.allocation_key.clone()).or_insert(0usize) += 1;
        }
        assert_eq!(per_ask.len(), 300);
        let (min, max) = (
            per_ask.values().min().unwrap(),
            per_ask.values().max().unwrap(),
        );
        assert!(max - min <= 2, "reports per ask from {min} to {max}");
    });
}

#[test]
fn totals_that_would_overflow_are_refused_and_stay_exact() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);
    // Case 1: a huge ask takes all of pending; one more would saturate it.
    assert_eq!(
        h.asks(vec![ask("app-1", "huge", i64::MAX, 1, 1)]).0,
        SICORE_OK
    );
    assert_eq!(h.asks(vec![ask("app-1", "more", 10, 1, 1)]).0, SICORE_OK);
    assert_eq!(
        h.asks(vec![ask("app-1", "times", i64::MAX / 2, 1, 3)]).0,
        SICORE_OK
    );
    h.wait("two asks rejected", |s| s.rejected_asks.len() == 2);
    h.seen(|s| {
        for r in &s.rejected_asks {
            assert!(r.reason.contains("overflow"), "{}", r.reason);
        }
    });
    let rel = si::AllocationAskRelease {
        application_id: "app-1".into(),
        partition_name: "default".into(),
        allocationkey: "huge".into(),
        termination_type: si::TerminationType::StoppedByRm as i32,
        ..Default::default()
    };
    assert_eq!(h.releases(vec![], vec![rel]).0, SICORE_OK);
    assert_eq!(h.asks(vec![ask("app-1", "small", 10, 1, 1)]).0, SICORE_OK);
    h.wait("the small ask is placed", |s| s.allocations.len() == 1);
    let d = h.dump();
    assert_eq!(
        d["partitions"][0]["root"]["pending"]["memory"]
            .as_i64()
            .unwrap_or(0),
        0
    );
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 10);

    // Case 2: a second node at i64::MAX would saturate the partition total.
    let (st, _) = h.nodes(vec![node("max-1", i64::MAX - 1000, 10)]);
    assert_eq!(st, SICORE_OK);
    h.wait("first big node", |s| {
        s.nodes_accepted.contains(&"max-1".to_string())
    });
    assert_eq!(h.nodes(vec![node("max-2", i64::MAX, 10)]).0, SICORE_OK);
    h.wait("second big node refused", |s| !s.nodes_rejected.is_empty());
    let reason = h.seen(|s| s.nodes_rejected[0].reason.clone());
    assert!(reason.contains("overflow the partition total"), "{reason}");
    let d = h.dump();
    assert_eq!(d["partitions"][0]["total"]["memory"], i64::MAX);
    assert_eq!(d["partitions"][0]["root"]["max"]["memory"], i64::MAX);

    // Case 3: recovered allocations whose usage would overflow.
    let recovered = |uuid: &str| si::Allocation {
        allocation_key: uuid.into(),
        uuid: uuid.into(),
        application_id: "app-1".into(),
        partition_name: "default".into(),
        resource_per_alloc: res(&[("memory", i64::MAX / 2 + 1)]),
        ..Default::default()
    };
    let mut n = node("rec", 0, 10);
    n.existing_allocations = vec![recovered("r1"), recovered("r2")];
    assert_eq!(h.nodes(vec![n]).0, SICORE_OK);
    h.wait("recovering node refused", |s| s.nodes_rejected.len() == 2);
    let reason = h.seen(|s| s.nodes_rejected[1].reason.clone());
    assert!(
        reason.contains("recovered allocation") && reason.contains("overflow"),
        "{reason}"
    );
    let d = h.dump();
    assert_eq!(d["partitions"][0]["root"]["allocated"]["memory"], 10);
}
