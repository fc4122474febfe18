//! The series of the two policy workloads, replayed from the same samples
//! as the rest of the report:
//!
//! - per tenant (a user or a group tracker) and per queue level that caps
//!   it: its usage of each capped resource type and its running
//!   applications over time, against the cap, with the highest value the
//!   replay reached after any callback (so an overshoot between two bucket
//!   ends is not missed);
//! - each preemption (a victim released with `PREEMPTED_BY_SCHEDULER`),
//!   and the preemptors' queues against their guarantees.
//!
//! Caps and group links come from the state dumps the simulator took
//! (`partitions[].usage`, the shapes of `/ws/v1/partition/{p}/usage/...`);
//! usage comes from what the RM was told, and is checked against the last
//! dump's trackers.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use super::series::resource_map;
use super::{AllocEvent, Inner, Report};

/// What the tenant charts need besides the samples.
pub struct TenantInput {
    /// Application id -> user, as submitted.
    pub users: HashMap<String, String>,
    /// Application id -> queue, as submitted.
    pub queues: HashMap<String, String>,
    /// The `usage` section of each state dump taken, in order.
    pub usage: Vec<Value>,
}

/// One tenant at one capped queue level.
pub struct TenantSeries {
    /// `user` or `group`.
    pub kind: &'static str,
    pub name: String,
    /// Queue path of the level.
    pub level: String,
    /// The resource cap at this level (empty: none).
    pub cap: BTreeMap<String, i64>,
    /// The running-application cap at this level (0: none).
    pub max_apps: u64,
    /// Per capped resource (the cap's order): usage at each bucket end.
    pub usage: Vec<Vec<i64>>,
    /// Per capped resource: the highest usage after any callback.
    pub peak: Vec<i64>,
    /// Running applications (Starting or Running) at each bucket end.
    pub running: Vec<u32>,
    pub peak_running: u32,
    /// Applications of the tenant on this level's path.
    pub apps: usize,
}

/// One victim.
pub struct PreemptionMark {
    pub t_ns: u64,
    pub victim: String,
    pub app: String,
    pub queue: String,
    pub node: String,
    pub resource: BTreeMap<String, i64>,
    /// The ask it made room for, and that ask's queue once allocated.
    pub preemptor: String,
    pub preemptor_queue: Option<String>,
    /// When its resources were free (the release confirmed).
    pub freed_ns: Option<u64>,
}

/// A preemptor's queue against its guarantee.
pub struct GuaranteeView {
    pub queue: String,
    pub guaranteed: BTreeMap<String, i64>,
    /// Per guaranteed resource: usage at each bucket end.
    pub usage: Vec<Vec<i64>>,
    /// First time every guaranteed type was at or above its guarantee.
    pub reached_ns: Option<u64>,
    pub end: Vec<i64>,
}

/// Running, as the trackers count it and the RM sees it.
fn is_running(state: &str) -> bool {
    matches!(state, "Starting" | "Running")
}

fn under(queue: &str, level: &str) -> bool {
    queue == level
        || queue
            .strip_prefix(level)
            .is_some_and(|rest| rest.starts_with('.'))
}

/// The recorded allocations in time order, grouped by the message (time
/// stamp) they came in.
fn in_order(g: &Inner) -> Vec<&AllocEvent> {
    let mut v: Vec<&AllocEvent> = g.allocs.iter().collect();
    v.sort_by_key(|e| e.t_ns);
    v
}

