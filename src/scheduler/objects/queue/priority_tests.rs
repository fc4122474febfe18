//! Priority through a step-driven partition (`scheduler::testkit`, manual
//! clock, no threads): the application and queue priorities as asks come
//! and go, and the order keys of applications, queues and asks (spec
//! `policy/priority.md` 9).

use std::time::Duration;

use super::super::{QueueId, QueueTree, ROOT};
use super::MIN_PRIORITY;
use crate::proto::si::v1 as si;
use crate::scheduler::outcome::Outcomes;
use crate::scheduler::resource::Resource;
use crate::scheduler::testkit::{ask, Harness};

fn config(queues: &str) -> String {
    format!(
        "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
{queues}"
    )
}

fn prio_ask(
    app: &str,
    key: &str,
    memory: i64,
    priority: i32,
) -> crate::scheduler::request::AskRequest {
    let mut a = ask(app, key, memory, 1);
    a.priority = priority;
    a
}

fn qprio(h: &Harness, path: &str) -> i32 {
    h.p.queues()
        .get(h.p.queues().lookup(path).expect("queue"))
        .current_priority()
}

fn app_prio(h: &Harness, app: &str) -> i32 {
    h.p.apps()[app].priority()
}

/// The applications of leaf `path` in its order.
fn app_order(h: &Harness, path: &str) -> Vec<String> {
    let q = h.p.queues().get(h.p.queues().lookup(path).expect("queue"));
    q.app_order
        .values()
        .map(|s| h.p.apps().at(*s).expect("live").id.to_string())
        .collect()
}

fn remove_ask(h: &mut Harness, app: &str, key: &str) {
    let rel = si::AllocationAskRelease {
        partition_name: "default".into(),
        application_id: app.into(),
        allocationkey: key.into(),
        termination_type: si::TerminationType::StoppedByRm as i32,
        message: String::new(),
    };
    h.p.release_asks(&rel, &mut Outcomes::default());
}

/// Allocates one repeat of `key` of `app` on node `node`, whatever the
/// ask order says.
fn allocate(h: &mut Harness, app: &str, key: &str, node: &str) {
    let a = h.p.apps().slot_of(app).expect("app");
    let k = h.p.apps()[a].asks.slot_of(key).expect("ask");
    let n = h.p.nodes().slot_of(node).expect("node");
    h.p.commit(a, k, n, None, &mut Outcomes::default());
}

