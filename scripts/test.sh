#!/usr/bin/env bash
# Runs every test of the project: Rust, C (under valgrind), Go and Python.
# On a fresh machine it first installs what the tests need (Debian packages
# when run as root, Python packages into a virtualenv under target/).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

# Each step prints the time since the run started, to show where CI time goes.
step() { printf '\n== [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

need_apt=()
command -v protoc-c >/dev/null 2>&1 || need_apt+=(protobuf-c-compiler)
[ -f /usr/include/protobuf-c/protobuf-c.h ] || need_apt+=(libprotobuf-c-dev)
# si.proto imports google/protobuf/descriptor.proto, shipped by libprotobuf-dev.
[ -f /usr/include/google/protobuf/descriptor.proto ] || need_apt+=(libprotobuf-dev)
command -v make >/dev/null 2>&1 || need_apt+=(make)
command -v valgrind >/dev/null 2>&1 || need_apt+=(valgrind)
# The install test (scripts/install-test.sh): pkg-config, CMake, a C++ compiler.
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)
command -v c++ >/dev/null 2>&1 || need_apt+=(g++)
# SICORE_TEST_MUSL=1: the install test also builds and links for musl.
if [ "${SICORE_TEST_MUSL:-0}" = 1 ]; then
  command -v musl-gcc >/dev/null 2>&1 || need_apt+=(musl-tools)
fi
# A cargo-c already on PATH is used; else the one this script builds into
# target/tools (below).
export PATH="$PATH:$root/target/tools/bin"
# cargo-c builds the cargo crate, which links the system OpenSSL.
if ! command -v cargo-cinstall >/dev/null 2>&1; then
  [ -f /usr/include/openssl/ssl.h ] || need_apt+=(libssl-dev)
