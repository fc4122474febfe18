//! A live scheduler driven by two RMs with random, sometimes hostile,
//! requests through the public Rust API; after each request the state dump
//! must balance (tests/it/common/books.rs) and every partition must hold only
//! what its own RM made; at the end each RM must hold exactly the
//! allocations of its partitions.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../tests/it/common/books.rs"]
mod books;
#[allow(dead_code)]
#[path = "../../tests/it/common/rms.rs"]
mod rms;

use rms::{Actor, Choose, World};

/// Choices read from the fuzzer's input; zeros once it runs out.
struct Input<'a>(Unstructured<'a>);

impl Choose for Input<'_> {
    fn below(&mut self, n: u32) -> u32 {
        self.0.int_in_range(0..=n - 1).unwrap_or(0)
    }
}

/// Requests per input: enough for allocations, releases and removals to
/// interleave, few enough for hundreds of inputs a second.
const MAX_STEPS: usize = 48;

fuzz_target!(|data: &[u8]| {
    let mut c = Input(Unstructured::new(data));
    // One input in four uses rmIDs and partition names whose internal names
    // could collide: "x]y" + "default" against "x" + "y]default".
    let rms: &[(&str, &str)] = if c.one_in(4) {
        &[("x]y", "plain"), ("x", "tricky")]
    } else {
        &[("rm1", "plain"), ("rm2", "plain")]
    };
    let w = World::new(rms);
    let mut actors = [Actor::new(0, "", true, true), Actor::new(1, "", true, true)];
    for step in 0..MAX_STEPS {
        if c.0.is_empty() {
            break;
        }
        let a = c.below(2) as usize;
        actors[a].step(&w, &mut c);
        if let Err(e) = w.check() {
            panic!("after request {step} (RM {}): {e}", w.rms[a].id);
        }
    }
    if let Err(e) = w.check_rm_views(Duration::from_secs(10)) {
        panic!("at the end: {e}");
    }
});
