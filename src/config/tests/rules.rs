//! Configuration tests, second half: resources, placement rules, limits,
//! node sort policy, checksum and loading.

use super::*;

// ---- queue resources ----

#[test]
fn guaranteed_must_fit_max() {
    assert_eq!(
        err(&with_root("- name: a\n  resources:\n    guaranteed: {memory: 10, vcore: 2}\n    max: {memory: 5}")),
        "guaranteed resource map[memory:10 vcore:2] is larger than maximum resource map[memory:5] for queue a"
    );
    // types missing from max are unlimited
    ok(&with_root(
        "- name: a\n  resources:\n    guaranteed: {memory: 5, vcore: 2}\n    max: {memory: 5}",
    ));
}

#[test]
fn max_must_fit_parent_max() {
    assert_eq!(
        err(&with_root("- name: p\n  resources: {max: {memory: 10}}\n  queues:\n    - name: c\n      resources: {max: {memory: 11, vcore: 1}}")),
        "max resource of parent map[memory:10] is smaller than maximum resource map[memory:11 vcore:1] for queue c"
    );
    ok(&with_root("- name: p\n  resources: {max: {memory: 10}}\n  queues:\n    - name: c\n      resources: {max: {memory: 10, vcore: 100}}"));
    // the effective max is inherited through a level without max
    let e = err(&with_root("- name: p\n  resources: {max: {memory: 10}}\n  queues:\n    - name: m\n      queues:\n        - name: c\n          resources: {max: {memory: 20}}"));
    assert_eq!(
        e,
        "max resource of parent map[memory:10] is smaller than maximum resource map[memory:20] for queue c"
    );
    // effective max is the per-type minimum
    let e = err(&with_root("- name: p\n  resources: {max: {memory: 10, vcore: 5}}\n  queues:\n    - name: m\n      resources: {max: {memory: 20, gpu: 1}}"));
    assert!(
        e.starts_with("max resource of parent map[memory:10 vcore:5]"),
        "{e}"
    );
    let e = err(&with_root("- name: p\n  resources: {max: {memory: 10}}\n  queues:\n    - name: m\n      resources: {max: {vcore: 4}}\n      queues:\n        - name: c\n          resources: {max: {vcore: 5}}"));
    assert_eq!(
        e,
        "max resource of parent map[memory:10 vcore:4] is smaller than maximum resource map[vcore:5] for queue c"
    );
}

#[test]
fn parent_guarantee_covers_children() {
    assert_eq!(
        err(&with_root("- name: p\n  resources: {guaranteed: {memory: 10}}\n  queues:\n    - name: a\n      resources: {guaranteed: {memory: 6}}\n    - name: b\n      resources: {guaranteed: {memory: 6}}")),
        "guaranteed resource of parent map[memory:10] is smaller than sum of guaranteed resources map[memory:12] of the children for queue p"
    );
    // a child may not guarantee a type the parent does not
    assert_eq!(
        err(&with_root("- name: p\n  resources: {guaranteed: {memory: 10}}\n  queues:\n    - name: a\n      resources: {guaranteed: {vcore: 1}}")),
        "guaranteed resource of parent map[memory:10] is smaller than sum of guaranteed resources map[vcore:1] of the children for queue p"
    );
    ok(&with_root("- name: p\n  resources: {guaranteed: {memory: 12, vcore: 1}}\n  queues:\n    - name: a\n      resources: {guaranteed: {memory: 6}}\n    - name: b\n      resources: {guaranteed: {memory: 6}}"));
    // a parent without guarantee reports the children's sum upwards
    assert_eq!(
        err(&with_root("- name: top\n  resources: {guaranteed: {memory: 5}}\n  queues:\n    - name: mid\n      queues:\n        - name: a\n          resources: {guaranteed: {memory: 6}}")),
        "guaranteed resource of parent map[memory:5] is smaller than sum of guaranteed resources map[memory:6] of the children for queue top"
    );
}

#[test]
fn max_covers_children_guarantees() {
    assert_eq!(
        err(&with_root("- name: p\n  resources: {max: {memory: 10}}\n  queues:\n    - name: a\n      resources: {guaranteed: {memory: 6}}\n    - name: b\n      resources: {guaranteed: {memory: 6}}")),
        "max resource map[memory:10] is smaller than sum of guaranteed resources map[memory:12] of the children for queue p"
    );
    ok(&with_root("- name: p\n  resources: {max: {memory: 12}}\n  queues:\n    - name: a\n      resources: {guaranteed: {memory: 6, vcore: 100}}\n    - name: b\n      resources: {guaranteed: {memory: 6}}"));
    // the inherited effective max is used (checked on the level above the leaf)
    assert_eq!(
        err(&with_root("- name: p\n  resources: {max: {memory: 10}}\n  queues:\n    - name: m\n      queues:\n        - name: a\n          resources: {guaranteed: {memory: 11}}")),
        "max resource map[memory:10] is smaller than sum of guaranteed resources map[memory:11] of the children for queue m"
    );
}

