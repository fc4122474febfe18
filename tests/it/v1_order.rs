//! Per-RM order through the C ABI: what the core tells one RM reaches it
//! in the order the core made it, even though the `new` barrier (an RM
//! with `predicates`) delivers on the core thread while the rest goes
//! through the dispatcher; and one RM's held-up callback never holds up
//! another RM's barrier.
//!
//! The RMs here hold a callback on a latch the test opens; the tests
//! assert order only, never times (the latches' waits are failure guards).

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use sicore::ffi::sicore_status::*;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1 as sicore_pb;
use sicore_c_rm::v1::{self as rmv1, RmV1};
use sicore_c_rm::{call, Handle, Installed, Rm};

use crate::common::ONE_QUEUE as CONFIG;

/// Failure guard of every wait.
const WAIT: Duration = Duration::from_secs(20);

fn options() -> sicore_pb::SchedulerOptions {
    sicore_pb::SchedulerOptions {
        scheduling_interval_ms: 10,
        policy_configs: [("queues".to_string(), CONFIG.to_string())].into(),
        ..Default::default()
    }
}

/// A gate one callback stops at until the test opens it.
#[derive(Default)]
struct Latch {
    state: Mutex<LatchState>,
    cv: Condvar,
}

#[derive(Default)]
struct LatchState {
    /// The application whose accepted response stops at the gate.
    hold_app: Option<String>,
    /// A callback is waiting at the gate.
    entered: bool,
    open: bool,
}

impl Latch {
    fn hold(&self, app: &str) {
        self.state.lock().unwrap().hold_app = Some(app.to_string());
    }

    /// Waits at the gate when `app` is the held one.
    fn pass(&self, app: &str) {
        let mut s = self.state.lock().unwrap();
        if s.hold_app.as_deref() != Some(app) {
            return;
        }
        s.entered = true;
        self.cv.notify_all();
        let deadline = Instant::now() + WAIT;
        while !s.open {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break; // failure guard: the test's assertions report it
            }
            s = self.cv.wait_timeout(s, left).unwrap().0;
        }
    }

    fn wait_entered(&self) {
        let deadline = Instant::now() + WAIT;
        let mut s = self.state.lock().unwrap();
        while !s.entered {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no callback reached the latch");
            s = self.cv.wait_timeout(s, left).unwrap().0;
        }
    }

    fn open(&self) {
        self.state.lock().unwrap().open = true;
        self.cv.notify_all();
    }
}

/// What an RM was told, one line per item, in arrival order.
#[derive(Default)]
struct Log {
    lines: Mutex<Vec<String>>,
    cv: Condvar,
    latch: Latch,
}

impl Log {
    fn push(&self, line: String) {
        self.lines.lock().unwrap().push(line);
        self.cv.notify_all();
    }

    fn wait_for(&self, line: &str) -> Vec<String> {
        let deadline = Instant::now() + WAIT;
        let mut l = self.lines.lock().unwrap();
        while !l.iter().any(|x| x == line) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "timed out waiting for {line}: {l:#?}");
            l = self.cv.wait_timeout(l, left).unwrap().0;
        }
        l.clone()
    }

    fn position(lines: &[String], line: &str) -> usize {
        lines
            .iter()
            .position(|x| x == line)
            .unwrap_or_else(|| panic!("{line} in {lines:#?}"))
    }
}

impl RmV1 for Log {
    fn update_allocation(&self, m: si18::AllocationResponse) -> Result<(), String> {
        for a in m.new {
            self.push(format!("new {}", a.allocation_key));
        }
        for r in m.released {
            self.push(format!("released {}", r.allocation_key));
        }
        Ok(())
    }

    fn update_application(&self, m: si18::ApplicationResponse) -> Result<(), String> {
        for a in m.accepted {
            self.latch.pass(&a.application_id);
            self.push(format!("accepted {}", a.application_id));
        }
        for u in m.updated {
            self.push(format!("{} {}", u.application_id, u.state));
        }
        Ok(())
    }

