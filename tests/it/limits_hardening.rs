//! Limits under hostile quantities and swaps (issue 34): a user's cap keeps
//! counting after quantities near the 64-bit edge, and a gang replacement
//! waits rather than take a user past their cap.

use crate::common::v1::V1Rm;
use sicore_c_rm::v1 as rmv1;

const CAPPED: &str = "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        limits:
          - {limit: cap, users: [alice], maxresources: {memory: 100}}
        queues:
          - name: a
";

/// Keys of the allocations the RM was told of, among `keys`.
fn placed(rm: &V1Rm, keys: &[String]) -> usize {
    rm.rec
        .copy()
        .new
        .iter()
        .filter(|a| keys.contains(&a.allocation_key))
        .count()
}

#[test]
fn a_user_cap_keeps_counting_after_huge_placed_allocations() {
    let rm = V1Rm::new(CAPPED);
    rm.node("n1", 6_000_000_000_000_000_000);
    rm.app("app-1", "root.a");
    // Twice: the RM places (as recovery does) and releases 5×10^18 for
    // alice. Her running total passes i64::MAX on the second.
    for round in 0..2 {
        let key = format!("huge-{round}");
        let mut huge = rmv1::ask("app-1", &key, 5_000_000_000_000_000_000, 0);
        huge.node_id = "n1".into();
        rm.allocate(vec![huge], vec![]);
        rm.settle();
        assert_eq!(rm.memory("root.a"), 5_000_000_000_000_000_000);
        rm.allocate(vec![], vec![rmv1::release("app-1", &key)]);
        rm.settle();
        assert_eq!(rm.memory("root.a"), 0);
    }
    let keys: Vec<String> = (0..5).map(|i| format!("k{i}")).collect();
    rm.allocate(
        keys.iter().map(|k| rmv1::ask("app-1", k, 60, 0)).collect(),
        vec![],
    );
    rm.settle();
    assert_eq!(placed(&rm, &keys), 1, "one ask of 60 fits a cap of 100");
    rm.settle();
    assert_eq!(placed(&rm, &keys), 1, "later passes hold the cap too");
    assert_eq!(rm.memory("root.a"), 60);
}

/// Group resolution reads at most the first 1,024 of a user's groups
/// (docs/limits.md): a named group listed later is not seen, the wildcard
/// group is.
#[test]
fn group_resolution_reads_a_bounded_number_of_the_users_groups() {
    let mut named = String::new();
    for i in 0..2000 {
        named.push_str(&format!(
            "              - {{groups: [g{i}], maxapplications: 5}}\n"
        ));
    }
    let config = format!(
        "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            limits:
{named}              - {{groups: ['*'], maxapplications: 5}}
"
    );
    let rm = V1Rm::new(&config);
    let with_groups = |id: &str, groups: Vec<String>| {
        let mut a = rmv1::app(id, "root.a", "bob");
        a.ugi.as_mut().unwrap().groups = groups;
        a
    };
    // Within the bound: the named group, found among 1,024 that match none.
    let mut early: Vec<String> = (0..1023).map(|i| format!("other{i}")).collect();
    early.push("g1999".into());
    // Past it: the same named group as the 1,025th.
    let mut late: Vec<String> = (0..1024).map(|i| format!("other{i}")).collect();
    late.push("g1999".into());
    let (st, msg) = rm.apps(vec![with_groups("early", early), with_groups("late", late)]);
    assert_eq!(st, sicore::ffi::sicore_status::SICORE_OK, "{msg}");
    rm.rec.wait("apps", |s| s.apps_accepted.len() == 2);
    rm.settle();
    let d = rm.dump();
    let bob = d["partitions"][0]["usage"]["users"]
        .as_array()
        .and_then(|u| u.iter().find(|u| u["userName"] == "bob"))
        .cloned()
        .unwrap_or_else(|| panic!("bob tracked: {d:#}"));
    assert_eq!(bob["groups"]["early"], "g1999", "{bob:#}");
    assert_eq!(bob["groups"]["late"], "*", "{bob:#}");
}
