//! The allocation table: lists, the UUID index and the UUIDs it mints.

use std::collections::BTreeMap;

use super::*;

fn alloc(uuid: &str) -> Allocation {
    Allocation {
        record: Arc::new(NewAllocation::for_test("k", uuid, "n", "a")),
        queue: 0,
    }
}

fn listed(t: &AllocTable, l: &AllocList) -> Vec<String> {
    let mut v: Vec<String> = t.uuids(l).map(|u| u.to_string()).collect();
    v.sort();
    v
}

#[test]
fn lists_stay_in_step_through_removals_from_the_middle() {
    let mut t = AllocTable::default();
    let (mut app, mut n1, mut n2) = (
        AllocList::default(),
        AllocList::default(),
        AllocList::default(),
    );
    let s: Vec<AllocSlot> = (0..6)
        .map(|i| {
            let node = if i % 2 == 0 { &mut n1 } else { &mut n2 };
            t.insert(alloc(&format!("u{i}")), &mut app, node)
        })
        .collect();
    assert_eq!(t.len(), 6);
    t.remove(s[0], Some(&mut app), Some(&mut n1));
    t.remove(s[3], Some(&mut app), Some(&mut n2));
    assert_eq!(listed(&t, &app), ["u1", "u2", "u4", "u5"]);
    assert_eq!(listed(&t, &n1), ["u2", "u4"]);
    assert_eq!(listed(&t, &n2), ["u1", "u5"]);
    assert!(t.get("u0").is_none() && t.get("u3").is_none());
    assert_eq!(t.get("u5").unwrap().uuid, "u5");
    // Every remaining one can still be removed by its slot.
    for i in [5, 1, 4, 2] {
        let node = if i % 2 == 0 { &mut n1 } else { &mut n2 };
        t.remove(s[i], Some(&mut app), Some(node));
    }
    assert!(app.is_empty() && n1.is_empty() && n2.is_empty() && t.is_empty());
}

#[test]
fn the_index_finds_a_uuid_by_the_rms_text_in_either_form() {
    let canon = "6f1c9a52-2a0b-4a39-9d7e-0c1f3b8b7a11";
    let minted = AllocUuid::new_v4();
    let mut t = AllocTable::default();
    let (mut app, mut node) = (AllocList::default(), AllocList::default());
    let mut with = |u: AllocUuid| {
        let mut a = alloc("x");
        Arc::make_mut(&mut a.record).uuid = u;
        t.insert(a, &mut app, &mut node)
    };
    let s_canon = with(AllocUuid::from_rm(canon));
    let s_minted = with(minted.clone());
    let s_key = with(AllocUuid::from_shared(&Arc::from("ask-1")));
    assert_eq!(t.len(), 3);
    // By the RM's text, by a copy of it, by the held UUID.
    assert_eq!(t.slot_of(canon), Some(s_canon));
    assert_eq!(t.slot_of(&canon.to_string()), Some(s_canon));
    assert_eq!(t.slot_of(&minted.to_string()), Some(s_minted));
    assert_eq!(t.slot_of(&minted), Some(s_minted));
    assert_eq!(t.slot_of("ask-1"), Some(s_key));
    // Another text is another UUID, whatever it looks like.
    assert_eq!(t.slot_of(&canon.to_uppercase()), None);
    assert_eq!(t.slot_of("ask-1 "), None);
    assert_eq!(t.slot_of(&"a".repeat(1 << 16)), None);
    let (k, a) = t.get_key_value(canon).unwrap();
    assert_eq!(
        (k.to_string(), a.uuid.to_string()),
        (canon.to_string(), canon.to_string())
    );
    let mut seen: Vec<String> = t.iter().map(|(u, _)| u.to_string()).collect();
    seen.sort();
    let mut want = vec![canon.to_string(), minted.to_string(), "ask-1".to_string()];
    want.sort();
    assert_eq!(seen, want);
    t.remove(s_canon, Some(&mut app), Some(&mut node));
    t.remove(s_key, Some(&mut app), Some(&mut node));
    assert_eq!((t.slot_of(canon), t.slot_of("ask-1")), (None, None));
    assert_eq!(t.len(), 1);
}

