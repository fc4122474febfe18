//! The committed C header must be what the build generates, so C, Go and
//! Python users always see the real ABI.

#[test]
fn committed_header_matches_the_generated_one() {
    let generated = include_str!(concat!(env!("OUT_DIR"), "/sicore.h"));
    let committed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/sicore.h"))
            .expect("include/sicore.h must exist");
    assert!(
        generated == committed,
        "include/sicore.h is stale: run `SICORE_UPDATE_HEADER=1 cargo build` and commit the result"
    );
}
