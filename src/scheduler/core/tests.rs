//! The core stepped by hand: commands, passes and timers with a manual
//! clock, no threads and no waits. What the RM would receive is read
//! straight from the outbox.

use crate::scheduler::port::PredicateCheck;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::bounded;

use super::*;
use crate::proto::si::v1 as si;
use crate::scheduler::clock::{Clock, ManualClock};
use crate::scheduler::outcome::OutMsg;
use crate::scheduler::port::RmPort;
use crate::scheduler::request::AllocationUpdate;

const RM: &str = "rm";
const GROUP: &str = "queues";

/// An RM that answers every callback with the defaults.
struct Rm;

impl RmPort for Rm {
    fn has_predicates(&self) -> bool {
        false
    }
}

const TWO_QUEUES: &str = "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\n        queues:\n          - name: a\n          - name: b\n";

fn options(yaml: &str) -> Options {
    let mut o = Options::default();
    o.policy_configs.insert(GROUP.into(), yaml.into());
    o
}

/// A registered core with one node of 1000 memory / 10 vcore.
fn core_with_node(o: Options) -> (Core, Arc<ManualClock>) {
    core_with_rm(o, Arc::new(Rm))
}

/// As [`core_with_node`], with `callback` as the RM.
fn core_with_rm(o: Options, callback: Arc<dyn RmPort>) -> (Core, Arc<ManualClock>) {
    let clock = ManualClock::new();
    let mut core = Core::new(o, clock.clone());
    let (tx, rx) = bounded(1);
    core.step(Command::Register {
        registration: crate::scheduler::core::Registration {
            rm_id: RM.into(),
            policy_group: GROUP.into(),
            edition: crate::scheduler::edition::Edition::V012,
            config: crate::scheduler::edition::ConfigOrigin::PolicyGroup,
            events: Default::default(),
            build_info: Default::default(),
            v19: true,
        },
        callback,
        reply: tx.into(),
    });
    rx.try_recv()
        .expect("answered in the step")
        .expect("registered");
    core.step(Command::Node(si::NodeRequest {
        rm_id: RM.into(),
        nodes: vec![si::NodeInfo {
            node_id: "n1".into(),
            action: si::node_info::ActionFromRm::Create as i32,
            schedulable_resource: resource(1000, 10),
            ..Default::default()
        }],
    }));
    (core, clock)
}

fn resource(memory: i64, vcore: i64) -> Option<si::Resource> {
    Some(si::Resource {
        resources: [("memory", memory), ("vcore", vcore)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), si::Quantity { value: v }))
            .collect(),
    })
}

fn add_app(core: &mut Core, app: &str, queue: &str) {
    core.step(Command::Application(si::ApplicationRequest {
        rm_id: RM.into(),
        new: vec![si::AddApplicationRequest {
            application_id: app.into(),
            queue_name: queue.into(),
            partition_name: "default".into(),
            ugi: Some(si::UserGroupInformation {
                user: "u".into(),
                groups: vec![],
            }),
            ..Default::default()
        }],
        ..Default::default()
    }));
}

fn allocation(core: &mut Core, req: si::AllocationRequest) {
    core.step(Command::Allocation(AllocationUpdate::from_proto(req)));
}

fn ask(core: &mut Core, app: &str, key: &str, count: i32) {
    allocation(
        core,
        si::AllocationRequest {
            rm_id: RM.into(),
            asks: vec![si::AllocationAsk {
                allocation_key: key.into(),
                application_id: app.into(),
                resource_ask: resource(100, 1),
                max_allocations: count,
                ..Default::default()
            }],
            ..Default::default()
        },
    );
}

/// The new allocations in `out`, as (key, node, uuid).
fn new_allocations(out: &[Outbound]) -> Vec<(String, String, String)> {
    out.iter()
        .flat_map(|o| match o {
            Outbound::Message(_, OutMsg::NewAllocations(v)) => v.clone(),
            _ => Vec::new(),
        })
        .map(|a| (a.key.to_string(), a.node.to_string(), a.uuid.to_string()))
        .collect()
}

/// Application state changes in `out`, as (app, state).
fn app_states(out: &[Outbound]) -> Vec<(String, String)> {
    out.iter()
        .flat_map(|o| match o {
            Outbound::Message(_, OutMsg::Application(r)) => r.updated.clone(),
            _ => Vec::new(),
        })
        .map(|u| (u.application_id, u.state))
        .collect()
}