/// The facts of `slot` are those of its record, its age kept.
fn facts_follow(t: &AllocTable, slot: AllocSlot, born: u64) {
    let (f, a) = (t.facts(slot), t.at(slot));
    assert_eq!(f.resource, a.resource);
    assert_eq!(f.priority, a.priority);
    assert_eq!(
        (f.placeholder, f.preempt_self, f.originator),
        (a.placeholder, a.preempt_self, a.originator)
    );
    assert_eq!(f.required_node, a.tags.contains_key(TAG_REQUIRED_NODE));
    assert_eq!((f.born, f.hour), (born, t.hour(slot)));
}

#[test]
fn facts_follow_the_record_through_replace_and_adopt() {
    let mut t = AllocTable::default();
    let (mut app, mut node) = (AllocList::default(), AllocList::default());
    t.set_hour(7);
    let s = t.insert(alloc("a"), &mut app, &mut node);
    let born = t.born(s);
    facts_follow(&t, s, born);
    assert_eq!(t.hour(s), 7);
    // A resize or swap puts another record in the slot: the facts are
    // its, the age stays.
    t.set_hour(8);
    let mut other = (*alloc("b").record).clone();
    other.resource = crate::scheduler::resource::Resource::from_pairs([("vcore", 3)]).unwrap();
    other.priority = -4;
    other.placeholder = true;
    other.preempt_self = false;
    other.originator = true;
    other.tags = crate::scheduler::tags::Tags::from(BTreeMap::from([(
        TAG_REQUIRED_NODE.into(),
        "n".into(),
    )]));
    t.replace(
        s,
        Allocation {
            record: Arc::new(other.clone()),
            queue: 0,
        },
    );
    facts_follow(&t, s, born);
    assert!(t.facts(s).required_node && t.facts(s).placeholder);
    assert_eq!(t.hour(s), 7);
    let real = t.insert_in_flight(alloc("c"), &mut node);
    let born = t.born(real);
    other.uuid = "c".into();
    t.adopt(
        real,
        Allocation {
            record: Arc::new(other),
            queue: 0,
        },
        &mut app,
    );
    facts_follow(&t, real, born);
    assert_eq!((t.facts(real).priority, t.hour(real)), (-4, 8));
}

#[test]
fn the_index_follows_growth_and_removals_in_both_forms() {
    // Enough entries to regrow the table several times: every probe
    // and rehash reads the UUID from the slot's record.
    let mut t = AllocTable::default();
    let (mut app, mut node) = (AllocList::default(), AllocList::default());
    let uuids: Vec<AllocUuid> = (0..5_000)
        .map(|i| {
            if i % 2 == 0 {
                AllocUuid::new_v4()
            } else {
                AllocUuid::from_rm(&format!("key-{i}"))
            }
        })
        .collect();
    let slots: Vec<AllocSlot> = uuids
        .iter()
        .map(|u| {
            let mut a = alloc("x");
            Arc::make_mut(&mut a.record).uuid = u.clone();
            t.insert(a, &mut app, &mut node)
        })
        .collect();
    for (i, u) in uuids.iter().enumerate() {
        assert_eq!(t.slot_of(&u.to_string()), Some(slots[i]));
    }
    for i in (0..5_000).step_by(3) {
        t.remove(slots[i], Some(&mut app), Some(&mut node));
    }
    for (i, u) in uuids.iter().enumerate() {
        let want = (i % 3 != 0).then_some(slots[i]);
        assert_eq!(t.slot_of(u), want, "{u}");
    }
    assert_eq!(t.len(), 5_000 - 1_667);
}

