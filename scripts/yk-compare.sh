#!/usr/bin/env bash
# sicore's SI v1 edition through Go against YuniKorn core itself, on the
# reference's own BenchmarkScheduling: 10,000 asks of {memory 10, vcore 1}
# in two applications (queues root.a and root.b), on 500, 1,000, 2,000 and
# 5,000 nodes, the RM registered as the Predicates plugin in both.
#
#   bash scripts/yk-compare.sh [ROUNDS]        (default 5)
#
# YuniKorn core (YK_VERSION, default v1.8.0; v1.9.0 is the current
# release) is fetched through the Go module proxy and its benchmark test
# binary is built in a temporary directory, from a writable copy of the
# module cache's tree: no YuniKorn code enters this repository. A core
# that pins a pre-release of the scheduler interface the proxy does not
# serve (v1.9.0 pins SI v1.9.0-0, whose go.mod is that of SI v1.9.0) gets
# a local `replace` to the release in that copy, built without the
# checksum database (which knows no such pairing). sicore's side is the go-v1 binding's
# BenchmarkScheduling (predicates=on), linked against a fresh
# `cargo build --release`. Every size runs in its own process, YuniKorn
# then sicore, every size once per round; the table gives the medians over
# the rounds. YuniKorn's benchmark ignores b.N (one run of several seconds
# per process: -test.benchtime 1x); sicore's run of 10,000 allocations
# lasts 50-100 ms, which one descheduling on a loaded machine moves by a
# half, so its process makes SICORE_RUNS timed runs (default 5,
# -test.benchtime 5x; Go runs the benchmark once with b.N = 1 first, so
# the process makes SICORE_RUNS + 1 runs in all) and its rate is theirs.
#
# Measures:
#   allocs/s    YuniKorn: its benchmark's own "Total time to allocate"
#               line (from after the asks are submitted until its mock RM
#               holds every allocation, polled every 10 ms). sicore: the
#               benchmark's allocs/s (from the submission of the asks, so
#               the submission is included, until the RM holds every
#               allocation).
#   cpu/alloc   the whole process's CPU time (user + system, every thread,
#               from wait4's rusage of the child) divided by the
#               allocations: start-up, node registration and building the
#               asks included, for both. sicore's benchmark also reports
#               the CPU of its timed part alone (its cpu-ns/alloc, "timed").
#               YuniKorn's benchmark has no such figure; its set-up is the
#               process's wall-clock time outside the timed part, so its
#               CPU is at most that times the number of CPUs: the table
#               prints that bound as a share of YuniKorn's process CPU
#               ("YK set-up <="), and the last column compares YuniKorn's
#               process CPU with sicore's timed CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
yk_version=${YK_VERSION:-v1.8.0}
sicore_runs=${SICORE_RUNS:-5}
sizes=(500 1000 2000 5000)
asks=10000

fail() { echo "yk-compare: $*" >&2; exit 1; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || fail "ROUNDS must be a positive integer, got '$rounds'"
[[ "$sicore_runs" =~ ^[1-9][0-9]*$ ]] || fail "SICORE_RUNS must be a positive integer, got '$sicore_runs'"
for tool in cargo go python3; do
    command -v "$tool" >/dev/null || fail "$tool is required"
done

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
export GOWORK=off GOFLAGS=-buildvcs=false

echo "yk-compare: fetching github.com/apache/yunikorn-core@$yk_version through the Go module proxy" >&2
(cd "$work" && go mod download -json "github.com/apache/yunikorn-core@$yk_version" >dl.json 2>dl.err) ||
    fail "go mod download github.com/apache/yunikorn-core@$yk_version failed: $(cat "$work/dl.err" "$work/dl.json" 2>/dev/null | tail -5)"
yk_dir=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["Dir"])' "$work/dl.json") ||
    fail "no module directory in the go mod download answer"
cp -r "$yk_dir" "$work/yk"
chmod -R u+w "$work/yk"
grep -q '^func BenchmarkScheduling' "$work/yk/pkg/scheduler/tests/performance_test.go" ||
    fail "no BenchmarkScheduling in yunikorn-core@$yk_version pkg/scheduler/tests"
yk_env=()
si_pin=$(awk '$1 == "github.com/apache/yunikorn-scheduler-interface" && $2 ~ /^v[0-9.]+-0$/ { print $2 }' "$work/yk/go.mod")
if [ -n "$si_pin" ]; then
    echo "yk-compare: yunikorn-core@$yk_version pins the scheduler interface at $si_pin; building it against ${si_pin%-0}" >&2
    echo "replace github.com/apache/yunikorn-scheduler-interface $si_pin => github.com/apache/yunikorn-scheduler-interface ${si_pin%-0}" >>"$work/yk/go.mod"
    yk_env=(GOSUMDB=off GOFLAGS="-buildvcs=false -mod=mod")
fi
echo "yk-compare: building YuniKorn's test binary (its dependencies come through the module proxy)" >&2
(cd "$work/yk" && env "${yk_env[@]}" go test -c -o "$work/yk.test" ./pkg/scheduler/tests >"$work/ykbuild.log" 2>&1) ||
    fail "building yunikorn-core's pkg/scheduler/tests failed: $(tail -20 "$work/ykbuild.log")"

echo "yk-compare: building sicore (cargo build --release) and the go-v1 benchmark binary" >&2
cargo build --release --quiet || fail "cargo build --release failed"
(cd bindings/go-v1 && go test -c -tags sicore_checkout -o "$work/sicore.test" ./pkg/sicore >"$work/sibuild.log" 2>&1) ||
    fail "building bindings/go-v1's test binary failed: $(tail -20 "$work/sibuild.log")"