#[test]
fn a_request_and_one_pass_give_the_outbound_allocations() {
    let (mut core, _clock) = core_with_node(options(TWO_QUEUES));
    add_app(&mut core, "app", "root.a");
    ask(&mut core, "app", "k", 2);
    let before = core.take_outbound();
    assert!(
        new_allocations(&before).is_empty(),
        "nothing is allocated before a pass runs"
    );
    assert!(core.has_pending());
    assert_eq!(core.schedule_pass(), 2);
    let out = core.take_outbound();
    let allocs = new_allocations(&out);
    assert_eq!(allocs.len(), 2, "{out:?}");
    assert!(allocs.iter().all(|(k, n, _)| k == "k" && n == "n1"));
    assert_ne!(allocs[0].2, allocs[1].2, "each allocation has its own UUID");
    assert!(!core.has_pending());
    assert_eq!(core.schedule_pass(), 0, "nothing left to place");
    assert!(new_allocations(&core.take_outbound()).is_empty());
}

#[test]
fn the_completing_timeout_fires_when_the_clock_passes_it() {
    let mut o = options(TWO_QUEUES);
    o.app_completing_timeout = Duration::from_secs(30);
    let (mut core, clock) = core_with_node(o);
    add_app(&mut core, "app", "root.a");
    ask(&mut core, "app", "k", 1);
    core.schedule_pass();
    let (_, _, uuid) = new_allocations(&core.take_outbound()).remove(0);
    allocation(
        &mut core,
        si::AllocationRequest {
            rm_id: RM.into(),
            releases: Some(si::AllocationReleasesRequest {
                allocations_to_release: vec![si::AllocationRelease {
                    partition_name: "default".into(),
                    application_id: "app".into(),
                    uuid,
                    termination_type: si::TerminationType::StoppedByRm as i32,
                    message: String::new(),
                }],
                ..Default::default()
            }),
            ..Default::default()
        },
    );
    let states = app_states(&core.take_outbound());
    assert!(
        states.contains(&("app".into(), "Completing".into())),
        "{states:?}"
    );
    core.tick();
    assert!(
        !app_states(&core.take_outbound()).contains(&("app".into(), "Completed".into())),
        "not before the clock moves"
    );
    // Partitions read the core's clock: one second short of the timeout
    // nothing happens, at the timeout the application completes.
    clock.advance(Duration::from_secs(29));
    core.tick();
    assert!(
        !app_states(&core.take_outbound()).contains(&("app".into(), "Completed".into())),
        "not before the timeout"
    );
    clock.advance(Duration::from_secs(1));
    core.tick();
    let states = app_states(&core.take_outbound());
    assert!(
        states.contains(&("app".into(), "Completed".into())),
        "{states:?}"
    );
}

#[test]
fn the_event_flush_waits_for_its_interval() {
    let mut o = options(TWO_QUEUES);
    o.event_flush_interval = Duration::from_secs(2);
    let (mut core, clock) = core_with_node(o);
    let events = |out: &[Outbound]| -> Vec<si::EventRecord> {
        out.iter()
            .flat_map(|o| match o {
                Outbound::Events(_, v) => v.iter().map(|r| r.base.clone()).collect(),
                _ => Vec::new(),
            })
            .collect()
    };
    core.tick();
    assert!(events(&core.take_outbound()).is_empty(), "not due yet");
    assert!(core.idle_wait() <= Duration::from_secs(2));
    clock.advance(Duration::from_secs(2));
    core.tick();
    let batch = events(&core.take_outbound());
    let node = batch
        .iter()
        .find(|r| r.object_id == "n1")
        .expect("the node's record is flushed");
    assert_eq!(
        node.timestamp_nano,
        clock.unix_nanos() - 2_000_000_000,
        "stamped from the core's clock when stored"
    );
    core.tick();
    assert!(events(&core.take_outbound()).is_empty(), "flushed once");
}

