//! User and group limits across configuration reloads (limits.md 5 and
//! quirks Q3-Q5, fixed as the spec recommends; docs/limits.md).

use crate::common::*;
use serde_json::Value;
use sicore::ffi::sicore_status::*;

fn yaml(parent_limits: &str) -> String {
    let mut s = String::from(
        "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: '*'\n        queues:\n          - name: parent\n",
    );
    if !parent_limits.is_empty() {
        s.push_str("            limits:\n");
        for l in parent_limits.lines() {
            s.push_str("              ");
            s.push_str(l);
            s.push('\n');
        }
    }
    s.push_str("            queues:\n              - name: child1\n              - name: child2\n");
    s
}

fn start(text: &str, tag: &str) -> (Harness, std::path::PathBuf) {
    let dir = temp_config_dir(tag);
    let h = Harness::configured(dir_options(&dir, text), 2);
    (h, dir)
}

fn reload(h: &Harness, dir: &std::path::Path, text: &str) {
    std::fs::write(dir.join("queues.yaml"), text).unwrap();
    let (st, msg) = h.reload("rm");
    assert_eq!(st, SICORE_OK, "{msg}");
}

fn tracker<'a>(d: &'a Value, kind: &str, name: &str) -> Option<&'a Value> {
    let (list, key) = match kind {
        "user" => ("users", "userName"),
        _ => ("groups", "groupName"),
    };
    d["partitions"][0]["usage"][list]
        .as_array()?
        .iter()
        .find(|t| t[key] == name)
}

fn mem_at(t: &Value, path: &str) -> i64 {
    fn walk<'a>(q: &'a Value, path: &str) -> Option<&'a Value> {
        if q["queuePath"] == path {
            return Some(q);
        }
        q["children"].as_array()?.iter().find_map(|c| walk(c, path))
    }
    walk(&t["queues"], path)
        .and_then(|l| l["resourceUsage"]["memory"].as_i64())
        .unwrap_or(0)
}

#[test]
fn lowering_a_cap_below_usage_blocks_without_releasing() {
    // L15
    let cap = |m: u32| {
        yaml(&format!(
            "- {{users: [user1], maxresources: {{memory: {m}}}}}"
        ))
    };
    let (h, dir) = start(&cap(50), "limits-lower");
    h.submit(app_by("app-1", "root.parent.child1", "user1", &[]))
        .unwrap();
    assert_eq!(h.asks(vec![ask("app-1", "k", 10, 0, 5)]).0, SICORE_OK);
    h.wait("at the cap", |s| s.allocations.len() == 5);
    reload(&h, &dir, &cap(40));
    assert_eq!(h.asks(vec![ask("app-1", "more", 10, 0, 1)]).0, SICORE_OK);
    h.settle();
    assert_eq!(h.allocs_of("app-1"), 5, "nothing released, nothing new");
    assert!(h.seen(|s| s.released.is_empty()));
    reload(&h, &dir, &cap(60));
    h.wait("one more fits", |s| s.allocations.len() == 6);
    h.settle();
    assert_eq!(h.allocs_of("app-1"), 6);
}

#[test]
fn a_removed_group_limit_keeps_the_usage_of_other_branches() {
    // Q3 and Q4 fixed: group g is capped at root.parent.child1 and at
    // root (partition). App a (child1) links to g at child1, app b
    // (child2) links to g at root. When the child1 limit goes, a is linked
    // again (to g at root) with its usage; b's usage at root is kept.
    let text = |child_limit: bool| {
        let mut s = String::from(
            "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: '*'\n        limits:\n          - {groups: [g], maxresources: {memory: 900}}\n        queues:\n          - name: parent\n            queues:\n              - name: child1\n",
        );
        if child_limit {
            s.push_str("                limits:\n                  - {groups: [g], maxresources: {memory: 500}}\n");
        }
        s.push_str("              - name: child2\n");
        s
    };
    let (h, dir) = start(&text(true), "limits-group-removed");
    h.submit(app_by("a", "root.parent.child1", "u1", &["g"]))
        .unwrap();
    h.submit(app_by("b", "root.parent.child2", "u2", &["g"]))
        .unwrap();
    assert_eq!(
        h.asks(vec![ask("a", "ka", 10, 0, 3), ask("b", "kb", 20, 0, 2)])
            .0,
        SICORE_OK
    );
    h.wait("allocated", |s| s.allocations.len() == 5);
    h.settle();
    let d = h.dump();
    assert_eq!(mem_at(tracker(&d, "group", "g").unwrap(), "root"), 70);
    reload(&h, &dir, &text(false));
    let d = h.dump();
    let g = tracker(&d, "group", "g").unwrap();
    assert_eq!(mem_at(g, "root"), 70, "no usage wiped");
    assert_eq!(mem_at(g, "root.parent.child2"), 40);
    assert_eq!(mem_at(g, "root.parent.child1"), 30);
    assert_eq!(
        tracker(&d, "user", "u1").unwrap()["groups"]["a"],
        "g",
        "relinked to g at root"
    );
}

