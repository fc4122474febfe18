//! How many allocations one message carries. A pass can place up to 2,048
//! allocations; the RM hears of them in `UpdateAllocation` messages (and,
//! on SI v0.12, `ReSyncSchedulerCache` ones) of at most 256 allocations
//! each, in the order they were made. The reference sends one message per
//! allocation, so an RM already takes any split; one message per pass
//! cost fresh memory for the encoding and the RM's decode on every large
//! pass (docs/performance-large.md, "Bounded batches").

use std::collections::HashSet;

use crate::common::v1::V1Rm;
use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore_c_rm::v1 as rmv1;

/// The most allocations a message carries (docs/c-api.md, the callbacks' order).
const MAX_BATCH: usize = 256;
const ASKS: usize = 700;

/// The batches add up to `total`, none is over the bound, and at least one
/// reached it (so the split was exercised, not merely allowed).
fn assert_bounded(what: &str, batches: &[usize], total: usize) {
    assert_eq!(batches.iter().sum::<usize>(), total, "{what}: {batches:?}");
    assert!(
        batches.iter().all(|n| *n <= MAX_BATCH),
        "{what} over {MAX_BATCH}: {batches:?}"
    );
    assert!(
        batches.contains(&MAX_BATCH),
        "{what}: no batch reached {MAX_BATCH}, the pass was split earlier: {batches:?}"
    );
}

fn v012_harness(with_predicates: bool) -> Harness {
    let h = Harness::with_behaviour(
        yaml_options(ONE_QUEUE),
        Behaviour {
            with_predicates,
            ..Default::default()
        },
    );
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    assert_eq!(h.nodes(vec![node("n1", 1_000_000, 10_000)]).0, SICORE_OK);
    h.wait("node", |s| s.nodes_accepted.len() == 1);
    assert_eq!(h.submit(app("app-1", "root.a")), Ok(()));
    h
}

#[test]
fn one_ask_of_700_allocations_reaches_a_v012_rm_in_bounded_messages() {
    let h = v012_harness(false);
    let (st, msg) = h.asks(vec![ask("app-1", "many", 10, 1, ASKS as i32)]);
    assert_eq!(st, SICORE_OK, "{msg}");
    h.wait("every allocation", |s| s.allocations.len() == ASKS);
    let s = h.seen(Seen::clone);
    assert_bounded("UpdateAllocation", &s.alloc_batches, ASKS);
    assert_bounded("ReSyncSchedulerCache", &s.assume_batches, ASKS);
    let uuids: HashSet<_> = s.allocations.iter().map(|a| a.uuid.clone()).collect();
    assert_eq!(uuids.len(), ASKS, "every allocation has its own UUID");
    // One ask: the log names its key per allocation, so only the order of
    // the two kinds is checked here.
    let first_alloc = s.log.iter().position(|e| e.starts_with("alloc:"));
    let first_assume = s.log.iter().position(|e| e.starts_with("assume:"));
    assert!(first_assume < first_alloc, "{:?}", &s.log[..4]);
}

#[test]
fn single_asks_with_predicates_reach_a_v012_rm_in_bounded_messages_each_assumed_first() {
    let h = v012_harness(true);
    let asks = (0..ASKS)
        .map(|i| ask("app-1", &format!("k{i:04}"), 10, 1, 1))
        .collect();
    let (st, msg) = h.asks(asks);
    assert_eq!(st, SICORE_OK, "{msg}");
    h.wait("every allocation", |s| s.allocations.len() == ASKS);
    let s = h.seen(Seen::clone);
    assert_bounded("UpdateAllocation", &s.alloc_batches, ASKS);
    assert_eq!(s.assume_batches.iter().sum::<usize>(), ASKS);
    assert!(s.assume_batches.iter().all(|n| *n <= MAX_BATCH));
    assert_resync_before_announcement(&s);
    let keys: HashSet<_> = s.allocations.iter().map(|a| &a.allocation_key).collect();
    assert_eq!(keys.len(), ASKS, "each ask allocated once");
    assert_eq!(s.predicate_calls.len(), ASKS, "one check per allocation");
}

#[test]
fn single_asks_reach_a_v1_rm_in_bounded_messages_in_order() {
    let rm = V1Rm::new(ONE_QUEUE);
    rm.node("n1", 1_000_000);
    rm.app("app-1", "root.a");
    let asks = (0..ASKS)
        // Memory only: `V1Rm::node` gives the node 10 vcores.
        .map(|i| rmv1::ask("app-1", &format!("k{i:04}"), 10, 0))
        .collect();
    rm.allocate(asks, vec![]);
    let s = rm.rec.wait("every allocation", |s| s.new.len() == ASKS);
    assert_bounded("UpdateAllocation", &s.new_batches, ASKS);
    let keys: Vec<_> = s.new.iter().map(|a| a.allocation_key.clone()).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), ASKS, "each ask allocated once");
    // Same priority and submission time: placed, and so told, in key order.
    assert_eq!(keys, sorted, "allocations reach the RM in the order made");
}
