//! Configuration through the C ABI: every validation rule of spec 2.3/2.4
//! (and the creation checks of 2.7) fails registration with
//! `SICORE_REJECTED` and a message naming the problem, its valid
//! counterpart registers; the checksum (2.6); several partitions (1.5, 2.7).

use crate::common::*;
use sha2::{Digest, Sha256};
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;

fn register(yaml: &str) -> (sicore::ffi::sicore_status, String) {
    Harness::new(yaml_options(yaml)).register("rm", "queues")
}

fn rejected(yaml: &str, needle: &str) {
    let (st, msg) = register(yaml);
    assert_eq!(st, SICORE_REJECTED, "expected rejection for:\n{yaml}");
    assert!(
        msg.contains(needle),
        "message {msg:?} lacks {needle:?} for:\n{yaml}"
    );
    assert!(msg.contains("registration of RM rm failed"), "{msg}");
}

fn accepted(yaml: &str) {
    let (st, msg) = register(yaml);
    assert_eq!(st, SICORE_OK, "{msg}\n{yaml}");
}

/// A partition with root plus `rest` indented under root's `queues:`.
fn with_children(children: &str) -> String {
    format!("partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n{children}")
}

#[test]
fn schema_errors_reject_registration() {
    // strict schema: unknown key, wrong-case key, wrong type
    rejected(
        "partitions:\n  - name: default\n    bogus: 1\n    queues: [{name: root}]\n",
        "failed to parse configuration",
    );
    rejected(
        "partitions:\n  - Name: default\n    queues: [{name: root}]\n",
        "Name",
    );
    rejected(
        "partitions:\n  - queues: [{name: root, parent: yes-please}]\n",
        "failed to parse configuration",
    );
    // unit suffixes and negative quantities
    rejected(
        &with_children("          - name: a\n            resources: {max: {memory: 10Gi}}\n"),
        "10Gi",
    );
    rejected(
        &with_children("          - name: a\n            resources: {max: {memory: -1}}\n"),
        "negative resources not permitted",
    );
    accepted(&with_children(
        "          - name: a\n            resources: {max: {memory: \"10\", vcore: 2}}\n",
    ));
    // no partitions at all (spec recommendation: reject)
    rejected("partitions: []\n", "no partitions");
    // the whole v0.12 schema parses (with limits v1.8 accepts: partition
    // limits equal to root's, a group wildcard after a named group)
    accepted(
        r#"
partitions:
  - name: default
    preemption: {enabled: true}
    nodesortpolicy: {type: binpacking, resourceweights: {vcore: 2.0, memory: 1.0}}
    limits:
      - {limit: l1, users: [alice], groups: [dev, "*"], maxresources: {memory: 10}, maxapplications: 2}
    placementrules:
      - name: tag
        value: namespace
        create: true
        filter: {type: allow, users: [alice], groups: [dev]}
        parent: {name: fixed, value: tenants}
      - {name: provided, create: false}
    queues:
      - name: root
        submitacl: "*"
        adminacl: "alice ops"
        properties: {application.sort.policy: fifo, other: 1}
        limits:
          - {limit: l1, users: [alice], groups: [dev, "*"], maxresources: {memory: 10}, maxapplications: 2}
        queues:
          - name: tenants
            parent: true
            maxapplications: 10
            childtemplate:
              maxapplications: 3
              properties: {application.sort.policy: fair}
              resources: {guaranteed: {memory: 1}, max: {memory: 20000, vcore: 20000}}
          - name: batch
            resources: {guaranteed: {memory: 4000}, max: {memory: 8000, vcore: 8000}}
checksum: ignored
"#,
    );
}

#[test]
fn partition_and_root_rules() {
    rejected(
        "partitions:\n  - name: x\n    queues: [{name: root}]\n  - name: X\n    queues: [{name: root}]\n",
        "duplicate partition name found with name X",
    );
    rejected(
        "partitions:\n  - name: default\n    queues: [{name: root}]\n  - name: DEFAULT\n    queues: [{name: root}]\n",
        "duplicate partition name found with name default",
    );
    rejected("partitions:\n  - name: p\n", "queue config is not set");
    rejected(
        "partitions:\n  - queues: [{name: root, resources: {max: {}}}]\n",
        "root queue must not have resource limits set",
    );
    rejected(
        "partitions:\n  - queues: [{name: root, resources: {guaranteed: {memory: 1}}}]\n",
        "root queue must not have resource limits set",
    );
    // any-case root is the root; top-level queues without root get one
    let h = Harness::new(yaml_options(
        "partitions:\n  - name: Default\n    queues: [{name: ROOT, queues: [{name: A}]}]\n",
    ));
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    let d = h.dump();
    assert_eq!(d["partitions"][0]["name"], "default");
    assert!(find_queue(&d, "default", "root.a").is_some());
    let h = Harness::new(yaml_options(
        "partitions:\n  - name: p\n    queues: [{name: a}, {name: b, resources: {max: {memory: 5}}}]\n",
    ));
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    let d = h.dump();
    assert_eq!(d["partitions"][0]["name"], "p");
    assert_eq!(find_queue(&d, "p", "root.b").unwrap()["max"]["memory"], 5);
    assert!(find_queue(&d, "p", "root.a").is_some());
}