// ---- placement rules ----

#[test]
fn rule_names_validated() {
    let e = err(&with_partition("placementrules:\n  - name: 1bad"));
    assert_eq!(
        e,
        "invalid rule name 1bad, a name must be a valid identifier"
    );
    let e = err(&with_partition(
        "placementrules:\n  - name: provided\n    parent:\n      name: bad-name",
    ));
    assert_eq!(
        e,
        "invalid rule name bad-name, a name must be a valid identifier"
    );
    let e = err(&with_partition("placementrules:\n  - create: true"));
    assert_eq!(e, "invalid rule name , a name must be a valid identifier");
    ok(&with_partition(
        "placementrules:\n  - name: Provided\n  - name: USER",
    ));
}

#[test]
fn rule_build_errors() {
    assert_eq!(
        err(&with_partition("placementrules:\n  - name: bogus")),
        "unknown rule name specified bogus, failing placement rule config"
    );
    assert_eq!(
        err(&with_partition("placementrules:\n  - name: fixed")),
        "a fixed queue rule must have a queue name set"
    );
    assert_eq!(
        err(&with_partition("placementrules:\n  - name: tag")),
        "a tag queue rule must have a tag name set"
    );
    let e = err(&with_partition(
        "placementrules:\n  - name: fixed\n    value: root.a\n    parent: {name: user}",
    ));
    assert!(
        e.starts_with(
            "cannot have a fixed queue rule with qualified queue getName and a parent rule: "
        ),
        "{e}"
    );
    assert_eq!(
        err(&with_partition(
            "placementrules:\n  - name: user\n    parent: {name: nope}"
        )),
        "unknown rule name specified nope, failing placement rule config"
    );
    ok(&with_partition(
        "placementrules:\n  - name: fixed\n    value: root.a\n  - name: tag\n    value: ns\n    parent: {name: fixed, value: x}",
    ));
}

#[test]
fn rule_filter_type_validated() {
    for t in ["", "allow", "deny", "DENY", "Allow"] {
        ok(&with_partition(&format!(
            "placementrules:\n  - name: provided\n    filter: {{type: \"{t}\"}}"
        )));
    }
    assert_eq!(
        err(&with_partition(
            "placementrules:\n  - name: provided\n    filter: {type: block}"
        )),
        "invalid rule filter type block, filter type  must be either '', allow or deny"
    );
    // parent rule filters too
    let e = err(&with_partition(
        "placementrules:\n  - name: provided\n    parent: {name: user, filter: {type: x}}",
    ));
    assert!(e.starts_with("invalid rule filter type x,"), "{e}");
}

#[test]
fn rule_filter_lists_validated() {
    for users in [
        "[alice]",
        "[\"^a.*$\"]",
        "[\"a|b\"]",
        "[1bad, alice]",
        "[\"(x\", \"y\"]",
    ] {
        ok(&with_partition(&format!(
            "placementrules:\n  - name: provided\n    filter: {{users: {users}}}"
        )));
    }
    for (users, shown) in [
        ("[1bad]", "[1bad]"),
        ("[\"(a\"]", "[(a]"),
        ("[\"a.b c\"]", "[a.b c]"),
    ] {
        assert_eq!(
            err(&with_partition(&format!(
                "placementrules:\n  - name: provided\n    filter: {{users: {users}}}"
            ))),
            format!("invalid rule filter user list is not a proper list or regexp: {shown}")
        );
    }
    ok(&with_partition(
        "placementrules:\n  - name: provided\n    filter: {groups: [\"^dev\"]}",
    ));
    ok(&with_partition(
        "placementrules:\n  - name: provided\n    filter: {groups: [dev]}",
    ));
    assert_eq!(
        err(&with_partition(
            "placementrules:\n  - name: provided\n    filter: {groups: [a.b]}"
        )),
        "invalid rule filter group list is not a proper list or regexp: [a.b]"
    );
}

// ---- limits ----