#[test]
fn a_does_not_fit_record_repeats_once_per_interval_per_ask() {
    // Queue `a` holds 50 memory: the 100-memory ask never fits it, and
    // every pass tries it again.
    let yaml = TWO_QUEUES.replace(
        "          - name: a\n",
        "          - name: a\n            resources:\n              max:\n                memory: 50\n",
    );
    let mut o = options(&yaml);
    o.event_flush_interval = Duration::from_secs(1);
    let (mut core, clock) = core_with_node(o);
    add_app(&mut core, "app", "root.a");
    ask(&mut core, "app", "k", 1);
    let unfit = |out: &[Outbound]| -> usize {
        out.iter()
            .flat_map(|o| match o {
                Outbound::Events(_, v) => v.clone(),
                _ => Vec::new(),
            })
            .filter(|r| {
                r.base.object_id == "k" && r.base.reason == crate::events::REASON_QUEUE_HEADROOM
            })
            .count()
    };
    // One pass and one flush per second: the first flush carries the
    // record, the next 14 nothing, the one at 15 s the next record.
    let mut seen = Vec::new();
    for _ in 0..=15 {
        core.schedule_pass();
        clock.advance(Duration::from_secs(1));
        core.tick();
        seen.push(unfit(&core.take_outbound()));
    }
    let mut expected = vec![0; 16];
    expected[0] = 1;
    expected[15] = 1;
    assert_eq!(seen, expected);
    let dump: serde_json::Value = serde_json::from_str(&core.dump_json()).unwrap();
    assert!(
        dump["events"]["rate_limited"].as_u64().unwrap() >= 14,
        "{}",
        dump["events"]
    );
}

#[test]
fn a_configuration_reload_applies_or_changes_nothing() {
    let (mut core, _clock) = core_with_node(options(TWO_QUEUES));
    let set = |core: &mut Core, yaml: &str| {
        let (tx, rx) = bounded(1);
        core.step(Command::SetPolicyConfig {
            policy_group: GROUP.into(),
            yaml: yaml.into(),
            reply: tx.into(),
        });
        rx.try_recv().expect("answered in the step")
    };
    let leaves = |core: &Core| -> Vec<String> {
        core.snapshot().partitions[0]
            .root
            .children
            .iter()
            .map(|q| q.path.clone())
            .collect()
    };
    assert_eq!(leaves(&core), ["root.a", "root.b"]);
    let three = TWO_QUEUES.to_string() + "          - name: c\n";
    set(&mut core, &three).expect("a valid change applies");
    assert_eq!(leaves(&core), ["root.a", "root.b", "root.c"]);
    let checksum = core.snapshot().rms[0].checksum.clone();
    let err = set(&mut core, "partitions: [").unwrap_err();
    assert_eq!(err.status, crate::error::Status::Rejected, "{err:?}");
    assert_eq!(leaves(&core), ["root.a", "root.b", "root.c"]);
    assert_eq!(core.snapshot().rms[0].checksum, checksum, "nothing changed");
}

#[test]
fn a_settled_dump_shows_the_pass_its_requests_trigger() {
    let (mut core, _clock) = core_with_node(options(TWO_QUEUES));
    add_app(&mut core, "app", "root.b");
    ask(&mut core, "app", "k", 3);
    let dump = |core: &mut Core, settle: bool| -> serde_json::Value {
        let (tx, rx) = bounded(1);
        core.step(Command::Dump {
            settle,
            reply: tx.into(),
        });
        serde_json::from_str(&rx.try_recv().unwrap().unwrap()).unwrap()
    };
    let raw = dump(&mut core, false);
    assert_eq!(
        raw["partitions"][0]["root"]["allocated"]["memory"],
        serde_json::Value::Null
    );
    let settled = dump(&mut core, true);
    assert_eq!(settled["partitions"][0]["root"]["allocated"]["memory"], 300);
    assert_eq!(new_allocations(&core.take_outbound()).len(), 3);
}

