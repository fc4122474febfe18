use super::*;
use si::event_record::Type;

fn now() -> Instant {
    Instant::now()
}

#[test]
fn keeps_the_latest_record_per_object() {
    let mut s = EventStore::default();
    s.add(record(Type::App, "a", "", "first", String::new()), now());
    s.add(record(Type::App, "a", "", "second", String::new()), now());
    s.add(
        record(Type::Request, "a", "app", "other kind", String::new()),
        now(),
    );
    let b = s.take_batch(now());
    assert_eq!(b.len(), 2);
    assert!(b.iter().any(|r| r.base.reason == "second"));
    assert!(!b.iter().any(|r| r.base.reason == "first"));
    assert!(s.take_batch(now()).is_empty());
    let st = s.stats();
    assert_eq!(
        (st.received, st.superseded, st.published, st.batches),
        (3, 1, 2, 1)
    );
}

#[test]
fn transition_records_are_kept_apart_in_both_editions() {
    for mut s in [EventStore::default(), EventStore::by_kind()] {
        s.add(
            record(
                Type::Request,
                "ask",
                "app",
                "UserQuotaAvailable",
                String::new(),
            ),
            now(),
        );
        s.add(
            record(
                Type::Request,
                "ask",
                "app",
                "InsufficientQueueResources",
                String::new(),
            ),
            now(),
        );
        s.add(
            record(Type::App, "app", "", "Accepted", String::new()),
            now(),
        );
        s.add(
            record(Type::App, "app", "", "AppCannotRunQuota", String::new()),
            now(),
        );
        let reasons: Vec<String> = s
            .take_batch(now())
            .into_iter()
            .map(|r| r.base.reason)
            .collect();
        assert_eq!(
            reasons,
            [
                "UserQuotaAvailable",
                "InsufficientQueueResources",
                "Accepted",
                "AppCannotRunQuota"
            ]
        );
    }
    // Other records of one object still coalesce in the v0.12 store.
    let mut s = EventStore::default();
    s.add(
        record(
            Type::Request,
            "ask",
            "app",
            "PredicateRefused",
            String::new(),
        ),
        now(),
    );
    s.add(
        record(
            Type::Request,
            "ask",
            "app",
            "InsufficientQueueResources",
            String::new(),
        ),
        now(),
    );
    assert_eq!(s.take_batch(now()).len(), 1);
}

#[test]
fn event_types_parse_with_a_default_and_name_unknown_ones() {
    let d = EventTypes::parse(&[]).unwrap();
    assert_eq!(d.names(), ["REQUEST", "NODE"]);
    assert!(!d.allows(TYPE_USERGROUP) && !d.for_edition(true).structured(TYPE_USERGROUP));
    assert!(!d.allows(Type::App as i32) && !d.allows(Type::Queue as i32));
    let all = EventTypes::parse(&["app".into(), " Queue".into(), "NODE".into()]).unwrap();
    assert_eq!(all.names(), ["APP", "NODE", "QUEUE"]);
    assert!(!all.allows(Type::Request as i32));
    assert!(!all.allows(0) && !all.allows(99) && !all.allows(-1));
    let e = EventTypes::parse(&["NODE".into(), "APPLICATION".into()]).unwrap_err();
    assert!(
        e.contains("'APPLICATION'") && e.contains("event_types") && e.contains("USERGROUP"),
        "{e}"
    );
    // USERGROUP is a type of the option; a v0.12 RM's partitions never
    // make it, nor structured QUEUE records.
    let ug = EventTypes::parse(&["usergroup".into(), "QUEUE".into()]).unwrap();
    assert_eq!(ug.names(), ["QUEUE", "USERGROUP"]);
    let v1 = ug.for_edition(true);
    assert!(v1.structured(TYPE_USERGROUP) && v1.structured(TYPE_QUEUE));
    assert_eq!(v1.names(), ["QUEUE", "USERGROUP"]);
    let v0 = ug.for_edition(false);
    assert!(!v0.allows(TYPE_USERGROUP) && !v0.structured(TYPE_QUEUE));
    assert!(v0.allows(TYPE_QUEUE), "the v0.12 QUEUE records stay");
    assert_eq!(v1.for_edition(false), v0);
    assert!(ug.any_structured() && !d.any_structured());
}

fn usage(user: &str, queue: &str, change: Change, mem: i64) -> Record {
    let mut r = si::Resource::default();
    r.resources
        .insert("memory".into(), si::Quantity { value: mem });
    structured(
        TYPE_USERGROUP,
        user,
        queue,
        change,
        Detail::UserResource,
        Some(r),
        String::new(),
    )
}