#[test]
fn limits_validated() {
    // v1.8 validation (limits.md 1.3) in both editions. Stricter than
    // v0.12: a group name may hold `.` and `:` now, the null-limit message
    // names the limit, an all-zero maxresources is "not greater than zero",
    // and a group wildcard must come after a named group.
    let cases = [
        (
            "limits:\n  - limit: nobody\n    maxapplications: 1",
            "empty user and group lists defined in limit 'nobody'",
        ),
        (
            "limits:\n  - users: [1bad]\n    maxapplications: 1",
            "invalid limit user name '1bad' in limit definition",
        ),
        (
            "limits:\n  - groups: [a/b]\n    maxapplications: 1",
            "invalid limit group name 'a/b' in limit definition",
        ),
        (
            "limits:\n  - limit: pair\n    users: [alice, bob]",
            "invalid resource combination for limit pair all resource limits are null",
        ),
        (
            "limits:\n  - limit: zero\n    users: [alice]\n    maxresources: {memory: 0, vcore: 0}",
            "MaxResources should be greater than zero in 'zero' limit",
        ),
        (
            "limits:\n  - users: [\"*\", test-user]\n    maxapplications: 1",
            "should not set no wildcard user test-user after wildcard user limit",
        ),
        (
            "limits:\n  - users: [a]\n    maxapplications: 1\n  - users: [a]\n    maxapplications: 2",
            "duplicated user name 'a', already exists",
        ),
        (
            "limits:\n  - groups: [g, g]\n    maxapplications: 1",
            "duplicated group name 'g'",
        ),
        (
            "limits:\n  - groups: [\"*\", dev]\n    maxresources: {memory: 1}",
            "should not set no wildcard group dev after wildcard group limit",
        ),
        (
            "limits:\n  - groups: [\"*\"]\n    maxapplications: 1",
            "should not specify only one group limit that is using the wildcard. There must be at least one limit with a group name defined ",
        ),
    ];
    for (limits, msg) in cases {
        assert_eq!(err(&with_partition(limits)), msg, "partition {limits}");
        // queue-level limits run the same checks
        let indented: String = limits.lines().map(|l| format!("  {l}\n")).collect();
        assert_eq!(
            err(&with_root(&format!("- name: a\n{indented}"))),
            msg,
            "queue {limits}"
        );
    }
    for limits in [
        "limits:\n  - users: [\"*\"]\n    maxapplications: 1",
        "limits:\n  - groups: [dev, \"*\"]\n    maxresources: {memory: 1}",
        "limits:\n  - users: [alice]\n    groups: [dev]\n    maxapplications: 2\n    maxresources: {vcore: 3}",
        // a zero next to a positive value blocks that type only (L3)
        "limits:\n  - users: [alice]\n    maxresources: {memory: 100, vcore: 0, nvidia.com/gpu: 0}",
        "limits:\n  - groups: [a.b, \"c:d\"]\n    maxapplications: 1",
    ] {
        ok(&with_partition(limits));
    }
}

#[test]
fn limits_against_the_queue_and_ancestors() {
    // L4: a limit above the queue's own max
    assert_eq!(
        err(&with_root(
            "- name: parent\n  resources: {max: {memory: 100}}\n  limits:\n    - limit: big\n      users: [u]\n      maxresources: {memory: 200}"
        )),
        "invalid MaxResources settings for limit big exeecd current the queue MaxResources"
    );
    assert_eq!(
        err(&with_root(
            "- name: parent\n  maxapplications: 2\n  limits:\n    - limit: many\n      users: [u]\n      maxapplications: 3"
        )),
        "invalid MaxApplications settings for limit many exceed current the queue MaxApplications"
    );
    // L5: child cap above the parent's
    let tree = |leaf_mem: u32, leaf_apps: u32| {
        format!(
            "- name: level1\n  limits:\n    - users: [user1]\n      maxresources: {{memory: 1000}}\n      maxapplications: 50\n  queues:\n    - name: leaf\n      limits:\n        - users: [user1]\n          maxresources: {{memory: {leaf_mem}}}\n          maxapplications: {leaf_apps}"
        )
    };
    assert_eq!(
        err(&with_root(&tree(10000, 10))),
        "user user1 max resource map[memory:10000] of queue leaf is greater than immediate or ancestor parent maximum resource map[memory:1000]"
    );
    assert_eq!(
        err(&with_root(&tree(500, 90))),
        "user user1 max applications 90 of queue leaf is greater than immediate or ancestor parent max applications 50"
    );
    ok(&with_root(&tree(500, 10)));
    // a named user under an ancestor wildcard, resources then applications
    let wild = |mem: u32, apps: u32| {
        format!(
            "- name: p\n  limits:\n    - users: [\"*\"]\n      maxresources: {{memory: 100}}\n      maxapplications: 5\n  queues:\n    - name: c\n      limits:\n        - users: [bob]\n          maxresources: {{memory: {mem}}}\n          maxapplications: {apps}"
        )
    };
    assert_eq!(
        err(&with_root(&wild(200, 1))),
        "user bob max resource map[memory:200] of queue c is greater than wildcard maximum resource map[memory:100] of immediate or ancestor parent queue"
    );
    assert_eq!(
        err(&with_root(&wild(50, 0))),
        "user bob max applications 0 of queue c is greater than wildcard max applications 5 of immediate or ancestor parent queue"
    );
    ok(&with_root(&wild(50, 2)));
}

