#!/usr/bin/env bash
# Runs the libFuzzer targets in fuzz/ for a bounded time each, starting
# from the committed seeds (fuzz/seeds/<target>) with a fixed libFuzzer
# seed. Installs the nightly toolchain when missing; cargo-fuzz is not
# needed (`cargo fuzz run <target>` works too, in its own build).
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

# The targets are built by plain cargo with libFuzzer's instrumentation and
# ASan (scripts/asan-env.sh), in the build that scripts/sanitizers.sh runs
# the tests from: after it, nothing but the targets is left to build.
# Release with overflow checks; the package selection is the one there,
# so that the library is the same build.
. scripts/asan-env.sh
# shellcheck disable=SC2086  # ASAN_PACKAGES is a list of arguments
cargo +nightly build --release --target "$ASAN_TRIPLE" --target-dir "$ASAN_TARGET_DIR" \
  --no-default-features $ASAN_PACKAGES --bins
bin_dir=$root/$ASAN_TARGET_DIR/$ASAN_TRIPLE/release
# As cargo-fuzz sets it: the instrumented binary trips ASan's ODR check.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_odr_violation=0"

# Up to SICORE_FUZZ_JOBS targets run at once, one core each (default: 2 on
# a machine with 2 cores or more): the targets are split into that many
# lanes of about equal time, each lane running its targets in turn. Each
# run's output goes to target/fuzz/logs/<target>.log; its summary (the
# final stats) is printed when it ends, the whole of it on a finding.
jobs=${SICORE_FUZZ_JOBS:-$(( $(nproc) >= 2 ? 2 : 1 ))}
logs=$root/target/fuzz/logs
mkdir -p "$logs"

fuzz_one() {
  local t=$1 t_seconds=$2
  local corpus="$root/target/fuzz/corpus/$t" log="$logs/$t.log"
  [ "${SICORE_FUZZ_KEEP_CORPUS:-0}" = 1 ] || rm -rf "$corpus"
  mkdir -p "$corpus" "artifacts/$t"
  echo "fuzzing $t for ${t_seconds}s (seed $seed; log: target/fuzz/logs/$t.log)"
  # New inputs go to the first directory; the committed seeds stay as they are.
  if "$bin_dir/$t" -artifact_prefix="$root/fuzz/artifacts/$t/" \
      -seed="$seed" -max_total_time="$t_seconds" -timeout=30 -rss_limit_mb=3072 \
      -print_final_stats=1 "$corpus" "seeds/$t" > "$log" 2>&1; then
    # libFuzzer's summary: the runs, then -print_final_stats.
    { grep -A 8 '^Done [0-9]* runs' "$log" || tail -n 5 "$log"; } | sed "s/^/[$t] /"
    return 0
  fi
  sed "s/^/[$t] /" "$log" >&2
  local latest
  latest=$(ls -t "artifacts/$t" 2>/dev/null | head -n 1 || true)
  echo "FUZZ FINDING in $t" >&2
  if [ -n "$latest" ]; then
    echo "reproducer: $root/fuzz/artifacts/$t/$latest" >&2
    echo "replay:     $bin_dir/$t $root/fuzz/artifacts/$t/$latest" >&2
  fi
  return 1
}

# Each target's time, then the lanes: the longest first, each to the lane
# with the least time so far.
declare -A secs
for t in "${targets[@]}"; do
  secs[$t]=$seconds
  case "$split:$t" in
    1:wire_decoder | 1:v1_wire_decoder) secs[$t]=$(( (seconds + 1) / 2 )) ;;
  esac
done
mapfile -t ordered < <(for t in "${targets[@]}"; do echo "${secs[$t]} $t"; done | sort -rn -s -k1,1 | cut -d' ' -f2)
lane_secs=()
lane_targets=()
for ((i = 0; i < jobs; i++)); do lane_secs[i]=0; lane_targets[i]=""; done
for t in "${ordered[@]}"; do
  best=0
  for ((i = 1; i < jobs; i++)); do
    [ "${lane_secs[i]}" -lt "${lane_secs[best]}" ] && best=$i
  done
  lane_secs[best]=$(( lane_secs[best] + secs[$t] ))
  lane_targets[best]+="$t "
done

cd fuzz
pids=()
for ((i = 0; i < jobs; i++)); do
  [ -n "${lane_targets[i]}" ] || continue
  (
    for t in ${lane_targets[i]}; do
      fuzz_one "$t" "${secs[$t]}" || exit 1
    done
  ) &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do
  wait "$pid" || failed=1
done
exit "$failed"
