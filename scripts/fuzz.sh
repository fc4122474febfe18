#!/usr/bin/env bash
# Runs the cargo-fuzz targets in fuzz/ for a bounded time each, starting
# from the committed seeds (fuzz/seeds/<target>) with a fixed libFuzzer
# seed. Installs the nightly toolchain and cargo-fuzz when missing.
#
#   bash scripts/fuzz.sh                    every target, 60 s each (the two
#                                           allocation decoders 30 s each)
#   bash scripts/fuzz.sh two_rms            one target
#   SICORE_FUZZ_SECONDS=3600 bash scripts/fuzz.sh wire_decoder
#   SICORE_FUZZ_SEED=0 ...                  a random libFuzzer seed
#   SICORE_FUZZ_KEEP_CORPUS=1 ...           keep and grow target/fuzz/corpus
#                                           across runs (CI starts afresh)
#
# A finding stops the run: libFuzzer saves the input under
# fuzz/artifacts/<target>/ and this script prints how to replay it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

seconds=${SICORE_FUZZ_SECONDS:-60}
seed=${SICORE_FUZZ_SEED:-1}
split=0
if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=(wire_decoder v1_wire_decoder config_loader config_nesting two_rms)
  # The v0.12 and v1 AllocationRequest decoders share one target's time.
  split=1
fi

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  rustup toolchain install nightly --profile minimal
fi
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi

cd fuzz
# Release with debug assertions and overflow checks, under AddressSanitizer
# (cargo-fuzz's defaults).
cargo +nightly fuzz build
for t in "${targets[@]}"; do
  corpus="$root/target/fuzz/corpus/$t"
  [ "${SICORE_FUZZ_KEEP_CORPUS:-0}" = 1 ] || rm -rf "$corpus"
  mkdir -p "$corpus" "artifacts/$t"
  t_seconds=$seconds
  case "$split:$t" in
    1:wire_decoder | 1:v1_wire_decoder) t_seconds=$(( (seconds + 1) / 2 )) ;;
  esac
  echo "fuzzing $t for ${t_seconds}s (seed $seed)"
  # New inputs go to the first directory; the committed seeds stay as they are.
  if ! cargo +nightly fuzz run "$t" "$corpus" "seeds/$t" -- \
      -seed="$seed" -max_total_time="$t_seconds" -timeout=30 -rss_limit_mb=3072 \
      -print_final_stats=1; then
    latest=$(ls -t "artifacts/$t" 2>/dev/null | head -n 1 || true)
    echo "FUZZ FINDING in $t" >&2
    if [ -n "$latest" ]; then
      echo "reproducer: $root/fuzz/artifacts/$t/$latest" >&2
      echo "replay:     (cd fuzz && cargo +nightly fuzz run $t artifacts/$t/$latest)" >&2
    fi
    exit 1
  fi
done
