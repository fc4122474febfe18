//! A gang replacement bigger than its placeholder checks the user's and
//! the group's headroom as it checks the queue's (issue 34 item 9,
//! docs/limits.md): one that would pass a cap waits.

use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::proto::si::v1 as si;

const PR: i32 = si::TerminationType::PlaceholderReplaced as i32;

const YAML: &str = "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        limits:
          - {users: [alice], maxresources: {memory: 100}}
        queues:
          - name: a
";

fn gang_ask(key: &str, memory: i64, repeat: i32, placeholder: bool) -> si::AllocationAsk {
    let mut a = ask("g", key, memory, 0, repeat);
    a.task_group_name = "tg".into();
    a.placeholder = placeholder;
    a
}

fn alice_memory(h: &Harness) -> i64 {
    let d = h.dump();
    d["partitions"][0]["usage"]["users"]
        .as_array()
        .and_then(|u| u.iter().find(|u| u["userName"] == "alice"))
        .map_or(0, |u| {
            u["queues"]["resourceUsage"]["memory"].as_i64().unwrap_or(0)
        })
}

fn replacements(h: &Harness) -> Vec<si::AllocationRelease> {
    h.seen(|s| {
        s.released
            .iter()
            .filter(|r| r.termination_type == PR)
            .cloned()
            .collect()
    })
}

#[test]
fn a_replacement_that_would_pass_the_user_cap_waits() {
    let h = Harness::configured(yaml_options(YAML), 2);
    let mut g = app("g", "root.a");
    g.placeholder_ask = res(&[("memory", 20)]);
    h.submit(g).unwrap();
    assert_eq!(h.asks(vec![gang_ask("ph", 10, 2, true)]).0, SICORE_OK);
    h.wait("placeholders", |s| s.allocations.len() == 2);
    assert_eq!(alice_memory(&h), 20);
    // Two real members of 90 for placeholders of 10: the first fits the
    // cap (20 + 80 = 100), the second would take alice to 180.
    assert_eq!(h.asks(vec![gang_ask("real", 90, 2, false)]).0, SICORE_OK);
    h.wait("a replacement", |s| {
        s.released.iter().any(|r| r.termination_type == PR)
    });
    h.settle();
    let first = replacements(&h);
    assert_eq!(first.len(), 1, "one replacement within the cap: {first:?}");
    let confirm = si::AllocationRelease {
        message: String::new(),
        ..first[0].clone()
    };
    assert_eq!(h.releases(vec![confirm], vec![]).0, SICORE_OK);
    h.wait("the real allocation", |s| {
        s.allocations.iter().any(|a| !a.placeholder)
    });
    h.settle();
    assert_eq!(replacements(&h).len(), 1, "the second replacement waits");
    assert_eq!(alice_memory(&h), 100);
}