#[test]
fn queue_structure_rules() {
    rejected(
        &with_children("          - name: a\n            submitacl: \"alice  dev\"\n"),
        "multiple spaces found in ACL: 'alice  dev'",
    );
    rejected(
        &with_children("          - name: a\n            adminacl: \"a b c\"\n"),
        "multiple spaces found in ACL: 'a b c'",
    );
    accepted(&with_children(
        "          - name: a\n            adminacl: \"alice,bob dev\"\n            submitacl: \" *\"\n",
    ));
    rejected(
        &with_children("          - name: a.b\n"),
        "invalid child name a.b, a name must only have alphanumeric characters, - or _, and be no longer than 64 characters",
    );
    let long = "q".repeat(65);
    rejected(
        &with_children(&format!("          - name: {long}\n")),
        &format!("invalid child name {long}"),
    );
    accepted(&with_children(&format!(
        "          - name: {}\n          - name: a_b-C9\n",
        "q".repeat(64)
    )));
    rejected(
        &with_children("          - name: a\n          - name: A\n"),
        "duplicate child name found with name A, level 1",
    );
    rejected(
        &with_children(
            "          - name: p\n            queues:\n              - name: x\n              - name: x\n",
        ),
        "duplicate child name found with name x, level 2",
    );
}

#[test]
fn queue_resource_rules() {
    rejected(
        &with_children(
            "          - name: a\n            resources: {guaranteed: {memory: 20}, max: {memory: 10}}\n",
        ),
        "guaranteed resource map[memory:20] is larger than maximum resource map[memory:10] for queue a",
    );
    accepted(&with_children(
        "          - name: a\n            resources: {guaranteed: {memory: 10, vcore: 5}, max: {memory: 10}}\n",
    ));
    rejected(
        &with_children(
            "          - name: p\n            resources: {max: {memory: 10}}\n            queues:\n              - name: c\n                resources: {max: {memory: 11}}\n",
        ),
        "max resource of parent map[memory:10] is smaller than maximum resource map[memory:11] for queue c",
    );
    accepted(&with_children(
        "          - name: p\n            resources: {max: {memory: 10}}\n            queues:\n              - name: c\n                resources: {max: {memory: 10, vcore: 99}}\n",
    ));
    rejected(
        &with_children(
            "          - name: p\n            resources: {guaranteed: {memory: 10}}\n            queues:\n              - name: c1\n                resources: {guaranteed: {memory: 6}}\n              - name: c2\n                resources: {guaranteed: {memory: 5}}\n",
        ),
        "guaranteed resource of parent map[memory:10] is smaller than sum of guaranteed resources map[memory:11] of the children for queue p",
    );
    // a child may not guarantee a type the parent's guarantee lacks
    rejected(
        &with_children(
            "          - name: p\n            resources: {guaranteed: {memory: 10}}\n            queues:\n              - name: c1\n                resources: {guaranteed: {vcore: 1}}\n",
        ),
        "guaranteed resource of parent map[memory:10] is smaller than sum of guaranteed resources map[vcore:1] of the children for queue p",
    );
    rejected(
        &with_children(
            "          - name: p\n            resources: {max: {memory: 10}}\n            queues:\n              - name: c1\n                resources: {guaranteed: {memory: 6}}\n              - name: c2\n                resources: {guaranteed: {memory: 5}}\n",
        ),
        "max resource map[memory:10] is smaller than sum of guaranteed resources map[memory:11] of the children for queue p",
    );
    accepted(&with_children(
        "          - name: p\n            resources: {guaranteed: {memory: 11}, max: {memory: 12}}\n            queues:\n              - name: c1\n                resources: {guaranteed: {memory: 6}}\n              - name: c2\n                resources: {guaranteed: {memory: 5}}\n",
    ));
}

fn with_rules(rules: &str) -> String {
    format!(
        "partitions:\n  - placementrules:\n{rules}    queues: [{{name: root, submitacl: \"*\"}}]\n"
    )
}

