use std::sync::Arc;

use super::names::HOME;
use super::*;

fn r(pairs: &[(&str, i64)]) -> Resource {
    Resource::from_pairs(pairs.iter().copied()).unwrap()
}

use super::process_holds_name as in_store;

/// Runs `f` as on the core thread of a scheduler with table `names`.
fn at_home<T>(names: &Arc<ResourceNames>, f: impl FnOnce() -> T) -> T {
    let old = HOME.with(|h| h.borrow_mut().replace(names.clone()));
    let out = f();
    HOME.with(|h| *h.borrow_mut() = old);
    out
}

#[test]
fn tables_are_per_scheduler_and_give_their_names_back() {
    let a = ResourceNames::new();
    let b = ResourceNames::new();
    let name = "unit/per-scheduler-shared";
    let ida = a.charged_to("rm", || intern(name)).unwrap();
    let idb = b.charged_to("rm", || intern(name)).unwrap();
    assert_eq!(ida, idb, "one id per name across tables");
    // `a`'s RM fills its share; `b`'s RM of the same rmID still has its own.
    for i in 1..MAX_RESOURCE_TYPES_PER_RM {
        a.charged_to("rm", || intern(&format!("unit/a-{i}")))
            .unwrap();
    }
    let e = a.charged_to("rm", || intern("unit/a-over")).unwrap_err();
    assert!(e.contains("limit 256 per RM"), "{e}");
    assert!(b.charged_to("rm", || intern("unit/b-1")).is_ok());
    assert_eq!(a.len(), MAX_RESOURCE_TYPES_PER_RM);
    drop(a);
    assert!(
        !in_store("unit/a-1"),
        "a dropped table gives its names back"
    );
    assert!(in_store(name), "still held by the other table");
    assert_eq!(&*name_of(idb), name);
    drop(b);
    assert!(!in_store(name));
    assert_eq!(&*name_of(idb), "?");
}

#[test]
fn scheduler_total_is_bounded_across_rms() {
    let t = ResourceNames::new();
    for rm in 0..MAX_RESOURCE_TYPES / MAX_RESOURCE_TYPES_PER_RM {
        for i in 0..MAX_RESOURCE_TYPES_PER_RM {
            t.charged_to(&format!("rm{rm}"), || {
                intern(&format!("unit/total-{rm}-{i}"))
            })
            .unwrap();
        }
    }
    let e = t
        .charged_to("late", || intern("unit/total-late"))
        .unwrap_err();
    assert!(e.contains("limit 4096"), "{e}");
    // Names it holds still resolve for anyone in the scheduler.
    assert!(t.charged_to("late", || intern("unit/total-0-0")).is_ok());
}

#[test]
fn a_refused_configuration_charges_nothing() {
    let t = ResourceNames::new();
    at_home(&t, || {
        let refused: Result<(), String> = configuration("g", || {
            for i in 0..MAX_RESOURCE_TYPES_PER_POLICY_GROUP + 10 {
                intern(&format!("unit/cfg-{i}"))?;
            }
            Ok(())
        });
        let e = refused.unwrap_err();
        assert!(e.contains("policy group 'g'"), "{e}");
        assert!(e.contains("limit 256 per policy group"), "{e}");
        assert!(t.is_empty(), "refused: nothing held");
        assert!(!in_store("unit/cfg-0"));
        // The full share is still there, and kept once accepted.
        configuration("g", || {
            for i in 0..MAX_RESOURCE_TYPES_PER_POLICY_GROUP {
                intern(&format!("unit/cfg-{i}")).unwrap();
            }
            keep_configuration_names();
        });
        assert_eq!(t.len(), MAX_RESOURCE_TYPES_PER_POLICY_GROUP);
        // Kept names count against later configurations of the group
        // but cost nothing when used again.
        let e = configuration("g", || intern("unit/cfg-new")).unwrap_err();
        assert!(e.contains("256 in use"), "{e}");
        assert!(configuration("g", || intern("unit/cfg-3")).is_ok());
        assert!(configuration("other", || intern("unit/cfg-other")).is_ok());
        assert_eq!(t.len(), MAX_RESOURCE_TYPES_PER_POLICY_GROUP, "not kept");
    });
}

