use super::*;
use crate::config::{QueueConfig, ResourcesConfig};

fn leaf(name: &str, guaranteed: Option<i64>) -> QueueConfig {
    QueueConfig {
        name: name.into(),
        resources: ResourcesConfig {
            guaranteed: guaranteed.map(|g| [("memory".to_string(), g)].into_iter().collect()),
            max: None,
        },
        ..Default::default()
    }
}

/// `kids` with pending demand, sorted from scratch by the order's key
/// (no priorities configured here).
fn full_sort(tree: &QueueTree, kids: &[QueueId]) -> Vec<QueueId> {
    let mut want: Vec<(ShareKey, std::cmp::Reverse<i128>, Arc<str>, QueueId)> = kids
        .iter()
        .map(|k| tree.get(*k))
        .filter(|c| c.pending.is_strictly_positive())
        .map(|c| {
            (
                ShareKey::of(&c.allocated, c.guaranteed.as_ref()),
                std::cmp::Reverse(pending_weight(&c.pending)),
                c.path.clone(),
                tree.lookup(&c.path).unwrap(),
            )
        })
        .collect();
    want.sort();
    want.into_iter().map(|w| w.3).collect()
}

/// A root over six leaves, four with guarantees, and the leaves.
fn six_leaves() -> (QueueTree, Vec<QueueId>) {
    let root = QueueConfig {
        name: "root".into(),
        parent: true,
        queues: vec![
            leaf("a", Some(100)),
            leaf("b", Some(300)),
            leaf("c", None),
            leaf("d", Some(50)),
            // Alike with nothing allocated: their order is the demand's.
            leaf("e", None),
            leaf("f", None),
        ],
        ..Default::default()
    };
    let tree = QueueTree::from_config(&root).unwrap();
    let kids = tree.get(ROOT).children.values().copied().collect();
    (tree, kids)
}

/// The incrementally kept child order always equals a full sort.
#[test]
fn child_order_tracks_every_change() {
    let (mut tree, kids) = six_leaves();
    let mut rng = fastrand::Rng::with_seed(3);
    let r = |m: i64| Resource::from_pairs([("memory", m)]).unwrap();
    for _ in 0..2000 {
        let q = kids[rng.usize(..kids.len())];
        let amount = r(rng.i64(1..50));
        // Demand changes most (re-filed in place, keeping the shares).
        match rng.u8(0..6) {
            0 | 1 => tree.add_pending(q, &amount),
            2 | 3 => tree.sub_pending(q, &amount),
            4 => tree.add_allocated(q, &amount),
            _ => tree.sub_allocated(q, &amount),
        }
        assert_eq!(
            tree.sorted_children(ROOT).collect::<Vec<_>>(),
            full_sort(&tree, &kids)
        );
    }
}

/// Demand added unfiled gives, once settled, the tree that filing every
/// change at once gives (the same totals, the same order, which is the full
/// sort), whatever changed in between.
#[test]
fn unfiled_demand_is_filed_by_the_settle() {
    let (mut tree, kids) = six_leaves();
    let mut filed = tree.clone();
    let mut rng = fastrand::Rng::with_seed(11);
    let r = |m: i64| Resource::from_pairs([("memory", m)]).unwrap();
    let mut settles = 0;
    for _ in 0..3000 {
        let q = kids[rng.usize(..kids.len())];
        let amount = r(rng.i64(1..50));
        match rng.u8(0..8) {
            0..=4 => {
                tree.add_pending_unfiled(q, &amount);
                filed.add_pending(q, &amount);
                // The totals are exact at once, up the chain.
                assert_eq!(tree.get(q).pending, filed.get(q).pending);
                assert_eq!(tree.get(ROOT).pending, filed.get(ROOT).pending);
            }
            5 => {
                tree.sub_pending(q, &amount);
                filed.sub_pending(q, &amount);
            }
            6 => {
                tree.add_allocated(q, &amount);
                filed.add_allocated(q, &amount);
            }
            _ => {
                tree.sub_allocated(q, &amount);
                filed.sub_allocated(q, &amount);
            }
        }
        if rng.u8(0..5) == 0 {
            tree.settle_unfiled();
            settles += 1;
            assert!(tree.is_settled());
            let order: Vec<QueueId> = tree.sorted_children(ROOT).collect();
            assert_eq!(order, filed.sorted_children(ROOT).collect::<Vec<_>>());
            assert_eq!(order, full_sort(&tree, &kids));
        }
    }
    assert!(settles > 400);
}

#[test]
fn a_dominating_pending_demand_has_the_larger_tie_weight() {
    // The tie-break agrees with the reference wherever the reference
    // decides: demand larger in every type (and strictly in one) wins.
    let mut rng = fastrand::Rng::with_seed(5);
    for _ in 0..5000 {
        let b = [rng.i64(0..1000), rng.i64(0..1000), rng.i64(0..1000)];
        let extra = [rng.i64(0..3), rng.i64(0..3), rng.i64(0..3)];
        if extra == [0, 0, 0] {
            continue;
        }
        let res = |v: [i64; 3]| {
            Resource::from_pairs([("memory", v[0]), ("vcore", v[1]), ("gpu", v[2])]).unwrap()
        };
        let a = [b[0] + extra[0], b[1] + extra[1], b[2] + extra[2]];
        assert!(
            pending_weight(&res(a)) > pending_weight(&res(b)),
            "{a:?} vs {b:?}"
        );
    }
}
