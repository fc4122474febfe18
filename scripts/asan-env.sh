# Sourced (POSIX sh) by scripts/sanitizers.sh, scripts/fuzz.sh and
# tests/c/Makefile (asan): the one nightly build in target/asan that the
# ASan test run, the C test under ASan and the fuzz targets share.
#
# - AddressSanitizer, plus libFuzzer's coverage instrumentation (what
#   `cargo fuzz build` adds, less `--cfg fuzzing` and one codegen unit).
#   The instrumented test binaries get the coverage callbacks' empty
#   defaults from the ASan runtime; the fuzz targets get libFuzzer's.
# - Integer overflow checks: overflow is a finding too.
# - Debug assertions: the core's invariant checks (`debug_assert!`: no
#   duplicate UUID, node or order key, lists in step) run under the
#   integration tests and every fuzz input; the shipped release build, and
#   the release test stage that shares it, leave them out.
# - Line tables only for debug info, as `cargo fuzz build` has it: reports
#   keep their file:line frames, and the build writes less.
# - An explicit --target, so that build scripts and proc macros are built
#   without these flags.
# The same flags, profile and package selection (ASAN_PACKAGES) everywhere,
# so that cargo builds the library and its dependencies once. The
# selection leaves out the simulator: its code is safe Rust over the
# library's safe API, and it would bring its command-line dependencies.
ASAN_PACKAGES="--workspace --exclude sicore-sim"
ASAN_TRIPLE=x86_64-unknown-linux-gnu
ASAN_TARGET_DIR=target/asan
RUSTFLAGS="-Zsanitizer=address -Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares \
-Cllvm-args=-sanitizer-coverage-stack-depth"
CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true
CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true
CARGO_PROFILE_RELEASE_DEBUG=line-tables-only
export ASAN_PACKAGES ASAN_TRIPLE ASAN_TARGET_DIR RUSTFLAGS CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS \
  CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS CARGO_PROFILE_RELEASE_DEBUG