#[test]
fn an_rm_takes_over_a_provisional_name() {
    let t = ResourceNames::new();
    at_home(&t, || {
        let id = configuration("g", || {
            let id = intern("unit/claimed").unwrap();
            intern("unit/given-back").unwrap();
            // An RM decoding on its own thread meets the name now.
            let t2 = t.clone();
            let claimed =
                std::thread::spawn(move || t2.charged_to("rm", || intern("unit/claimed")))
                    .join()
                    .unwrap()
                    .unwrap();
            assert_eq!(claimed, id);
            id
        });
        assert_eq!(t.len(), 1, "the RM's name stays, the other goes back");
        assert_eq!(&*name_of(id), "unit/claimed");
        assert!(!in_store("unit/given-back"));
    });
}

#[test]
fn names_met_after_keep_are_charged_at_once() {
    let t = ResourceNames::new();
    at_home(&t, || {
        configuration("g", || {
            intern("unit/kept-before").unwrap();
            keep_configuration_names();
            intern("unit/kept-after").unwrap();
        });
        assert_eq!(t.len(), 2, "live state may use both");
        let e = configuration("g", || {
            for i in 0..MAX_RESOURCE_TYPES_PER_POLICY_GROUP {
                intern(&format!("unit/kept-{i}"))?;
            }
            Ok::<_, String>(())
        })
        .unwrap_err();
        assert!(e.contains("2 in use"), "{e}");
    });
}

#[test]
fn nested_configuration_joins_the_open_one() {
    let t = ResourceNames::new();
    at_home(&t, || {
        configuration("g", || {
            configuration("g", || intern("unit/nested-1")).unwrap();
            assert_eq!(t.len(), 1, "the inner end gives nothing back");
        });
        assert!(t.is_empty());
    });
}

#[test]
fn can_add_checks_every_shared_type() {
    let big = r(&[("memory", i64::MAX - 1), ("vcore", 1)]);
    assert!(big.can_add(&r(&[("memory", 1)])));
    assert!(!big.can_add(&r(&[("memory", 2)])));
    assert!(big.can_add(&r(&[("pods", i64::MAX), ("vcore", 5)])));
    assert!(!r(&[("pods", 1), ("vcore", i64::MAX)]).can_add(&r(&[("vcore", 1)])));
    assert_eq!(big.checked_add(&r(&[("memory", 2)])), None);
    assert_eq!(
        r(&[("memory", 1)]).checked_add(&r(&[("vcore", 2)])),
        Some(r(&[("memory", 1), ("vcore", 2)]))
    );
}

#[test]
fn arithmetic_over_the_union_of_types() {
    let a = r(&[("memory", 10), ("vcore", 2)]);
    let b = r(&[("vcore", 3), ("gpu", 1)]);
    assert_eq!(a.add(&b), r(&[("memory", 10), ("vcore", 5), ("gpu", 1)]));
    assert_eq!(a.sub(&b), r(&[("memory", 10), ("vcore", -1), ("gpu", -1)]));
    assert_eq!(
        a.sub_clamped(&b),
        r(&[("memory", 10), ("vcore", 0), ("gpu", 0)])
    );
    let mut c = a.clone();
    c.add_assign(&b);
    c.sub_assign(&b);
    assert_eq!(c, r(&[("memory", 10), ("vcore", 2), ("gpu", 0)]));
    // In place, over the same types (the zipped fast path), over a
    // subset, and over types self lacks: all as the copying forms.
    // A node of six types (on the heap) against a pod's three, a subset
    // or not.
    let node = r(&[
        ("memory", 100),
        ("vcore", 10),
        ("pods", 110),
        ("ephemeral-storage", 1000),
        ("hugepages-1Gi", 0),
        ("hugepages-2Mi", 0),
    ]);
    let pod = r(&[("memory", 10), ("vcore", 1), ("pods", 1)]);
    let gpu_pod = r(&[("memory", 10), ("nvidia.com/gpu", 1)]);
    let pairs = [
        (&a, &a),
        (&a, &r(&[("vcore", 5)])),
        (&a, &b),
        (&b, &a),
        (&node, &pod),
        (&node, &gpu_pod),
        (&pod, &node),
        (&node, &r(&[])),
    ];
    for (x, y) in pairs {
        let mut v = x.clone();
        v.sub_clamped_assign(y);
        assert_eq!(v, x.sub_clamped(y));
        let mut v = x.clone();
        v.add_assign(y);
        assert_eq!(v, x.add(y));
        let mut v = x.clone();
        v.sub_assign(y);
        assert_eq!(v, x.sub(y));
    }
    assert_eq!(
        r(&[("m", i64::MAX)]).add(&r(&[("m", 1)])),
        r(&[("m", i64::MAX)])
    );
}