#[test]
fn partition_limits_are_root_limits() {
    // L6
    let text = "partitions:\n  - name: default\n    limits:\n      - users: [a]\n        maxapplications: 1\n    queues:\n      - name: root\n        limits:\n          - users: [b]\n            maxapplications: 1\n";
    assert_eq!(
        err(text),
        "partition limits and root queue limits are not equivalent"
    );
    let c = ok(&with_partition(
        "limits:\n  - users: [a]\n    maxapplications: 1",
    ));
    assert_eq!(
        c.partitions[0].queues[0].limits[0].users,
        vec!["a".to_string()]
    );
    let same = "partitions:\n  - name: default\n    limits:\n      - users: [a]\n        maxapplications: 1\n    queues:\n      - name: root\n        limits:\n          - users: [a]\n            maxapplications: 1\n";
    ok(same);
}

// ---- node sort policy ----

#[test]
fn node_sort_policy_validated() {
    for t in ["fair", "binpacking", ""] {
        let c = ok(&with_partition(&format!(
            "nodesortpolicy: {{type: \"{t}\"}}"
        )));
        let want = if t.is_empty() { "fair" } else { t };
        assert_eq!(c.partitions[0].node_sort_policy.policy_type, want);
    }
    for t in ["Fair", "BINPACKING", "spread"] {
        assert_eq!(
            err(&with_partition(&format!("nodesortpolicy: {{type: {t}}}"))),
            format!("undefined policy: {t}")
        );
    }
    assert_eq!(
        err(&with_partition(
            "nodesortpolicy: {type: fair, resourceweights: {vcore: 1, memory: -0.5}}"
        )),
        "negative resource weight for memory is not allowed"
    );
    let c = ok(&with_partition(
        "nodesortpolicy: {type: binpacking, resourceweights: {gpu: 0, vcore: 3}}",
    ));
    let w = &c.partitions[0].node_sort_policy.resource_weights;
    assert_eq!(w.len(), 2);
    assert_eq!(w["vcore"], 3.0);
    // absent policy and empty weights give the defaults
    let c = ok(&with_partition(
        "nodesortpolicy: {type: binpacking, resourceweights: {}}",
    ));
    assert_eq!(
        c.partitions[0].node_sort_policy.resource_weights,
        default_resource_weights()
    );
    let c = ok(&with_partition(""));
    assert_eq!(c.partitions[0].node_sort_policy.policy_type, "fair");
}

#[test]
fn validation_order_queue_before_rules() {
    // both a bad queue name and a bad rule: the queue error is reported
    let text =
        "partitions:\n  - placementrules:\n      - name: bogus\n    queues:\n      - name: a.b\n";
    assert!(err(text).starts_with("invalid child name a.b"));
}

// ---- checksum ----

const CK_TEXT: &str = "partitions:\n  - name: default\n    queues:\n      - name: root\n";

#[test]
fn checksum_known_value() {
    // sha256 of CK_TEXT, computed independently with `sha256sum`
    assert_eq!(
        checksum(CK_TEXT),
        "7E69FF74521039AF964530A80267552640AAE933FEC0A797D68C888142622944"
    );
    assert_eq!(
        checksum(""),
        "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"
    );
    let c = ok(CK_TEXT);
    assert_eq!(c.checksum, checksum(CK_TEXT));
    assert_eq!(c.checksum.len(), 64);
    assert!(c
        .checksum
        .chars()
        .all(|ch| ch.is_ascii_digit() || ('A'..='F').contains(&ch)));
}

