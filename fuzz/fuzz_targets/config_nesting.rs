//! Configuration text in nested flow collections (`[[[{...`), shallow and
//! thousands deep: refused naming the nesting bound past it, parsed or
//! refused within it, never a panic (`sicore::fuzzing::check_nested_config`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Err(e) = sicore::fuzzing::check_nested_config(bytes) {
        panic!("{e}");
    }
});
