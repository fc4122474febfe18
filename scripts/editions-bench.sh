#!/usr/bin/env bash
# Both SI editions side by side, through C and through Go, in one sitting:
# the same single-ask workload (ASKS allocations, default 10,000, two
# applications) at
# 500 and 5,000 nodes, with and without a Predicates callback. Rounds are
# interleaved (every binary once per round), so a change of machine load
# hits all of them alike; the table gives the median over the rounds and
# the v1/v0.12 ratio of each pair.
#
#   bash scripts/editions-bench.sh [ROUNDS] [ASKS]      (default 5, 10000)
#
# A run of 10,000 allocations takes 30-100 ms, so one page-fault burst or
# descheduling moves its rate by a third on a small machine; 50,000 gives
# steadier wall-clock rates.
#
# C: `cargo bench --bench scheduling -- NODES ASKS --edition E [--predicates]`
# (allocations per second of the timed part, and the process's CPU
# nanoseconds per allocation over it, every thread included: the
# scheduler's and the RM's). Go: `BenchmarkScheduling` of
# bindings/go and bindings/go-v1 (allocations per second and the process's
# CPU nanoseconds per allocation, every thread included).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
asks=${2:-10000}
for tool in cargo go python3; do
    command -v "$tool" >/dev/null || { echo "editions-bench: $tool is required" >&2; exit 1; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

cargo build --release --quiet
cargo bench --bench scheduling --no-run --quiet 2>/dev/null
(cd bindings/go && go test -c -tags sicore_checkout -o "$out/go012.test" .)
(cd bindings/go-v1 && go test -c -tags sicore_checkout -o "$out/gov1.test" ./pkg/sicore)

for r in $(seq 1 "$rounds"); do
    echo "round $r of $rounds (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    for nodes in 500 5000; do
        for pred in no yes; do
            flag=(); [ "$pred" = yes ] && flag=(--predicates)
            for ed in v0.12 v1; do
                line=$(cargo bench --quiet --bench scheduling -- "$nodes" "$asks" --edition "$ed" "${flag[@]}" 2>/dev/null |
                    awk -v n="$nodes" -v a="$asks" '$1 == n && $2 == a { print $3, $7 }')
                read -r rate cpu <<<"${line:-- -}"
                echo "C $ed $nodes $pred ${rate:--} ${cpu:--}" >>"$out/results"
            done
        done
    done
    for ed in v0.12 v1; do
        bin="$out/go012.test"; dir=bindings/go; filter='BenchmarkScheduling/shape=single-asks'
        [ "$ed" = v1 ] && { bin="$out/gov1.test"; dir=bindings/go-v1/pkg/sicore; filter=BenchmarkScheduling; }
        (cd "$dir" && "$bin" -test.run XXX -test.bench "$filter" -test.benchtime 3x -sicore.nodes 500,5000 -sicore.asks "$asks") |
            python3 -c '
import re, sys
ed = sys.argv[1]
for line in sys.stdin:
    m = re.search(r"predicates=(\w+)/nodes=(\d+)", line)
    if not m:
        continue
    metrics = dict((u, v) for v, u in re.findall(r"([0-9.]+) ([a-z/-]+)", line))
    pred = "yes" if m.group(1) in ("on", "true", "yes") else "no"
    print("Go", ed, m.group(2), pred, metrics.get("allocs/s", "-"), metrics.get("cpu-ns/alloc", "-"))
' "$ed" >>"$out/results"
    done
done

python3 - "$out/results" "$rounds" "$asks" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    iface, ed, nodes, pred, rate, cpu = line.split()
    key = (iface, int(nodes), pred)
    r = rows.setdefault(key, {}).setdefault(ed, {"rate": [], "cpu": []})
    if rate not in ("", "-"):
        r["rate"].append(float(rate))
    if cpu != "-":
        r["cpu"].append(float(cpu))
def med(v):
    return statistics.median(v) if v else float("nan")
print(f"Medians of {sys.argv[2]} interleaved rounds; {int(sys.argv[3]):,} single-ask allocations.")
print(f"{'via':<3} {'nodes':>6} {'pred':>4} {'v0.12 allocs/s':>15} {'v1 allocs/s':>12} {'v1/v0.12':>9} {'v0.12 cpu-ns':>13} {'v1 cpu-ns':>10} {'v1/v0.12':>9}")
for key in sorted(rows):
    a, b = rows[key].get("v0.12"), rows[key].get("v1")
    if not a or not b:
        continue
    ra, rb, ca, cb = med(a["rate"]), med(b["rate"]), med(a["cpu"]), med(b["cpu"])
    cpu = f"{ca:>13.0f} {cb:>10.0f} {cb / ca:>9.2f}" if a["cpu"] and b["cpu"] else f"{'-':>13} {'-':>10} {'-':>9}"
    print(f"{key[0]:<3} {key[1]:>6} {key[2]:>4} {ra:>15.0f} {rb:>12.0f} {rb / ra:>9.2f} {cpu}")
EOF