#[test]
fn checksum_entry_removed() {
    // `checksum: ABC` is deleted, its newline stays: sha256 of CK_TEXT + "\n"
    let with = format!("{CK_TEXT}checksum: ABC\n");
    assert_eq!(
        checksum(&with),
        "5872ABEB3C1AADC898819FDCCABCD2915A2989521B7248AE185EC44027A68C07"
    );
    // the stored value in the file does not matter, and parse overwrites it
    let other = format!("{CK_TEXT}checksum: DEF\n");
    assert_eq!(checksum(&other), checksum(&with));
    assert_eq!(ok(&with).checksum, checksum(&with));
    // the entry is cut to the marker plus 64 characters
    let long = "A".repeat(70);
    let text = format!("checksum: {long}\nx");
    assert_eq!(strip_checksum(text.as_bytes()), b"AAAAAA\nx".to_vec());
    // every occurrence of the (cut) entry is removed
    let a64 = "A".repeat(64);
    let text = format!("checksum: {a64}\nchecksum: {a64}\n");
    assert_eq!(strip_checksum(text.as_bytes()), b"\n\n".to_vec());
    // the entry runs to the end of the text (trailing newlines dropped)
    let text = "checksum: X\na\n\n";
    assert_eq!(strip_checksum(text.as_bytes()), b"\n\n".to_vec());
    // no marker: text unchanged (the key without a space is not a marker)
    assert_eq!(strip_checksum(b"checksum:X"), b"checksum:X".to_vec());
    // changing anything else changes the checksum
    assert_ne!(
        checksum(CK_TEXT),
        checksum(&CK_TEXT.replace("root", "ROOT"))
    );
}

// ---- load ----

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sicore-config-test-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A policy group name that cannot exist in /etc/yunikorn or the cwd.
const NO_SUCH_GROUP: &str = "sicore-test-no-such-policy-group-7f3a9c";

#[test]
fn load_in_memory_wins() {
    let dir = temp_dir("mem");
    std::fs::write(
        dir.join("pg.yaml"),
        "partitions:\n  - name: fromfile\n    queues: []\n",
    )
    .unwrap();
    let mut mem = BTreeMap::new();
    mem.insert(
        "pg".to_string(),
        "partitions:\n  - name: frommem\n    queues: []\n".to_string(),
    );
    let l = load("pg", dir.to_str().unwrap(), &mem).unwrap();
    assert_eq!(l.source, "in-memory");
    assert_eq!(l.config.partitions[0].name, "frommem");
    assert_eq!(l.config.checksum, checksum(&l.text));
    // another group does not use the in-memory text
    std::fs::write(
        dir.join("other.yaml"),
        "partitions:\n  - name: other\n    queues: []\n",
    )
    .unwrap();
    let l = load("other", dir.to_str().unwrap(), &mem).unwrap();
    assert_eq!(l.config.partitions[0].name, "other");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn load_from_config_dir() {
    let dir = temp_dir("dir");
    let text = "partitions:\n  - name: fromfile\n    queues: []\n";
    std::fs::write(dir.join("queues.yaml"), text).unwrap();
    let l = load("queues", dir.to_str().unwrap(), &BTreeMap::new()).unwrap();
    assert_eq!(l.source, dir.join("queues.yaml").display().to_string());
    assert_eq!(l.text, text);
    assert_eq!(l.config.partitions[0].name, "fromfile");
    // an invalid file is an error, not a fallback
    std::fs::write(dir.join("bad.yaml"), "partitions:\n  - name: x\n").unwrap();
    assert_eq!(
        load("bad", dir.to_str().unwrap(), &BTreeMap::new())
            .unwrap_err()
            .message,
        "queue config is not set"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn load_missing_file_in_explicit_dir_is_error() {
    let dir = temp_dir("missing");
    let e = load(NO_SUCH_GROUP, dir.to_str().unwrap(), &BTreeMap::new()).unwrap_err();
    let path = dir.join(format!("{NO_SUCH_GROUP}.yaml"));
    assert!(
        e.message.starts_with(&format!(
            "failed to read configuration file {}",
            path.display()
        )),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn load_embedded_default_when_nothing_exists() {
    let l = load(NO_SUCH_GROUP, "", &BTreeMap::new()).unwrap();
    assert_eq!(l.source, "embedded default");
    assert_eq!(l.text, DEFAULT_CONFIG);
    assert_eq!(l.config, parse(DEFAULT_CONFIG).unwrap());
}

#[test]
fn config_error_is_std_error() {
    let e: Box<dyn std::error::Error> = Box::new(ConfigError::from("x".to_string()));
    assert_eq!(e.to_string(), "x");
}

#[test]
fn format_helpers() {
    assert_eq!(format_resource(&BTreeMap::new()), "map[]");
    let r = BTreeMap::from([("vcore".to_string(), 2), ("memory".to_string(), 10)]);
    assert_eq!(format_resource(&r), "map[memory:10 vcore:2]");
    assert!(is_valid_queue_name("a-B_9"));
    assert!(!is_valid_queue_name("a.b"));
}