#[test]
fn in_flight_entries_join_the_index_when_adopted() {
    let mut t = AllocTable::default();
    let (mut app, mut node) = (AllocList::default(), AllocList::default());
    let ph = t.insert(alloc("ph"), &mut app, &mut node);
    let real = t.insert_in_flight(alloc("real"), &mut node);
    assert!(t.get("real").is_none() && !t.is_indexed(real));
    assert_eq!(t.len(), 1);
    assert_eq!(listed(&t, &node), ["ph", "real"]);
    t.adopt(real, alloc("real"), &mut app);
    assert_eq!(t.slot_of("real"), Some(real));
    assert_eq!(listed(&t, &app), ["ph", "real"]);
    // Same-node replacement keeps the slot and the positions.
    let old = t.replace(ph, alloc("ph2"));
    assert_eq!(old.uuid, "ph");
    assert!(t.get("ph").is_none());
    assert_eq!(t.slot_of("ph2"), Some(ph));
    assert_eq!(listed(&t, &node), ["ph2", "real"]);
    t.remove(ph, Some(&mut app), Some(&mut node));
    assert_eq!(listed(&t, &app), ["real"]);
    assert_eq!(listed(&t, &node), ["real"]);
}

/// Entries found through the index, or waiting to join it.
fn hashed(t: &AllocTable) -> usize {
    t.index.len() + t.unfiled.len()
}

/// `alloc` with UUID `u`.
fn with_uuid(u: &AllocUuid) -> Allocation {
    let mut a = alloc("x");
    Arc::make_mut(&mut a.record).uuid = u.clone();
    a
}

#[test]
fn a_minted_uuid_is_found_by_its_slot_without_the_index() {
    let mut t = AllocTable::default();
    let (mut app, mut node) = (AllocList::default(), AllocList::default());
    let u = t.mint_uuid();
    let s = t.insert(with_uuid(&u), &mut app, &mut node);
    let rm = t.insert(alloc("rm-1"), &mut app, &mut node);
    assert_eq!((t.len(), hashed(&t), t.by_slot), (2, 1, 1));
    assert_eq!(t.slot_of(&u.to_string()), Some(s));
    assert_eq!(t.slot_of(&u), Some(s));
    assert_eq!(t.slot_of("rm-1"), Some(rm));
    assert!(t.is_indexed(s));
    assert_eq!(t.iter().count(), 2);
    // Gone, it is found no more; its slot's next UUID is another.
    t.remove(s, Some(&mut app), Some(&mut node));
    assert_eq!((t.slot_of(&u), t.len(), t.by_slot), (None, 1, 0));
    let again = t.mint_uuid();
    assert_ne!(again, u);
    let s2 = t.insert(with_uuid(&again), &mut app, &mut node);
    assert_eq!(s2, s);
    assert_eq!((t.slot_of(&again), t.slot_of(&u)), (Some(s), None));
}

#[test]
fn a_minted_uuid_elsewhere_than_its_slot_goes_through_the_index() {
    let mut t = AllocTable::default();
    let (mut app, mut node) = (AllocList::default(), AllocList::default());
    // Minted for slot 0, which another allocation takes first.
    let stale = t.mint_uuid();
    let other = t.insert(alloc("rm-1"), &mut app, &mut node);
    let s = t.insert(with_uuid(&stale), &mut app, &mut node);
    assert_ne!(s, other);
    assert_eq!((hashed(&t), t.by_slot), (2, 0));
    assert_eq!(t.slot_of(&stale), Some(s));
    // An RM sends back a released allocation's UUID (a node registering
    // again with it) while its slot holds a newer one.
    let mut t = AllocTable::default();
    let old = t.mint_uuid();
    let s0 = t.insert(with_uuid(&old), &mut app, &mut node);
    t.remove(s0, Some(&mut app), Some(&mut node));
    let newer = t.mint_uuid();
    assert_eq!(t.insert(with_uuid(&newer), &mut app, &mut node), s0);
    assert_eq!(t.slot_of(&old), None);
    let back = t.insert(with_uuid(&old), &mut app, &mut node);
    assert_eq!((t.slot_of(&old), t.slot_of(&newer)), (Some(back), Some(s0)));
    assert_eq!((t.len(), hashed(&t), t.by_slot), (2, 1, 1));
    // A mint that was never inserted is never minted again.
    let dropped = t.mint_uuid();
    assert_ne!(t.mint_uuid(), dropped);
}

