#!/usr/bin/env bash
# Builds, vets and tests a real YuniKorn k8shim on the yunikorn-core
# drop-in (bindings/go-v1) with its one `replace` line, as an operator
# would: `go build ./...`, `go vet ./...`, and the k8shim's own pkg/shim
# suite, whose MockScheduler looks into the core through
# ServiceContext.Scheduler.GetClusterContext().
#
#   bash scripts/k8shim-check.sh            # k8shim v1.9.0
#   bash scripts/k8shim-check.sh v1.8.0
#
# Not part of scripts/test.sh: it downloads the k8shim's Kubernetes
# dependencies (several hundred MB) from the Go module proxy and compiles
# them. GOSUMDB is off because the proxy serves SI v1.9.0 where the
# k8shim v1.9.0 pins v1.9.0-0 (same go.mod hash): the second `replace`
# line maps one to the other.
set -euo pipefail
version="${1:-v1.9.0}"
root="$(cd "$(dirname "$0")/.." && pwd)"
export GOSUMDB=off GOFLAGS=-mod=mod

echo "== building libsicore (release) for -tags sicore_checkout"
(cd "$root" && cargo build --release --quiet)

echo "== fetching github.com/apache/yunikorn-k8shim@$version"
src="$(cd "$(mktemp -d)" && go mod download -json "github.com/apache/yunikorn-k8shim@$version" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$src"/. "$work"
chmod -R u+w "$work"
cd "$work"

go mod edit -replace "github.com/apache/yunikorn-core=$root/bindings/go-v1"
si_pin="$(awk '$1 == "github.com/apache/yunikorn-scheduler-interface" {print $2; exit}' go.mod)"
case "$si_pin" in
  *-0) go mod edit -replace "github.com/apache/yunikorn-scheduler-interface@$si_pin=github.com/apache/yunikorn-scheduler-interface@${si_pin%-0}" ;;
esac

echo "== go build ./..."
go build -tags sicore_checkout ./...
echo "== go vet ./..."
go vet -tags sicore_checkout ./...
echo "== go test ./pkg/shim/ (the k8shim's own suite against the core)"
go test -tags sicore_checkout -count=1 ./pkg/shim/
echo "k8shim $version: build, vet and pkg/shim tests pass on the drop-in"