const OFFSETS: &str = "          - name: parent
            properties: {priority.offset: \"5\"}
            queues:
              - name: leaf
                properties: {priority.offset: \"3\"}
";

/// PR3 (`TestPriorityCalc`): offsets add up along the path.
#[test]
fn offsets_add_up() {
    let mut h = Harness::new(&config(OFFSETS));
    h.node("n1", 10_000);
    assert_eq!(qprio(&h, "root.parent.leaf"), MIN_PRIORITY);
    h.app("a1", "root.parent.leaf");
    // An application without pending asks gives no priority.
    assert_eq!(qprio(&h, "root.parent.leaf"), MIN_PRIORITY);
    h.ask(prio_ask("a1", "k", 10, 0));
    assert_eq!(
        (qprio(&h, "root.parent.leaf"), qprio(&h, "root.parent")),
        (3, 8)
    );
    h.app("a2", "root.parent.leaf");
    h.ask(prio_ask("a2", "k", 10, 5));
    assert_eq!(
        (qprio(&h, "root.parent.leaf"), qprio(&h, "root.parent")),
        (8, 13)
    );
    assert_eq!(qprio(&h, "root"), 13);
    remove_ask(&mut h, "a2", "");
    assert_eq!(
        (qprio(&h, "root.parent.leaf"), qprio(&h, "root.parent")),
        (3, 8)
    );
    remove_ask(&mut h, "a1", "");
    assert_eq!(qprio(&h, "root.parent.leaf"), MIN_PRIORITY);
    assert_eq!(qprio(&h, "root.parent"), MIN_PRIORITY);
    assert_eq!(qprio(&h, "root"), MIN_PRIORITY);
}

/// PR4 (`TestPriorityCalcWithFencedQueue`).
#[test]
fn a_fenced_leaf_reports_its_offset() {
    let fenced = "          - name: parent
            properties: {priority.offset: \"5\"}
            queues:
              - name: leaf
                properties: {priority.offset: \"3\", priority.policy: fence}
";
    let mut h = Harness::new(&config(fenced));
    h.app("a1", "root.parent.leaf");
    h.ask(prio_ask("a1", "k", 10, 0));
    assert_eq!(
        (qprio(&h, "root.parent.leaf"), qprio(&h, "root.parent")),
        (3, 8)
    );
    h.app("a2", "root.parent.leaf");
    h.ask(prio_ask("a2", "k", 10, 5));
    assert_eq!(
        (qprio(&h, "root.parent.leaf"), qprio(&h, "root.parent")),
        (3, 8)
    );
    // The application itself still has its own priority.
    assert_eq!(app_prio(&h, "a2"), 5);
    remove_ask(&mut h, "a2", "");
    remove_ask(&mut h, "a1", "");
    assert_eq!(qprio(&h, "root.parent.leaf"), MIN_PRIORITY);
    assert_eq!(qprio(&h, "root.parent"), MIN_PRIORITY);
}

/// PR5 (`TestMaxAskPriority`): the application's priority follows its
/// pending asks (the deallocation steps have no v0.12 path but the gang
/// swap's give-back, which keeps the priority the same way).
#[test]
fn application_priority_follows_pending_asks() {
    let mut h = Harness::new(&config("          - name: a\n"));
    h.node("n1", 10_000);
    h.app("app", "root.a");
    assert_eq!(app_prio(&h, "app"), MIN_PRIORITY);
    let mut seen = Vec::new();
    for (k, p) in [("p10", 10), ("p5", 5), ("p15", 15)] {
        h.ask(prio_ask("app", k, 10, p));
        seen.push(app_prio(&h, "app"));
    }
    assert_eq!(seen, [10, 10, 15]);
    remove_ask(&mut h, "app", "p10");
    assert_eq!(app_prio(&h, "app"), 15);
    remove_ask(&mut h, "app", "p15");
    assert_eq!(app_prio(&h, "app"), 5);
    h.ask(prio_ask("app", "p10", 10, 10));
    h.ask(prio_ask("app", "p15", 10, 15));
    assert_eq!(app_prio(&h, "app"), 15);
    allocate(&mut h, "app", "p15", "n1");
    assert_eq!(app_prio(&h, "app"), 10);
    allocate(&mut h, "app", "p5", "n1");
    assert_eq!(app_prio(&h, "app"), 10);
    assert_eq!(qprio(&h, "root.a"), 10);
    allocate(&mut h, "app", "p10", "n1");
    assert_eq!(app_prio(&h, "app"), MIN_PRIORITY);
    assert_eq!(qprio(&h, "root.a"), MIN_PRIORITY);
}

/// v0.12 edition (priority.md 2.3): a re-sent ask replaces the old one,
/// and a lower priority on the replacement lowers the maximum.
#[test]
fn a_replaced_ask_can_lower_the_priority() {
    let mut h = Harness::new(&config("          - name: a\n"));
    h.app("app", "root.a");
    h.ask(prio_ask("app", "x", 10, 3));
    h.ask(prio_ask("app", "y", 10, 50));
    assert_eq!((app_prio(&h, "app"), qprio(&h, "root.a")), (50, 50));
    h.ask(prio_ask("app", "y", 10, 1));
    assert_eq!((app_prio(&h, "app"), qprio(&h, "root.a")), (3, 3));
    h.ask(prio_ask("app", "x", 10, -7));
    assert_eq!((app_prio(&h, "app"), qprio(&h, "root.a")), (1, 1));
}

/// PR6, PR7 (`TestInsertRemove`, `TestRemoveWithSamePriorityAndTime`):
/// asks by priority, then age; equal keys stay apart by arrival.
#[test]
fn ask_order_by_priority_then_age() {
    let mut h = Harness::new(&config("          - name: a\n"));
    h.app("app", "root.a");
    let order = |h: &Harness| -> Vec<String> {
        let a = &h.p.apps()["app"];
        a.ask_order
            .values()
            .map(|s| a.asks.whole_at(s).expect("whole").key.to_string())
            .collect()
    };
    h.ask(prio_ask("app", "p10", 10, 10));
    h.ask(prio_ask("app", "p25", 10, 25));
    h.ask(prio_ask("app", "p35", 10, 35));
    assert_eq!(order(&h), ["p35", "p25", "p10"]);
    for k in ["p35", "p25", "p10"] {
        remove_ask(&mut h, "app", k);
    }
    // Equal priority: by age, whatever the key.
    for k in ["e", "c", "a", "d", "b"] {
        h.advance(Duration::from_millis(1));
        h.ask(prio_ask("app", k, 10, 1));
    }
    assert_eq!(order(&h), ["e", "c", "a", "d", "b"]);
    remove_ask(&mut h, "app", "e");
    remove_ask(&mut h, "app", "b");
    remove_ask(&mut h, "app", "a");
    remove_ask(&mut h, "app", "unknown");
    assert_eq!(order(&h), ["c", "d"]);
    remove_ask(&mut h, "app", "c");
    remove_ask(&mut h, "app", "d");
    // Equal priority and equal creation time (no clock move).
    for k in ["x", "y", "z"] {
        h.ask(prio_ask("app", k, 10, 7));
    }
    assert_eq!(order(&h), ["x", "y", "z"]);
    remove_ask(&mut h, "app", "y");
    assert_eq!(order(&h), ["x", "z"]);
    assert!(h.p.apps()["app"].asks.get("y").is_none());
}

/// Four applications app-0..app-3 in leaf `root.a` with the given
/// properties, submitted one minute apart.
fn four_apps(props: &str) -> Harness {
    let mut h = Harness::new(&config(&format!(
        "          - name: a\n            properties: {{{props}}}\n"
    )));
    h.node("n1", 100_000);
    for i in 0..4 {
        h.advance(Duration::from_secs(60));
        h.app(&format!("app-{i}"), "root.a");
    }
    h
}

/// PR8 (`TestSortAppsPriorityFifo`), and what the RM observes.
#[test]
fn fifo_with_priority() {
    let mut h = four_apps("application.sort.policy: fifo");
    h.ask(prio_ask("app-0", "k", 10, 0));
    h.ask(prio_ask("app-1", "k", 10, 5));
    h.ask(prio_ask("app-2", "k", 10, 0));
    h.ask(prio_ask("app-3", "k", 10, 4));
    assert_eq!(
        app_order(&h, "root.a"),
        ["app-1", "app-3", "app-0", "app-2"]
    );
    let apps: Vec<String> = h
        .schedule()
        .allocated
        .iter()
        .map(|a| a.app().to_string())
        .collect();
    assert_eq!(apps, ["app-1", "app-3", "app-0", "app-2"]);
    // Without pending asks every application is back to submission order.
    assert_eq!(
        app_order(&h, "root.a"),
        ["app-0", "app-1", "app-2", "app-3"]
    );
}

/// PR9 (`TestSortAppsFifo`): priority disabled, it breaks ties of the
/// submission time only.
#[test]
fn fifo_with_priority_disabled() {
    let mut h = Harness::new(&config(
        "          - name: a\n            properties: {application.sort.policy: fifo, application.sort.priority: disabled}\n",
    ));
    h.node("n1", 100_000);
    h.app("app-0", "root.a");
    h.advance(Duration::from_secs(1));
    // app-1..app-3 submitted at the same instant.
    for i in 1..4 {
        h.app(&format!("app-{i}"), "root.a");
    }
    h.ask(prio_ask("app-1", "k", 10, 3));
    h.ask(prio_ask("app-3", "k", 10, 5));
    h.ask(prio_ask("app-0", "k", 10, 0));
    assert_eq!(
        app_order(&h, "root.a"),
        ["app-0", "app-3", "app-1", "app-2"]
    );
    // Across different submission times, priority does not reorder.
    let mut h = four_apps("application.sort.policy: fifo, application.sort.priority: disabled");
    h.ask(prio_ask("app-3", "k", 10, 100));
    h.ask(prio_ask("app-0", "k", 10, 0));
    let apps: Vec<String> = h
        .schedule()
        .allocated
        .iter()
        .map(|a| a.app().to_string())
        .collect();
    assert_eq!(apps, ["app-0", "app-3"]);
}

/// Gives each app-i (i+1)×`unit` memory of usage (one allocation each).
fn usage(h: &mut Harness, unit: i64) {
    for i in 0..4 {
        h.ask(prio_ask(&format!("app-{i}"), "used", unit * (i + 1), 0));
    }
    assert_eq!(h.schedule().allocated.len(), 4);
}

/// PR10 (`TestSortAppsPriorityFair`).
#[test]
fn fair_with_priority() {
    for guarantee in ["", ", guaranteed: {memory: 500}"] {
        let mut h = Harness::new(&config(&format!(
            "          - name: a\n            properties: {{application.sort.policy: fair}}\n            resources: {{max: {{memory: 100000}}{guarantee}}}\n"
        )));
        h.node("n1", 100_000);
        for i in 0..4 {
            h.app(&format!("app-{i}"), "root.a");
        }
        usage(&mut h, 100);
        for i in [0, 2, 3] {
            h.ask(prio_ask(&format!("app-{i}"), "k", 10, MIN_PRIORITY));
        }
        h.ask(prio_ask("app-1", "k", 10, 5));
        assert_eq!(
            app_order(&h, "root.a"),
            ["app-1", "app-0", "app-2", "app-3"],
            "{guarantee}"
        );
        // app-2 uses 1000 more.
        h.ask(prio_ask("app-2", "more", 700, 9));
        let seen = h.schedule();
        assert_eq!(&*seen.allocated[0].key, "more");
        h.ask(prio_ask("app-2", "k2", 10, MIN_PRIORITY));
        h.ask(prio_ask("app-1", "k2", 10, 5));
        h.ask(prio_ask("app-0", "k2", 10, MIN_PRIORITY));
        h.ask(prio_ask("app-3", "k2", 10, MIN_PRIORITY));
        assert_eq!(
            app_order(&h, "root.a"),
            ["app-1", "app-0", "app-3", "app-2"]
        );
    }
}

/// PR11 (`TestSortAppsFair`): priority disabled breaks ties of the share.
#[test]
fn fair_with_priority_disabled() {
    let mut h = Harness::new(&config(
        "          - name: a\n            properties: {application.sort.policy: fair, application.sort.priority: disabled}\n            resources: {guaranteed: {memory: 500}}\n",
    ));
    h.node("n1", 100_000);
    for i in 0..4 {
        h.app(&format!("app-{i}"), "root.a");
    }
    // Shares 0.2, 2, 0.6, 2.
    for (i, m) in [(0, 100), (1, 1000), (2, 300), (3, 1000)] {
        h.ask(prio_ask(&format!("app-{i}"), "used", m, 0));
    }
    assert_eq!(h.schedule().allocated.len(), 4);
    h.ask(prio_ask("app-0", "k", 10, 0));
    h.ask(prio_ask("app-1", "k", 10, 2));
    h.ask(prio_ask("app-2", "k", 10, 0));
    h.ask(prio_ask("app-3", "k", 10, 3));
    assert_eq!(
        app_order(&h, "root.a"),
        ["app-0", "app-2", "app-3", "app-1"]
    );
}

/// PR12 (`TestSortBySubmissionTime`): equal priorities, older first.
#[test]
fn submission_order_with_equal_priorities() {
    let mut h = Harness::new(&config(
        "          - name: a\n            properties: {application.sort.policy: fifo}\n",
    ));
    for i in (0..4).rev() {
        h.advance(Duration::from_secs(60));
        h.app(&format!("app-{i}"), "root.a");
        h.ask(prio_ask(&format!("app-{i}"), "k", 10, 1));
    }
    assert_eq!(
        app_order(&h, "root.a"),
        ["app-3", "app-2", "app-1", "app-0"]
    );
}

/// A tree root -> q0..q3 (leaves) with the given guarantee per leaf, and
/// root's `application.sort.priority`.
fn four_queues(guaranteed: Option<i64>, sort: &str) -> (QueueTree, Vec<QueueId>) {
    let leaves: String = (0..4)
        .map(|i| match guaranteed {
            Some(g) => format!(
                "          - name: q{i}\n            resources: {{guaranteed: {{memory: {g}}}}}\n"
            ),
            None => format!("          - name: q{i}\n"),
        })
        .collect();
    let yaml = format!(
        "partitions:
  - name: default
    queues:
      - name: root
        properties: {{application.sort.priority: {sort}}}
        queues:
{leaves}"
    );
    let cfg = crate::config::parse(&yaml).expect("valid");
    let tree = QueueTree::from_config(&cfg.partitions[0].queues[0]).expect("tree");
    let ids = (0..4)
        .map(|i| tree.lookup(&format!("root.q{i}")).expect("leaf"))
        .collect();
    (tree, ids)
}

fn mem(m: i64) -> Resource {
    Resource::from_pairs([("memory", m)]).expect("valid")
}

fn names(tree: &QueueTree) -> Vec<String> {
    tree.sorted_children(ROOT)
        .map(|c| tree.get(c).name.clone())
        .collect()
}

/// Sets queue priorities as one application each would, and usage.
fn load(tree: &mut QueueTree, ids: &[QueueId], used: &[i64], prios: &[i32]) {
    for (i, id) in ids.iter().enumerate() {
        tree.add_pending(*id, &mem(1));
        tree.add_allocated(*id, &mem(used[i]));
        tree.priority_changed(*id, MIN_PRIORITY, prios[i]);
    }
}

/// PR13 (`TestSortQueuesWithGuarantees`), shares over a guarantee of 1000.
#[test]
fn queue_order_with_guarantees() {
    for (sort, used, want) in [
        ("enabled", [600, 670, 500, 500], ["q3", "q2", "q0", "q1"]),
        ("disabled", [600, 670, 500, 500], ["q3", "q2", "q0", "q1"]),
        ("enabled", [400, 1000, 500, 500], ["q3", "q0", "q2", "q1"]),
        ("disabled", [400, 1000, 500, 500], ["q0", "q3", "q2", "q1"]),
    ] {
        let (mut tree, ids) = four_queues(Some(1000), sort);
        load(&mut tree, &ids, &used, &[1, 1, 1, 3]);
        assert_eq!(names(&tree), want, "{sort} {used:?}");
    }
}

/// PR14 (`TestSortQueuesNoGuarantees`).
#[test]
fn queue_order_without_guarantees() {
    for (sort, want) in [
        ("disabled", ["q3", "q2", "q1", "q0"]),
        ("enabled", ["q3", "q2", "q0", "q1"]),
    ] {
        let (mut tree, ids) = four_queues(None, sort);
        load(&mut tree, &ids, &[300, 200, 100, 100], &[1, 0, 2, 3]);
        assert_eq!(names(&tree), want, "{sort}");
    }
}

/// The incrementally kept child order equals a full sort on every change
/// of usage, demand and priority.
#[test]
fn child_order_tracks_priority_changes() {
    for sort in ["enabled", "disabled"] {
        let (mut tree, ids) = four_queues(Some(100), sort);
        let mut prio = [MIN_PRIORITY; 4];
        let mut rng = fastrand::Rng::with_seed(11);
        for _ in 0..3000 {
            let i = rng.usize(..4);
            let r = mem(rng.i64(1..50));
            match rng.u8(0..5) {
                0 => tree.add_pending(ids[i], &r),
                1 => tree.sub_pending(ids[i], &r),
                2 => tree.add_allocated(ids[i], &r),
                3 => tree.sub_allocated(ids[i], &r),
                _ => {
                    let new = [MIN_PRIORITY, -3, 0, 2, 7][rng.usize(..5)];
                    tree.priority_changed(ids[i], prio[i], new);
                    prio[i] = new;
                }
            }
            let mut keyed: Vec<_> = ids
                .iter()
                .map(|id| (*id, tree.get(*id)))
                .filter(|(_, q)| q.pending.is_strictly_positive())
                .map(|(id, q)| {
                    let p = q.current_priority();
                    let (first, then) = if sort == "enabled" { (p, 0) } else { (0, p) };
                    (
                        std::cmp::Reverse(first),
                        crate::scheduler::resource::ShareKey::of(
                            &q.allocated,
                            q.guaranteed.as_ref(),
                        ),
                        std::cmp::Reverse(then),
                        std::cmp::Reverse(super::super::pending_weight(&q.pending)),
                        q.path.clone(),
                        id,
                    )
                })
                .collect();
            keyed.sort();
            let expect: Vec<QueueId> = keyed.into_iter().map(|k| k.5).collect();
            assert_eq!(tree.sorted_children(ROOT).collect::<Vec<_>>(), expect);
            assert_eq!(
                tree.get(ROOT).current_priority(),
                prio.iter().copied().max().expect("four")
            );
        }
    }
}

/// Reload: changing and removing priority properties takes effect on the
/// live tree at once (no stale value, priority.md Q1 and Q2).
#[test]
fn reload_recomputes_priorities_and_orders() {
    let with = |leaf_props: &str, root_props: &str| {
        format!(
            "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        properties: {{{root_props}}}
        queues:
          - name: a
            properties: {{{leaf_props}}}
          - name: b
"
        )
    };
    let mut h = Harness::new(&with(
        "priority.offset: \"10\"",
        "application.sort.priority: enabled",
    ));
    h.node("n1", 100_000);
    h.app("x", "root.a");
    h.app("y", "root.b");
    h.ask(prio_ask("x", "k", 10, 1));
    h.ask(prio_ask("y", "k", 10, 5));
    assert_eq!(
        (qprio(&h, "root.a"), qprio(&h, "root.b"), qprio(&h, "root")),
        (11, 5, 11)
    );
    let order = |h: &Harness| -> Vec<String> {
        h.p.queues()
            .sorted_children(ROOT)
            .map(|c| h.p.queues().get(c).name.clone())
            .collect()
    };
    assert_eq!(order(&h), ["a", "b"]);
    let apply = |h: &mut Harness, yaml: &str| {
        let cfg = crate::config::parse(yaml).expect("valid");
        h.p.reconfigure(&cfg.partitions[0]).expect("applies");
    };
    // The offset removed: back to the application's own priority.
    apply(&mut h, &with("", "application.sort.priority: enabled"));
    assert_eq!((qprio(&h, "root.a"), qprio(&h, "root")), (1, 5));
    assert_eq!(order(&h), ["b", "a"]);
    assert_eq!(
        h.p.queues()
            .get(h.p.queues().lookup("root.a").unwrap())
            .priority
            .offset,
        0
    );
    // Fenced at -4.
    apply(
        &mut h,
        &with("priority.policy: fence, priority.offset: \"-4\"", ""),
    );
    assert_eq!((qprio(&h, "root.a"), qprio(&h, "root")), (-4, 5));
    // Priority sorting disabled at root: fairness first, and with equal
    // shares (no usage) priority breaks the tie: a (101) first.
    apply(
        &mut h,
        &with(
            "priority.offset: \"100\"",
            "application.sort.priority: disabled",
        ),
    );
    assert_eq!(qprio(&h, "root.a"), 101);
    assert_eq!(order(&h), ["a", "b"]);
    assert!(!h.p.queues().get(ROOT).priority.sort);
    // Then a uses more: fairness comes first, b goes before a.
    h.ask(prio_ask("x", "big", 5000, 1));
    let seen = h.schedule();
    assert!(seen.allocated.iter().any(|a| &*a.key == "big"));
    h.ask(prio_ask("x", "k3", 10, 1));
    h.ask(prio_ask("y", "k3", 10, 5));
    assert_eq!(order(&h), ["b", "a"]);
    // The property removed again: sorting by priority is back.
    apply(&mut h, &with("priority.offset: \"100\"", ""));
    assert!(h.p.queues().get(ROOT).priority.sort);
    assert_eq!(order(&h), ["a", "b"]);
}

/// Every queue's priority from scratch: the spec's definition, with no
/// incremental state.
fn expected_priority(h: &Harness, id: QueueId) -> i32 {
    let q = h.p.queues().get(id);
    let raw = if q.leaf {
        h.p.apps()
            .values()
            .filter(|a| a.queue == id)
            .map(|a| {
                a.ask_order
                    .values()
                    .map(|s| a.asks[s].priority())
                    .max()
                    .unwrap_or(MIN_PRIORITY)
            })
            .max()
            .unwrap_or(MIN_PRIORITY)
    } else {
        q.children
            .values()
            .map(|c| expected_priority(h, *c))
            .max()
            .unwrap_or(MIN_PRIORITY)
    };
    q.priority.reported(raw)
}

/// Random asks, replacements, removals, passes, application removals and
/// reloads: every queue's incrementally kept priority equals the one
/// computed from scratch, and every leaf's order equals a full sort.
#[test]
fn incremental_priorities_match_a_full_recompute() {
    let yaml = |offset: &str, sort: &str| {
        config(&format!(
            "          - name: p
            properties: {{priority.offset: \"{offset}\", application.sort.priority: {sort}}}
            queues:
              - name: x
                properties: {{application.sort.policy: fair}}
              - name: y
                properties: {{priority.policy: fence, priority.offset: \"2\"}}
          - name: z
            properties: {{application.sort.priority: {sort}}}
"
        ))
    };
    let mut h = Harness::new(&yaml("3", "enabled"));
    h.node("n1", 2_000);
    let leaves = ["root.p.x", "root.p.y", "root.z"];
    let mut rng = fastrand::Rng::with_seed(7);
    let mut next = 0;
    for step in 0..1500 {
        let apps: Vec<String> = h.p.apps().keys().map(|k| k.to_string()).collect();
        match rng.u8(0..10) {
            0 | 1 => {
                next += 1;
                h.app(&format!("app-{next}"), leaves[rng.usize(..3)]);
            }
            2..=5 if !apps.is_empty() => {
                let app = &apps[rng.usize(..apps.len())];
                let key = format!("k{}", rng.u8(0..4));
                let mut a = prio_ask(app, &key, rng.i64(1..300), rng.i32(-5..6));
                a.max_allocations = rng.i32(1..3);
                h.ask(a);
            }
            6 if !apps.is_empty() => {
                let app = &apps[rng.usize(..apps.len())];
                remove_ask(&mut h, app, &format!("k{}", rng.u8(0..4)));
            }
            7 => {
                h.schedule();
            }
            8 if !apps.is_empty() => {
                // Releases free the node again.
                let app = &apps[rng.usize(..apps.len())];
                h.release(app, "", si::TerminationType::StoppedByRm);
                remove_ask(&mut h, app, "");
                h.advance(Duration::from_secs(60));
            }
            _ => {
                let offset = ["3", "-2", "0", "bad"][rng.usize(..4)];
                let sort = ["enabled", "disabled"][rng.usize(..2)];
                let cfg = crate::config::parse(&yaml(offset, sort)).expect("valid");
                h.p.reconfigure(&cfg.partitions[0]).expect("applies");
            }
        }
        for (id, q) in h.p.queues().iter() {
            assert_eq!(
                q.current_priority(),
                expected_priority(&h, id),
                "step {step}: {}",
                q.path
            );
            if q.leaf {
                let mut want: Vec<_> = q
                    .apps
                    .values()
                    .map(|s| {
                        let a = h.p.apps().at(*s).expect("live");
                        (a.key_in(q), a.id.to_string())
                    })
                    .collect();
                want.sort();
                let want: Vec<String> = want.into_iter().map(|w| w.1).collect();
                assert_eq!(app_order(&h, &q.path), want, "step {step}: {}", q.path);
            }
        }
    }
}