    fn update_node(&self, m: si18::NodeResponse) -> Result<(), String> {
        for n in m.accepted {
            self.push(format!("node {}", n.node_id));
        }
        Ok(())
    }
}

/// One v1 RM with `predicates` (every node passes) on `sched`.
struct V1 {
    sched: *mut sicore_scheduler,
    rm_id: String,
    log: Arc<Log>,
}

impl V1 {
    fn register(sched: *mut sicore_scheduler, rm_id: &str) -> Self {
        let log = Arc::new(Log::default());
        let table = rmv1::table(&log, true);
        let req = si18::RegisterResourceManagerRequest {
            rm_id: rm_id.into(),
            version: "v1.8.0".into(),
            policy_group: "queues".into(),
            config: CONFIG.into(),
            ..Default::default()
        };
        let (st, msg) = rmv1::register(sched, &req, &table);
        assert_eq!(st, SICORE_OK, "{msg}");
        V1 {
            sched,
            rm_id: rm_id.into(),
            log,
        }
    }

    fn node(&self, id: &str) {
        let (st, msg) = call(
            self.sched,
            sicore_v1_update_node,
            &si18::NodeRequest {
                nodes: vec![rmv1::node(id, 100_000, 1000)],
                rm_id: self.rm_id.clone(),
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
        self.log.wait_for(&format!("node {id}"));
        // Created draining (CREATE_DRAIN): the RM makes it schedulable.
        let (st, msg) = call(
            self.sched,
            sicore_v1_update_node,
            &si18::NodeRequest {
                nodes: vec![rmv1::node_action(
                    id,
                    si18::node_info::ActionFromRm::DrainToSchedulable,
                )],
                rm_id: self.rm_id.clone(),
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
    }

    fn add_app(&self, id: &str) {
        let (st, msg) = call(
            self.sched,
            sicore_v1_update_application,
            &si18::ApplicationRequest {
                new: vec![rmv1::app(id, "root.a", "alice")],
                rm_id: self.rm_id.clone(),
                ..Default::default()
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
    }

    fn allocate(&self, asks: Vec<si18::Allocation>, releases: Vec<si18::AllocationRelease>) {
        let (st, msg) = call(
            self.sched,
            sicore_v1_update_allocation,
            &si18::AllocationRequest {
                allocations: asks,
                releases: (!releases.is_empty()).then_some(si18::AllocationReleasesRequest {
                    allocations_to_release: releases,
                }),
                rm_id: self.rm_id.clone(),
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
    }
}

#[test]
fn the_echo_of_a_release_reaches_a_v1_rm_before_a_later_new() {
    let sched = Handle(sicore_c_rm::new_scheduler(&options()).unwrap());
    let rm = V1::register(sched.0, "rm1");
    rm.node("n1");
    rm.add_app("app-1");
    rm.log.wait_for("accepted app-1");
    rm.allocate(vec![rmv1::ask("app-1", "pod-1", 10, 1)], vec![]);
    rm.log.wait_for("new pod-1");

    // The dispatcher is held up in an earlier message: app-2's acceptance.
    rm.log.latch.hold("app-2");
    rm.add_app("app-2");
    rm.log.latch.wait_entered();
    // The RM lets pod-1 go and asks pod-2 in one request: the echo is made
    // first, the `new` of pod-2 in the pass after it.
    rm.allocate(
        vec![rmv1::ask("app-1", "pod-2", 10, 1)],
        vec![rmv1::release("app-1", "pod-1")],
    );
    // Long enough for the pass to run while the dispatcher is held; only
    // the order is asserted.
    std::thread::sleep(Duration::from_millis(200));
    rm.log.latch.open();
    let lines = rm.log.wait_for("new pod-2");
    let lines = if lines.iter().any(|l| l == "released pod-1") {
        lines
    } else {
        rm.log.wait_for("released pod-1")
    };
    let accepted = Log::position(&lines, "accepted app-2");
    let echo = Log::position(&lines, "released pod-1");
    let new = Log::position(&lines, "new pod-2");
    assert!(
        accepted < echo && echo < new,
        "the RM saw its messages out of the core's order: {lines:#?}"
    );
}

#[test]
fn a_state_change_made_between_two_decisions_of_a_pass_reaches_the_rm_between_them() {
    let sched = Handle(sicore_c_rm::new_scheduler(&options()).unwrap());
    let rm = V1::register(sched.0, "rm1");
    rm.node("n1");
    rm.add_app("app-1");
    rm.log.wait_for("accepted app-1");
    // One pass places both: the first allocation moves the application on
    // (a state change the core makes between the two decisions).
    rm.allocate(
        vec![
            rmv1::ask("app-1", "pod-1", 10, 1),
            rmv1::ask("app-1", "pod-2", 10, 1),
        ],
        vec![],
    );
    rm.log.wait_for("new pod-2");
    let lines = rm.log.wait_for("app-1 Running");
    let first = Log::position(&lines, "new pod-1");
    let second = Log::position(&lines, "new pod-2");
    let changed = lines
        .iter()
        .position(|l| l.starts_with("app-1 ") && l != "app-1 Accepted")
        .unwrap_or_else(|| panic!("a state change of app-1 in {lines:#?}"));
    assert!(
        first < changed && changed < second,
        "the RM saw its messages out of the core's order: {lines:#?}"
    );
}

#[test]
fn one_rms_held_callback_does_not_hold_up_another_rms_barrier() {
    let sched = Handle(sicore_c_rm::new_scheduler(&options()).unwrap());
    let a = V1::register(sched.0, "rm-a");
    let b = V1::register(sched.0, "rm-b");
    a.node("a-n1");
    b.node("b-n1");
    a.add_app("a-app");
    a.log.wait_for("accepted a-app");

    // B's callback stops at its latch (the dispatcher with it).
    b.log.latch.hold("b-app");
    b.add_app("b-app");
    b.log.latch.wait_entered();
    // A's `new` of a-pod waits for the dispatcher, unless A is asked
    // Predicates again: then the core thread delivers it first, itself,
    // waiting for nothing of B's.
    a.allocate(vec![rmv1::ask("a-app", "a-pod", 10, 1)], vec![]);
    a.allocate(vec![rmv1::ask("a-app", "a-pod-2", 10, 1)], vec![]);
    let lines = a.log.wait_for("new a-pod");
    assert!(lines.iter().any(|l| l == "accepted a-app"), "{lines:#?}");
    assert!(
        !b.log
            .lines
            .lock()
            .unwrap()
            .iter()
            .any(|l| l == "accepted b-app"),
        "B's callback was not held"
    );
    b.log.latch.open();
    b.log.wait_for("accepted b-app");
    a.log.wait_for("new a-pod-2");
}

/// A v0.12 RM with predicates: the ReSync that assumes an allocation comes
/// after the echo of a release made before it, and its UpdateAllocation
/// after that ReSync.
#[derive(Default)]
struct V0Log {
    log: Log,
    /// Allocation key -> uuid of what the core placed.
    uuids: Mutex<std::collections::HashMap<String, String>>,
}

impl Rm for V0Log {
    fn update_allocation(&self, m: si::AllocationResponse) -> Result<(), String> {
        for a in m.new {
            let line = format!("new {}", a.allocation_key);
            self.uuids.lock().unwrap().insert(a.allocation_key, a.uuid);
            self.log.push(line);
        }
        for r in m.released {
            self.log.push(format!("released {}", r.uuid));
        }
        Ok(())
    }

    fn update_application(&self, m: si::ApplicationResponse) -> Result<(), String> {
        for a in m.accepted {
            self.log.latch.pass(&a.application_id);
            self.log.push(format!("accepted {}", a.application_id));
        }
        Ok(())
    }

    fn update_node(&self, m: si::NodeResponse) -> Result<(), String> {
        for n in m.accepted {
            self.log.push(format!("node {}", n.node_id));
        }
        Ok(())
    }

    fn resync_scheduler_cache(&self, m: si::ReSyncSchedulerCacheArgs) -> Result<(), String> {
        for a in m.assumed_allocations {
            self.log.push(format!("assumed {}", a.allocation_key));
        }
        Ok(())
    }
}

#[test]
fn a_v0_rms_resync_comes_after_earlier_messages_and_before_its_update() {
    let sched = Handle(sicore_c_rm::new_scheduler(&options()).unwrap());
    let rm = Arc::new(V0Log::default());
    let table = sicore_c_rm::table(
        &rm,
        Installed {
            predicates: true,
            resync_scheduler_cache: true,
            ..Default::default()
        },
    );
    let (st, msg) = sicore_c_rm::register(sched.0, "rm0", "queues", "0.12", &table);
    assert_eq!(st, SICORE_OK, "{msg}");
    let (st, msg) = call(
        sched.0,
        sicore_update_node,
        &si::NodeRequest {
            nodes: vec![sicore_c_rm::node("n1", 100_000, 1000)],
            rm_id: "rm0".into(),
        },
    );
    assert_eq!(st, SICORE_OK, "{msg}");
    rm.log.wait_for("node n1");
    let app = |id: &str| {
        let (st, msg) = call(
            sched.0,
            sicore_update_application,
            &si::ApplicationRequest {
                new: vec![sicore_c_rm::app(id, "root.a", "alice")],
                rm_id: "rm0".into(),
                ..Default::default()
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
    };
    let allocate = |asks: Vec<si::AllocationAsk>, releases: Vec<si::AllocationRelease>| {
        let (st, msg) = call(
            sched.0,
            sicore_update_allocation,
            &si::AllocationRequest {
                asks,
                releases: (!releases.is_empty()).then_some(si::AllocationReleasesRequest {
                    allocations_to_release: releases,
                    ..Default::default()
                }),
                rm_id: "rm0".into(),
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
    };
    app("app-1");
    rm.log.wait_for("accepted app-1");
    allocate(vec![sicore_c_rm::ask("app-1", "pod-1", 10, 1, 1)], vec![]);
    let lines = rm.log.wait_for("new pod-1");
    assert!(
        Log::position(&lines, "assumed pod-1") < Log::position(&lines, "new pod-1"),
        "{lines:#?}"
    );
    let uuid = rm
        .uuids
        .lock()
        .unwrap()
        .get("pod-1")
        .cloned()
        .expect("pod-1's uuid");

    rm.log.latch.hold("app-2");
    app("app-2");
    rm.log.latch.wait_entered();
    allocate(
        vec![sicore_c_rm::ask("app-1", "pod-2", 10, 1, 1)],
        vec![si::AllocationRelease {
            partition_name: "default".into(),
            application_id: "app-1".into(),
            uuid: uuid.clone(),
            termination_type: si::TerminationType::StoppedByRm as i32,
            ..Default::default()
        }],
    );
    std::thread::sleep(Duration::from_millis(200));
    rm.log.latch.open();
    rm.log.wait_for("new pod-2");
    let lines = rm.log.wait_for(&format!("released {uuid}"));
    let accepted = Log::position(&lines, "accepted app-2");
    let echo = Log::position(&lines, &format!("released {uuid}"));
    let assumed = Log::position(&lines, "assumed pod-2");
    let new = Log::position(&lines, "new pod-2");
    assert!(
        accepted < echo && echo < assumed && assumed < new,
        "the RM saw its messages out of the core's order: {lines:#?}"
    );
}

/// A v1 RM as the k8shim is: `predicates` answers from its own cache of
/// pods per node, which only the `new` of `UpdateAllocation` feeds (and
/// the RM's own releases drain). A node holds at most [`SHIM_K`] pods.
#[derive(Default)]
struct Shim {
    log: Log,
    pods: Mutex<std::collections::HashMap<String, usize>>,
    /// Where each pod went, by allocation key.
    placed: Mutex<std::collections::HashMap<String, String>>,
    /// `new`s for a node whose cache was full: a `predicates` answer that
    /// was not current.
    violations: Mutex<Vec<String>>,
}

const SHIM_K: usize = 1;

impl RmV1 for Shim {
    fn update_allocation(&self, m: si18::AllocationResponse) -> Result<(), String> {
        for a in m.new {
            let held = {
                let mut pods = self.pods.lock().unwrap();
                let n = pods.entry(a.node_id.clone()).or_default();
                *n += 1;
                *n
            };
            if held > SHIM_K {
                self.violations
                    .lock()
                    .unwrap()
                    .push(format!("{} on {} ({held})", a.allocation_key, a.node_id));
            }
            self.placed
                .lock()
                .unwrap()
                .insert(a.allocation_key.clone(), a.node_id);
            self.log.push(format!("new {}", a.allocation_key));
        }
        Ok(())
    }

    fn update_node(&self, m: si18::NodeResponse) -> Result<(), String> {
        for n in m.accepted {
            self.log.push(format!("node {}", n.node_id));
        }
        Ok(())
    }

    fn predicates(&self, m: si18::PredicatesArgs) -> Result<(), String> {
        let held = self.pods.lock().unwrap().get(&m.node_id).copied();
        match held {
            Some(n) if n >= SHIM_K => Err(format!("{} is full", m.node_id)),
            _ => Ok(()),
        }
    }
}

#[test]
fn a_k8shim_like_rms_predicates_always_see_every_earlier_new() {
    let sched = Handle(sicore_c_rm::new_scheduler(&options()).unwrap());
    let shim = Arc::new(Shim::default());
    let table = rmv1::table(&shim, true);
    let req = si18::RegisterResourceManagerRequest {
        rm_id: "shim".into(),
        version: "v1.8.0".into(),
        policy_group: "queues".into(),
        config: CONFIG.into(),
        ..Default::default()
    };
    let (st, msg) = rmv1::register(sched.0, &req, &table);
    assert_eq!(st, SICORE_OK, "{msg}");
    let rm = V1 {
        sched: sched.0,
        rm_id: "shim".into(),
        log: Arc::new(Log::default()),
    };
    let (st, msg) = call(
        sched.0,
        sicore_v1_update_node,
        &si18::NodeRequest {
            nodes: vec![rmv1::node("n1", 100_000, 1000)],
            rm_id: "shim".into(),
        },
    );
    assert_eq!(st, SICORE_OK, "{msg}");
    shim.log.wait_for("node n1");
    let (st, msg) = call(
        sched.0,
        sicore_v1_update_node,
        &si18::NodeRequest {
            nodes: vec![rmv1::node_action(
                "n1",
                si18::node_info::ActionFromRm::DrainToSchedulable,
            )],
            rm_id: "shim".into(),
        },
    );
    assert_eq!(st, SICORE_OK, "{msg}");
    rm.add_app("app-1");
    // Another RM's callback holds the dispatcher: every `new` the shim gets
    // from here on reaches it on the core thread, before a `predicates`.
    let other = V1::register(sched.0, "other");
    other.log.latch.hold("o-app");
    other.add_app("o-app");
    other.log.latch.wait_entered();
    // One request per ask, apart, so that passes likely end between
    // decisions and the last `new` of each waits in the shim's order for
    // the next check (the order asserted holds either way).
    for i in 0..4 {
        rm.allocate(vec![rmv1::ask("app-1", &format!("pod-{i}"), 10, 1)], vec![]);
        std::thread::sleep(Duration::from_millis(30));
    }
    // n1 holds one pod; the rest are refused from a current cache.
    let deadline = Instant::now() + WAIT;
    while shim.placed.lock().unwrap().len() < SHIM_K {
        assert!(Instant::now() < deadline, "fewer than {SHIM_K} pods placed");
        std::thread::sleep(Duration::from_millis(5));
    }
    let held = !other
        .log
        .lines
        .lock()
        .unwrap()
        .iter()
        .any(|l| l == "accepted o-app");
    other.log.latch.open();
    // Passes go on asking for the asks left; let a few run.
    other.log.wait_for("accepted o-app");
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        shim.violations.lock().unwrap().is_empty(),
        "a predicates answer missed an earlier new: {:?}",
        shim.violations.lock().unwrap()
    );
    assert!(
        held,
        "the shim's pod reached it only through the dispatcher"
    );
    assert_eq!(shim.placed.lock().unwrap().len(), SHIM_K);
}