python3 - "$work" "$rounds" "$asks" "$yk_version" "$sicore_runs" "${sizes[@]}" <<'EOF'
import os, re, statistics, subprocess, sys, time

work, rounds, asks, yk_version = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
sicore_runs = int(sys.argv[5])
sizes = [int(s) for s in sys.argv[6:]]
repo = os.getcwd()

def run(cmd, cwd):
    """Runs cmd; returns its output and the CPU seconds (user + system) of the child."""
    with open(os.path.join(work, "run.log"), "w+b") as log:
        began = time.monotonic()
        p = subprocess.Popen(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
        _, status, ru = os.wait4(p.pid, 0)
        run.wall = time.monotonic() - began
        log.seek(0)
        out = log.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"yk-compare: {' '.join(cmd)} failed:\n" + "\n".join(out.splitlines()[-20:]))
    return out, ru.ru_utime + ru.ru_stime

def yunikorn(nodes):
    out, cpu = run([os.path.join(work, "yk.test"), "-test.run", "XXX",
                    "-test.bench", f"BenchmarkScheduling/^{nodes}Nodes/", "-test.benchtime", "1x"],
                   os.path.join(work, "yk", "pkg", "scheduler", "tests"))
    m = re.search(r"Total time to allocate (\d+) containers in \S+, ([0-9.]+) per second", out)
    if not m or int(m.group(1)) != asks:
        sys.exit(f"yk-compare: no 'Total time to allocate {asks} containers' line from YuniKorn at {nodes} nodes:\n" + out[-2000:])
    rate = float(m.group(2))
    # Set-up CPU bound: wall-clock outside the timed part, every CPU busy.
    setup = max(run.wall - asks / rate, 0.0) * os.cpu_count() / cpu
    return rate, cpu * 1e9 / asks, min(setup, 1.0)

def sicore(nodes):
    out, cpu = run([os.path.join(work, "sicore.test"), "-test.run", "XXX",
                    "-test.bench", f"BenchmarkScheduling/shape=single-asks/predicates=on/nodes={nodes}$",
                    "-test.benchtime", f"{sicore_runs}x", "-sicore.nodes", str(nodes), "-sicore.asks", str(asks)],
                   os.path.join(repo, "bindings", "go-v1", "pkg", "sicore"))
    line = next((l for l in out.splitlines() if f"predicates=on/nodes={nodes}" in l and "allocs/s" in l), None)
    if line is None:
        sys.exit(f"yk-compare: no result line from sicore's benchmark at {nodes} nodes:\n" + out[-2000:])
    metrics = {unit: float(v) for v, unit in re.findall(r"([0-9.e+]+) ([a-z/-]+)", line)}
    runs = sicore_runs + 1 if sicore_runs > 1 else 1  # the b.N = 1 run first
    return metrics["allocs/s"], cpu * 1e9 / (asks * runs), metrics["cpu-ns/alloc"]

res = {(who, n): [] for who in ("yk", "si") for n in sizes}
loads = []
for r in range(1, rounds + 1):
    load = open("/proc/loadavg").read().split()[:3]
    loads.append(float(load[0]))
    print(f"round {r} of {rounds} (load {' '.join(load)})", file=sys.stderr, flush=True)
    for n in sizes:
        res[("yk", n)].append(yunikorn(n))
        res[("si", n)].append(sicore(n))
        (yr, yc, _), (sr, sc, st) = res[("yk", n)][-1], res[("si", n)][-1]
        print(f"  {n:>5} nodes: YuniKorn {yr:>9,.0f}/s {yc:>9,.0f} ns; sicore {sr:>9,.0f}/s {sc:>7,.0f} ns ({st:,.0f} timed)"
              f" load {open('/proc/loadavg').read().split()[0]}",
              file=sys.stderr, flush=True)

med = statistics.median
print(f"YuniKorn core {yk_version} against sicore go-v1 with Predicates: BenchmarkScheduling, "
      f"{asks:,} asks ({sicore_runs} timed runs per sicore process), medians of {rounds} interleaved rounds (load average at round start "
      f"{min(loads):.1f} to {max(loads):.1f}).")
print("paired: median of each round's sicore/YuniKorn rate ratio (the two runs back to back). cpu/alloc is the "
      "whole process's CPU (every thread, set-up included) per allocation; 'timed' is sicore's CPU of the timed part alone.")
hdr = ("nodes", "YK allocs/s", "sicore allocs/s", "ratio", "paired", "YK cpu-ns/alloc", "YK set-up <=",
       "sicore cpu-ns/alloc", "sicore timed", "YK/sicore cpu", "YK/sicore timed")
print(" | ".join(hdr))
for n in sizes:
    y, s = res[("yk", n)], res[("si", n)]
    yr, sr = med(v[0] for v in y), med(v[0] for v in s)
    yc, sc, st = med(v[1] for v in y), med(v[1] for v in s), med(v[2] for v in s)
    ys = med(v[2] for v in y)
    paired = med(b[0] / a[0] for a, b in zip(y, s))  # each round's sicore/YuniKorn
    print(f"{n:>5} | {yr:>11,.0f} | {sr:>15,.0f} | {sr / yr:>5.1f} | {paired:>6.1f} | {yc:>15,.0f} | {ys:>11.1%} | {sc:>19,.0f} | "
          f"{st:>12,.0f} | {yc / sc:>13.1f} | {yc / st:>15.1f}")
EOF
