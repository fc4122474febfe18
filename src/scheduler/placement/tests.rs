use super::*;
use std::collections::BTreeMap;

/// In-test queue tree: path -> is leaf; plus paths the user may not submit to.
struct View {
    queues: BTreeMap<String, bool>,
    no_access: HashSet<String>,
}

impl View {
    fn new() -> View {
        let mut queues = BTreeMap::new();
        for (p, leaf) in [
            ("root", false),
            ("root.leaf", true),
            ("root.par", false),
            ("root.par.leaf", true),
            ("root.par.par", false),
            ("root.locked", true),
            ("root.lockedpar", false),
            ("root.a_dot_b", true),
            ("root.john_dot_doe", true),
            ("root.fallback", true),
        ] {
            queues.insert(p.to_string(), leaf);
        }
        let no_access = ["root.locked", "root.lockedpar"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        View { queues, no_access }
    }
}

impl QueueView for View {
    fn is_leaf(&self, path: &str) -> Option<bool> {
        self.queues.get(&path.to_lowercase()).copied()
    }
    fn can_submit(&self, path: &str, _user: &UserGroup) -> bool {
        !self.no_access.contains(&path.to_lowercase())
    }
}

fn rule(name: &str, value: &str, create: bool) -> PlacementRuleConfig {
    PlacementRuleConfig {
        name: name.to_string(),
        value: value.to_string(),
        create,
        ..Default::default()
    }
}

fn filter(t: &str, users: &[&str], groups: &[&str]) -> FilterConfig {
    FilterConfig {
        filter_type: t.to_string(),
        users: users.iter().map(|s| s.to_string()).collect(),
        groups: groups.iter().map(|s| s.to_string()).collect(),
    }
}

fn tags(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn place_with(
    rules: Vec<PlacementRuleConfig>,
    queue: &str,
    user: &UserGroup,
    tags: &BTreeMap<String, String>,
) -> Result<String, String> {
    let pm = PlacementManager::new(&rules).expect("rules build");
    pm.place("app-1", queue, user, tags, &View::new())
}

const NO_MATCH: &str =
    "failed to place application app-1: application rejected: no placment rule matched";

/// How the target name is produced for each rule kind: `(rule name, rule
/// value, requested queue, user, tags)` for a target `name`.
fn rule_setup(
    kind: &str,
    name: &str,
) -> (
    PlacementRuleConfig,
    String,
    UserGroup,
    BTreeMap<String, String>,
) {
    let groups = ["dev"];
    match kind {
        "provided" => (
            rule("provided", "", false),
            name.to_string(),
            UserGroup::new("bob", &groups),
            BTreeMap::new(),
        ),
        "user" => (
            rule("user", "", false),
            String::new(),
            UserGroup::new(name, &groups),
            BTreeMap::new(),
        ),
        "fixed" => (
            rule("fixed", name, false),
            String::new(),
            UserGroup::new("bob", &groups),
            BTreeMap::new(),
        ),
        "tag" => (
            rule("tag", "ns", false),
            String::new(),
            UserGroup::new("bob", &groups),
            tags(&[("ns", name)]),
        ),
        _ => unreachable!(),
    }
}

/// Filters against a user in group `dev`: (filter, passes).
fn filters() -> Vec<(&'static str, Option<FilterConfig>, bool)> {
    vec![
        ("none", None, true),
        ("allow match", Some(filter("allow", &[], &["dev"])), true),
        ("allow miss", Some(filter("allow", &[], &["ops"])), false),
        ("deny match", Some(filter("deny", &[], &["dev"])), false),
        ("deny miss", Some(filter("deny", &[], &["ops"])), true),
        ("regexp match", Some(filter("", &[], &["^d.v$"])), true),
        ("regexp miss", Some(filter("", &[], &["^o"])), false),
        (
            "deny regexp match",
            Some(filter("deny", &[], &["e+"])),
            false,
        ),
        ("deny regexp miss", Some(filter("deny", &[], &["^x"])), true),
    ]
}

/// The placement matrix: rule x filter x create x target state x parent rule.
#[test]
fn placement_matrix() {
    let mut cases = 0;
    for kind in ["provided", "user", "fixed", "tag"] {
        for (fname, fconf, passes) in filters() {
            for create in [false, true] {
                // (target name, exists as leaf?, exists at all?)
                for (target, exists_leaf, exists) in [
                    ("leaf", true, true),
                    ("par", false, true),
                    ("new", false, false),
                ] {
                    for parent in [None, Some("par")] {
                        let (mut r, queue, user, t) = rule_setup(kind, target);
                        r.create = create;
                        if let Some(f) = &fconf {
                            r.filter = f.clone();
                        }
                        if let Some(p) = parent {
                            r.parent = Some(Box::new(rule("fixed", p, false)));
                        }
                        let path = match parent {
                            None => format!("root.{target}"),
                            Some(p) => format!("root.{p}.{target}"),
                        };
                        let expected = if !passes || (exists && !exists_leaf) {
                            Err(NO_MATCH.to_string())
                        } else if exists || create {
                            Ok(path)
                        } else {
                            Err(NO_MATCH.to_string())
                        };
                        let got = place_with(vec![r], &queue, &user, &t);
                        assert_eq!(
                            got, expected,
                            "rule={kind} filter={fname} create={create} target={target} parent={parent:?}"
                        );
                        cases += 1;
                    }
                }
            }
        }
    }
    assert_eq!(cases, 4 * 9 * 2 * 3 * 2);
}

/// A parent rule resolving to an existing leaf aborts placement (if the
/// filter lets the rule run), whatever the create flag.
#[test]
fn parent_resolving_to_leaf_aborts() {
    for kind in ["provided", "user", "fixed", "tag"] {
        for (fname, fconf, passes) in filters() {
            for create in [false, true] {
                let (mut r, queue, user, t) = rule_setup(kind, "new");
                r.create = create;
                if let Some(f) = &fconf {
                    r.filter = f.clone();
                }
                r.parent = Some(Box::new(rule("fixed", "leaf", false)));
                // fallback rule after it must not be reached on error
                let got = place_with(vec![r, rule("fixed", "fallback", false)], &queue, &user, &t);
                let expected = if passes {
                    Err("failed to place application app-1: parent rule returned a leaf queue: root.leaf".to_string())
                } else {
                    Ok("root.fallback".to_string())
                };
                assert_eq!(got, expected, "rule={kind} filter={fname} create={create}");
            }
        }
    }
}

#[test]
fn parent_rule_no_match_and_create() {
    let user = UserGroup::new("bob", &["dev"]);
    // parent absent, parent rule cannot create -> no match
    let mut r = rule("provided", "", true);
    r.parent = Some(Box::new(rule("fixed", "absent", false)));
    assert_eq!(
        place_with(vec![r.clone()], "x", &user, &BTreeMap::new()),
        Err(NO_MATCH.into())
    );
    // parent may be created -> full path returned, access checked on root
    r.parent = Some(Box::new(rule("fixed", "absent", true)));
    assert_eq!(
        place_with(vec![r], "x", &user, &BTreeMap::new()),
        Ok("root.absent.x".into())
    );
    // parent filtered out -> no match
    let mut r = rule("provided", "", true);
    let mut p = rule("fixed", "par", false);
    p.filter = filter("deny", &["bob"], &[]);
    r.parent = Some(Box::new(p));
    assert_eq!(
        place_with(vec![r], "x", &user, &BTreeMap::new()),
        Err(NO_MATCH.into())
    );
    // nested parents: user under tag under fixed
    let mut tag = rule("tag", "ns", true);
    tag.parent = Some(Box::new(rule("fixed", "par", false)));
    let mut u = rule("user", "", true);
    u.parent = Some(Box::new(tag));
    assert_eq!(
        place_with(vec![u], "", &user, &tags(&[("NS", "team")])),
        Ok("root.par.team.bob".into())
    );
}

#[test]
fn qualified_names_skip_parent_rule() {
    let user = UserGroup::new("bob", &["dev"]);
    let mut r = rule("provided", "", false);
    r.parent = Some(Box::new(rule("fixed", "leaf", false)));
    // qualified: parent rule (which would error) is skipped
    assert_eq!(
        place_with(vec![r.clone()], "root.par.leaf", &user, &BTreeMap::new()),
        Ok("root.par.leaf".into())
    );
    // the qualified prefix is case-sensitive: ROOT.x is unqualified
    r.parent = None;
    r.create = true;
    assert_eq!(
        place_with(vec![r], "ROOT.leaf", &user, &BTreeMap::new()),
        Ok("root.root_dot_leaf".into())
    );
    // tag value qualified
    let mut t = rule("tag", "ns", false);
    t.parent = Some(Box::new(rule("fixed", "leaf", false)));
    assert_eq!(
        place_with(vec![t], "", &user, &tags(&[("ns", "root.par.leaf")])),
        Ok("root.par.leaf".into())
    );
    // fixed value qualified (prefix `root`), value lower-cased
    assert_eq!(
        place_with(
            vec![rule("fixed", "ROOT.Par.Leaf", false)],
            "",
            &user,
            &BTreeMap::new()
        ),
        Ok("root.par.leaf".into())
    );
    // parent result already qualified is not prefixed twice
    let mut f = rule("fixed", "leaf", false);
    f.parent = Some(Box::new(rule("fixed", "root.par", false)));
    assert_eq!(
        place_with(vec![f], "", &user, &BTreeMap::new()),
        Ok("root.par.leaf".into())
    );
}

#[test]
fn dots_are_replaced_in_generated_names() {
    let user = UserGroup::new("john.doe", &[]);
    assert_eq!(
        place_with(
            vec![rule("provided", "", false)],
            "a.b",
            &user,
            &BTreeMap::new()
        ),
        Ok("root.a_dot_b".into())
    );
    assert_eq!(
        place_with(vec![rule("user", "", false)], "", &user, &BTreeMap::new()),
        Ok("root.john_dot_doe".into())
    );
    assert_eq!(
        place_with(
            vec![rule("tag", "ns", true)],
            "",
            &user,
            &tags(&[("ns", "x.y")])
        ),
        Ok("root.x_dot_y".into())
    );
    // a configured fixed value keeps its dots as hierarchy separators
    assert_eq!(
        place_with(
            vec![rule("fixed", "par.leaf", false)],
            "",
            &user,
            &BTreeMap::new()
        ),
        Ok("root.par.leaf".into())
    );
}

#[test]
fn result_is_lower_cased_and_lookup_case_insensitive() {
    let user = UserGroup::new("bob", &[]);
    assert_eq!(
        place_with(
            vec![rule("provided", "", false)],
            "LEAF",
            &user,
            &BTreeMap::new()
        ),
        Ok("root.leaf".into())
    );
    assert_eq!(
        place_with(
            vec![rule("Provided", "", true)],
            "NewQ",
            &user,
            &BTreeMap::new()
        ),
        Ok("root.newq".into())
    );
}

#[test]
fn tag_rule_details() {
    let user = UserGroup::new("bob", &[]);
    let r = || vec![rule("tag", "Namespace", true)];
    // tag key compared case-insensitively, tag name lower-cased
    assert_eq!(
        place_with(r(), "", &user, &tags(&[("NAMESPACE", "dev")])),
        Ok("root.dev".into())
    );
    // absent and empty tag values do not match
    assert_eq!(
        place_with(r(), "", &user, &BTreeMap::new()),
        Err(NO_MATCH.into())
    );
    assert_eq!(
        place_with(r(), "", &user, &tags(&[("namespace", "")])),
        Err(NO_MATCH.into())
    );
}

#[test]
fn provided_without_queue_does_not_match() {
    let user = UserGroup::new("bob", &[]);
    assert_eq!(
        place_with(
            vec![rule("provided", "", true)],
            "",
            &user,
            &BTreeMap::new()
        ),
        Err(NO_MATCH.into())
    );
}

#[test]
fn test_rule() {
    let user = UserGroup::new("bob", &[]);
    // requested queue with dots replaced; not qualified, so no ancestor exists
    assert_eq!(
        place_with(
            vec![rule("test", "", false)],
            "root.leaf",
            &user,
            &BTreeMap::new()
        ),
        Err(NO_MATCH.into())
    );
    // an existing single-segment path is used as is: `root` is a parent -> no match
    assert_eq!(
        place_with(
            vec![rule("test", "", false)],
            "root",
            &user,
            &BTreeMap::new()
        ),
        Err(NO_MATCH.into())
    );
    let pm = PlacementManager::new(&[rule("test", "", false)]).unwrap();
    let ctx_view = View::new();
    let ctx = Ctx {
        requested_queue: "",
        user: &user,
        tags: &BTreeMap::new(),
        view: &ctx_view,
    };
    assert_eq!(pm.rules[0].place(&ctx), Ok(Some("test".into())));
}

#[test]
fn access_checks() {
    let user = UserGroup::new("bob", &[]);
    // existing leaf without submit access -> next rule
    assert_eq!(
        place_with(
            vec![
                rule("provided", "", false),
                rule("fixed", "fallback", false)
            ],
            "locked",
            &user,
            &BTreeMap::new()
        ),
        Ok("root.fallback".into())
    );
    // to-be-created queue: deepest existing ancestor without access -> next rule
    assert_eq!(
        place_with(
            vec![rule("provided", "", true), rule("fixed", "fallback", false)],
            "root.lockedpar.x.y",
            &user,
            &BTreeMap::new()
        ),
        Ok("root.fallback".into())
    );
    // deepest ancestor is a leaf: allowed here, creation (5.6) fails later
    assert_eq!(
        place_with(
            vec![rule("provided", "", true)],
            "root.leaf.x",
            &user,
            &BTreeMap::new()
        ),
        Ok("root.leaf.x".into())
    );
    // a path outside root has no ancestor: no match
    assert_eq!(
        place_with(
            vec![rule("fixed", "rootless.x", true)],
            "",
            &user,
            &BTreeMap::new()
        ),
        Err(NO_MATCH.into())
    );
}

#[test]
fn rules_tried_in_order() {
    let user = UserGroup::new("bob", &[]);
    let rules = vec![
        rule("provided", "", false),
        rule("user", "", true),
        rule("fixed", "fallback", false),
    ];
    assert_eq!(
        place_with(rules.clone(), "leaf", &user, &BTreeMap::new()),
        Ok("root.leaf".into())
    );
    assert_eq!(
        place_with(rules, "absent", &user, &BTreeMap::new()),
        Ok("root.bob".into())
    );
}

#[test]
fn filter_details() {
    let user = UserGroup::new("alice", &["dev", "ops"]);
    let check = |f: FilterConfig| Filter::new(&f).allows(&user);
    // empty filters: allow lets everyone in, deny rejects everyone
    assert!(check(filter("", &[], &[])));
    assert!(check(filter("allow", &[], &[])));
    assert!(!check(filter("deny", &[], &[])));
    // filter type compared case-insensitively
    assert!(!check(filter("DENY", &["alice"], &[])));
    assert!(!check(filter("Deny", &[], &["ops"])));
    // user lists
    assert!(check(filter("", &["alice"], &[])));
    assert!(check(filter("", &["bob", "alice"], &[])));
    assert!(!check(filter("", &["bob", "carol"], &[])));
    // invalid entries in a longer list are dropped
    assert!(check(filter("", &["1bad", "alice"], &[])));
    // a single invalid, non-regexp entry matches nobody
    assert!(!check(filter("", &["1bad"], &[])));
    assert!(check(filter("deny", &["1bad"], &[])));
    // regexps are unanchored
    assert!(check(filter("", &["li(c)"], &[])));
    assert!(!check(filter("", &["^li"], &[])));
    assert!(check(filter("", &[], &["p+"])));
    // a later group can match
    assert!(check(filter("", &[], &["ops"])));
    assert!(!check(filter("deny", &[], &["ops"])));
    // regexp that does not compile matches nothing
    assert!(!check(filter("", &["(a"], &[])));
    // a user name with a trailing `$` is treated as a regexp (end anchor)
    assert!(check(filter("", &["ice$"], &[])));
}

#[test]
fn build_errors() {
    let err = |rules: Vec<PlacementRuleConfig>| PlacementManager::new(&rules).unwrap_err();
    assert_eq!(
        err(vec![rule("bogus", "", false)]),
        "unknown rule name specified bogus, failing placement rule config"
    );
    assert_eq!(
        err(vec![rule("fixed", "", false)]),
        "a fixed queue rule must have a queue name set"
    );
    assert_eq!(
        err(vec![rule("tag", "", false)]),
        "a tag queue rule must have a tag name set"
    );
    let mut r = rule("fixed", "root.x", false);
    r.parent = Some(Box::new(rule("user", "", false)));
    assert!(err(vec![r]).starts_with(
        "cannot have a fixed queue rule with qualified queue getName and a parent rule: "
    ));
    // errors in parent rules propagate
    let mut r = rule("user", "", false);
    r.parent = Some(Box::new(rule("nope", "", false)));
    assert_eq!(
        err(vec![r]),
        "unknown rule name specified nope, failing placement rule config"
    );
    // valid sets, case-insensitive names
    let pm = PlacementManager::new(&[
        rule("PROVIDED", "", false),
        rule("User", "", false),
        rule("Fixed", "x", false),
        rule("TAG", "t", false),
        rule("test", "", false),
    ])
    .unwrap();
    assert_eq!(pm.len(), 5);
    assert!(!pm.is_empty());
    assert!(PlacementManager::new(&[]).unwrap().is_empty());
}
