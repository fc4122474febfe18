//! What the preemption tests of the v0.12 edition share: an RM that
//! answers `Predicates` (so that the stand-in checks reach it), the victims
//! it was told of and the confirmation it sends back. The v1.8 side of the
//! same is in [`super::v1`].

use sicore::ffi::sicore_status::SICORE_OK;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1 as sicore_pb;

use super::{node, Behaviour, Harness, Seen};

/// A v0.12 RM with a `predicates` callback, registered as `rm` (policy
/// group `queues`) on `options`, its `nodes` (id, memory, vcore), if any,
/// accepted in one request.
pub fn predicates_rm(options: sicore_pb::SchedulerOptions, nodes: &[(&str, i64, i64)]) -> Harness {
    let behaviour = Behaviour {
        with_predicates: true,
        ..Default::default()
    };
    let h = Harness::with_behaviour(options, behaviour);
    let (st, msg) = h.register("rm", "queues");
    assert_eq!(st, SICORE_OK, "{msg}");
    if !nodes.is_empty() {
        let list = nodes.iter().map(|(id, m, v)| node(id, *m, *v)).collect();
        assert_eq!(h.nodes(list).0, SICORE_OK);
        h.wait("nodes", |s| s.nodes_accepted.len() == nodes.len());
    }
    h
}

/// The releases of preemption victims (`PREEMPTED_BY_SCHEDULER`) the RM
/// was told of.
pub fn preempted(s: &Seen) -> Vec<si::AllocationRelease> {
    s.released
        .iter()
        .filter(|r| r.termination_type == si::TerminationType::PreemptedByScheduler as i32)
        .cloned()
        .collect()
}

/// The RM's confirmation of the victim `uuid` of `app`, as k8shim v0.12.2
/// sends it: the same UUID and termination type.
pub fn confirmation(app: &str, uuid: &str) -> si::AllocationRelease {
    si::AllocationRelease {
        partition_name: "default".into(),
        application_id: app.into(),
        uuid: uuid.into(),
        termination_type: si::TerminationType::PreemptedByScheduler as i32,
        ..Default::default()
    }
}

/// Lets several passes run, then asserts that the RM was told of no
/// victim and of `allocations` allocations.
pub fn assert_no_preemption(h: &Harness, allocations: usize) {
    h.settle();
    h.settle();
    h.seen(|s| {
        assert!(preempted(s).is_empty(), "{:?}", s.released);
        assert_eq!(s.allocations.len(), allocations);
    });
}