fn memory(r: &Record) -> i64 {
    r.structured
        .as_ref()
        .unwrap()
        .resource
        .as_ref()
        .unwrap()
        .resources["memory"]
        .value
}

#[test]
fn usage_records_of_one_key_add_up_and_others_stay_apart() {
    let mut s = EventStore::by_kind();
    s.add(usage("u", "root.a", Change::Add, 1), now());
    s.add(usage("u", "root.a", Change::Add, 2), now());
    s.add(usage("u", "root.a", Change::Remove, 4), now());
    s.add(usage("u", "root.b", Change::Add, 8), now());
    s.add(usage("v", "root.a", Change::Add, 16), now());
    let link = |change| {
        structured(
            TYPE_USERGROUP,
            "g",
            "app-1",
            change,
            Detail::AppLink,
            None,
            String::new(),
        )
    };
    s.add(link(Change::Set), now());
    s.add(link(Change::Remove), now());
    s.add(
        structured(
            TYPE_USERGROUP,
            "g",
            "app-2",
            Change::Set,
            Detail::AppLink,
            None,
            String::new(),
        ),
        now(),
    );
    let b = s.take_batch(now());
    let got: Vec<(String, String, Change, Detail)> = b
        .iter()
        .map(|r| {
            let st = r.structured.as_ref().unwrap();
            (
                r.base.object_id.clone(),
                r.base.group_id.clone(),
                st.change,
                st.detail,
            )
        })
        .collect();
    assert_eq!(got.len(), 7, "{got:?}");
    let add_a = b
        .iter()
        .find(|r| {
            r.base.object_id == "u"
                && r.base.group_id == "root.a"
                && r.structured.as_ref().unwrap().change == Change::Add
        })
        .unwrap();
    assert_eq!(memory(add_a), 3, "the two ADDs summed");
    assert!(got.contains(&("g".into(), "app-1".into(), Change::Remove, Detail::AppLink)));
    assert!(got.contains(&("g".into(), "app-1".into(), Change::Set, Detail::AppLink)));
    assert_eq!(s.stats().superseded, 1);
}

#[test]
fn structured_records_never_reach_a_v012_store_and_count_against_the_bound() {
    let mut s = EventStore::default();
    s.add(usage("u", "root.a", Change::Add, 1), now());
    assert_eq!(s.stats().received, 0);
    assert!(s.take_batch(now()).is_empty());
    let mut s = EventStore::new(true, 2);
    for q in ["root.a", "root.b", "root.c"] {
        s.add(usage("u", q, Change::Add, 1), now());
    }
    assert_eq!(s.stats().dropped_store_full, 1);
    assert_eq!(s.take_batch(now()).len(), 2);
}

#[test]
fn bounds_distinct_objects_and_counts_drops() {
    let mut s = EventStore::default();
    let many: Vec<Record> = (0..STORE_CAPACITY + 5)
        .map(|i| record(Type::Node, &format!("n{i}"), "", "r", String::new()).into())
        .collect();
    s.add_all(many, now());
    assert_eq!(s.stats().stored, STORE_CAPACITY as u64);
    assert_eq!(s.stats().dropped_store_full, 5);
    // An object already stored is still updated when the store is full.
    s.add(record(Type::Node, "n0", "", "again", String::new()), now());
    assert_eq!(s.stats().dropped_store_full, 5);
    s.add(record(Type::Node, "", "", "r", String::new()), now());
    assert_eq!(s.take_batch(now()).len(), STORE_CAPACITY);
}