#[test]
fn the_rest_update_steps_dry_run_then_apply_only_for_the_registration_asked() {
    use crate::scheduler::config_txn::{ApplyRefused, ConfigTarget};
    use crate::scheduler::port::same_registration;
    let (mut core, _clock) = core_with_node(options(TWO_QUEUES));
    add_app(&mut core, "app", "root.a");
    let target = |core: &mut Core, text: &str| -> Result<ConfigTarget, Error> {
        let (tx, rx) = bounded(1);
        core.step(Command::ConfigTarget {
            text: text.into(),
            reply: tx.into(),
        });
        rx.try_recv().expect("answered in the step")
    };
    let apply = |core: &mut Core,
                 text: &str,
                 expected: &str,
                 registration: Arc<dyn RmPort>|
     -> Result<(), ApplyRefused> {
        let (tx, rx) = bounded(1);
        core.step(Command::ApplyConfigText {
            rm_id: RM.into(),
            text: text.into(),
            expected_checksum: Some(expected.into()),
            registration,
            reply: tx.into(),
        });
        rx.try_recv().expect("answered in the step")
    };
    let in_force = |core: &Core| {
        let s = core.snapshot();
        (s.rms[0].checksum.clone(), s.rms[0].config_text.clone())
    };
    let before = in_force(&core);
    assert_eq!(before.1, TWO_QUEUES);

    // The dry run refuses a leaf holding an application that would become
    // a parent, and text that is not a configuration.
    let a_parent = TWO_QUEUES.replace(
        "          - name: a\n",
        "          - name: a\n            queues:\n              - name: x\n",
    );
    let err = target(&mut core, &a_parent).err().expect("refused");
    assert_eq!(err.status, crate::error::Status::Rejected, "{err:?}");
    assert!(target(&mut core, "partitions: [").is_err());
    assert_eq!(in_force(&core), before, "a dry run changes nothing");

    let three = TWO_QUEUES.to_string() + "          - name: c\n";
    let t = target(&mut core, &three).expect("a valid change");
    assert_eq!(t.rm_id, RM);
    assert_eq!((t.checksum.clone(), t.text.clone()), before);
    assert_eq!(in_force(&core), before, "still a dry run");

    // Another table than the one asked is not the RM's registration.
    let other: Arc<dyn RmPort> = Arc::new(Rm);
    assert!(!same_registration(&other, &t.callback));
    let refused = apply(&mut core, &three, &t.checksum, other);
    assert!(
        matches!(refused, Err(ApplyRefused::Replaced)),
        "{refused:?}"
    );
    assert_eq!(in_force(&core), before);

    // A changed base fails and answers the text still in force.
    match apply(&mut core, &three, "stale", t.callback.clone()) {
        Err(ApplyRefused::Failed { error, in_force }) => {
            assert!(error.message.contains("base configuration"), "{error:?}");
            assert_eq!(in_force.as_deref(), Some(TWO_QUEUES));
        }
        other => panic!("applied on a stale base: {other:?}"),
    }
    assert_eq!(in_force(&core), before);

    apply(&mut core, &three, &t.checksum, t.callback.clone()).expect("applied");
    let after = in_force(&core);
    assert_eq!(after.1, three);
    assert_ne!(after.0, before.0);
}

#[test]
fn timers_of_applications_that_moved_on_are_swept_and_live_ones_kept() {
    let mut o = options(TWO_QUEUES);
    o.app_start_timeout = Duration::from_secs(300);
    let (mut core, clock) = core_with_node(o);
    // One application stays Starting for the whole run: its start timer
    // must survive every sweep and still fire.
    add_app(&mut core, "keeper", "root.a");
    ask(&mut core, "keeper", "k", 1);
    core.schedule_pass();
    core.take_outbound();
    // Thousands of short-lived ones: each sets a start timer, then goes.
    for i in 0..5_000 {
        let app = format!("app-{i}");
        add_app(&mut core, &app, "root.b");
        ask(&mut core, &app, "k", 1);
        core.schedule_pass();
        core.step(Command::Application(si::ApplicationRequest {
            rm_id: RM.into(),
            remove: vec![si::RemoveApplicationRequest {
                application_id: app,
                partition_name: "default".into(),
            }],
            ..Default::default()
        }));
        core.take_outbound();
        assert!(
            core.timer_data.len() <= 2 * TIMER_SWEEP_MIN,
            "{} timers pending after {i} applications came and went",
            core.timer_data.len()
        );
    }
    assert!(core.timers.len() <= 2 * TIMER_SWEEP_MIN);
    clock.advance(Duration::from_secs(300));
    core.tick();
    let states = app_states(&core.take_outbound());
    assert!(
        states.contains(&("keeper".into(), "Running".into())),
        "the kept start timer fired: {states:?}"
    );
}

