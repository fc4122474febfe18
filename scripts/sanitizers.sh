#!/usr/bin/env bash
# The Rust tests and the C test under AddressSanitizer with LeakSanitizer.
# Nightly rustc (-Zsanitizer=address), an explicit --target so that build
# scripts and proc macros are built without the sanitizer, the system
# allocator (no mimalloc, so that ASan sees every allocation), and a
# target directory of its own (target/asan).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  rustup toolchain install nightly --profile minimal
fi

triple=x86_64-unknown-linux-gnu
export RUSTFLAGS="-Zsanitizer=address"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1"

# Rust: unit and integration tests (doc tests would need rustdoc flags too
# and test nothing the others do not). With the system allocator the two
# memory tests (soak, queue_churn) run here: they count live heap bytes
# with their own global allocator, which ASan's quarantine does not
# disturb, and mimalloc (the default build) would not let them install.
cargo +nightly test --release --target "$triple" --target-dir target/asan \
  --no-default-features --no-fail-fast --tests

# C: the test program, built with -fsanitize=address, against the
# instrumented library.
make -C tests/c asan
