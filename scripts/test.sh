#!/usr/bin/env bash
# Runs every test of the project: Rust, C (under valgrind), Go and Python.
# On a fresh machine it first installs what the tests need (Debian packages
# when run as root, Python packages into a virtualenv under target/).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

step() { printf '\n== %s\n' "$*"; }

need_apt=()
command -v protoc-c >/dev/null 2>&1 || need_apt+=(protobuf-c-compiler)
[ -f /usr/include/protobuf-c/protobuf-c.h ] || need_apt+=(libprotobuf-c-dev)
# si.proto imports google/protobuf/descriptor.proto, shipped by libprotobuf-dev.
[ -f /usr/include/google/protobuf/descriptor.proto ] || need_apt+=(libprotobuf-dev)
command -v make >/dev/null 2>&1 || need_apt+=(make)
command -v valgrind >/dev/null 2>&1 || need_apt+=(valgrind)
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

step "rust: format and lints"
cargo fmt --check
cargo clippy --all-targets -- -D warnings

step "rust: build (release: libsicore.so, libsicore.a, sicore-sim)"
cargo build --release

# The tests run in an optimised build with integer overflow checks on
# (Cargo.toml [profile.release-checked]; target/release-checked): the
# release code, except that an overflow panics instead of wrapping.
step "rust: tests (release with overflow checks: release-checked)"
cargo test --profile release-checked

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

if [ -d tests/c ]; then
  step "c: scenario under valgrind"
  make -C tests/c check
fi

# Nightly toolchain (installed when missing): the Rust tests and the C test
# under AddressSanitizer + LeakSanitizer, then every fuzz target for a
# bounded time (SICORE_FUZZ_SECONDS, default 60 each). See the README,
# "Fuzzing and sanitizers".
step "sanitizers: Rust and C tests under ASan + LSan (nightly, target/asan)"
bash scripts/sanitizers.sh

step "fuzzing: cargo-fuzz targets, ${SICORE_FUZZ_SECONDS:-60}s each (nightly)"
bash scripts/fuzz.sh

if [ -d bindings/go ]; then
  step "go: vet and tests (-race)"
  (cd bindings/go && go vet ./... && test -z "$(gofmt -l .)" && go test -race -count=1 ./...)
fi

if [ -d bindings/python ]; then
  step "python: lint and tests"
  venv="$root/target/pyvenv"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q "$root/bindings/python[test]"
  (cd bindings/python && "$venv/bin/ruff" check . && SICORE_LIBRARY="$root/target/release/libsicore.so" "$venv/bin/pytest" -q tests)
fi

step "all tests passed"
