//! The direct `AllocationRequest` decoder (src/rmproxy/wire.rs) against
//! prost plus `from_proto`: the same buffers accepted, the same update.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Err(e) = sicore::fuzzing::compare_allocation_decoders(bytes) {
        panic!("{e}");
    }
});
