#!/usr/bin/env bash
# Screenshots and checks of the YuniKorn web UI in front of sicore.
#
# Usage: scripts/webui-check.sh YUNIKORN_WEB_DIR [OUT_DIR]
#
# YUNIKORN_WEB_DIR is a checkout of apache/yunikorn-web at a release tag
# (e.g. `git -C <bare mirror> archive v1.9.0-0 | tar -x -C DIR`). The
# script builds the UI there (pnpm, as its Makefile does) unless
# dist/yunikorn-web exists, builds YuniKorn's own web server from that
# checkout (pkg/cmd/web: static files plus a reverse proxy of /ws that
# passes the browser's Host header through, as in the standard
# deployment), runs `sicore-sim --workload tenants --serve` on loopback
# behind it, and drives headless Chromium over every screen
# (tests/webui/check_webui.py). Screenshots (PNG) and page texts go to
# OUT_DIR (default target/webui-check). Exit status 1 on an error page, a
# script or console error, a failed REST call, or NaN / n/a where the
# simulator has data.
#
# Not run by CI: it needs the fetched checkout, Node.js, Go, pnpm from the
# npm registry and Debian's chromium. See docs/rest-and-metrics.md.
set -euo pipefail

WEB=$(cd "${1:?usage: $0 YUNIKORN_WEB_DIR [OUT_DIR]}" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mkdir -p "${2:-$ROOT/target/webui-check}" && cd "${2:-$ROOT/target/webui-check}" && pwd)
REST_PORT=${REST_PORT:-19080}
WEB_PORT=${WEB_PORT:-19889}

pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

if [ ! -f "$WEB/dist/yunikorn-web/index.html" ]; then
    echo "building the UI in $WEB"
    (
        cd "$WEB"
        mkdir -p tools
        # pnpm 11 (the checkout's pin) needs Node >= 22.13; with an older
        # Node, pnpm 10 builds the same lockfile once the manifest stops
        # pinning the package manager (a scratch checkout, so edited in place).
        if node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>22||(a==22&&b>=13)?0:1)'; then
            npm install --prefix tools -g pnpm@11.5
        else
            npm install --prefix tools -g pnpm@10
            node -e 'const fs=require("fs"); const p=JSON.parse(fs.readFileSync("package.json"));
                     if (p.engines) delete p.engines.pnpm; delete p.devEngines;
                     fs.writeFileSync("package.json", JSON.stringify(p, null, 2));'
        fi
        tools/bin/pnpm install
        tools/bin/pnpm ng build
    )
fi

echo "building YuniKorn's web server from $WEB"
(cd "$WEB" && go build -o "$OUT/yunikorn-web-server" ./pkg/cmd/web)

# SICORE_SIM names an already built simulator (any profile).
SIM=${SICORE_SIM:-}
if [ -z "$SIM" ]; then
    echo "building sicore-sim"
    (cd "$ROOT" && cargo build --release -p sicore-sim)
    SIM="$ROOT/target/release/sicore-sim"
fi

"$SIM" --nodes 30 --asks 300 --apps 6 --workload tenants \
    --serve "127.0.0.1:$REST_PORT" >"$OUT/sim.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 120); do
    curl -fs "http://127.0.0.1:$REST_PORT/ws/v1/partitions" >/dev/null 2>&1 && break
    sleep 1
done
curl -fs "http://127.0.0.1:$REST_PORT/ws/v1/partitions" >/dev/null

DOCUMENT_ROOT="$WEB/dist/yunikorn-web" LISTEN_ADDRESS="127.0.0.1:$WEB_PORT" \
    PROXY_URL="http://127.0.0.1:$REST_PORT" "$OUT/yunikorn-web-server" >"$OUT/web.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 30); do
    curl -fs "http://127.0.0.1:$WEB_PORT/" >/dev/null 2>&1 && break
    sleep 1
done

# An archived tag has no git metadata: YUNIKORN_WEB_TAG names it.
tag=${YUNIKORN_WEB_TAG:-$(git -C "$WEB" describe --tags 2>/dev/null || echo "tag unknown")}
echo "yunikorn-web: $WEB ($tag)"
# The checker drives Chromium with websocket-client, from the virtualenv
# the Python binding's tests and the simulator report check use.
venv="$ROOT/target/pyvenv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q "websocket-client>=1.6"
"$venv/bin/python" "$ROOT/tests/webui/check_webui.py" "http://127.0.0.1:$WEB_PORT" "$OUT" default root.tenants.prod