/// Replays the events `keep` selects: per resource id of `res`, the usage
/// at each bucket end, the highest after any message, and the first time
/// every one was at least `reach`.
fn replay(
    events: &[&AllocEvent],
    r: &Report,
    res: &[Option<u32>],
    keep: impl Fn(&AllocEvent) -> bool,
    reach: Option<&[i64]>,
) -> (Vec<Vec<i64>>, Vec<i64>, Option<u64>) {
    let mut used = vec![0i64; res.len()];
    let mut peak = vec![0i64; res.len()];
    let mut series = vec![Vec::with_capacity(r.buckets); res.len()];
    let mut reached = None;
    let mut i = 0;
    for b in 0..r.buckets {
        let limit = (b as u64 + 1) * r.bucket_ns;
        while i < events.len() && (events[i].t_ns < limit || b + 1 == r.buckets) {
            let t = events[i].t_ns;
            while i < events.len() && events[i].t_ns == t {
                let e = events[i];
                i += 1;
                if !keep(e) {
                    continue;
                }
                let sign = if e.release { -1 } else { 1 };
                for &(id, q) in &e.resource {
                    if let Some(k) = res.iter().position(|x| *x == Some(id)) {
                        used[k] = used[k].saturating_add(q.saturating_mul(sign));
                    }
                }
            }
            for (p, &u) in peak.iter_mut().zip(&used) {
                *p = (*p).max(u);
            }
            if reached.is_none()
                && reach.is_some_and(|want| used.iter().zip(want).all(|(u, w)| u >= w))
            {
                reached = Some(t);
            }
        }
        for (s, &u) in series.iter_mut().zip(&used) {
            s.push(u);
        }
    }
    (series, peak, reached)
}

/// One tracker level as the dump lists it.
struct Level {
    path: String,
    cap: BTreeMap<String, i64>,
    max_apps: u64,
    usage: BTreeMap<String, i64>,
}

fn levels(tree: &Value, out: &mut Vec<Level>) {
    out.push(Level {
        path: tree["queuePath"].as_str().unwrap_or("?").to_string(),
        cap: resource_map(&tree["maxResources"]),
        max_apps: tree["maxApplications"].as_u64().unwrap_or(0),
        usage: resource_map(&tree["resourceUsage"]),
    });
    for c in tree["children"].as_array().into_iter().flatten() {
        levels(c, out);
    }
}

/// (kind, name) -> its levels, for the users and groups of one dump's
/// usage section.
fn trackers(usage: &Value) -> BTreeMap<(&'static str, String), Vec<Level>> {
    let mut out = BTreeMap::new();
    for (kind, list, key) in [
        ("user", "users", "userName"),
        ("group", "groups", "groupName"),
    ] {
        for t in usage[list].as_array().into_iter().flatten() {
            let mut v = Vec::new();
            levels(&t["queues"], &mut v);
            out.insert((kind, t[key].as_str().unwrap_or("?").to_string()), v);
        }
    }
    out
}

/// A level's resource cap and running-application cap.
type Caps = (BTreeMap<String, i64>, u64);

