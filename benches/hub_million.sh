#!/usr/bin/env bash
# A million workers against one release hub on loopback (issue 22): a real
# `macfleet sim` process presents $WORKERS workers, each paced by what the
# hub tells it; once all have registered, for two spans of $MEASURE seconds,
# the script reports the heartbeats reaching the hub per second (its own request
# counter, /metrics), the hub's RSS (now and peak), stale and lost workers
# (GET /v1/summary), and the time of windows and a summary request
# (curl, median of $TRIES). Loopback only; every wait is bounded.
#
#   cargo build --release && benches/hub_million.sh
#   WORKERS=100000 N=500 benches/hub_million.sh     # a smaller run
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/macfleet}
WORKERS=${WORKERS:-1000000}
N=${N:-20000}
PORT=${PORT:-17979}
MEASURE=${MEASURE:-60}
TRIES=${TRIES:-7}
REGISTER_S=${REGISTER_S:-900}
dir=$(mktemp -d)
hub=; sim=
trap 'kill $sim $hub 2>/dev/null || true; rm -rf "$dir"' EXIT
cp assets/hub.toml "$dir/hub.toml"
for r in worker viewer owner; do
  $BIN hub token --name "b-$r" --role $r --tokens "$dir/tokens.toml" > "$dir/$r.tok" 2>/dev/null
done
$BIN hub --config "$dir/hub.toml" --tokens "$dir/tokens.toml" --listen 127.0.0.1:$PORT \
  --max-workers $((WORKERS + WORKERS / 10)) --max-heartbeats-per-second $N > "$dir/hub.log" 2>&1 &
hub=$!
for _ in $(seq 50); do curl -sf http://127.0.0.1:$PORT/v1/health >/dev/null && break; sleep 0.1; done
url=http://127.0.0.1:$PORT
view=(-s -H "Authorization: Bearer $(cat "$dir/viewer.tok")")
own=(-s -H "Authorization: Bearer $(cat "$dir/owner.tok")")
MAC_HUB_URL=$url MAC_HUB_TOKEN=$(cat "$dir/worker.tok") XDG_CONFIG_HOME=$dir \
  $BIN sim --workers $WORKERS --scenario steady > "$dir/sim.log" 2>&1 &
sim=$!
summary() { curl "${view[@]}" $url/v1/summary; }
field() { jq -r ".$1"; }
rss_mib() { awk -v k="$2" '$1==k":" {printf "%d", $2/1024}' /proc/$1/status; }
answered() {
  curl "${own[@]}" $url/metrics |
    awk '/^macfleet_hub_requests_total\{route="\/v1\/heartbeats",status="200"\}/ {print $2}'
}
echo "== $WORKERS workers registering (--max-heartbeats-per-second $N)"
start=$(date +%s)
while :; do
  n=$(summary | field workers)
  [ "$n" -ge "$WORKERS" ] && break
  if [ $(( $(date +%s) - start )) -gt $REGISTER_S ]; then echo "only $n registered"; exit 1; fi
  sleep 2
done
echo "registered in $(( $(date +%s) - start )) s"
# Twice: the first $MEASURE s after the last worker registered, while the
# workers told a shorter interval when the fleet was smaller still beat at
# it until their next answer lengthens it (the rate can exceed N for up to
# one interval), then the next $MEASURE s, the fleet settled.
worst_stale=0; worst_lost=0
measure() {
  local c0 c1 t0 t1 s st lo
  c0=$(answered); t0=$(date +%s.%N)
  for _ in $(seq $((MEASURE / 5))); do
    sleep 5
    s=$(summary)
    st=$(echo "$s" | field stale); lo=$(echo "$s" | field lost)
    [ "$st" -gt "$worst_stale" ] && worst_stale=$st
    [ "$lo" -gt "$worst_lost" ] && worst_lost=$lo
  done
  c1=$(answered); t1=$(date +%s.%N)
  RATE=$(python3 -c "print(round(($c1-$c0)/($t1-$t0)))")
}
echo "== measuring $MEASURE s, twice"
measure; rate1=$RATE
measure; rate=$RATE
time_of() { # median seconds of $TRIES GETs of $1
  for _ in $(seq $TRIES); do curl "${view[@]}" -o /dev/null -w '%{time_total}\n' "$url$1"; done |
    sort -n | awk '{a[NR]=$1} END {printf "%.1f ms", 1000*a[int((NR+1)/2)]}'
}
interval=$(summary | field heartbeat_interval_s)
echo "heartbeats reaching the hub: $rate1/s in the first $MEASURE s after registering, $rate/s in the next (bound $N), told interval now ${interval} s"
echo "stale at worst: $worst_stale, lost at worst: $worst_lost"
echo "hub RSS $(rss_mib $hub VmRSS) MiB (peak $(rss_mib $hub VmHWM) MiB), sim RSS $(rss_mib $sim VmRSS) MiB"
echo "GET /v1/summary: $(time_of /v1/summary)"
echo "GET /v1/workers?sort=urgency&limit=500: $(time_of '/v1/workers?sort=urgency&limit=500')"
echo "GET /v1/workers?sort=host&offset=$((WORKERS / 2))&limit=500: $(time_of "/v1/workers?sort=host&offset=$((WORKERS / 2))&limit=500")"
echo "GET /v1/workers?sort=worker&q=state:stale&limit=500: $(time_of '/v1/workers?sort=worker&q=state:stale&limit=500')"
echo "GET /v1/workers?q=opencode%20%230&limit=500: $(time_of '/v1/workers?q=opencode%20%230&limit=500')"
echo "hub RSS after the windows $(rss_mib $hub VmRSS) MiB (peak $(rss_mib $hub VmHWM) MiB)"
