#!/usr/bin/env bash
# The TUI's memory over a fleet of the contract's largest workers (issue 30):
# $WORKERS (default 30,000) workers each reporting a 64-agent list of its
# own (`own`: no name shared with another worker) or all the same 64 agents
# (`shared`), 128-byte ids, 253-byte hosts, a last failover with a
# 200-character detail. For each build (BASE, then BIN) and shape: a fresh
# hub of the last build (the TUI is what is measured), the fleet posted,
# then `macfleet --read-only` of that build in a 120x40 tmux pane; prints
# the TUI's steady RSS, its peak (VmHWM) and the bytes a worker.
# A measurement, not a test. Loopback only; every wait is bounded; every
# process started here is stopped on exit.
#
#   cargo build --release && benches/tui_memory.sh
#   BASE=/path/to/main/macfleet benches/tui_memory.sh    # main's build beside
set -euo pipefail
cd "$(dirname "$0")/.."
WORKERS=${WORKERS:-30000}
PORT=${PORT:-17881}
SHAPES=${SHAPES:-"own shared"}
SETTLE=${SETTLE:-15}
bins=()
[ -n "${BASE:-}" ] && bins+=("$BASE")
bins+=("${BIN:-target/release/macfleet}")
HUB_BIN=${HUB_BIN:-${bins[-1]}}
SESSION=tui_memory_$$
dir=
hub=
cleanup() {
  tmux kill-session -t "$SESSION" 2>/dev/null || true
  [ -n "$hub" ] && kill "$hub" 2>/dev/null || true
  [ -n "$dir" ] && rm -rf "$dir"
}
trap cleanup EXIT
kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }

# post COUNT SHAPE: COUNT heartbeats, 4 at a time over keep-alive
# connections; fails unless every one answered 200.
post() {
  MAC_HUB_TOKEN=$(cat "$dir/worker.tok") python3 - "$PORT" "$1" "$2" <<'EOF'
import datetime, http.client, json, os, sys, threading
port, count, shape = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
token = os.environ["MAC_HUB_TOKEN"]
now = datetime.datetime.now(datetime.timezone.utc)
stamp = lambda s: (now - datetime.timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ")
def body(k):
    if shape == "shared":
        agents = ["a%031d" % i for i in range(64)]
    else:
        agents = ["a%02d%029d" % (i, k) for i in range(64)]
    caps = {a: {"binary": True, "token": True, "preflight": "ok"} for a in agents}
    fo = {"id": "f-%d" % k, "at": stamp(60), "from": agents[0], "to": agents[1],
          "cause": {"kind": "rate_limited", "status": 429, "source": "hub_router",
                    "detail": "d" * 200}}
    return json.dumps({"worker": "w%0127d" % k, "host": "h%0252d" % k, "sent_at": stamp(1),
                       "config_revision": "r" * 64, "agents": agents, "active_agent": agents[1],
                       "capabilities": caps, "failovers": [fo]})
bad = []
def run(ks):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for k in ks:
        c.request("POST", "/v1/heartbeats", body(k),
                  {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
        r = c.getresponse(); r.read()
        if r.status != 200:
            bad.append((k, r.status))
ks = list(range(count))
ts = [threading.Thread(target=run, args=(ks[i::4],)) for i in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
if bad:
    sys.exit("%d heartbeats refused, first %s" % (len(bad), bad[0]))
EOF
}

want=$(python3 -c "print(f'{$WORKERS:,}')")
printf '%-30s %-7s %12s %12s %10s %12s\n' build fleet "steady RSS" "peak RSS" "B/worker" "first screen"
for shape in $SHAPES; do
  dir=$(mktemp -d)
  cp assets/hub.toml "$dir/hub.toml"
  $HUB_BIN hub token --name load --role worker --tokens "$dir/tokens.toml" > "$dir/worker.tok" 2>/dev/null
  $HUB_BIN hub token --name look --role viewer --tokens "$dir/tokens.toml" > "$dir/viewer.tok" 2>/dev/null
  # A long interval: no worker goes stale while the TUIs are measured.
  $HUB_BIN hub --config "$dir/hub.toml" --tokens "$dir/tokens.toml" --listen 127.0.0.1:$PORT \
    --heartbeat-interval 600 --max-workers $((WORKERS + 100)) > "$dir/hub.log" 2>&1 &
  hub=$!
  for _ in $(seq 50); do curl -sf http://127.0.0.1:$PORT/v1/health >/dev/null && break; sleep 0.1; done
  post "$WORKERS" "$shape"
  for bin in "${bins[@]}"; do
    start=$(date +%s%N)
    tmux new -d -s "$SESSION" -x 120 -y 40 \
      "MAC_HUB_URL=http://127.0.0.1:$PORT MAC_HUB_TOKEN=$(cat "$dir/viewer.tok") XDG_CONFIG_HOME=$dir/xdg $bin --read-only"
    first=-
    for _ in $(seq 600); do
      if tmux capture-pane -p -t "$SESSION" 2>/dev/null | grep -q "$want"; then
        first="$(( ($(date +%s%N) - start) / 1000000 )) ms"; break
      fi
      sleep 0.1
    done
    pid=$(pgrep -n -f -- "$bin --read-only" || true)
    sleep "$SETTLE"
    steady=$(kib "$pid" VmRSS); peak=$(kib "$pid" VmHWM)
    printf '%-30s %-7s %8s KiB %8s KiB %10s %12s\n' "$(basename "$(dirname "$(dirname "$bin")")")/$(basename "$bin")" \
      "$shape" "$steady" "$peak" $(( peak * 1024 / WORKERS )) "$first"
    tmux kill-session -t "$SESSION" 2>/dev/null || true
    sleep 0.5
  done
  kill $hub; wait $hub 2>/dev/null || true; hub=
  rm -rf "$dir"; dir=
done
