#!/usr/bin/env bash
# Side-by-side load of the reference hub on this machine: GET /v1/health
# against POST /v1/heartbeats over a 100,000-worker fleet, with wrk, in one
# run. Loopback only; every wrk run is bounded in time.
#
#   apt-get install wrk && cargo build --release && benches/hub_load.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/macfleet}
DUR=${DUR:-15s}
THREADS=${THREADS:-2}
CONNS=${CONNS:-64}
WORKERS=${WORKERS:-100000}
PORT=${PORT:-17878}
dir=$(mktemp -d)
trap 'kill $hub 2>/dev/null || true; rm -rf "$dir"' EXIT
cp assets/hub.toml "$dir/hub.toml"
$BIN hub token --name load --role worker --tokens "$dir/tokens.toml" > "$dir/worker.tok" 2>/dev/null
$BIN hub token --name look --role viewer --tokens "$dir/tokens.toml" > "$dir/viewer.tok" 2>/dev/null
# PIN=1 puts the hub on CPU 1 and wrk on CPU 0, so the load generator's own
# work (larger for heartbeats) does not take the hub's CPU.
HUB_CPU=(); WRK_CPU=()
if [ "${PIN:-0}" = 1 ]; then HUB_CPU=(taskset -c 1); WRK_CPU=(taskset -c 0); THREADS=1; fi
"${HUB_CPU[@]}" $BIN hub --config "$dir/hub.toml" --tokens "$dir/tokens.toml" --listen 127.0.0.1:$PORT > "$dir/hub.log" 2>&1 &
hub=$!
for _ in $(seq 50); do curl -sf http://127.0.0.1:$PORT/v1/health >/dev/null && break; sleep 0.1; done
export MAC_HUB_TOKEN=$(cat "$dir/worker.tok") WORKERS
echo "== warm-up: register $WORKERS workers"
WARM=1 wrk -t2 -c$CONNS -d15s -s benches/heartbeat.lua http://127.0.0.1:$PORT >/dev/null
curl -s -H "Authorization: Bearer $(cat $dir/viewer.tok)" http://127.0.0.1:$PORT/v1/workers | python3 -c "import json,sys; print(len(json.load(sys.stdin)[\"workers\"]), \"workers registered\")"
echo "== GET /v1/health"
${WRK_CPU[@]} wrk -t$THREADS -c$CONNS -d$DUR http://127.0.0.1:$PORT/v1/health | tee "$dir/health.txt"
echo "== POST /v1/heartbeats ($WORKERS workers)"
${WRK_CPU[@]} wrk -t$THREADS -c$CONNS -d$DUR -s benches/heartbeat.lua http://127.0.0.1:$PORT | tee "$dir/hb.txt"
h=$(awk '/Requests\/sec/ {print $2}' "$dir/health.txt")
b=$(awk '/Requests\/sec/ {print $2}' "$dir/hb.txt")
rss=$(ps -o rss= -p $hub)
echo "health ${h} req/s, heartbeats ${b} req/s, ratio $(python3 -c "print(round($b/$h, 3))"), hub RSS $((rss/1024)) MiB"