#[test]
fn fit_rules() {
    let ask = r(&[("memory", 10), ("gpu", 1)]);
    let node = r(&[("memory", 100)]);
    assert!(!ask.fits_in(&node), "strict fit: a missing type is zero");
    assert!(
        ask.fits_in_max_undef(&node),
        "quota fit: a missing type is unlimited"
    );
    assert!(r(&[("memory", -5)]).fits_in(&r(&[])));
    assert!(!r(&[("memory", 1)]).fits_in(&r(&[("memory", -5)])));
}

#[test]
fn share_comparison_uses_dominant_share() {
    let g = r(&[("memory", 100), ("vcore", 10)]);
    let a = shares(&r(&[("memory", 50), ("vcore", 1)]), Some(&g));
    let b = shares(&r(&[("memory", 10), ("vcore", 6)]), Some(&g));
    assert_eq!(compare_shares(&a, &b), std::cmp::Ordering::Less);
    assert_eq!(
        compare_shares(&[0.5, 0.2], &[0.5]),
        std::cmp::Ordering::Greater
    );
}

#[test]
fn shares_are_each_types_usage_over_the_reference_largest_first() {
    // Against the definition: a type's usage over the reference's quantity
    // of it, or the usage itself where the reference has none or zero.
    let names = ["memory", "vcore", "pods", "gpu", "disk"];
    let mut rng = fastrand::Rng::with_seed(5);
    let pick = |rng: &mut fastrand::Rng| -> Vec<(&str, i64)> {
        let mut pairs = Vec::new();
        for n in names {
            if rng.bool() {
                pairs.push((n, rng.i64(-3..40)));
            }
        }
        pairs
    };
    for _ in 0..2000 {
        let sent = pick(&mut rng);
        let usage = r(&sent);
        // Half the time the same types as the usage (the common case).
        let reference = if rng.bool() {
            let same: Vec<(&str, i64)> = sent.iter().map(|&(n, _)| (n, rng.i64(-2..60))).collect();
            r(&same)
        } else {
            r(&pick(&mut rng))
        };
        for reference in [None, Some(&reference)] {
            let mut want: Vec<f64> = usage
                .iter()
                .map(|(id, u)| match reference.map(|g| g.get(id)) {
                    _ if u == 0 => 0.0,
                    Some(g) if g != 0 => u as f64 / g as f64,
                    _ => u as f64,
                })
                .collect();
            want.sort_by(|a, b| b.total_cmp(a));
            assert_eq!(
                shares(&usage, reference).to_vec(),
                want,
                "{usage} over {reference:?}"
            );
        }
    }
}

#[test]
fn display_sorts_by_name() {
    assert_eq!(
        r(&[("vcore", 1), ("memory", 2)]).to_string(),
        "map[memory:2 vcore:1]"
    );
}

#[test]
fn the_process_wide_id_space_is_refused_past_its_last_id_naming_the_limit() {
    // A store of its own: the process's store is shared with other tests.
    let mut store = super::names::Store::default();
    for i in 0..=u32::from(ResId::MAX) {
        store.acquire(&format!("t{i}")).expect("a free id");
    }
    let err = store.acquire("one-more").unwrap_err();
    assert!(err.contains("65536 resource type names"), "{err}");
    // A name already held still gets its id.
    assert_eq!(store.acquire("t7").unwrap().0, 7);
}

#[test]
fn raise_to_keeps_a_running_maximum_per_type() {
    // The same types: each raised only where the other is larger.
    let mut m = r(&[("memory", 10), ("vcore", 5)]);
    m.raise_to(&r(&[("memory", 4), ("vcore", 9)]));
    assert_eq!(m, r(&[("memory", 10), ("vcore", 9)]));
    // Other types: a positive one joins, a zero or negative one does not.
    let mut m = r(&[("memory", 10)]);
    m.raise_to(&r(&[
        ("gpu", 0),
        ("memory", 12),
        ("pods", -1),
        ("vcore", 3),
    ]));
    assert_eq!(m, r(&[("memory", 12), ("vcore", 3)]));
    assert_eq!(m.lookup(super::names::intern("gpu").unwrap()), None);
}

