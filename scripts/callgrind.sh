#!/usr/bin/env bash
# Instructions per allocation, per thread, measured with callgrind on the
# `scheduling` bench (YuniKorn's BenchmarkScheduling through the C ABI).
#
# Each size runs twice, with ASKS_LO and ASKS_HI asks; the difference of the
# two counts divided by ASKS_HI - ASKS_LO is the cost of one allocation, with
# the set-up (library start, nodes, applications) cancelled out. Instruction
# counts do not depend on the machine's load, unlike wall clock.
#
#   bash scripts/callgrind.sh                       # 500, 5,000 and 50,000 nodes
#   bash scripts/callgrind.sh --predicates          # with a Predicates callback
#   bash scripts/callgrind.sh --sizes "500:2000:10000 20000:10000:50000"
#   bash scripts/callgrind.sh --shape apps          # one ask per application (maxAllocations)
#   bash scripts/callgrind.sh --limits loose        # user caps that never bind (none|loose|users|users-uncapped)
#   bash scripts/callgrind.sh --edition v1          # the RM on the SI v1.x family (default v0.12)
#   bash scripts/callgrind.sh --preemption          # guarantee preemption on (nothing to preempt)
#   bash scripts/callgrind.sh --no-preemption       # preemption off (SI v1.x has it on by default)
#   bash scripts/callgrind.sh --quota-preemption    # quota-change preemption on too (nothing armed)
#   bash scripts/callgrind.sh --events REQUEST,NODE,USERGROUP  # events on, these types (default: off)
#   bash scripts/callgrind.sh --resources k8s       # a Kubernetes node's six types, a pod's three
#   bash scripts/callgrind.sh --asks k8s            # asks keyed by a pod UID, with the k8shim's tags
#   bash scripts/callgrind.sh --python              # the same through the Python binding
#   SICORE_VALGRIND_OPTS=--fair-sched=yes bash scripts/callgrind.sh ...
#                                                   # extra valgrind options (below)
#
# --python runs bindings/python/benchmarks/bench_scheduling.py (the binding
# from the source tree, the library from `cargo build --release`, the
# interpreter $PYTHON or target/pyvenv, made with protobuf when missing);
# its default sizes are 500:2000:6000 and 5000:2000:6000, since building
# the requests in Python costs ~50k instructions per ask. The :rm columns
# are then everything under ctypes' callback entry (_CallPythonObject: the
# binding, the decoding and the RM's method), when the interpreter's
# _ctypes module has its symbols.
#
# Columns (instructions per allocation):
#   pass      the scheduling pass on the core thread (Core::schedule, inclusive,
#             so with the RM's Predicates and ReSync callbacks made from it)
#   core      the core thread (sicore-core-*): the pass, and taking in asks
#   core:rm   of which the RM's callbacks running there (Predicates, ReSync)
#   disp      the dispatcher thread (sicore-dispatch-*): encoding, callbacks
#   disp:rm   of which the RM's callbacks (decoding AllocationResponse, ...)
#   main      the RM's own thread (the bench's main): building and encoding
#             its requests, the library decoding them in sicore_update_*
#   main:lib  of which inside the library's sicore_* calls
#   lib       everything in the library: total minus the RM's parts
#   rm        the RM's own work: building and encoding its requests, and
#             its callbacks (total minus lib; the bench RM's, so prost's)
#   total     all threads
#
# Work driven by the clock rather than by allocations is left out, since a
# run under callgrind lasts ~50x longer than without: the outstanding-request
# check (the bench's --no-outstanding-check) and the gauge refresh
# (src/metrics/gauges.rs, once a second, O(nodes); subtracted, its cost per
# run printed below the table).
#
# Valgrind runs one thread at a time, and by default a woken thread waits
# until the running one blocks or its time slice ends. Work that either
# thread may do (delivering what is queued for the RM: the dispatcher, or
# the core thread before its next Predicates call) then lands on the core
# thread whenever it gets there first. A native run on two cores does the
# same (SICORE_BENCH_THREADS=1 prints each thread's CPU).
# `--fair-sched=yes` hands the CPU round-robin, so a woken dispatcher runs
# sooner. The totals stay the same, and only the split between the
# threads moves (docs/performance-v1.md, "Which thread delivers").
#
# The raw profiles stay in target/callgrind/ (callgrind_annotate
# --inclusive=yes FILE shows where a thread's instructions go).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

