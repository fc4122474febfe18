//! The quota-change run's victim choice (`quota_victims`: candidates read
//! from the slab entries' facts and the victims' slots, only those that fit
//! alone sorted, the walk stopped once none can fit) against the full sort
//! and walk it replaced, each candidate read from its allocation's record
//! and the book of victims by UUID, on seeded random leaves and amounts.

use std::collections::BTreeMap;

use super::*;
use crate::scheduler::objects::application::TAG_REQUIRED_NODE;
use crate::scheduler::request::AskRequest;
use crate::scheduler::resource::shares;
use crate::scheduler::testkit::{ask, res, Harness};
use smallvec::SmallVec;

/// A candidate in the victim order (5.5c) with its shares, and its slot.
struct Full {
    class: u8,
    matched: u32,
    priority: i32,
    hour: u32,
    shares: SmallVec<[f64; 4]>,
    born: u64,
    slot: AllocSlot,
}

impl Full {
    /// Regular before opted-out before originators, then most matched
    /// types first, lower priority, later hour, smaller shares, newer.
    fn order(&self, other: &Self) -> std::cmp::Ordering {
        self.class
            .cmp(&other.class)
            .then(other.matched.cmp(&self.matched))
            .then(self.priority.cmp(&other.priority))
            .then(other.hour.cmp(&self.hour))
            .then_with(|| compare_shares(&self.shares, &other.shares))
            .then(other.born.cmp(&self.born))
    }
}

/// A candidate as the run built it from the record.
fn from_record(
    p: &Partition,
    slot: AllocSlot,
    amount: &Resource,
    max: Option<&Resource>,
) -> Option<Full> {
    let a = p.allocations.at(slot);
    let types = a.resource.iter().count();
    let matched = a
        .resource
        .iter()
        .filter(|(t, _)| amount.lookup(*t).is_some())
        .count();
    if matched == 0
        || a.tags.contains_key(TAG_REQUIRED_NODE)
        || (a.placeholder && p.gang.placeholder_leaving(&a.uuid))
        || p.preempt.is_victim(&a.uuid)
    {
        return None;
    }
    let mut in_amount = Resource::new();
    for (t, _) in amount.iter() {
        if let Some(v) = a.resource.lookup(t) {
            in_amount.set(t, v);
        }
    }
    Some(Full {
        class: u8::from(!a.preempt_self) + 2 * u8::from(a.originator),
        matched: u32::try_from(matched * 100 / types).unwrap_or(100),
        priority: a.priority,
        hour: p.allocations.hour(slot),
        shares: shares(&in_amount, max),
        born: p.allocations.born(slot),
        slot,
    })
}

/// The choice as it was: every candidate built from its record, sorted,
/// walked.
fn full_walk(p: &Partition, q: QueueId, amount: &Resource) -> (usize, Vec<AllocSlot>) {
    let queue = p.queues.get(q);
    let max = queue.max.as_ref();
    let mut candidates: Vec<Full> = Vec::new();
    for a_slot in queue.apps.values() {
        let Some(app) = p.apps.at(*a_slot) else {
            continue;
        };
        candidates.extend(
            app.allocations
                .slots()
                .filter_map(|slot| from_record(p, slot, amount, max)),
        );
    }
    candidates.sort_by(Full::order);
    let mut total = Resource::new();
    let mut picked = Vec::new();
    for c in &candidates {
        let res = &p.allocations.at(c.slot).resource;
        let within = |base: &Resource| {
            amount
                .iter()
                .all(|(t, v)| base.get(t).saturating_add(res.get(t)) <= v)
        };
        if within(&Resource::new()) && within(&total) {
            total.add_assign(res);
            picked.push(c.slot);
        }
    }
    (candidates.len(), picked)
}

fn random_resource(rng: &mut fastrand::Rng) -> Resource {
    let mut pairs = Vec::new();
    for t in ["memory", "vcore", "gpu"] {
        if rng.u8(0..3) != 0 {
            // The first type positive, the others possibly zero.
            let low = i64::from(pairs.is_empty());
            pairs.push((t, rng.i64(low..20)));
        }
    }
    if pairs.is_empty() {
        pairs.push(("memory", rng.i64(1..20)));
    }
    res(&pairs)
}

/// Spec 16 Q19-11.
#[test]
fn the_ranked_walk_matches_the_full_sort() {
    let yaml = "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources: {max: {memory: 300, vcore: 200, gpu: 100}}
";
    let mut compared = 0;
    for seed in 0..200u64 {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut h = Harness::new(yaml);
        let info = si::NodeInfo {
            node_id: "n1".into(),
            schedulable_resource: Some(
                res(&[("memory", 100_000), ("vcore", 100_000), ("gpu", 100_000)]).to_proto(),
            ),
            ..Default::default()
        };
        h.p.add_node(&info, &mut Outcomes::default())
            .expect("node accepted");
        for i in 0..rng.usize(1..4) {
            let app = format!("app-{i}");
            h.app(&app, "root.a");
            for k in 0..rng.usize(1..6) {
                h.p.allocations.set_hour(rng.u32(0..3));
                let pinned = rng.u8(0..6) == 0;
                let a = AskRequest {
                    resource: Ok(random_resource(&mut rng)),
                    priority: rng.i32(-2..3),
                    preempt_self: rng.u8(0..3) != 0,
                    originator: rng.u8(0..4) == 0,
                    required_node: pinned.then(|| "n1".to_string()),
                    tags: crate::scheduler::tags::Tags::from(if pinned {
                        BTreeMap::from([(TAG_REQUIRED_NODE.to_string(), "n1".to_string())])
                    } else {
                        BTreeMap::new()
                    }),
                    ..ask(&app, &format!("k{k}"), 1, rng.i32(1..6))
                };
                h.ask(a);
                h.schedule();
            }
        }
        let leaf = h.p.queues.lookup("root.a").expect("leaf");
        // Some allocations are victims in flight already.
        let marked: Vec<Allocation> =
            h.p.allocations
                .values()
                .filter(|_| rng.u8(0..5) == 0)
                .cloned()
                .collect();
        for a in &marked {
            h.p.mark_victim(a, leaf);
        }
        let in_flight = h.p.victim_slots();
        assert_eq!(in_flight.len(), marked.len());
        for _ in 0..8 {
            let amount = random_resource(&mut rng);
            let amount = if rng.bool() {
                let mut m = Resource::new();
                for (t, v) in amount.iter() {
                    m.set(t, v * rng.i64(1..6));
                }
                m
            } else {
                amount
            };
            assert_eq!(
                h.p.quota_victims(leaf, &amount, &in_flight),
                full_walk(&h.p, leaf, &amount),
                "seed {seed}, amount {amount}"
            );
            compared += 1;
        }
    }
    assert!(compared > 100);
}