#[test]
fn replace_and_adopt_move_between_slot_and_index() {
    let mut t = AllocTable::default();
    let (mut app, mut node) = (AllocList::default(), AllocList::default());
    let u = t.mint_uuid();
    let s = t.insert(with_uuid(&u), &mut app, &mut node);
    // A placeholder's slot takes its real allocation, an RM-keyed one.
    let old = t.replace(s, alloc("real"));
    assert_eq!(old.uuid, u);
    assert_eq!((t.slot_of(&u), t.slot_of("real")), (None, Some(s)));
    assert_eq!((t.len(), hashed(&t), t.by_slot), (1, 1, 0));
    // A swap's real allocation in flight is found once adopted, by the
    // slot its minted UUID names.
    let v = t.mint_uuid();
    let real = t.insert_in_flight(with_uuid(&v), &mut node);
    assert_eq!((t.slot_of(&v), t.len()), (None, 1));
    t.adopt(real, with_uuid(&v), &mut app);
    assert_eq!(t.slot_of(&v), Some(real));
    assert_eq!((t.len(), hashed(&t), t.by_slot), (2, 1, 1));
    t.remove(real, Some(&mut app), Some(&mut node));
    t.remove(s, Some(&mut app), Some(&mut node));
    assert!(t.is_empty());
}

#[test]
fn allocations_waiting_for_the_index_are_found_and_join_it_in_batches() {
    let mut t = AllocTable::default();
    let (mut app, mut node) = (AllocList::default(), AllocList::default());
    // Outside a pass, inserts are made at once.
    t.insert(alloc("early"), &mut app, &mut node);
    assert_eq!((t.index.len(), t.unfiled.len()), (1, 0));
    t.batch_inserts();
    let n = BATCH_FROM + UNFILED_MAX + 10;
    let slots: Vec<AllocSlot> = (0..n)
        .map(|i| t.insert(alloc(&format!("key-{i}")), &mut app, &mut node))
        .collect();
    // Up to BATCH_FROM they joined one by one, the next UNFILED_MAX as one
    // batch; the rest wait, found all the same.
    assert_eq!(
        (t.index.len(), t.unfiled.len(), t.len()),
        (BATCH_FROM + UNFILED_MAX, 11, n + 1)
    );
    for (i, &s) in slots.iter().enumerate() {
        assert_eq!(t.slot_of(&format!("key-{i}")), Some(s));
    }
    assert_eq!(t.slot_of("key-x"), None);
    // Removing one makes the waiting join first, the pass going on.
    t.remove(slots[n - 1], Some(&mut app), Some(&mut node));
    assert_eq!((t.index.len(), t.unfiled.len()), (n, 0));
    assert_eq!(t.slot_of(&format!("key-{}", n - 1)), None);
    t.insert(alloc("late"), &mut app, &mut node);
    assert_eq!(t.unfiled.len(), 1);
    // The pass ends: all in the index, and the next insert at once.
    t.file_unfiled();
    assert_eq!((t.index.len(), t.unfiled.len(), t.len()), (n + 1, 0, n + 1));
    assert!(t.get("late").is_some());
    t.insert(alloc("after"), &mut app, &mut node);
    assert_eq!((t.index.len(), t.unfiled.len()), (n + 2, 0));
}

/// A random-steps test's removal: one allocation of `model`, at random.
fn remove_one(
    rng: &mut fastrand::Rng,
    t: &mut AllocTable,
    model: &mut BTreeMap<String, AllocSlot>,
    app: &mut AllocList,
    node: &mut AllocList,
) {
    let k = model.keys().nth(rng.usize(..model.len())).unwrap().clone();
    let s = model.remove(&k).unwrap();
    t.remove(s, Some(app), Some(node));
}

