//! USERGROUP and QUEUE records as an SI v1.x RM sees them through the v1
//! C family (limits.md 6.3, the reference's queue records): usage deltas,
//! group links and caps of a user and a group; queues created, changed and
//! removed, and their applications. Opt-in by type; never for a v0.12 RM.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use sicore::ffi::sicore_status::*;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::si18::v1 as si18;
use sicore::proto::sicore::v1 as sicore_pb;
use sicore_c_rm::v1 as rmv1;
use sicore_c_rm::{call, Handle};

use si18::event_record::{ChangeDetail as D, ChangeType as C, Type as T};

/// alice (group dev) capped in `root.a`, and the group too.
const LIMITS: &str = "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            limits:
              - {limit: alice, users: [alice], maxresources: {memory: 10000}}
              - {limit: dev, groups: [dev], maxresources: {memory: 20000}}
";

/// alice's cap changed, the group's cap gone, `root.a` capped, `root.b` new.
const CHANGED: &str = "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources:
              max: {memory: 50000}
            limits:
              - {limit: alice, users: [alice], maxresources: {memory: 5000}}
          - name: b
";

/// No limits left.
const NO_LIMITS: &str = "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources:
              max: {memory: 50000}
          - name: b
";

/// The shared v1 recorder: what the RM was told, events included.
type Recorder = crate::common::v1::V1Recorder;
type Seen = crate::common::v1::V1Seen;

struct V1Rm {
    sched: *mut sicore_scheduler,
    _owner: Handle,
    rec: Arc<Recorder>,
}

impl V1Rm {
    fn new(types: &[&str], config: &str) -> Self {
        let options = sicore_pb::SchedulerOptions {
            event_flush_interval_ms: 20,
            scheduling_interval_ms: 10,
            // Queues that left the configuration go soon.
            queue_cleaner_interval_ms: Some(50),
            event_types: types.iter().map(|t| t.to_string()).collect(),
            ..Default::default()
        };
        let sched = sicore_c_rm::new_scheduler(&options).unwrap();
        let owner = Handle(sched);
        let rec = Arc::new(Recorder::default());
        let table = rmv1::table(&rec, false);
        let req = si18::RegisterResourceManagerRequest {
            rm_id: "rm1".into(),
            version: "v1.8.0".into(),
            policy_group: "queues".into(),
            config: config.into(),
            ..Default::default()
        };
        let (st, msg) = rmv1::register(sched, &req, &table);
        assert_eq!(st, SICORE_OK, "{msg}");
        let rm = V1Rm {
            sched,
            _owner: owner,
            rec,
        };
        rm.ready_node("n1");
        rm
    }