#[test]
fn placement_rule_rules() {
    rejected(
        &with_rules("      - name: 1provided\n"),
        "invalid rule name 1provided, a name must be a valid identifier",
    );
    rejected(
        &with_rules("      - name: provided\n        filter: {type: maybe}\n"),
        "invalid rule filter type maybe, filter type  must be either '', allow or deny",
    );
    accepted(&with_rules(
        "      - name: provided\n        filter: {type: DENY, users: [bob]}\n",
    ));
    rejected(
        &with_rules("      - name: provided\n        filter: {users: [\"1bad\"]}\n"),
        "invalid rule filter user list is not a proper list or regexp: [1bad]",
    );
    rejected(
        &with_rules("      - name: provided\n        filter: {groups: [\"(unclosed\"]}\n"),
        "invalid rule filter group list is not a proper list or regexp: [(unclosed]",
    );
    accepted(&with_rules(
        "      - name: provided\n        filter: {users: [\"^dev-.*$\"], groups: [\"1bad\", \"ok\"]}\n",
    ));
    // the parent rule is validated too
    rejected(
        &with_rules("      - name: user\n        parent: {name: \"bad name\"}\n"),
        "invalid rule name bad name",
    );
    // rules that cannot be built (spec 2.7, recommendation: configuration errors)
    rejected(
        &with_rules("      - name: bogus\n"),
        "unknown rule name specified bogus, failing placement rule config",
    );
    rejected(
        &with_rules("      - name: fixed\n"),
        "a fixed queue rule must have a queue name set",
    );
    rejected(
        &with_rules("      - name: tag\n"),
        "a tag queue rule must have a tag name set",
    );
    rejected(
        &with_rules("      - name: fixed\n        value: root.x\n        parent: {name: user}\n"),
        "cannot have a fixed queue rule with qualified queue getName and a parent rule",
    );
    accepted(&with_rules(
        "      - name: Fixed\n        value: x\n        parent: {name: user}\n      - name: TAG\n        value: ns\n",
    ));
}

#[test]
fn limit_rules() {
    let part =
        |limits: &str| format!("partitions:\n  - limits:\n{limits}    queues: [{{name: root}}]\n");
    let queue = |limits: &str| {
        let limits = limits.replace("      - ", "              - ");
        with_children(&format!(
            "          - name: a\n            limits:\n{limits}"
        ))
    };
    for wrap in [&part as &dyn Fn(&str) -> String, &queue] {
        rejected(
            &wrap("      - {limit: none, maxapplications: 1}\n"),
            "empty user and group lists defined in limit 'none'",
        );
        rejected(
            &wrap("      - {limit: u, users: [\"1x\"], maxapplications: 1}\n"),
            "invalid limit user name '1x' in limit definition",
        );
        // v1.8 group names may hold `.` (limits.md 1.4): `/` is still refused.
        rejected(
            &wrap("      - {limit: g, groups: [\"g/x\"], maxapplications: 1}\n"),
            "invalid limit group name 'g/x' in limit definition",
        );
        // v1.8: an all-zero maxresources is "not greater than zero", and the
        // null-limit message names the limit (limits.md 1.3 rules 5, 6).
        rejected(
            &wrap("      - {limit: z, users: [alice, bob], maxresources: {memory: 0}}\n"),
            "MaxResources should be greater than zero in 'z' limit",
        );
        rejected(
            &wrap("      - {limit: n, users: [alice, bob]}\n"),
            "invalid resource combination for limit n all resource limits are null",
        );
        rejected(
            &wrap("      - {limit: r, users: [alice], maxresources: {memory: 1Gi}}\n"),
            "1Gi",
        );
        accepted(&wrap(
            "      - {limit: ok, users: [\"*\"], groups: [dev], maxresources: {memory: 1}}\n",
        ));
    }
}

#[test]
fn node_sort_policy_rules() {
    let yaml = |policy: &str| {
        format!("partitions:\n  - nodesortpolicy: {policy}\n    queues: [{{name: root}}]\n")
    };
    rejected(&yaml("{type: BinPacking}"), "undefined policy: BinPacking");
    rejected(
        &yaml("{type: fair, resourceweights: {memory: -1.0}}"),
        "negative resource weight for memory is not allowed",
    );
    for (policy, shown) in [
        ("{type: binpacking}", "binpacking"),
        ("{type: \"\"}", "fair"),
        ("{resourceweights: {vcore: 0.0}}", "fair"),
    ] {
        let h = Harness::new(yaml_options(&yaml(policy)));
        assert_eq!(h.register("rm", "queues").0, SICORE_OK);
        assert_eq!(
            h.dump()["partitions"][0]["node_sort_policy"],
            shown,
            "{policy}"
        );
    }
}