/// A random-steps test's batching: the waiting filed, or a pass begun.
fn file_or_batch(rng: &mut fastrand::Rng, t: &mut AllocTable) {
    if rng.bool() {
        t.file_unfiled();
    } else {
        t.batch_inserts();
    }
}

#[test]
fn the_table_agrees_with_a_map_through_random_steps() {
    // Inserts of the table's own and of RM UUIDs, removals, batches filed
    // at random points: every UUID ever used is looked up after each step.
    let mut rng = fastrand::Rng::with_seed(33);
    let mut t = AllocTable::default();
    let (mut app, mut node) = (AllocList::default(), AllocList::default());
    let mut model: BTreeMap<String, AllocSlot> = BTreeMap::new();
    let mut used: Vec<String> = Vec::new();
    for step in 0..6_000 {
        match rng.u8(0..10) {
            0..=5 => {
                let u = if rng.bool() {
                    t.mint_uuid()
                } else {
                    AllocUuid::from_rm(&format!("rm-{step}"))
                };
                let s = t.insert(with_uuid(&u), &mut app, &mut node);
                model.insert(u.to_string(), s);
                used.push(u.to_string());
            }
            6..=8 if !model.is_empty() => {
                remove_one(&mut rng, &mut t, &mut model, &mut app, &mut node)
            }
            _ => file_or_batch(&mut rng, &mut t),
        }
        assert_eq!(t.len(), model.len(), "step {step}");
        if step % 97 == 0 {
            for u in &used {
                assert_eq!(
                    t.slot_of(u.as_str()),
                    model.get(u).copied(),
                    "{u} at {step}"
                );
            }
        }
    }
    for u in &used {
        assert_eq!(t.slot_of(u.as_str()), model.get(u).copied(), "{u}");
    }
}

#[test]
fn a_probed_hash_files_the_uuid_where_a_fresh_lookup_finds_it() {
    // SI v1.x: an ask's key is probed when it arrives and filed with that
    // hash when placed, other inserts and removals in between (filed at
    // once or in a pass's batch). Keys in both held forms.
    let mut rng = fastrand::Rng::with_seed(57);
    let mut t = AllocTable::default();
    let (mut app, mut node) = (AllocList::default(), AllocList::default());
    let mut model: BTreeMap<String, AllocSlot> = BTreeMap::new();
    let mut probed: Vec<(AllocUuid, KeyHash)> = Vec::new();
    for step in 0..6_000 {
        match rng.u8(0..10) {
            0..=3 => {
                let u = if rng.bool() {
                    AllocUuid::new_v4()
                } else {
                    AllocUuid::from_shared(&Arc::from(format!("ask-{step}")))
                };
                let text = u.to_string();
                let (found, h) = t.probe(text.as_str());
                assert_eq!(found, None);
                // The same hash whichever form it is looked up by.
                assert_eq!(t.probe(&u), (None, h));
                probed.push((u, h));
            }
            4..=6 if !probed.is_empty() => {
                let (u, h) = probed.swap_remove(rng.usize(..probed.len()));
                let s = t.insert_hashed(with_uuid(&u), &mut app, &mut node, Some(h));
                assert_eq!(t.probe(&u), (Some(s), h), "step {step}");
                model.insert(u.to_string(), s);
            }
            7 if !model.is_empty() => remove_one(&mut rng, &mut t, &mut model, &mut app, &mut node),
            _ => file_or_batch(&mut rng, &mut t),
        }
        assert_eq!(t.len(), model.len(), "step {step}");
    }
    t.file_unfiled();
    for (u, &s) in &model {
        assert_eq!(t.slot_of(u.as_str()), Some(s), "{u}");
        assert_eq!(t.probe(u.as_str()).0, Some(s), "{u}");
    }
    for (u, _) in &probed {
        assert_eq!(t.probe(u).0, None, "{u}");
    }
}
