#!/usr/bin/env bash
# The Rust integration tests and the C test under AddressSanitizer with
# LeakSanitizer, in the nightly build that the fuzz targets share
# (scripts/asan-env.sh: the flags, target/asan, an explicit --target). The
# library uses the system allocator (no mimalloc), so that ASan sees every
# allocation.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  rustup toolchain install nightly --profile minimal
fi

. scripts/asan-env.sh
# Eight tests at a time: they mostly wait (scripts/test.sh).
export RUST_TEST_THREADS=${RUST_TEST_THREADS:-8}
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1"

# Rust: the integration tests (tests/it: RMs that speak to the library
# through its C ABI, where the unsafe code is), built with the fuzz
# targets in one go, so that the library is built once for both. The unit
# tests test safe code through safe calls, and run in the release stage;
# doc tests would need rustdoc flags too. The memory tests (tests/memory)
# are not selected: they count heap bytes and run natively with the system
# allocator (scripts/test.sh, after valgrind), where they take seconds, not
# minutes.
# shellcheck disable=SC2086  # ASAN_PACKAGES is a list of arguments
cargo +nightly build --release --target "$ASAN_TRIPLE" --target-dir "$ASAN_TARGET_DIR" \
  --no-default-features $ASAN_PACKAGES --test it --bins
# shellcheck disable=SC2086
cargo +nightly test --release --target "$ASAN_TRIPLE" --target-dir "$ASAN_TARGET_DIR" \
  --no-default-features $ASAN_PACKAGES --test it --no-fail-fast

# C: the test program, built with -fsanitize=address, against the
# instrumented library.
make -C tests/c asan