sizes=""
python=0
shape=""
# The outstanding-request check is time-driven: see benches/scheduling.rs.
bench_args=(--no-outstanding-check)
while [ $# -gt 0 ]; do
  case "$1" in
    --predicates) bench_args+=(--predicates) ;;
    --sizes) sizes="$2"; shift ;;
    --shape) shape="$2"; shift ;;
    --limits) bench_args+=(--limits "$2"); shift ;;
    --edition) bench_args+=(--edition "$2"); shift ;;
    --preemption) bench_args+=(--preemption) ;;
    --no-preemption) bench_args+=(--no-preemption) ;;
    --quota-preemption) bench_args+=(--quota-preemption) ;;
    --events) bench_args+=(--events "$2"); shift ;;
    --resources) bench_args+=(--resources "$2"); shift ;;
    --asks) bench_args+=(--asks "$2"); shift ;;
    --python) python=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

if ! command -v valgrind >/dev/null 2>&1 || ! command -v callgrind_annotate >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "valgrind is missing; run as root or install it (Debian: apt-get install valgrind)" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind
fi

if [ "$python" = 1 ]; then
  [ -n "$sizes" ] || sizes="500:2000:6000 5000:2000:6000"
  bench_args+=(--shape "${shape:-asks}" --runs 1 --no-breakdown)
  cargo build --release --lib --quiet
  py="${PYTHON:-$root/target/pyvenv/bin/python}"
  if ! "$py" -c "import google.protobuf" 2>/dev/null; then
    [ -x "$py" ] || python3 -m venv "$root/target/pyvenv"
    py="$root/target/pyvenv/bin/python"
    "$py" -m pip install -q "protobuf>=4.25"
  fi
  export SICORE_LIBRARY="$root/target/release/libsicore.so"
  export PYTHONPATH="$root/bindings/python/src${PYTHONPATH:+:$PYTHONPATH}"
  argv_for() { argv=("$py" "$root/bindings/python/benchmarks/bench_scheduling.py" --nodes "$1" --allocations "$2"); }