#[test]
fn a_group_limit_added_later_links_unmatched_applications() {
    // Q5 fixed: an application that matched no group is resolved again at
    // the reload, with the usage it holds.
    let (h, dir) = start(
        &yaml("- {users: [other], maxapplications: 1}"),
        "limits-group-added",
    );
    h.submit(app_by("app-1", "root.parent.child1", "u", &["dev"]))
        .unwrap();
    assert_eq!(h.asks(vec![ask("app-1", "k", 10, 0, 2)]).0, SICORE_OK);
    h.wait("allocated", |s| s.allocations.len() == 2);
    h.settle();
    assert!(tracker(&h.dump(), "group", "dev").is_none());
    reload(
        &h,
        &dir,
        &yaml("- {groups: [dev], maxresources: {memory: 30}}"),
    );
    let d = h.dump();
    let g = tracker(&d, "group", "dev").expect("linked now");
    assert_eq!(mem_at(g, "root.parent"), 20);
    // and the new cap applies to what is still asked
    assert_eq!(h.asks(vec![ask("app-1", "k2", 10, 0, 3)]).0, SICORE_OK);
    h.wait("one more", |s| s.allocations.len() == 3);
    h.settle();
    assert_eq!(h.allocs_of("app-1"), 3);
}

#[test]
fn a_group_dropped_from_a_named_limit_falls_to_the_wildcard() {
    // L17
    let text = |named: &str| {
        yaml(&format!(
            "- {{groups: [{named}], maxresources: {{memory: 100}}}}\n- {{groups: ['*'], maxresources: {{memory: 10}}, maxapplications: 1}}"
        ))
    };
    let (h, dir) = start(&text("group1, group2"), "limits-l17");
    for (app, u, g) in [("a1", "user1", "group1"), ("a2", "user2", "group2")] {
        h.submit(app_by(app, "root.parent.child1", u, &[g]))
            .unwrap();
    }
    assert_eq!(
        h.asks(vec![ask("a1", "k", 10, 0, 1), ask("a2", "k", 10, 0, 1)])
            .0,
        SICORE_OK
    );
    h.wait("allocated", |s| s.allocations.len() == 2);
    reload(&h, &dir, &text("group1"));
    let d = h.dump();
    assert_eq!(tracker(&d, "user", "user2").unwrap()["groups"]["a2"], "*");
    // user1 can still allocate; a new app of user3 (group3) has no room
    // left in the wildcard's pool (a2 fills it).
    h.submit(app_by("a3", "root.parent.child1", "user3", &["group3"]))
        .unwrap();
    assert_eq!(
        h.asks(vec![ask("a1", "k1", 10, 0, 1), ask("a3", "k3", 10, 0, 1)])
            .0,
        SICORE_OK
    );
    h.wait("user1 allocated", |s| {
        s.allocations
            .iter()
            .filter(|a| a.application_id == "a1")
            .count()
            == 2
    });
    h.settle();
    assert_eq!(h.allocs_of("a3"), 0);
}

