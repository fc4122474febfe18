//! Placement through the C ABI (spec 5): no rules, each rule with filters,
//! `create`, parent rules, errors vs. no match, name normalisation, dynamic
//! queue creation (5.6), templates (3.2) and cleanup of empty dynamic queues.

use crate::common::*;
use sicore::ffi::sicore_status::*;

fn harness(rules: &str, queues: &str) -> Harness {
    let yaml = format!(
        "partitions:\n  - name: default\n    placementrules:\n{rules}    queues:\n      - name: root\n        submitacl: \"*\"\n        queues:\n{queues}"
    );
    Harness::configured(yaml_options(&yaml), 1)
}

const TREE: &str = "          - name: batch\n          - name: users\n            parent: true\n          - name: leafy\n";

fn placed_in(h: &Harness, app: &str) -> String {
    let d = h.dump();
    d["partitions"][0]["applications"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == app)
        .unwrap_or_else(|| panic!("{app} not in {d:#}"))["queue"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn without_rules_the_queue_must_be_an_existing_leaf() {
    let h = Harness::configured(
        yaml_options(
            "partitions:\n  - queues:\n      - name: root\n        submitacl: \"*\"\n        queues:\n          - name: p\n            queues: [{name: leaf}]\n",
        ),
        0,
    );
    assert_eq!(h.submit(app("a1", "root.p.leaf")), Ok(()));
    assert_eq!(
        h.submit(app("a2", "ROOT.P.LEAF")),
        Ok(()),
        "paths are case-insensitive"
    );
    assert_eq!(
        h.submit(app("a3", "leaf")).unwrap_err(),
        "application 'a3' rejected, cannot create queue 'leaf' without placement rules"
    );
    assert_eq!(
        h.submit(app("a4", "root.p.new")).unwrap_err(),
        "application 'a4' rejected, cannot create queue 'root.p.new' without placement rules"
    );
    assert_eq!(
        h.submit(app("a5", "")).unwrap_err(),
        "application 'a5' rejected, cannot create queue '' without placement rules"
    );
    assert_eq!(
        h.submit(app("a6", "root.p")).unwrap_err(),
        "failed to find queue root.p for application a6"
    );
    let mut no_user = app("a7", "root.p.leaf");
    no_user.ugi = None;
    assert_eq!(h.submit(no_user).unwrap_err(), "empty user cannot resolve");
    assert_eq!(placed_in(&h, "a2"), "root.p.leaf");
}

#[test]
fn provided_rule_create_and_fall_through() {
    let h = harness(
        "      - {name: provided, create: false}\n      - {name: provided, create: true, parent: {name: fixed, value: users}}\n",
        TREE,
    );
    // exists: first rule
    assert_eq!(h.submit(app("a1", "root.batch")), Ok(()));
    assert_eq!(placed_in(&h, "a1"), "root.batch");
    // unqualified: under root
    assert_eq!(h.submit(app("a2", "batch")), Ok(()));
    assert_eq!(placed_in(&h, "a2"), "root.batch");
    // does not exist: first rule no match (create false), second creates it
    // under root.users, dots replaced
    assert_eq!(h.submit(app("a3", "a.b")), Ok(()));
    assert_eq!(placed_in(&h, "a3"), "root.users.a_dot_b");
    let q = find_queue(&h.dump(), "default", "root.users.a_dot_b").unwrap();
    assert_eq!(q["managed"], false);
    assert_eq!(q["leaf"], true);
    // a parent queue is no match for either rule -> rejected
    assert_eq!(
        h.submit(app("a4", "root.users")).unwrap_err(),
        "failed to place application a4: application rejected: no placment rule matched"
    );
    // no queue name: provided does not match
    assert!(h
        .submit(app("a5", ""))
        .unwrap_err()
        .contains("no placment rule matched"));
    // qualified name with create: parents created as dynamic parents
    assert_eq!(h.submit(app("a6", "root.x.y")), Ok(()));
    let d = h.dump();
    let x = find_queue(&d, "default", "root.x").unwrap();
    assert_eq!(
        (x["leaf"].clone(), x["managed"].clone()),
        (false.into(), false.into())
    );
    assert_eq!(find_queue(&d, "default", "root.x.y").unwrap()["leaf"], true);
    // creation below a leaf fails at creation time
    assert_eq!(
        h.submit(app("a7", "root.leafy.z")).unwrap_err(),
        "failed to create rule based queue root.leafy.z for application a7"
    );
    // removing the apps removes the empty dynamic queues (when they empty)
    let rm = |id: &str| sicore::proto::si::v1::RemoveApplicationRequest {
        application_id: id.into(),
        partition_name: "default".into(),
    };
    assert_eq!(h.apps(vec![], vec![rm("a3"), rm("a6")]).0, SICORE_OK);
    h.wait_dump("dynamic queues gone", |d| {
        find_queue(d, "default", "root.x").is_none()
            && find_queue(d, "default", "root.users.a_dot_b").is_none()
    });
    let d = h.dump();
    assert!(
        find_queue(&d, "default", "root.users").is_some(),
        "managed stays"
    );
    assert!(find_queue(&d, "default", "root.leafy.z").is_none());
}

#[test]
fn user_rule_with_parent_and_names() {
    let h = harness(
        "      - name: user\n        create: true\n        parent: {name: fixed, value: users}\n",
        TREE,
    );
    assert_eq!(h.submit(app_by("a1", "", "john.doe", &[])), Ok(()));
    assert_eq!(placed_in(&h, "a1"), "root.users.john_dot_doe");
    assert_eq!(h.submit(app_by("a2", "root.batch", "alice", &[])), Ok(()));
    assert_eq!(
        placed_in(&h, "a2"),
        "root.users.alice",
        "the requested queue is ignored"
    );
    // a user name that is no valid queue name: matches, creation fails
    assert_eq!(
        h.submit(app_by("a3", "", "bob@corp", &[])).unwrap_err(),
        "failed to create rule based queue root.users.bob@corp for application a3"
    );
}

#[test]
fn parent_rule_returning_a_leaf_aborts_placement() {
    let h = harness(
        "      - name: user\n        create: true\n        parent: {name: fixed, value: batch}\n      - {name: provided}\n",
        TREE,
    );
    // The provided rule would match root.batch, but the error of the first
    // rule rejects the application.
    assert_eq!(
        h.submit(app("a1", "root.batch")).unwrap_err(),
        "failed to place application a1: parent rule returned a leaf queue: root.batch"
    );
}

#[test]
fn fixed_rule_qualified_and_create() {
    let h = harness(
        "      - {name: fixed, value: root.newq}\n      - {name: fixed, value: BATCH}\n      - {name: fixed, value: created, create: true}\n",
        TREE,
    );
    // root.newq does not exist and create is false -> next rule (lower-cased value)
    assert_eq!(h.submit(app("a1", "whatever")), Ok(()));
    assert_eq!(placed_in(&h, "a1"), "root.batch");

    let h = harness(
        "      - {name: fixed, value: created, create: true}\n",
        TREE,
    );
    assert_eq!(h.submit(app("a2", "")), Ok(()));
    assert_eq!(placed_in(&h, "a2"), "root.created");
}

#[test]
fn tag_rule() {
    let h = harness(
        "      - {name: tag, value: Namespace, create: true}\n      - {name: provided}\n",
        TREE,
    );
    let mut a = app("a1", "root.batch");
    a.tags.insert("NAMESPACE".into(), "dev.team".into());
    assert_eq!(h.submit(a), Ok(()));
    assert_eq!(placed_in(&h, "a1"), "root.dev_dot_team");
    // tag absent or empty -> no match -> provided
    assert_eq!(h.submit(app("a2", "root.batch")), Ok(()));
    assert_eq!(placed_in(&h, "a2"), "root.batch");
    let mut a = app("a3", "root.batch");
    a.tags.insert("namespace".into(), String::new());
    assert_eq!(h.submit(a), Ok(()));
    assert_eq!(placed_in(&h, "a3"), "root.batch");
    // a qualified tag value is used as is
    let mut a = app("a4", "");
    a.tags.insert("namespace".into(), "root.users.t1".into());
    assert_eq!(h.submit(a), Ok(()));
    assert_eq!(placed_in(&h, "a4"), "root.users.t1");
}

#[test]
fn filters_allow_and_deny() {
    // allow filter by group, deny filter by user regexp, deny with empty
    // lists denies everyone, type compared case-insensitively
    let h = harness(
        "      - {name: fixed, value: batch, filter: {type: deny}}\n      - {name: fixed, value: leafy, filter: {type: Deny, users: [\"^bad\"]}}\n      - {name: fixed, value: users.dev, create: true, filter: {groups: [dev, ops]}}\n",
        TREE,
    );
    assert_eq!(h.submit(app_by("a1", "", "alice", &[])), Ok(()));
    assert_eq!(placed_in(&h, "a1"), "root.leafy");
    // bad-guy is denied by rule 2, not in dev -> no rule
    assert!(h
        .submit(app_by("a2", "", "bad-guy", &[]))
        .unwrap_err()
        .contains("no placment rule matched"));
    // bad-guy in group ops: rule 3
    assert_eq!(h.submit(app_by("a3", "", "bad-guy", &["x", "ops"])), Ok(()));
    assert_eq!(placed_in(&h, "a3"), "root.users.dev");
    // allow filter with users list
    let h = harness(
        "      - {name: fixed, value: batch, filter: {type: allow, users: [alice, bob]}}\n",
        TREE,
    );
    assert_eq!(h.submit(app_by("a1", "", "bob", &[])), Ok(()));
    assert!(h.submit(app_by("a2", "", "carol", &["alice"])).is_err());
}

#[test]
fn acl_decides_between_rules_and_on_creation() {
    let yaml = r#"
partitions:
  - placementrules:
      - {name: provided, create: true}
      - {name: fixed, value: open}
    queues:
      - name: root
        queues:
          - name: closed
            parent: true
            submitacl: "alice"
          - name: open
            submitacl: "*"
"#;
    let h = Harness::configured(yaml_options(yaml), 0);
    // alice may create below root.closed
    assert_eq!(
        h.submit(app_by("a1", "root.closed.mine", "alice", &[])),
        Ok(())
    );
    assert_eq!(placed_in(&h, "a1"), "root.closed.mine");
    // bob may not: falls through to the fixed rule
    assert_eq!(
        h.submit(app_by("a2", "root.closed.mine", "bob", &[])),
        Ok(())
    );
    assert_eq!(placed_in(&h, "a2"), "root.open");
    // bob may not create under root either (no ACL on root)
    assert_eq!(h.submit(app_by("a3", "newq", "bob", &[])), Ok(()));
    assert_eq!(placed_in(&h, "a3"), "root.open");
}

#[test]
fn child_templates_and_inheritance_for_dynamic_queues() {
    let yaml = r#"
partitions:
  - placementrules:
      - {name: provided, create: true}
    queues:
      - name: root
        submitacl: "*"
        properties: {application.sort.policy: fair, colour: blue}
        queues:
          - name: tenants
            parent: true
            childtemplate:
              properties: {application.sort.policy: stateaware}
              resources: {guaranteed: {memory: 100}, max: {memory: 300}}
          - name: plain
            parent: true
"#;
    let h = Harness::configured(yaml_options(yaml), 1);
    assert_eq!(h.submit(app("a1", "root.tenants.t1")), Ok(()));
    assert_eq!(h.submit(app("a2", "root.tenants.sub.t2")), Ok(()));
    assert_eq!(h.submit(app("a3", "root.plain.p1")), Ok(()));
    assert_eq!(h.submit(app("a4", "root.direct")), Ok(()));
    let mut quota = app("a5", "root.plain.q1");
    quota.tags.insert(
        "namespace.resourceQuota".into(),
        r#"{"resources":{"memory":{"value":2048},"vcore":{"value":2}}}"#.into(),
    );
    assert_eq!(h.submit(quota), Ok(()));
    let mut bad = app("a6", "root.plain.q2");
    bad.tags
        .insert("namespace.resourcequota".into(), "{not json".into());
    assert_eq!(h.submit(bad), Ok(()));
    let d = h.dump();
    let q = |p: &str| find_queue(&d, "default", p).unwrap();
    // managed queues inherit properties from root
    assert_eq!(q("root.tenants")["properties"]["colour"], "blue");
    // template leaf: template properties and resources
    assert_eq!(q("root.tenants.t1")["sort_policy"], "stateaware");
    assert_eq!(q("root.tenants.t1")["max"]["memory"], 300);
    assert_eq!(q("root.tenants.t1")["guaranteed"]["memory"], 100);
    assert!(q("root.tenants.t1")["properties"].get("colour").is_none());
    // dynamic parent inherits the template, not the properties
    assert_eq!(q("root.tenants.sub")["managed"], false);
    assert_eq!(q("root.tenants.sub.t2")["max"]["memory"], 300);
    // no template: only the sort policy is copied
    assert_eq!(q("root.plain.p1")["sort_policy"], "fair");
    assert!(q("root.plain.p1")["properties"].get("colour").is_none());
    assert!(q("root.plain.p1")["max"].is_null());
    assert_eq!(q("root.direct")["sort_policy"], "fair");
    // namespace.resourcequota sets a dynamic leaf's max; bad values ignored
    assert_eq!(q("root.plain.q1")["max"]["memory"], 2048);
    assert_eq!(q("root.plain.q1")["max"]["vcore"], 2);
    assert!(q("root.plain.q2")["max"].is_null());
    // the template max is enforced
    assert_eq!(h.asks(vec![ask("a1", "k", 100, 1, 5)]).0, SICORE_OK);
    h.wait("three allocations", |s| s.allocations.len() == 3);
    h.settle();
    assert_eq!(h.allocs_of("a1"), 3);
    let d = h.dump();
    assert_eq!(
        find_queue(&d, "default", "root.tenants.t1").unwrap()["allocated"]["memory"],
        300
    );
}

#[test]
fn resource_quota_tag_is_ignored_for_managed_queues() {
    let h = harness("      - {name: provided}\n", TREE);
    let mut a = app("a1", "root.batch");
    a.tags.insert(
        "namespace.resourcequota".into(),
        r#"{"resources":{"memory":{"value":5}}}"#.into(),
    );
    assert_eq!(h.submit(a), Ok(()));
    assert!(find_queue(&h.dump(), "default", "root.batch").unwrap()["max"].is_null());
}