/// The reference's checksum: SHA-256 over the text without the checksum
/// entry, upper-case hex (spec 2.6).
fn reference_checksum(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}

#[test]
fn checksum_is_shown_in_the_dump() {
    let body = "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\n";
    let h = Harness::new(yaml_options(body));
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    let sum = h.dump()["rms"][0]["config_checksum"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(sum, reference_checksum(body));
    assert_eq!(sum.len(), 64);
    // A checksum entry in the file is cut out before hashing (`checksum: `
    // plus at most 64 characters; the line's newline stays), so its value
    // does not matter.
    for value in ["A".repeat(64), "0".repeat(64)] {
        let with = format!("{body}checksum: {value}\n");
        let h = Harness::new(yaml_options(&with));
        assert_eq!(h.register("rm", "queues").0, SICORE_OK);
        assert_eq!(
            h.dump()["rms"][0]["config_checksum"],
            reference_checksum(&format!("{body}\n")).as_str()
        );
    }
    // Any change to the text changes it.
    let other = body.replace("\"*\"", "\"alice\"");
    let h = Harness::new(yaml_options(&other));
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    assert_ne!(h.dump()["rms"][0]["config_checksum"], sum.as_str());
}

const TWO_PARTITIONS: &str = r#"
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues: [{name: a}]
  - name: gpu
    queues:
      - name: root
        submitacl: "*"
        queues: [{name: b}]
"#;

#[test]
fn nodes_and_applications_land_in_the_partition_they_name() {
    let h = Harness::configured(yaml_options(TWO_PARTITIONS), 0);
    assert_eq!(
        h.nodes(vec![
            node("n-default", 1000, 10),
            node_in("n-gpu", "gpu", 500, 5)
        ])
        .0,
        SICORE_OK
    );
    h.wait("nodes", |s| s.nodes_accepted.len() == 2);
    assert_eq!(h.nodes(vec![node_in("n-x", "nope", 1, 1)]).0, SICORE_OK);
    h.wait("node rejected", |s| s.nodes_rejected.len() == 1);
    h.seen(|s| assert!(s.nodes_rejected[0].reason.contains("[rm]nope")));

    let mut g = app("app-g", "root.b");
    g.partition_name = "gpu".into();
    assert_eq!(h.submit(g), Ok(()));
    assert_eq!(h.submit(app("app-d", "root.a")), Ok(()));
    // root.a exists only in default
    let mut wrong = app("app-w", "root.a");
    wrong.partition_name = "gpu".into();
    assert!(h.submit(wrong).unwrap_err().contains("root.a"));
    let mut lost = app("app-l", "root.a");
    lost.partition_name = "nope".into();
    assert_eq!(
        h.submit(lost).unwrap_err(),
        "Failed to add application app-l to partition [rm]nope, partition doesn't exist"
    );

    let mut ag = ask("app-g", "k-g", 100, 1, 10);
    ag.partition_name = "gpu".into();
    assert_eq!(
        h.asks(vec![ag, ask("app-d", "k-d", 100, 1, 1)]).0,
        SICORE_OK
    );
    // gpu has 500 memory: five allocations, all on its node
    h.wait("allocations", |s| s.allocations.len() == 6);
    h.settle();
    h.seen(|s| {
        assert_eq!(s.allocations.len(), 6);
        for a in &s.allocations {
            if a.application_id == "app-g" {
                assert_eq!(a.node_id, "n-gpu");
                assert_eq!(a.partition_name, "gpu", "the RM sees plain names");
            } else {
                assert_eq!(a.node_id, "n-default");
                assert_eq!(a.partition_name, "default");
            }
        }
    });
    let d = h.dump();
    let names: Vec<&str> = d["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["default", "gpu"]);
    // releases name the partition without the prefix
    let uuid = h.seen(|s| {
        s.allocations
            .iter()
            .find(|a| a.application_id == "app-g")
            .unwrap()
            .uuid
            .clone()
    });
    let rel = si::AllocationRelease {
        partition_name: "gpu".into(),
        application_id: "app-g".into(),
        uuid,
        termination_type: si::TerminationType::StoppedByRm as i32,
        message: String::new(),
    };
    assert_eq!(h.releases(vec![rel], vec![]).0, SICORE_OK);
    h.wait("release", |s| s.released.len() == 1);
    h.seen(|s| assert_eq!(s.released[0].partition_name, "gpu"));
}