#[test]
fn not_placed_records_repeat_once_per_interval_per_ask() {
    let t0 = Instant::now();
    let unfit =
        |key: &str, reason: &str| record(Type::Request, key, "app", reason, format!("{key} waits"));
    let mut s = EventStore::by_kind();
    s.add(unfit("k1", REASON_QUEUE_HEADROOM), t0);
    s.add(unfit("k1", REASON_PREDICATE_REFUSED), t0);
    s.add(unfit("k2", REASON_QUEUE_HEADROOM), t0);
    assert_eq!(s.take_batch(t0).len(), 3);
    // Every later flush inside the interval: nothing new for either ask.
    let mut at = t0;
    while at < t0 + REQUEST_EVENT_INTERVAL - Duration::from_secs(2) {
        at += Duration::from_secs(2);
        s.add(unfit("k1", REASON_QUEUE_HEADROOM), at);
        s.add(unfit("k1", REASON_PREDICATE_REFUSED), at);
        s.add(unfit("k2", REASON_QUEUE_HEADROOM), at);
        assert!(s.take_batch(at).is_empty(), "repeat inside the interval");
    }
    assert_eq!(s.stats().rate_limited, 3 * 7);
    // Other records of the ask are not limited.
    s.add(unfit("k1", "UserQuotaExceeded"), at);
    s.add(unfit("k1", "UserQuotaExceeded"), at);
    assert_eq!(s.take_batch(at).len(), 1);
    // Once the interval is over, one record per ask and reason again.
    let later = t0 + REQUEST_EVENT_INTERVAL;
    s.add(unfit("k1", REASON_QUEUE_HEADROOM), later);
    s.add(unfit("k1", REASON_QUEUE_HEADROOM), later);
    assert_eq!(s.take_batch(later).len(), 1);
    // The stamps of asks that went quiet are pruned at the flush.
    let quiet = later + REQUEST_EVENT_INTERVAL;
    assert!(s.take_batch(quiet).is_empty());
    assert!(s.last_repeat.is_empty(), "{:?}", s.last_repeat);
}

#[test]
fn asks_of_one_key_in_two_applications_are_limited_and_kept_apart() {
    let t0 = Instant::now();
    for mut s in [EventStore::default(), EventStore::by_kind()] {
        let unfit = |app: &str| {
            record(
                Type::Request,
                "pod",
                app,
                REASON_PREDICATE_REFUSED,
                format!("{app} waits"),
            )
        };
        s.add(unfit("app-a"), t0);
        s.add(unfit("app-b"), t0);
        let apps: Vec<String> = s
            .take_batch(t0)
            .into_iter()
            .map(|r| r.base.group_id)
            .collect();
        assert_eq!(apps, ["app-a", "app-b"]);
        // Each application's ask has its own interval.
        let later = t0 + Duration::from_secs(2);
        s.add(unfit("app-a"), later);
        assert!(s.take_batch(later).is_empty());
        s.add(unfit("app-c"), later);
        assert_eq!(s.take_batch(later).len(), 1);
    }
}

#[test]
fn a_replaced_record_that_never_went_out_does_not_hold_back_its_reason() {
    // SI v0.12: one record per object, so the headroom record replaces
    // the predicate one before the flush; the RM never got the latter.
    let t0 = Instant::now();
    let mut s = EventStore::default();
    let unfit = |reason: &str| record(Type::Request, "k1", "app", reason, String::new());
    s.add(unfit(REASON_PREDICATE_REFUSED), t0);
    s.add(unfit(REASON_QUEUE_HEADROOM), t0);
    let reasons: Vec<String> = s
        .take_batch(t0)
        .into_iter()
        .map(|r| r.base.reason)
        .collect();
    assert_eq!(reasons, [REASON_QUEUE_HEADROOM]);
    let later = t0 + Duration::from_secs(2);
    s.add(unfit(REASON_PREDICATE_REFUSED), later);
    s.add(
        unfit(REASON_QUEUE_HEADROOM),
        later + Duration::from_millis(1),
    );
    // The predicate record goes now; the headroom one (sent at t0) is
    // held back and does not replace it.
    let reasons: Vec<String> = s
        .take_batch(later)
        .into_iter()
        .map(|r| r.base.reason)
        .collect();
    assert_eq!(reasons, [REASON_PREDICATE_REFUSED]);
    assert_eq!(s.stats().rate_limited, 1);
}

#[test]
fn a_record_dropped_for_a_full_store_does_not_start_the_interval() {
    let t0 = Instant::now();
    let mut s = EventStore::new(true, 1);
    s.add(record(Type::Node, "n1", "", "NodeAdded", String::new()), t0);
    let unfit = record(
        Type::Request,
        "k1",
        "app",
        REASON_QUEUE_HEADROOM,
        String::new(),
    );
    s.add(unfit.clone(), t0);
    assert_eq!(s.stats().dropped_store_full, 1);
    assert_eq!(s.take_batch(t0).len(), 1);
    s.add(unfit, t0 + Duration::from_secs(2));
    assert_eq!(
        s.take_batch(t0 + Duration::from_secs(2)).len(),
        1,
        "the ask's record goes in"
    );
    // A smaller capacity bounds the next flush.
    s.set_capacity(2);
    for i in 0..5 {
        s.add(
            record(Type::Node, &format!("n{i}"), "", "r", String::new()),
            t0,
        );
    }
    assert_eq!(s.take_batch(t0).len(), 2);
}