    fn app(&self, a: si18::AddApplicationRequest) {
        let id = a.application_id.clone();
        let (st, msg) = call(
            self.sched,
            sicore_v1_update_application,
            &si18::ApplicationRequest {
                new: vec![a],
                rm_id: "rm1".into(),
                ..Default::default()
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
        self.rec
            .wait("app accepted", |s| s.apps_accepted.contains(&id));
    }

    fn remove_app(&self, id: &str) {
        let (st, msg) = call(
            self.sched,
            sicore_v1_update_application,
            &si18::ApplicationRequest {
                remove: vec![si18::RemoveApplicationRequest {
                    application_id: id.into(),
                    partition_name: "default".into(),
                }],
                rm_id: "rm1".into(),
                ..Default::default()
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
    }

    fn allocate(&self, allocations: Vec<si18::Allocation>, releases: Vec<si18::AllocationRelease>) {
        let (st, msg) = call(
            self.sched,
            sicore_v1_update_allocation,
            &si18::AllocationRequest {
                allocations,
                releases: (!releases.is_empty()).then_some(si18::AllocationReleasesRequest {
                    allocations_to_release: releases,
                }),
                rm_id: "rm1".into(),
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
    }

    fn ready_node(&self, id: &str) {
        let (st, _) = call(
            self.sched,
            sicore_v1_update_node,
            &si18::NodeRequest {
                nodes: vec![rmv1::node(id, 100_000, 100)],
                rm_id: "rm1".into(),
            },
        );
        assert_eq!(st, SICORE_OK);
        self.rec.wait("node answered", |s| {
            s.nodes_accepted.iter().any(|n| n == id)
        });
        let (st, _) = call(
            self.sched,
            sicore_v1_update_node,
            &si18::NodeRequest {
                nodes: vec![rmv1::node_action(
                    id,
                    si18::node_info::ActionFromRm::DrainToSchedulable,
                )],
                rm_id: "rm1".into(),
            },
        );
        assert_eq!(st, SICORE_OK);
    }

    fn update_config(&self, config: &str) {
        let (st, msg) = rmv1::update_configuration(
            self.sched,
            &si18::UpdateConfigurationRequest {
                rm_id: "rm1".into(),
                policy_group: "queues".into(),
                config: config.into(),
                ..Default::default()
            },
        );
        assert_eq!(st, SICORE_OK, "{msg}");
    }

    /// Waits until a record of `kind` with this object, change, detail and
    /// reference has arrived.
    fn wait_for(&self, kind: T, object: &str, change: C, detail: D, reference: &str) {
        let what = format!("{kind:?} {object} {change:?} {detail:?} {reference}");
        self.rec.wait(&what, |s| {
            s.events
                .iter()
                .any(|e| is(e, kind, object, change, detail, reference))
        });
    }
}

fn is(e: &si18::EventRecord, kind: T, object: &str, change: C, detail: D, reference: &str) -> bool {
    e.r#type == kind as i32
        && e.object_id == object
        && e.event_change_type == change as i32
        && e.event_change_detail == detail as i32
        && e.reference_id == reference
}

fn app_of(id: &str, queue: &str, user: &str, groups: &[&str]) -> si18::AddApplicationRequest {
    let mut a = rmv1::app(id, queue, user);
    a.ugi = Some(si18::UserGroupInformation {
        user: user.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
    });
    a
}

/// The resources of the usage records of `object` with `detail`, summed
/// per direction: (added, removed).
fn usage_sums(
    events: &[si18::EventRecord],
    object: &str,
    detail: D,
) -> (HashMap<String, i64>, HashMap<String, i64>) {
    let mut add = HashMap::new();
    let mut remove = HashMap::new();
    for e in events.iter().filter(|e| {
        e.r#type == T::Usergroup as i32
            && e.object_id == object
            && e.event_change_detail == detail as i32
    }) {
        let into = match e.event_change_type {
            x if x == C::Add as i32 => &mut add,
            x if x == C::Remove as i32 => &mut remove,
            other => panic!("usage record with change {other}: {e:?}"),
        };
        assert_eq!(e.reference_id, "root.a", "usage at the app's leaf: {e:?}");
        assert!(e.message.is_empty(), "{e:?}");
        for (name, q) in &e
            .resource
            .as_ref()
            .expect("usage records carry the delta")
            .resources
        {
            assert!(q.value > 0, "a delta is positive in its direction: {e:?}");
            *into.entry(name.clone()).or_insert(0) += q.value;
        }
    }
    (add, remove)
}

fn m(pairs: &[(&str, i64)]) -> HashMap<String, i64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn usage_links_and_caps_of_a_user_and_a_group_reach_a_v1_rm() {
    let rm = V1Rm::new(&["REQUEST", "NODE", "QUEUE", "USERGROUP"], LIMITS);
    // The configuration's caps are set at registration.
    rm.wait_for(T::Usergroup, "alice", C::Set, D::UgUserLimit, "root.a");
    rm.wait_for(T::Usergroup, "dev", C::Set, D::UgGroupLimit, "root.a");
    // An application of alice in group dev is linked to the group.
    rm.app(app_of("app-1", "root.a", "alice", &["dev"]));
    rm.wait_for(T::Usergroup, "dev", C::Set, D::UgAppLink, "app-1");
    // Two allocations: the user and the group grow by their sum.
    rm.allocate(
        vec![
            rmv1::ask("app-1", "k1", 100, 1),
            rmv1::ask("app-1", "k2", 200, 2),
        ],
        vec![],
    );
    rm.rec.wait("both allocated", |s| s.new.len() == 2);
    let grown = |detail, object: &'static str| {
        move |s: &Seen| {
            usage_sums(&s.events, object, detail).0 == m(&[("memory", 300), ("vcore", 3)])
        }
    };
    rm.rec
        .wait("alice's usage added", grown(D::UgUserResource, "alice"));
    rm.rec
        .wait("dev's usage added", grown(D::UgGroupResource, "dev"));
    // A release: both shrink by it.
    rm.allocate(vec![], vec![rmv1::release("app-1", "k1")]);
    let shrunk = |detail, object: &'static str| {
        move |s: &Seen| {
            usage_sums(&s.events, object, detail).1 == m(&[("memory", 100), ("vcore", 1)])
        }
    };
    rm.rec
        .wait("alice's usage removed", shrunk(D::UgUserResource, "alice"));
    rm.rec
        .wait("dev's usage removed", shrunk(D::UgGroupResource, "dev"));
    // A reload: alice's cap changes (SET again), dev's goes (REMOVE); the
    // application loses its group, and its usage leaves the group.
    rm.update_config(CHANGED);
    let sets = |e: &[si18::EventRecord]| {
        e.iter()
            .filter(|e| is(e, T::Usergroup, "alice", C::Set, D::UgUserLimit, "root.a"))
            .count()
    };
    rm.rec
        .wait("alice's cap set again", |s| sets(&s.events) == 2);
    rm.wait_for(T::Usergroup, "dev", C::Remove, D::UgGroupLimit, "root.a");
    rm.wait_for(T::Usergroup, "dev", C::Remove, D::UgAppLink, "app-1");
    rm.rec.wait("dev's usage left with the link", |s| {
        usage_sums(&s.events, "dev", D::UgGroupResource).1 == m(&[("memory", 300), ("vcore", 3)])
    });
    // No limits at all: alice's cap is cleared and nothing is tracked.
    rm.update_config(NO_LIMITS);
    rm.wait_for(T::Usergroup, "alice", C::Remove, D::UgUserLimit, "root.a");
    rm.rec.wait("alice's usage no longer tracked", |s| {
        usage_sums(&s.events, "alice", D::UgUserResource).1 == m(&[("memory", 300), ("vcore", 3)])
    });
    // Every record of alice and dev adds up to what is tracked: nothing.
    let events = rm.rec.copy().events;
    for (who, detail) in [("alice", D::UgUserResource), ("dev", D::UgGroupResource)] {
        let (add, remove) = usage_sums(&events, who, detail);
        assert_eq!(add, remove, "{who}: {events:#?}");
    }
    // Linked once, unlinked once; no other USERGROUP record than these.
    let links: Vec<i32> = events
        .iter()
        .filter(|e| e.event_change_detail == D::UgAppLink as i32)
        .map(|e| e.event_change_type)
        .collect();
    assert_eq!(links, [C::Set as i32, C::Remove as i32], "{events:#?}");
    assert!(events
        .iter()
        .filter(|e| e.r#type == T::Usergroup as i32)
        .all(|e| ["alice", "dev"].contains(&e.object_id.as_str())));
}

#[test]
fn queue_records_follow_the_configuration_and_the_applications() {
    let rm = V1Rm::new(&["NODE", "QUEUE"], LIMITS);
    for q in ["root", "root.a"] {
        rm.wait_for(T::Queue, q, C::Add, D::DetailsNone, "");
    }
    rm.app(app_of("app-1", "root.a", "alice", &["dev"]));
    rm.wait_for(T::Queue, "root.a", C::Add, D::QueueApp, "app-1");
    rm.update_config(CHANGED);
    rm.wait_for(T::Queue, "root.b", C::Add, D::DetailsNone, "");
    rm.wait_for(T::Queue, "root.a", C::Set, D::QueueMax, "");
    let max = rm
        .rec
        .copy()
        .events
        .into_iter()
        .find(|e| is(e, T::Queue, "root.a", C::Set, D::QueueMax, ""))
        .unwrap();
    assert_eq!(max.resource.unwrap().resources["memory"].value, 50000);
    // root.b leaves the configuration: removed once empty (the cleaner).
    rm.update_config(LIMITS);
    rm.wait_for(T::Queue, "root.b", C::Remove, D::DetailsNone, "");
    rm.remove_app("app-1");
    rm.wait_for(T::Queue, "root.a", C::Remove, D::QueueApp, "app-1");
    // No USERGROUP record: that type is off.
    assert!(rm
        .rec
        .copy()
        .events
        .iter()
        .all(|e| e.r#type != T::Usergroup as i32));
}

#[test]
fn dynamic_queues_are_added_and_removed_with_queue_dynamic() {
    // The built-in v1.8 configuration: one queue per namespace, created.
    let rm = V1Rm::new(&["QUEUE"], "");
    let mut a = app_of("app-1", "", "alice", &[]);
    a.tags.insert("namespace".into(), "ns1".into());
    rm.app(a);
    rm.wait_for(T::Queue, "root.ns1", C::Add, D::QueueDynamic, "");
    rm.wait_for(T::Queue, "root.ns1", C::Add, D::QueueApp, "app-1");
    rm.remove_app("app-1");
    rm.wait_for(T::Queue, "root.ns1", C::Remove, D::QueueDynamic, "");
}

#[test]
fn the_default_types_make_no_usergroup_nor_queue_record() {
    let rm = V1Rm::new(&[], LIMITS);
    rm.app(app_of("app-1", "root.a", "alice", &["dev"]));
    rm.allocate(vec![rmv1::ask("app-1", "k1", 100, 1)], vec![]);
    rm.rec.wait("allocated", |s| s.new.len() == 1);
    rm.update_config(CHANGED);
    rm.allocate(vec![], vec![rmv1::release("app-1", "k1")]);
    rm.rec.wait("released", |s| s.released.len() == 1);
    // A node record after all that: every earlier record was flushed.
    rm.ready_node("n2");
    // As the v1.8 core's: no referenceID, the node's capacity as resource.
    rm.wait_for(T::Node, "n2", C::Add, D::DetailsNone, "");
    std::thread::sleep(Duration::from_millis(100));
    let events = rm.rec.copy().events;
    let add = events
        .iter()
        .find(|e| is(e, T::Node, "n2", C::Add, D::DetailsNone, ""))
        .unwrap();
    let cap = &add.resource.as_ref().expect("capacity").resources;
    assert_eq!((cap["memory"].value, cap["vcore"].value), (100_000, 100));
    // Its schedulable record carries none (nor does the v1.8 core's).
    assert!(events
        .iter()
        .filter(|e| e.object_id == "n2" && e.event_change_detail == D::NodeSchedulable as i32)
        .all(|e| e.reference_id.is_empty() && e.resource.is_none()));
    assert!(
        events
            .iter()
            .all(|e| e.r#type == T::Node as i32 || e.r#type == T::Request as i32),
        "{events:#?}"
    );
}

#[test]
fn a_v012_rm_with_every_type_on_never_gets_a_usergroup_or_structured_queue_record() {
    use crate::common::*;
    let mut o = yaml_options(LIMITS);
    o.event_flush_interval_ms = 20;
    o.event_types = ["REQUEST", "APP", "NODE", "QUEUE", "USERGROUP"]
        .iter()
        .map(|t| t.to_string())
        .collect();
    let h = Harness::configured(o, 1);
    h.submit(app_by("app-1", "root.a", "alice", &["dev"]))
        .unwrap();
    assert_eq!(
        h.asks(vec![sicore_c_rm::ask("app-1", "k1", 100, 1, 1)]).0,
        SICORE_OK
    );
    h.wait("allocated", |s| !s.allocations.is_empty());
    // A node record after all that: every earlier record was flushed.
    assert_eq!(h.nodes(vec![node("node-late", 1000, 10)]).0, SICORE_OK);
    h.wait("node-late record", |s| {
        s.events.iter().any(|e| e.object_id == "node-late")
    });
    h.settle();
    h.seen(|s| {
        assert!(
            s.events
                .iter()
                .all(|e| e.r#type != 5 && !e.reason.is_empty()),
            "{:#?}",
            s.events
        );
        assert!(
            s.events
                .iter()
                .all(|e| e.r#type != si::event_record::Type::Queue as i32),
            "{:#?}",
            s.events
        );
    });
}