pub(super) fn tenants(g: &Inner, input: &TenantInput, r: &mut Report) {
    // Application -> group, from every dump (an application removed before
    // the last one is still linked in an earlier one).
    let mut group_of: HashMap<String, String> = HashMap::new();
    for u in &input.usage {
        for user in u["users"].as_array().into_iter().flatten() {
            for (app, group) in user["groups"].as_object().into_iter().flatten() {
                if let Some(group) = group.as_str() {
                    group_of.insert(app.clone(), group.to_string());
                }
            }
        }
    }
    // Every capped level any dump listed; the latest dump's caps win.
    let mut capped: BTreeMap<(&'static str, String, String), Caps> = BTreeMap::new();
    for u in &input.usage {
        for ((kind, name), ls) in trackers(u) {
            for l in ls {
                if !l.cap.is_empty() || l.max_apps > 0 {
                    capped.insert((kind, name.clone(), l.path), (l.cap, l.max_apps));
                }
            }
        }
    }
    let last = input.usage.last().map(trackers).unwrap_or_default();

    let events = in_order(g);
    let owner = |kind: &str, app: &str| -> Option<String> {
        match kind {
            "user" => input.users.get(app).cloned(),
            _ => group_of.get(app).cloned(),
        }
    };
    let mut app_events: Vec<&(u64, u32, String)> = g.app_events.iter().collect();
    app_events.sort_by_key(|e| e.0);
    let mut out = Vec::new();
    for ((kind, name, level), (cap, max_apps)) in capped {
        let res: Vec<Option<u32>> = cap
            .keys()
            .map(|k| g.resources.index.get(k).copied())
            .collect();
        let mine: Vec<bool> = g
            .owners
            .names
            .iter()
            .map(|a| owner(kind, a).as_deref() == Some(name.as_str()))
            .collect();
        let queue_names = &g.queues.names;
        let (usage, peak, _) = replay(
            &events,
            r,
            &res,
            |e| mine[e.app as usize] && under(&queue_names[e.queue as usize], &level),
            None,
        );
        // Running applications of the tenant under the level.
        let counted: Vec<bool> = g
            .apps
            .names
            .iter()
            .map(|a| {
                owner(kind, a).as_deref() == Some(name.as_str())
                    && input.queues.get(a).is_some_and(|q| under(q, &level))
            })
            .collect();
        let mut state_running = vec![false; g.apps.names.len()];
        let (mut now, mut peak_running) = (0u32, 0u32);
        let mut running = Vec::with_capacity(r.buckets);
        let mut i = 0;
        for b in 0..r.buckets {
            let limit = (b as u64 + 1) * r.bucket_ns;
            while i < app_events.len() && (app_events[i].0 < limit || b + 1 == r.buckets) {
                let t = app_events[i].0;
                while i < app_events.len() && app_events[i].0 == t {
                    let (_, app, state) = app_events[i];
                    i += 1;
                    let a = *app as usize;
                    if !counted[a] {
                        continue;
                    }
                    let run = is_running(state);
                    if run != state_running[a] {
                        state_running[a] = run;
                        if run {
                            now += 1;
                        } else {
                            now -= 1;
                        }
                    }
                }
                peak_running = peak_running.max(now);
            }
            running.push(now);
        }

        // The replay's end against the last dump's tracker at this level.
        let dumped = last
            .get(&(kind, name.clone()))
            .and_then(|ls| ls.iter().find(|l| l.path == level))
            .map(|l| l.usage.clone())
            .unwrap_or_default();
        for (res_name, series) in cap.keys().zip(&usage) {
            let recorded = series.last().copied().unwrap_or(0);
            let want = dumped.get(res_name).copied().unwrap_or(0);
            if recorded != want {
                r.mismatches.push(format!(
                    "{kind} {name} at {level}: {res_name} recorded {recorded}, state dump {want}"
                ));
            }
        }
        for ((res_name, &limit), &p) in cap.iter().zip(&peak) {
            if p > limit {
                r.cap_violations.push(format!(
                    "{kind} {name} at {level}: {res_name} reached {p}, cap {limit}"
                ));
            }
        }
        if max_apps > 0 && u64::from(peak_running) > max_apps {
            r.cap_violations.push(format!(
                "{kind} {name} at {level}: {peak_running} running applications, cap {max_apps}"
            ));
        }
        out.push(TenantSeries {
            kind,
            name,
            level,
            cap,
            max_apps,
            usage,
            peak,
            running,
            peak_running,
            apps: counted.iter().filter(|&&c| c).count(),
        });
    }
    r.tenants = Some(out);
}

pub(super) fn preemptions(g: &Inner, dump: &Value, r: &mut Report) {
    if g.preemptions.is_empty() {
        return;
    }
    let name = |names: &super::Names, i: u32| names.names[i as usize].clone();
    for p in &g.preemptions {
        let a = &g.allocs[p.alloc];
        r.preemptions.push(PreemptionMark {
            t_ns: p.t_ns,
            victim: p.victim.clone(),
            app: p.app.clone(),
            queue: name(&g.queues, a.queue),
            node: name(&g.nodes, a.node),
            resource: a
                .resource
                .iter()
                .map(|&(k, v)| (name(&g.resources, k), v))
                .collect(),
            preemptor_queue: g
                .keys
                .as_ref()
                .and_then(|k| k.get(&p.preemptor))
                .map(|&q| name(&g.queues, q)),
            preemptor: p.preemptor.clone(),
            freed_ns: p.freed_ns,
        });
    }
    r.preemptions.sort_by_key(|p| p.t_ns);
    let targets: BTreeSet<String> = r
        .preemptions
        .iter()
        .filter_map(|p| p.preemptor_queue.clone())
        .collect();
    let events = in_order(g);
    let mut views = Vec::new();
    for q in targets {
        let guaranteed = find(&dump["partitions"], &q)
            .map(|v| resource_map(&v["guaranteed"]))
            .unwrap_or_default();
        let res: Vec<Option<u32>> = guaranteed
            .keys()
            .map(|k| g.resources.index.get(k).copied())
            .collect();
        let want: Vec<i64> = guaranteed.values().copied().collect();
        let queue_names = &g.queues.names;
        let (usage, _, reached) = replay(
            &events,
            r,
            &res,
            |e| under(&queue_names[e.queue as usize], &q),
            (!want.is_empty()).then_some(&want[..]),
        );
        let end = usage
            .iter()
            .map(|s| s.last().copied().unwrap_or(0))
            .collect();
        views.push(GuaranteeView {
            queue: q,
            guaranteed,
            usage,
            reached_ns: reached,
            end,
        });
    }
    r.guarantees = views;
}

/// The queue `path` in the dump's partitions.
fn find<'a>(partitions: &'a Value, path: &str) -> Option<&'a Value> {
    fn walk<'a>(q: &'a Value, path: &str) -> Option<&'a Value> {
        if q["path"] == path {
            return Some(q);
        }
        q["children"]
            .as_array()
            .into_iter()
            .flatten()
            .find_map(|c| walk(c, path))
    }
    partitions
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|p| walk(&p["root"], path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Recorder;
    use sicore::proto::si::v1 as si;

    fn alloc(uuid: &str, key: &str, app: &str, queue: &str, memory: i64) -> si::Allocation {
        si::Allocation {
            uuid: uuid.into(),
            allocation_key: key.into(),
            node_id: "node-a".into(),
            application_id: app.into(),
            queue_name: queue.into(),
            resource_per_alloc: Some(si::Resource {
                resources: [("memory".to_string(), si::Quantity { value: memory })].into(),
            }),
            ..Default::default()
        }
    }

    fn dump() -> Value {
        serde_json::json!({"partitions": [{"name": "default",
            "root": {"path": "root", "guaranteed": null, "allocated": {"memory": 30},
              "children": [{"path": "root.a", "allocated": {"memory": 10}, "children": []},
                           {"path": "root.g", "guaranteed": {"memory": 20}, "allocated": {"memory": 20}, "children": []}]},
            "nodes": [{"id": "node-a", "capacity": {"memory": 100}, "allocated": {"memory": 30}}],
            "applications": []}]})
    }

    #[test]
    fn a_victim_holds_its_resources_until_freed_and_the_guarantee_is_reached() {
        let r = Recorder::detailed(8);
        r.on_allocation(&si::AllocationResponse {
            new: vec![
                alloc("v1", "a-1", "app-a", "root.a", 10),
                alloc("v2", "a-2", "app-a", "root.a", 10),
                alloc("v3", "a-3", "app-a", "root.a", 10),
            ],
            ..Default::default()
        });
        let victim = |uuid: &str| si::AllocationRelease {
            uuid: uuid.into(),
            application_id: "app-a".into(),
            termination_type: si::TerminationType::PreemptedByScheduler as i32,
            message: "preempting allocations to free up resources to run ask: g-1".into(),
            ..Default::default()
        };
        r.on_allocation(&si::AllocationResponse {
            released: vec![victim("v1"), victim("v2")],
            ..Default::default()
        });
        // v0.12: the echo frees one; v1: the RM's confirmation frees the other.
        r.on_allocation(&si::AllocationResponse {
            released: vec![si::AllocationRelease {
                uuid: "v1".into(),
                termination_type: si::TerminationType::StoppedByRm as i32,
                ..Default::default()
            }],
            ..Default::default()
        });
        r.on_confirmed("v2");
        r.on_allocation(&si::AllocationResponse {
            new: vec![
                alloc("p1", "g-1", "app-g", "root.g", 10),
                alloc("p2", "g-2", "app-g", "root.g", 10),
            ],
            ..Default::default()
        });
        let rep = r.finish(&dump(), vec![]);
        assert_eq!(rep.mismatches, Vec::<String>::new());
        assert_eq!(rep.preemptions.len(), 2);
        let p = &rep.preemptions[0];
        assert_eq!((p.app.as_str(), p.queue.as_str()), ("app-a", "root.a"));
        assert_eq!(p.preemptor, "g-1");
        assert_eq!(p.preemptor_queue.as_deref(), Some("root.g"));
        assert!(rep.preemptions.iter().all(|p| p.freed_ns.is_some()));
        assert_eq!(rep.guarantees.len(), 1);
        let g = &rep.guarantees[0];
        assert_eq!(g.queue, "root.g");
        assert_eq!(g.end, [20]);
        assert!(g.reached_ns.is_some());
        let page = crate::html::render(&rep);
        assert!(page.contains(r#"id="preemptions""#));
        assert!(page.contains(r#"id="guarantee-check" class="ok""#));
    }

    fn usage(alice_root: i64) -> Value {
        serde_json::json!({"limits": true,
          "users": [{"userName": "alice", "groups": {"app-1": "dev"},
             "queues": {"queuePath": "root", "resourceUsage": {"memory": alice_root},
                "maxResources": {"memory": 30},
                "children": [{"queuePath": "root.a", "resourceUsage": {"memory": alice_root},
                    "maxApplications": 1}]}}],
          "groups": [{"groupName": "dev", "applications": ["app-1"],
             "queues": {"queuePath": "root", "resourceUsage": {"memory": alice_root}}}]})
    }

    #[test]
    fn tenant_usage_and_running_applications_are_checked_against_caps() {
        let r = Recorder::detailed(8);
        let running = |app: &str| si::ApplicationResponse {
            updated: vec![si::UpdatedApplication {
                application_id: app.into(),
                state: "Running".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        r.on_application(&running("app-1"));
        r.on_allocation(&si::AllocationResponse {
            new: vec![
                alloc("u1", "k1", "app-1", "root.a", 20),
                alloc("u2", "k2", "app-1", "root.a", 20),
            ],
            ..Default::default()
        });
        r.on_allocation(&si::AllocationResponse {
            released: vec![si::AllocationRelease {
                uuid: "u1".into(),
                ..Default::default()
            }],
            ..Default::default()
        });
        r.on_application(&running("app-2"));
        let input = TenantInput {
            users: [("app-1", "alice"), ("app-2", "alice")]
                .map(|(a, u)| (a.to_string(), u.to_string()))
                .into(),
            queues: [("app-1", "root.a"), ("app-2", "root.a")]
                .map(|(a, q)| (a.to_string(), q.to_string()))
                .into(),
            usage: vec![usage(20)],
        };
        let rep = r.finish_with(&serde_json::json!({}), vec![], Some(&input));
        let t = rep.tenants.as_ref().unwrap();
        let names: Vec<(&str, &str)> = t
            .iter()
            .map(|s| (s.name.as_str(), s.level.as_str()))
            .collect();
        assert_eq!(names, [("alice", "root"), ("alice", "root.a")]);
        assert_eq!(t[0].peak, [40]);
        assert_eq!(t[1].peak_running, 2);
        assert_eq!(
            rep.cap_violations,
            [
                "user alice at root: memory reached 40, cap 30",
                "user alice at root.a: 2 running applications, cap 1"
            ]
        );
        let page = crate::html::render(&rep);
        assert!(page.contains(r#"id="limits-check" class="bad""#));

        // The replay's end must match the dump's tracker.
        let input = TenantInput {
            usage: vec![usage(25)],
            ..input
        };
        let rep = r.finish_with(&serde_json::json!({}), vec![], Some(&input));
        assert!(rep
            .mismatches
            .contains(&"user alice at root: memory recorded 20, state dump 25".to_string()));
    }
}