#[test]
fn an_application_held_by_maxapplications_leaves_the_held_set_when_its_requests_go() {
    let yaml = TWO_QUEUES.replace(
        "          - name: a\n",
        "          - name: a\n            limits:\n              - {users: [u], maxapplications: 1}\n",
    );
    let (mut core, _clock) = core_with_node(options(&yaml));
    let held = |core: &Core, app: &str| -> bool {
        let dump: serde_json::Value = serde_json::from_str(&core.dump_json()).unwrap();
        let apps = dump["partitions"][0]["applications"]
            .as_array()
            .unwrap()
            .clone();
        let entry = apps
            .iter()
            .find(|a| a["id"] == app)
            .unwrap_or_else(|| panic!("{app} in {apps:?}"));
        entry["held_by_limits"].as_bool().unwrap()
    };
    add_app(&mut core, "app-1", "root.a");
    ask(&mut core, "app-1", "k1", 1);
    core.schedule_pass();
    assert_eq!(new_allocations(&core.take_outbound()).len(), 1);
    add_app(&mut core, "app-2", "root.a");
    ask(&mut core, "app-2", "k2", 2);
    core.schedule_pass();
    assert!(new_allocations(&core.take_outbound()).is_empty());
    assert!(held(&core, "app-2"), "held by the user's maxapplications");
    // The RM takes app-2's request back: nothing waits any more.
    allocation(
        &mut core,
        si::AllocationRequest {
            rm_id: RM.into(),
            releases: Some(si::AllocationReleasesRequest {
                allocation_asks_to_release: vec![si::AllocationAskRelease {
                    partition_name: "default".into(),
                    application_id: "app-2".into(),
                    allocationkey: "k2".into(),
                    termination_type: si::TerminationType::StoppedByRm as i32,
                    message: String::new(),
                }],
                ..Default::default()
            }),
            ..Default::default()
        },
    );
    core.schedule_pass();
    assert!(!held(&core, "app-2"), "no demand, not held");
    assert!(!held(&core, "app-1"));
}

/// An RM with `Predicates` answered from what reached its cache.
#[derive(Default)]
struct Cache {
    assumed: std::sync::Mutex<Vec<String>>,
    /// How many allocations the cache held at each `Predicates` call.
    asked_with: std::sync::Mutex<Vec<usize>>,
}

impl RmPort for Cache {
    fn assume(
        &self,
        allocations: &[Arc<crate::scheduler::outcome::NewAllocation>],
    ) -> Result<(), String> {
        let mut a = self.assumed.lock().unwrap();
        a.extend(allocations.iter().map(|x| x.key.to_string()));
        Ok(())
    }

    fn predicates(&self, _args: &PredicateCheck<'_>) -> Result<(), String> {
        let held = self.assumed.lock().unwrap().len();
        self.asked_with.lock().unwrap().push(held);
        Ok(())
    }
}

#[test]
fn a_pass_with_no_check_after_its_decision_leaves_it_to_the_delivery() {
    let rm = Arc::new(Cache::default());
    let (mut core, _clock) = core_with_rm(options(TWO_QUEUES), rm.clone());
    add_app(&mut core, "app-1", "root.a");
    ask(&mut core, "app-1", "k1", 1);
    core.schedule_pass();
    // Decided and asked about, but not told on the core thread: the cache
    // learns of k1 from the delivery of the outbox.
    assert_eq!(*rm.asked_with.lock().unwrap(), [0]);
    assert!(rm.assumed.lock().unwrap().is_empty());
    core.deliver_outbound();
    assert_eq!(*rm.assumed.lock().unwrap(), ["k1"]);
    // The next check sees it.
    ask(&mut core, "app-1", "k2", 1);
    core.schedule_pass();
    assert_eq!(*rm.asked_with.lock().unwrap(), [0, 1]);
    core.deliver_outbound();
    assert_eq!(*rm.assumed.lock().unwrap(), ["k1", "k2"]);
}

#[test]
fn a_request_files_its_queues_before_the_pass() {
    // One request's asks re-file their queues once, when the request is in
    // (queue/unfiled.rs): the pass finds both queues, and the larger demand
    // (root.b, its asks last in the request) wins the tie between two
    // queues with nothing allocated. The node fits one.
    let (mut core, _clock) = core_with_node(options(TWO_QUEUES));
    add_app(&mut core, "app-a", "root.a");
    add_app(&mut core, "app-b", "root.b");
    let one = |app: &str, key: &str| si::AllocationAsk {
        allocation_key: key.into(),
        application_id: app.into(),
        resource_ask: resource(600, 1),
        max_allocations: 1,
        ..Default::default()
    };
    allocation(
        &mut core,
        si::AllocationRequest {
            rm_id: RM.into(),
            asks: vec![one("app-a", "a1"), one("app-b", "b1"), one("app-b", "b2")],
            ..Default::default()
        },
    );
    core.take_outbound();
    assert_eq!(core.schedule_pass(), 1);
    let allocs = new_allocations(&core.take_outbound());
    assert_eq!(allocs.len(), 1, "{allocs:?}");
    assert_eq!(allocs[0].0, "b1", "the queue with the larger demand first");
}