fi
# The simulator's HTML report is checked in headless Chromium, with the
# font the report asks for first (a minimal image may have no font at all).
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need_apt+=(fonts-dejavu-core)
if [ ${#need_apt[@]} -gt 0 ]; then
  step "installing Debian packages: ${need_apt[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing ${need_apt[*]}; run as root or install them" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi

# cargo-c (crates.io; Debian 12's 0.9.14 cannot read Cargo.lock v4) is
# needed only by the install test near the end. It builds in the background
# from here on, at the lowest CPU priority, on the core that the
# single-threaded stages leave idle; the install test waits for it. It is a
# debug build without debuginfo, into target/tools rather than
# ~/.cargo/bin (docs/testing.md, "What they cost", has the measurements).
# 0.10.24 is the newest release that builds with rustc 1.95.
cargo_c_pid=
cargo_c_log=$root/target/cargo-c-install.log
if ! command -v cargo-cinstall >/dev/null 2>&1; then
  step "building cargo-c 0.10.24 in the background (into target/tools; log: target/cargo-c-install.log)"
  mkdir -p "$root/target"
  # Its own process group (job control on for this one start), so that the
  # trap below ends its rustc processes too; not its own session, which
  # autogroup scheduling would give half the machine (docs/testing.md).
  set -m
  # Only cargo-cinstall: each of cargo-c's four commands is an 85 MB
  # binary that links the whole cargo crate.
  CARGO_PROFILE_DEV_DEBUG=0 nice -n 19 cargo install --locked --quiet --debug \
    --root "$root/target/tools" cargo-c --version 0.10.24 --bin cargo-cinstall \
    < /dev/null > "$cargo_c_log" 2>&1 &
  cargo_c_pid=$!
  set +m
fi
# A failing stage ends the run; what runs in the background (cargo-c, the
# install test) must not outlive it.
install_pid=
trap 'for p in $cargo_c_pid $install_pid; do kill -- "-$p" 2>/dev/null || true; done' EXIT

step "rust: format and lints"
cargo fmt --check
# Every relative link of README.md, docs/ and CHANGELOG.md points at a file.
python3 tests/docs_links.py
cargo clippy --all-targets -- -D warnings
# The public API's rustdoc builds without a warning (broken or private links).
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p sicore

# The declared rust-version (Cargo.toml) builds, with the locked
# dependencies: `cargo check` of the default members (the library, the
# simulator, the C test RM; not the nightly-only fuzz targets) on
# that toolchain (minimal profile, installed when missing; its own target
# directory). Measured on the 2-core machine: ~30 s to install, ~2 min of
# CPU (4.5 min wall, shared) for a cold check, seconds when warm.
msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
step "rust: rust-version $msrv builds (cargo +$msrv check)"
rustup run "$msrv" rustc --version >/dev/null 2>&1 || rustup toolchain install "$msrv" --profile minimal
cargo +"$msrv" check --locked --target-dir target/msrv

# Every release build here has integer overflow checks on: the release
# code, except that an overflow panics instead of wrapping. One setting for
# the whole run, so that the library, the tests and the bindings' builds
# share target/release instead of building the dependencies once more in
# target/release-checked (the profile `cargo test --profile release-checked`
# gives the same outside this script).
export CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true
step "rust: build (release: libsicore.so, libsicore.a, sicore-sim)"
cargo build --release

step "c abi: exported symbols against abi/sicore.abi"
python3 scripts/test_abi_check.py
python3 scripts/abi_check.py

# The integration tests mostly wait (for timers, delays and the RM's
# threads): one run of tests/it took 100 s of wall time and 24 s of CPU
# with the default of one test per core, 34 s at eight at a time. The
# sanitizer stage runs them so too (scripts/sanitizers.sh).
export RUST_TEST_THREADS=${RUST_TEST_THREADS:-8}
step "rust: tests (release, overflow checks on)"
cargo test --release

step "simulator smoke run"
./target/release/sicore-sim --nodes 20 --asks 2000 > /dev/null

step "simulator html report in headless chromium"
# Python with websocket-client drives Chromium's DevTools protocol (see
# tests/simreport/check_report.py); the virtualenv is the one the Python
# binding's tests use below.
venv="$root/target/pyvenv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q "websocket-client>=1.6" "ruff>=0.4"
"$venv/bin/ruff" check tests/simreport
"$venv/bin/python" tests/simreport/check_report.py target/release/sicore-sim target/simreport

if [ -d bindings/go ]; then
  # Inside the checkout the binding links target/release (build tag
  # sicore_checkout); the default, pkg-config, is tested by the install test.
  step "go: vet and tests (-race)"
  (cd bindings/go && go vet -tags sicore_checkout ./... && test -z "$(gofmt -l .)" \
    && go test -race -count=1 -tags sicore_checkout ./...)
fi

if [ -d bindings/go-v1 ]; then
  # The SI v1.x binding and yunikorn-core drop-in (its own module: one Go
  # binary links one SI edition). Linked like bindings/go; its tests
  # include the k8shim-like test RM and the one-replace-line build, which
  # fetches yunikorn-core v1.8.0's dependencies from the Go module proxy.
  step "go (SI v1.x edition, drop-in): vet and tests (-race)"
  (cd bindings/go-v1 && go vet -tags sicore_checkout ./... && test -z "$(gofmt -l .)" \
    && go test -race -count=1 -tags sicore_checkout ./...)
fi

# Nightly toolchain (installed when missing): the Rust integration tests
# and the C test under AddressSanitizer + LeakSanitizer, then every fuzz
# target for a bounded time (SICORE_FUZZ_SECONDS, default 60 each), from
# one build. See docs/testing.md, "Fuzzing, sanitizers and stress tests".
step "sanitizers: Rust integration tests and the C test under ASan + LSan (nightly, target/asan)"
bash scripts/sanitizers.sh

step "fuzzing: libFuzzer targets, ${SICORE_FUZZ_SECONDS:-60}s each (nightly)"
bash scripts/fuzz.sh

# The library with the system allocator (--no-default-features), which
# valgrind and the memory tests need: built in target/release over the
# default build, which the Go tests above were the last to use (a
# separate target directory would build every dependency again).
if [ -d tests/c ]; then
  step "c: scenario under valgrind; the memory tests (system allocator)"
  make -C tests/c check
  # They count the process's live heap bytes with an allocator of their own.
  cargo test --release --no-default-features --test memory
fi

if [ -n "$cargo_c_pid" ]; then
  step "waiting for the background build of cargo-c"
  if ! wait "$cargo_c_pid"; then
    cargo_c_pid=
    echo "building cargo-c failed; the end of target/cargo-c-install.log:" >&2
    tail -40 "$cargo_c_log" >&2
    exit 1
  fi
  cargo_c_pid=
fi
if [ "${SICORE_TEST_MUSL:-0}" = 1 ]; then
  rustup target add x86_64-unknown-linux-musl
fi
# The install test runs beside the Python step: each builds the library
# once (cargo cinstall; the wheel) and then runs checks that are mostly
# single-threaded, so the two share the cores. Its output goes to a log,
# printed when it ends; its own process group, as for cargo-c above.
install_log=$root/target/install-test.log
step "install: cargo cinstall, pkg-config, CMake, Go module outside the checkout (beside the Python step; log: target/install-test.log)"
set -m
bash scripts/install-test.sh > "$install_log" 2>&1 &
install_pid=$!
set +m

if [ -d bindings/python ]; then
  step "python: the wheel built from the sdist, tested on every Python; lint"
  # Builds the sdist and from it the wheel (the Rust library compiled by
  # setuptools-rust in target/, over the dependencies built there: the
  # crate alone selects the same features as the workspace), and runs the
  # test suite against the installed wheel on each Python in
  # requires-python; the wheel is kept in target/pydist.
  SICORE_PYDIST_OUT="$root/target/pydist" bash scripts/python-dist-test.sh
  venv="$root/target/pyvenv"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  # The same wheel with the test extras (grpcio-tools: the generated
  # modules match the protos, a test the bare installs above skip).
  wheel=$(ls "$root"/target/pydist/sicore-*.whl)
  "$venv/bin/pip" install -q --force-reinstall "$wheel[test]"
  (cd bindings/python && "$venv/bin/ruff" check . && env -u SICORE_LIBRARY "$venv/bin/pytest" -q tests)
  # A seconds-long smoke run of the benchmark, so that it keeps working
  # with the binding it measures (it times the trampoline's body).
  (cd bindings/python && env -u SICORE_LIBRARY "$venv/bin/python" benchmarks/bench_scheduling.py \
    --nodes 20 --allocations 200 --runs 1 --passes 1 --predicates > /dev/null)
fi

step "install: the install test's output"
install_status=0
wait "$install_pid" || install_status=$?
install_pid=
cat "$install_log"
if [ "$install_status" != 0 ]; then
  echo "the install test failed (exit status $install_status; output above)" >&2
  exit 1
fi

step "all tests passed"
