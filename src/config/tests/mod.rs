//! Configuration tests, first half: defaults, strictness, normalisation
//! and queue structure (helpers shared with [`rules`]).

use super::*;
use std::collections::BTreeMap;

fn ok(text: &str) -> SchedulerConfig {
    parse(text).unwrap_or_else(|e| panic!("expected valid config, got: {e}\n{text}"))
}

fn err(text: &str) -> String {
    match parse(text) {
        Ok(c) => panic!("expected an error, got {c:?}\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// A single default partition with `body` indented under `queues:` of root.
fn with_root(children: &str) -> String {
    let mut s = String::from("partitions:\n  - name: default\n    queues:\n      - name: root\n");
    if !children.is_empty() {
        s.push_str("        queues:\n");
        for line in children.lines() {
            s.push_str("          ");
            s.push_str(line);
            s.push('\n');
        }
    }
    s
}

/// A default partition with root and extra partition-level keys.
fn with_partition(extra: &str) -> String {
    let mut s = String::from("partitions:\n  - name: default\n    queues:\n      - name: root\n");
    for line in extra.lines() {
        s.push_str("    ");
        s.push_str(line);
        s.push('\n');
    }
    s
}

fn root(c: &SchedulerConfig) -> &QueueConfig {
    &c.partitions[0].queues[0]
}

// ---- defaults and the embedded config ----

#[test]
fn default_config_parses() {
    let c = ok(DEFAULT_CONFIG);
    assert_eq!(c.partitions.len(), 1);
    let p = &c.partitions[0];
    assert_eq!(p.name, "default");
    assert_eq!(p.queues.len(), 1);
    assert_eq!(p.queues[0].name, "root");
    assert!(p.queues[0].parent);
    assert_eq!(p.queues[0].submit_acl, "*");
    assert_eq!(p.placement_rules.len(), 1);
    assert_eq!(p.placement_rules[0].name, "provided");
    assert!(p.placement_rules[0].create);
    assert_eq!(p.node_sort_policy.policy_type, "fair");
    assert_eq!(
        p.node_sort_policy.resource_weights,
        default_resource_weights()
    );
    assert_eq!(p.preemption.enabled, None);
    assert_eq!(p.preemption.quota_enabled, None);
    assert_eq!(c.checksum, checksum(DEFAULT_CONFIG));
}

#[test]
fn full_example_parses() {
    let text = r#"
partitions:
  - name: default
    nodesortpolicy:
      type: binpacking
      resourceweights: {vcore: 2.0, memory: 1}
    preemption:
      enabled: true
      quotapreemptionenabled: true
    placementrules:
      - name: tag
        value: namespace
        create: true
        parent:
          name: fixed
          value: tenants
      - name: provided
        create: false
        filter:
          type: deny
          users: [bad]
          groups: ["^x.*"]
    limits:
      - limit: partition cap
        users: ["*"]
        maxapplications: 10
    queues:
      - name: root
        submitacl: "*"
        properties:
          application.sort.policy: fifo
        queues:
          - name: tenants
            parent: true
            childtemplate:
              maxapplications: 3
              properties: {application.sort.policy: fair}
              resources:
                max: {memory: 20000, vcore: "20000"}
          - name: Batch
            adminacl: "alice,bob ops"
            maxapplications: 5
            resources:
              guaranteed: {memory: 4000, vcore: 4000}
              max: {memory: 8000, vcore: 8000}
            limits:
              - limit: per user
                users: [alice]
                groups: [ops]
                maxresources: {memory: 100}
                # v1.8: under the partition's application cap, every
                # limit for a user must cap applications too
                maxapplications: 5
"#;
    let c = ok(text);
    let p = &c.partitions[0];
    assert_eq!(p.preemption.enabled, Some(true));
    assert_eq!(p.preemption.quota_enabled, Some(true));
    assert_eq!(p.node_sort_policy.policy_type, "binpacking");
    assert_eq!(p.node_sort_policy.resource_weights["vcore"], 2.0);
    assert_eq!(p.node_sort_policy.resource_weights["memory"], 1.0);
    assert_eq!(
        p.placement_rules[0].parent.as_ref().unwrap().value,
        "tenants"
    );
    assert_eq!(p.placement_rules[1].filter.filter_type, "deny");
    assert_eq!(p.limits[0].max_applications, 10);
    let r = &p.queues[0];
    assert_eq!(r.properties["application.sort.policy"], "fifo");
    let tenants = &r.queues[0];
    assert!(tenants.parent);
    let tpl = tenants.child_template.as_ref().unwrap();
    assert_eq!(tpl.max_applications, 3);
    assert_eq!(tpl.properties["application.sort.policy"], "fair");
    assert_eq!(tpl.resources.max.as_ref().unwrap()["vcore"], 20000);
    let batch = &r.queues[1];
    assert_eq!(batch.name, "batch");
    assert_eq!(batch.admin_acl, "alice,bob ops");
    assert_eq!(batch.max_applications, 5);
    assert_eq!(batch.resources.guaranteed.as_ref().unwrap()["memory"], 4000);
    assert_eq!(batch.limits[0].max_resources["memory"], 100);
    assert!(!batch.parent);
    // the state dump can serialise the config
    let json = serde_json::to_string(&c).unwrap();
    assert!(json.contains("\"submitacl\":\"*\""));
}

#[test]
fn no_partitions_rejected() {
    assert_eq!(
        err("partitions: []\n"),
        "configuration has no partitions defined"
    );
    assert_eq!(
        err("checksum: x\n"),
        "configuration has no partitions defined"
    );
}

// ---- strictness ----

#[test]
fn unknown_keys_rejected() {
    for text in [
        "partitions:\n  - name: default\n    queues: []\nextra: 1\n".to_string(),
        with_partition("bogus: true"),
        with_root("- name: a\n  colour: red"),
        with_partition("placementrules:\n  - name: provided\n    creat: true"),
        with_partition("preemption: {enabled: true, delay: 1}"),
        with_partition("nodesortpolicy: {type: fair, weights: {}}"),
        with_root("- name: a\n  resources: {min: {memory: 1}}"),
        with_root("- name: a\n  parent: true\n  childtemplate: {foo: 1}"),
        with_partition("limits:\n  - users: [a]\n    maxapplications: 1\n    extra: 2"),
        with_partition(
            "placementrules:\n  - name: provided\n    filter: {type: allow, people: [a]}",
        ),
    ] {
        let e = err(&text);
        assert!(e.contains("unknown field"), "{e}\n{text}");
    }
}

#[test]
fn keys_are_case_sensitive() {
    let e = err("partitions:\n  - Name: default\n    queues: []\n");
    assert!(e.contains("unknown field `Name`"), "{e}");
}

#[test]
fn wrong_types_rejected() {
    for text in [
        "partitions:\n  - name: default\n    queues: x\n".to_string(),
        with_root("- name: a\n  parent: maybe"),
        with_root("- name: a\n  maxapplications: -1"),
        with_root("- name: a\n  submitacl: [a]"),
        with_root("- name: a\n  properties: {x: [1]}"),
        with_partition("preemption: {enabled: 3}"),
        with_partition("preemption: {quotapreemptionenabled: yes please}"),
        with_partition("nodesortpolicy: {type: fair, resourceweights: {vcore: x}}"),
    ] {
        let e = err(&text);
        assert!(
            e.starts_with("failed to parse configuration"),
            "{e}\n{text}"
        );
    }
}

#[test]
fn quantities_are_plain_integers() {
    // numbers and strings are both fine
    let c = ok(&with_root(
        "- name: a\n  resources: {max: {memory: \"1024\", vcore: 10}}",
    ));
    let max = root(&c).queues[0].resources.max.clone().unwrap();
    assert_eq!(max["memory"], 1024);
    assert_eq!(max["vcore"], 10);
    // units, fractions and garbage are parse errors
    for v in ["10Gi", "\"10Gi\"", "1.5", "\"1.5\"", "abc", "\"\""] {
        let e = err(&with_root(&format!(
            "- name: a\n  resources: {{max: {{memory: {v}}}}}"
        )));
        assert!(e.contains("resource quantity"), "{v}: {e}");
    }
    // negative values, as numbers or strings, anywhere quantities appear
    for text in [
        with_root("- name: a\n  resources: {guaranteed: {memory: -1}}"),
        with_root("- name: a\n  resources: {max: {memory: \"-5\"}}"),
        with_root("- name: a\n  parent: true\n  childtemplate: {resources: {max: {memory: -1}}}"),
        with_partition("limits:\n  - users: [a]\n    maxresources: {memory: -3}"),
    ] {
        let e = err(&text);
        assert!(e.contains("negative resources not permitted"), "{e}");
    }
    // child template values must be integers too
    let e = err(&with_root(
        "- name: a\n  parent: true\n  childtemplate: {resources: {guaranteed: {memory: 1Mi}}}",
    ));
    assert!(e.contains("invalid resource quantity '1Mi'"), "{e}");
}

#[test]
fn property_scalars_taken_as_text() {
    let c = ok(&with_root(
        "- name: a\n  properties: {priority: 10, flag: true, s: text}",
    ));
    let props = &root(&c).queues[0].properties;
    assert_eq!(props["priority"], "10");
    assert_eq!(props["flag"], "true");
    assert_eq!(props["s"], "text");
}

// ---- normalisation ----

#[test]
fn partition_names_normalised() {
    for (given, want) in [
        ("", "default"),
        ("DEFAULT", "default"),
        ("Default", "default"),
        ("gpu", "gpu"),
        ("GPU", "GPU"),
    ] {
        let c = ok(&format!(
            "partitions:\n  - name: \"{given}\"\n    queues: []\n"
        ));
        assert_eq!(c.partitions[0].name, want);
    }
    // absent name
    let c = ok("partitions:\n  - queues: []\n");
    assert_eq!(c.partitions[0].name, "default");
}

#[test]
fn duplicate_partition_names() {
    assert_eq!(
        err("partitions:\n  - name: default\n    queues: []\n  - name: DEFAULT\n    queues: []\n"),
        "duplicate partition name found with name default"
    );
    assert_eq!(
        err("partitions:\n  - name: gpu\n    queues: []\n  - name: GPU\n    queues: []\n"),
        "duplicate partition name found with name GPU"
    );
    let c = ok("partitions:\n  - name: a\n    queues: []\n  - name: b\n    queues: []\n");
    assert_eq!(c.partitions.len(), 2);
}

#[test]
fn queue_config_must_be_set() {
    assert_eq!(
        err("partitions:\n  - name: default\n"),
        "queue config is not set"
    );
    // an empty list is fine: a bare root is inserted
    let c = ok("partitions:\n  - name: default\n    queues: []\n");
    let r = root(&c);
    assert_eq!(r.name, "root");
    assert!(r.parent);
    assert!(r.queues.is_empty());
}

#[test]
fn root_inserted_or_recognised() {
    // one non-root top-level queue: root inserted above it
    let c = ok("partitions:\n  - queues:\n      - name: Batch\n");
    let r = root(&c);
    assert_eq!(r.name, "root");
    assert!(r.parent);
    assert_eq!(r.queues.len(), 1);
    assert_eq!(r.queues[0].name, "batch");
    // several top-level queues, even one named root: all become children
    let c = ok("partitions:\n  - queues:\n      - name: a\n      - name: b\n");
    assert_eq!(root(&c).queues.len(), 2);
    let c = ok("partitions:\n  - queues:\n      - name: root\n      - name: b\n");
    assert_eq!(root(&c).queues[0].name, "root");
    // ROOT in any case is the root and is stored as `root`, forced parent
    let c = ok("partitions:\n  - queues:\n      - name: ROOT\n        submitacl: '*'\n");
    let r = root(&c);
    assert_eq!(r.name, "root");
    assert!(r.parent);
    assert_eq!(r.submit_acl, "*");
    assert_eq!(c.partitions[0].queues.len(), 1);
}

#[test]
fn queue_names_stored_lower_case() {
    let c = ok(&with_root("- name: Parent\n  queues:\n    - name: ChildQ"));
    assert_eq!(root(&c).queues[0].name, "parent");
    assert_eq!(root(&c).queues[0].queues[0].name, "childq");
}

#[test]
fn root_must_not_have_resources() {
    let msg = "root queue must not have resource limits set";
    for res in [
        "{max: {memory: 1}}",
        "{guaranteed: {memory: 1}}",
        "{max: {}}",
        "{guaranteed: {}}",
    ] {
        let text =
            format!("partitions:\n  - queues:\n      - name: root\n        resources: {res}\n");
        assert_eq!(err(&text), msg, "{res}");
    }
    // resources key present but empty is fine
    ok("partitions:\n  - queues:\n      - name: root\n        resources: {}\n");
    // a non-root single top-level queue may have resources (root is inserted)
    ok("partitions:\n  - queues:\n      - name: a\n        resources: {max: {memory: 1}}\n");
}

// ---- queue structure ----

#[test]
fn acl_validation() {
    for acl in [
        "",
        "*",
        " *",
        "* ",
        "alice",
        "alice,bob dev",
        " dev",
        "alice ",
    ] {
        ok(&with_root(&format!(
            "- name: a\n  submitacl: \"{acl}\"\n  adminacl: \"{acl}\""
        )));
    }
    for (key, acl) in [
        ("submitacl", "alice  dev"),
        ("adminacl", "a b c"),
        ("submitacl", "  dev"),
    ] {
        assert_eq!(
            err(&with_root(&format!("- name: a\n  {key}: \"{acl}\""))),
            format!("multiple spaces found in ACL: '{acl}'")
        );
    }
    // root ACLs checked too
    let e = err("partitions:\n  - queues:\n      - name: root\n        adminacl: 'x  y'\n");
    assert_eq!(e, "multiple spaces found in ACL: 'x  y'");
}

#[test]
fn child_names_validated() {
    let long64 = "a".repeat(64);
    let long65 = "a".repeat(65);
    ok(&with_root(&format!("- name: {long64}\n- name: a-b_C9")));
    for bad in ["a.b", long65.as_str(), "a b", "\"\"", "q@x"] {
        let e = err(&with_root(&format!("- name: {bad}")));
        let shown = bad.trim_matches('"');
        assert_eq!(
            e,
            format!("invalid child name {shown}, a name must only have alphanumeric characters, - or _, and be no longer than 64 characters")
        );
    }
    // deeper levels too
    let e = err(&with_root("- name: p\n  queues:\n    - name: x.y"));
    assert!(e.starts_with("invalid child name x.y,"), "{e}");
    // a name-less queue is invalid
    let e = err(&with_root("- parent: true"));
    assert!(e.starts_with("invalid child name ,"), "{e}");
}

#[test]
fn duplicate_child_names() {
    assert_eq!(
        err(&with_root("- name: a\n- name: A")),
        "duplicate child name found with name A, level 1"
    );
    assert_eq!(
        err(&with_root(
            "- name: p\n  queues:\n    - name: x\n    - name: x"
        )),
        "duplicate child name found with name x, level 2"
    );
    // same name under different parents is fine
    ok(&with_root(
        "- name: p\n  queues:\n    - name: x\n- name: q\n  queues:\n    - name: x",
    ));
}

mod rules;
