//! The direct SI v1.x `AllocationRequest` decoder (src/rmproxy/v1/wire.rs)
//! against prost plus the checks and conversion of convert.rs: the same
//! update, or the same error.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Err(e) = sicore::fuzzing::compare_v1_allocation_decoders(bytes) {
        panic!("{e}");
    }
});