else
  [ -n "$sizes" ] || sizes="500:2000:10000 5000:2000:10000 50000:20000:100000"
  [ -z "$shape" ] || bench_args+=(--shape "$shape")
  # The bench binary as `cargo bench` builds it (release profile, mimalloc).
  bin=$(cargo bench --bench scheduling --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if (m.get("reason") == "compiler-artifact" and m["target"]["name"] == "scheduling"
            and m.get("executable")):
        print(m["executable"])')
  [ -x "$bin" ] || { echo "cannot build the scheduling bench" >&2; exit 1; }
  argv_for() { argv=("$bin" "$1" "$2"); }
fi

out="$root/target/callgrind"
mkdir -p "$out"
rm -f "$out"/cg.*

runs=()
for s in $sizes; do
  IFS=: read -r nodes lo hi <<<"$s"
  if ! [ "$lo" -lt "$hi" ] 2>/dev/null; then
    echo "size $s: want NODES:ASKS_LO:ASKS_HI with ASKS_LO < ASKS_HI" >&2
    exit 2
  fi
  for asks in "$lo" "$hi"; do
    echo "callgrind: $nodes nodes, $asks asks ${bench_args[*]}" >&2
    argv_for "$nodes" "$asks"
    # SICORE_VALGRIND_OPTS unquoted on purpose: one word per option.
    # MIMALLOC_ALLOW_THP set: the bench runs as is, without starting itself
    # again (benches/scheduling.rs), which valgrind would not follow.
    # shellcheck disable=SC2086
    MIMALLOC_ALLOW_THP="${MIMALLOC_ALLOW_THP:-0}" valgrind --tool=callgrind --separate-threads=yes --dump-instr=no ${SICORE_VALGRIND_OPTS:-} \
      --callgrind-out-file="$out/cg.$nodes.$asks" \
      "${argv[@]}" "${bench_args[@]}" >/dev/null 2>"$out/cg.$nodes.$asks.log" \
      || { cat "$out/cg.$nodes.$asks.log" >&2; exit 1; }
  done
  runs+=("$nodes:$lo:$hi")
done

what="scheduling bench"
[ "$python" = 0 ] || what="Python binding, bench_scheduling.py"
python3 - "$out" "$what ${bench_args[*]}" "${runs[@]}" <<'EOF'
import glob, re, subprocess, sys

out, args, runs = sys.argv[1], sys.argv[2], sys.argv[3:]

# Inclusive cost of the functions whose name matches, per thread profile.
# "cost (pct)  file:function [object]": callgrind_annotate lists a function
# once per source file its code came from (inlining); the whole function's
# line is the largest of them.
LINE = re.compile(r"^\s*([\d,]+) \([^)]*\)\s+\S.*?:(\S.*?)(?: \[[^\]]*\])?$")
# The bench's callbacks, or everything under ctypes' entry into Python.
RM_CALLBACK = re.compile(r"^(sicore_c_rm::(?:v1::)?on_\w+|scheduling::on_\w+|_CallPythonObject)$")
# The library's C entry points, or (where the shared library reaches the
# Rust method they forward to by a tail call, so no sicore_* frame exists)
# the Scheduler methods; the larger of the two sums.
LIB_ENTRY = re.compile(r"^sicore_\w+$")
LIB_METHOD = re.compile(r"^sicore::(?:rmproxy|entrypoint)::Scheduler::\w+$")
PERIODIC = "sicore::metrics::gauges::refresh"
PASS = "sicore::scheduler::core::cluster::<impl sicore::scheduler::core::Core>::schedule"


def profile(path):
    """Thread kind, total, RM-callback, library-entry and periodic costs."""
    text = open(path, encoding="utf-8", errors="replace").read()
    total = int(re.search(r"^totals: (\d+)", text, re.M).group(1))
    # Only the core thread handles commands.
    if "sicore::scheduler::core::Core::handle" in text:
        kind = "core"
    # The dispatcher's loop, or (when the loop is inlined into the thread's
    # closure) the delivery it makes.
    elif ("sicore::rmproxy::dispatch::run" in text
          or "sicore::scheduler::order::RmOrder::deliver_next" in text):
        kind = "disp"
    elif path.endswith("-01"):  # callgrind's thread 1: the process's first
        kind = "main"
    else:
        kind = "other"
    ann = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--auto=no", "--threshold=100", path],
        capture_output=True, text=True, check=True,
    ).stdout
    cost = {}
    for line in ann.splitlines():
        m = LINE.match(line)
        if m:
            fn, c = m.group(2), int(m.group(1).replace(",", ""))
            cost[fn] = max(cost.get(fn, 0), c)
    rm = sum(c for fn, c in cost.items() if RM_CALLBACK.match(fn))
    lib = max(sum(c for fn, c in cost.items() if LIB_ENTRY.match(fn)),
              sum(c for fn, c in cost.items() if LIB_METHOD.match(fn)))
    periodic, sched = cost.get(PERIODIC, 0), cost.get(PASS, 0)
    return kind, total, rm, lib, periodic, sched


def measure(nodes, asks):
    acc = {}
    for path in sorted(glob.glob(f"{out}/cg.{nodes}.{asks}-*")):
        kind, total, rm, lib, periodic, sched = profile(path)
        a = acc.setdefault(kind, [0] * 5)
        for i, v in enumerate((total - periodic, rm, lib, periodic, sched)):
            a[i] += v
    return acc


cols = ["pass", "core", "core:rm", "disp", "disp:rm", "main", "main:lib", "lib", "rm", "total"]
print(f"Instructions per allocation (callgrind; {args})")
print(f"{'nodes':>7} {'asks':>13} " + " ".join(f"{c:>8}" for c in cols))
notes = []
for r in runs:
    nodes, lo, hi = (int(x) for x in r.split(":"))
    a, b = measure(nodes, lo), measure(nodes, hi)
    n = hi - lo

    def d(kind, i):
        return (b.get(kind, [0] * 5)[i] - a.get(kind, [0] * 5)[i]) / n

    sched, core, core_rm = d("core", 4), d("core", 0), d("core", 1)
    disp, disp_rm = d("disp", 0), d("disp", 1)
    main, main_lib = d("main", 0), d("main", 2)
    other = d("other", 0)
    total = core + disp + main + other
    lib = core - core_rm + disp - disp_rm + main_lib + other
    vals = [sched, core, core_rm, disp, disp_rm, main, main_lib, lib, total - lib, total]
    print(f"{nodes:>7} {f'{hi}-{lo}':>13} " + " ".join(f"{round(v):>8d}" for v in vals))
    periodic = [m.get("core", [0] * 5)[3] for m in (a, b)]
    notes.append(f"{nodes} nodes: gauge refresh left out, {periodic[0]:,} and {periodic[1]:,} "
                 f"instructions in the {lo}- and {hi}-ask runs")
print()
for line in notes:
    print(line)
EOF