#[test]
fn trackers_go_with_their_applications_and_limits() {
    // L18 (sicore form): a tracker exists while an application is linked.
    let (h, dir) = start(
        &yaml("- {users: [user1], groups: [group1], maxapplications: 3}"),
        "limits-l18",
    );
    h.submit(app_by("app-1", "root.parent.child1", "user1", &["group1"]))
        .unwrap();
    h.settle();
    let d = h.dump();
    assert!(tracker(&d, "user", "user1").is_some());
    assert!(tracker(&d, "group", "group1").is_some());
    reload(&h, &dir, &yaml("- {users: [user2], maxapplications: 3}"));
    let d = h.dump();
    assert!(tracker(&d, "group", "group1").is_none());
    assert_eq!(d["partitions"][0]["usage"]["limits"], true);
    reload(&h, &dir, &yaml(""));
    let d = h.dump();
    assert_eq!(d["partitions"][0]["usage"]["limits"], false);
    assert!(d["partitions"][0]["usage"]["groups"]
        .as_array()
        .unwrap()
        .is_empty());
    let u = tracker(&d, "user", "user1").expect("usage shown without limits");
    assert!(u["queues"]["maxResources"].is_null());
}

#[test]
fn changed_caps_apply_to_the_next_application() {
    // L16: two applications allowed, then one; the running ones keep
    // running, a new one waits in Accepted.
    let cap = |n: u32| yaml(&format!("- {{users: [u], maxapplications: {n}}}"));
    let (h, dir) = start(&cap(3), "limits-l16");
    for id in ["a1", "a2"] {
        h.submit(app_by(id, "root.parent.child1", "u", &[]))
            .unwrap();
        assert_eq!(h.asks(vec![ask(id, "k", 10, 0, 1)]).0, SICORE_OK);
    }
    h.wait("both run", |s| s.allocations.len() == 2);
    reload(&h, &dir, &cap(1));
    h.submit(app_by("a3", "root.parent.child1", "u", &[]))
        .unwrap();
    assert_eq!(
        h.asks(vec![ask("a3", "k", 10, 0, 1), ask("a1", "k2", 10, 0, 1)])
            .0,
        SICORE_OK
    );
    h.wait("a1 grows", |s| {
        s.allocations
            .iter()
            .filter(|a| a.application_id == "a1")
            .count()
            == 2
    });
    h.settle();
    assert_eq!(h.allocs_of("a3"), 0, "a new application waits");
    reload(&h, &dir, &cap(3));
    h.wait("a3 runs after the cap is raised", |s| {
        s.allocations.iter().any(|a| a.application_id == "a3")
    });
}

#[test]
fn removing_the_user_wildcard_uncaps_unnamed_users() {
    // L14 (reload part): the wildcard goes, unnamed users are free; a
    // named user keeps its own cap.
    let text = |wild: bool| {
        let mut l = String::from("- {users: [named], maxresources: {memory: 10}}");
        if wild {
            l.push_str("\n- {users: ['*'], maxresources: {memory: 10}}");
        }
        yaml(&l)
    };
    let (h, dir) = start(&text(true), "limits-l14");
    for (id, u) in [("a", "anyone"), ("b", "named")] {
        h.submit(app_by(id, "root.parent.child2", u, &[])).unwrap();
        assert_eq!(h.asks(vec![ask(id, "k", 10, 0, 3)]).0, SICORE_OK);
    }
    h.wait("one each", |s| s.allocations.len() == 2);
    h.settle();
    assert_eq!(h.allocs_of("a"), 1);
    let d = h.dump();
    assert_eq!(
        tracker(&d, "user", "anyone").unwrap()["queues"]["children"][0]["maxResources"]["memory"],
        10
    );
    reload(&h, &dir, &text(false));
    h.wait("the unnamed user is free", |s| {
        s.allocations
            .iter()
            .filter(|a| a.application_id == "a")
            .count()
            == 3
    });
    h.settle();
    assert_eq!(h.allocs_of("b"), 1, "the named cap stays");
    let d = h.dump();
    let anyone = tracker(&d, "user", "anyone").unwrap();
    assert!(anyone["queues"]["children"][0]["maxResources"].is_null());
}
