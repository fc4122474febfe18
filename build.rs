//! Compiles the protobuf schema with a pure-Rust compiler (no `protoc`) and
//! generates the C header with cbindgen.
//!
//! The header is written to `$OUT_DIR/sicore.h`; the committed copy in
//! `include/sicore.h` is compared against it by `tests/it/header_fresh.rs`.
//! Set `SICORE_UPDATE_HEADER=1` to refresh the committed copy.

use std::path::PathBuf;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());

    println!("cargo:rerun-if-changed=proto/si.proto");
    println!("cargo:rerun-if-changed=proto/sicore.proto");
    println!("cargo:rerun-if-changed=proto/si18/si.proto");
    println!("cargo:rerun-if-changed=proto/si18/sicore.proto");
    println!("cargo:rerun-if-changed=src/ffi");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    // The version macros in the header come from the package version.
    println!("cargo:rerun-if-changed=Cargo.toml");
    println!("cargo:rerun-if-env-changed=SICORE_UPDATE_HEADER");

    let descriptors = protox::compile(["si.proto", "sicore.proto"], ["proto"])
        .expect("proto/ files must compile");
    // Map fields (resources, tags, attributes) as BTreeMap: every message
    // carries a few small maps, and a std HashMap costs a random seed and
    // SipHash per entry on each decode; a B-tree of two or three entries is
    // cheaper, and encodes in a stable order.
    prost_build::Config::new()
        .btree_map(["."])
        .compile_fds(descriptors)
        .expect("generating Rust code from the protobuf descriptors");

    // SI v1.x declares the same package, messages and extension as v0.12,
    // which one descriptor pool cannot hold, and prost names its output
    // after the package: a second pass into a folder of its own.
    let si18_out = out_dir.join("si18");
    std::fs::create_dir_all(&si18_out).expect("creating the SI v1.x output folder");
    let descriptors = protox::compile(["si.proto", "sicore.proto"], ["proto/si18"])
        .expect("proto/si18/ files must compile");
    prost_build::Config::new()
        .btree_map(["."])
        .out_dir(&si18_out)
        .compile_fds(descriptors)
        .expect("generating Rust code from the SI v1.x descriptors");

    let mut config = cbindgen::Config::from_file(manifest_dir.join("cbindgen.toml"))
        .expect("cbindgen.toml must parse");
    // The ABI version as macros, from Cargo.toml, so that C code can check
    // at compile time what `sicore_version()` reports at run time.
    let env = |k: &str| std::env::var(k).unwrap();
    config.after_includes = Some(format!(
        "\n// The version of this header (Cargo.toml's); `sicore_version()` returns the\n\
         // library's. A library with the same ABI version is ABI-compatible: the\n\
         // same major version, and while that is 0 the same minor (CHANGELOG.md).\n\
         #define SICORE_VERSION_MAJOR {}\n\
         #define SICORE_VERSION_MINOR {}\n\
         #define SICORE_VERSION_PATCH {}\n\
         #define SICORE_VERSION_STRING \"{}\"",
        env("CARGO_PKG_VERSION_MAJOR"),
        env("CARGO_PKG_VERSION_MINOR"),
        env("CARGO_PKG_VERSION_PATCH"),
        env("CARGO_PKG_VERSION"),
    ));
    let header = out_dir.join("sicore.h");
    cbindgen::Builder::new()
        .with_crate(&manifest_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen must generate the C header")
        .write_to_file(&header);
    if std::env::var_os("SICORE_UPDATE_HEADER").is_some() {
        std::fs::copy(&header, manifest_dir.join("include/sicore.h"))
            .expect("copying the header to include/");
    }
}
