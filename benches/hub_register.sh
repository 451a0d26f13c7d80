#!/usr/bin/env bash
# Registering against GET /v1/health, side by side: for each binary in
# BINS (default: this tree's release build), ROUNDS times in turn, a fresh
# release hub on loopback, wrk on GET /v1/health for DUR, then wrk on first
# heartbeats only (benches/register.lua: every request a worker id the hub
# has not seen, each bound to its pool durably before its answer) for DUR,
# the same wrk settings; prints both rates, the ratio, and the workers the
# hub then holds (checked against the requests: no id was sent twice).
#
#   apt-get install wrk && cargo build --release
#   BINS="/tmp/base/macfleet target/release/macfleet" benches/hub_register.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BINS=${BINS:-target/release/macfleet}
DUR=${DUR:-4s}
THREADS=${THREADS:-2}
CONNS=${CONNS:-64}
ROUNDS=${ROUNDS:-2}
PORT=${PORT:-17879}
PER_THREAD=${PER_THREAD:-200000}
hub=
dir=$(mktemp -d)
trap '[ -n "$hub" ] && kill $hub 2>/dev/null; rm -rf "$dir"' EXIT

one() {
  local bin=$1
  rm -rf "$dir"/*
  cp assets/hub.toml "$dir/hub.toml"
  $bin hub token --name load --role worker --tokens "$dir/tokens.toml" > "$dir/worker.tok" 2>/dev/null
  $bin hub token --name look --role viewer --tokens "$dir/tokens.toml" > "$dir/viewer.tok" 2>/dev/null
  $bin hub --config "$dir/hub.toml" --tokens "$dir/tokens.toml" --listen 127.0.0.1:$PORT \
    --max-workers 1000000 --memory-budget 12GiB > "$dir/hub.log" 2>&1 &
  hub=$!
  for _ in $(seq 50); do curl -sf http://127.0.0.1:$PORT/v1/health >/dev/null && break; sleep 0.1; done
  wrk -t$THREADS -c$CONNS -d$DUR http://127.0.0.1:$PORT/v1/health > "$dir/health.txt"
  MAC_HUB_TOKEN=$(cat "$dir/worker.tok") PER_THREAD=$PER_THREAD \
    wrk -t$THREADS -c$CONNS -d$DUR -s benches/register.lua http://127.0.0.1:$PORT > "$dir/reg.txt"
  local h r n e held
  h=$(awk '/Requests\/sec/ {print $2}' "$dir/health.txt")
  r=$(awk '/Requests\/sec/ {print $2}' "$dir/reg.txt")
  n=$(awk '/requests in/ {print $1}' "$dir/reg.txt")
  e=$(awk '/^errors/ {print $NF}' "$dir/reg.txt")
  held=$(curl -s -H "Authorization: Bearer $(cat "$dir/viewer.tok")" http://127.0.0.1:$PORT/v1/summary \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["workers"])' 2>/dev/null || echo "?")
  kill $hub; wait $hub 2>/dev/null || true; hub=
  if [ "$n" -gt $((PER_THREAD * THREADS)) ]; then echo "ran out of fresh ids: raise PER_THREAD"; fi
  printf '%-40s health %9s req/s  registering %9s req/s  ratio %s  (%s answered, %s errors, %s held)\n' \
    "$bin" "$h" "$r" "$(python3 -c "print(round($r/$h, 3))")" "$n" "$e" "$held"
}

echo "== $(date -u +%FT%TZ) load: $(uptime | sed 's/.*load average: //')"
for round in $(seq "$ROUNDS"); do
  for bin in $BINS; do one "$bin"; done
done
echo "== done, load: $(uptime | sed 's/.*load average: //')"