/// The one-walk fit checks (`Entries::position_with`) against their
/// definitions by look-up, on seeded random pairs: zero to seven types
/// (past four the heap form), quantities around zero, types one side
/// lacks.
#[test]
fn one_walk_fit_checks_match_their_definitions() {
    let names: Vec<String> = (0..7).map(|i| format!("unit/walk-{i}")).collect();
    let mut rng = fastrand::Rng::with_seed(0x05ee_df17);
    let random = |rng: &mut fastrand::Rng| {
        let mut pairs = Vec::new();
        for n in &names {
            if rng.u8(..3) > 0 {
                pairs.push((n.as_str(), rng.i64(-3..=6)));
            }
        }
        Resource::from_pairs(pairs).unwrap()
    };
    for _ in 0..5_000 {
        let (a, b) = (random(&mut rng), random(&mut rng));
        let short = a.iter().position(|(id, v)| v > b.get(id).max(0));
        assert_eq!(a.first_short_index(&b), short, "{a:?} in {b:?}");
        assert_eq!(a.fits_in(&b), short.is_none());
        let undef = a
            .iter()
            .all(|(id, v)| b.lookup(id).is_none_or(|m| v <= m.max(0)));
        assert_eq!(a.fits_in_max_undef(&b), undef, "{a:?} under {b:?}");
        let shares = a.iter().any(|(id, v)| v > 0 && b.get(id) > 0);
        assert_eq!(a.shares_positive_type(&b), shares, "{a:?} with {b:?}");
    }
}

/// The in-place sums and differences against `merge`, their definition,
/// and the overflow check of a sum against its own,
/// on seeded random pairs: half of them of the same types (combined whole,
/// inline), the others of differing ones; zero to seven types, so both
/// forms; quantities near the ends of i64, where they saturate.
#[test]
fn in_place_arithmetic_matches_merge() {
    let names: Vec<String> = (0..7).map(|i| format!("unit/in-place-{i}")).collect();
    let mut rng = fastrand::Rng::with_seed(0x1a_2b3c);
    let quantity = |rng: &mut fastrand::Rng| match rng.u8(..6) {
        0 => i64::MAX - rng.i64(0..3),
        1 => i64::MIN + rng.i64(0..3),
        _ => rng.i64(-5..=9),
    };
    for _ in 0..5_000 {
        let mut pairs_a = Vec::new();
        for n in &names {
            if rng.u8(..3) > 0 {
                pairs_a.push((n.as_str(), quantity(&mut rng)));
            }
        }
        let pairs_b: Vec<(&str, i64)> = if rng.bool() {
            pairs_a
                .iter()
                .map(|&(n, _)| (n, quantity(&mut rng)))
                .collect()
        } else {
            let mut pairs = Vec::new();
            for n in &names {
                if rng.u8(..3) > 0 {
                    pairs.push((n.as_str(), quantity(&mut rng)));
                }
            }
            pairs
        };
        let (a, b) = (r(&pairs_a), r(&pairs_b));
        let fits = a
            .iter()
            .all(|(id, v)| b.lookup(id).is_none_or(|w| v.checked_add(w).is_some()));
        assert_eq!(a.can_add(&b), fits, "{a:?} + {b:?}");
        type Op = (fn(&mut Resource, &Resource), fn(i64, i64) -> i64);
        let ops: [Op; 3] = [
            (Resource::add_assign, i64::saturating_add),
            (Resource::sub_assign, i64::saturating_sub),
            (Resource::sub_clamped_assign, |x, y| {
                x.saturating_sub(y).max(0)
            }),
        ];
        for (i, (in_place, f)) in ops.into_iter().enumerate() {
            let mut got = a.clone();
            in_place(&mut got, &b);
            assert_eq!(got, a.merge(&b, f), "op {i}: {a:?} with {b:?}");
        }
    }
}

/// A clamped difference clamps every type, also one the subtrahend lacks,
/// whether it is computed anew or in place (spec 14.2: negative results
/// become zero over the union of types).
#[test]
fn clamped_difference_clamps_types_the_subtrahend_lacks() {
    let a = r(&[
        ("unit/clamp-a", 5),
        ("unit/clamp-b", -3),
        ("unit/clamp-c", 2),
    ]);
    let b = r(&[("unit/clamp-a", 1), ("unit/clamp-c", 4)]);
    let want = r(&[
        ("unit/clamp-a", 4),
        ("unit/clamp-b", 0),
        ("unit/clamp-c", 0),
    ]);
    assert_eq!(a.sub_clamped(&b), want);
    let mut in_place = a.clone();
    in_place.sub_clamped_assign(&b);
    assert_eq!(in_place, want);
}
