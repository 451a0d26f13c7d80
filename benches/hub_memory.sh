#!/usr/bin/env bash
# Hub RSS at $WORKERS (default 20,000) workers of the largest shape the
# contract accepts, side by side for two builds in one run: a 128-byte id, a
# 253-byte host, a 64-character revision, 64 agents of 32 characters with a
# capability each, a last failover with a 200-character detail. Three
# fleets, each on a fresh hub:
#
#   shared  every worker reports the same 64 agents (one fleet, one list)
#   own     every worker's 64 agent names are its own (nothing to share)
#   own+caps  the same, and its 64 capabilities name 64 other agents of its
#           own (128 names of 32 characters per worker)
#
# A measurement, not a test: nothing is asserted. Loopback only; each hub
# is killed when its fleet is measured, every post has a 10 s timeout.
#
#   cargo build --release && benches/hub_memory.sh
#   BASE=/path/to/main/macfleet benches/hub_memory.sh   # main's build beside
#
# Prints one row per build and fleet: RSS before (8 warm-up workers) and
# after, the bytes of RSS per worker, and how long the posts took.
set -euo pipefail
cd "$(dirname "$0")/.."
WORKERS=${WORKERS:-20000}
PORT=${PORT:-17879}
SHAPES=${SHAPES:-"shared own own+caps"}
bins=()
[ -n "${BASE:-}" ] && bins+=("$BASE")
bins+=("${BIN:-target/release/macfleet}")

dir=
hub=
cleanup() {
  [ -n "$hub" ] && kill "$hub" 2>/dev/null || true
  [ -n "$dir" ] && rm -rf "$dir"
}
trap cleanup EXIT

rss() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# post FIRST COUNT SHAPE: COUNT heartbeats of workers FIRST.., 4 at a time
# over keep-alive connections; fails unless every one answered 200.
post() {
  MAC_HUB_TOKEN=$(cat "$dir/worker.tok") python3 - "$PORT" "$1" "$2" "$3" <<'EOF'
import datetime, http.client, json, os, sys, threading
port, first, count, shape = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
token = os.environ["MAC_HUB_TOKEN"]
now = datetime.datetime.now(datetime.timezone.utc)
stamp = lambda s: (now - datetime.timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ")
def body(k):
    if shape == "shared":
        agents = ["a%031d" % i for i in range(64)]
    else:
        agents = ["a%02d%029d" % (i, k) for i in range(64)]
    names = ["c%02d%029d" % (i, k) for i in range(64)] if shape == "own+caps" else agents
    caps = {a: {"binary": True, "token": True, "preflight": "ok"} for a in names}
    fo = {"id": "f-%d" % k, "at": stamp(60), "from": agents[0], "to": agents[1],
          "cause": {"kind": "rate_limited", "status": 429, "source": "hub_router",
                    "detail": "d" * 200}}
    return json.dumps({"worker": "w%0127d" % k, "host": "h%0252d" % k, "sent_at": stamp(1),
                       "config_revision": "r" * 64, "agents": agents, "active_agent": agents[1],
                       "capabilities": caps, "failovers": [fo]})
bad = []
def run(ks):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for k in ks:
        c.request("POST", "/v1/heartbeats", body(k),
                  {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
        r = c.getresponse(); r.read()
        if r.status != 200:
            bad.append((k, r.status))
ks = list(range(first, first + count))
ts = [threading.Thread(target=run, args=(ks[i::4],)) for i in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
if bad:
    sys.exit("%d heartbeats refused, first %s" % (len(bad), bad[0]))
EOF
}

printf '%-34s %-9s %12s %12s %10s %8s\n' build fleet "RSS before" "RSS after" "B/worker" posted
for bin in "${bins[@]}"; do
  for shape in $SHAPES; do
    dir=$(mktemp -d)
    cp assets/hub.toml "$dir/hub.toml"
    $bin hub token --name load --role worker --tokens "$dir/tokens.toml" > "$dir/worker.tok" 2>/dev/null
    # A long interval: no sweep moves a worker while the fleet is measured.
    $bin hub --config "$dir/hub.toml" --tokens "$dir/tokens.toml" --listen 127.0.0.1:$PORT \
      --heartbeat-interval 600 --max-workers $((WORKERS + 100)) > "$dir/hub.log" 2>&1 &
    hub=$!
    for _ in $(seq 50); do curl -sf http://127.0.0.1:$PORT/v1/health >/dev/null && break; sleep 0.1; done
    post $((WORKERS + 1)) 8 "$shape"
    sleep 1
    before=$(rss $hub)
    t0=$(date +%s.%N)
    post 0 "$WORKERS" "$shape"
    t1=$(date +%s.%N)
    sleep 1
    after=$(rss $hub)
    printf '%-34s %-9s %9s KiB %9s KiB %10s %7.1fs\n' "$(basename "$bin")" "$shape" "$before" "$after" \
      $(( (after - before) * 1024 / WORKERS )) "$(python3 -c "print($t1 - $t0)")"
    kill $hub; wait $hub 2>/dev/null || true; hub=
    rm -rf "$dir"; dir=
  done
done
