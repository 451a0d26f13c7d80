#!/usr/bin/env bash
# `macfleet demo --workers $WORKERS` as a new user starts it (issue 22): a
# 120x40 tmux pane, the demo's hub, simulated fleet and TUI in one process.
# Prints launch → the first screen with a worker row, then, while the fleet
# is still registering (a million take minutes: the hub and the simulator
# keep both cores busy), key → screen in tmux for `j`, `G` and `g` (median
# of $ROUNDS) beside a shell's echo in the same tmux server, and the
# workers shown at the start and end of the rounds; again once the fleet
# shown passes $LATER (the TUI's large-fleet mode). Loopback only;
# every wait is bounded; everything started here is stopped on exit.
#
#   cargo build --release && benches/demo_keys.sh
#   WORKERS=40 benches/demo_keys.sh       # the small demo, for comparison
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/macfleet}
WORKERS=${WORKERS:-1000000}
ROUNDS=${ROUNDS:-10}
LATER=${LATER:-400000}
SOCK=demo_keys_$$
SESSION=demo
tm() { tmux -L "$SOCK" "$@"; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
dir=$(mktemp -d)
trap 'tmux -L "$SOCK" kill-server 2>/dev/null || true; rm -rf "$dir"' EXIT

start=$(now_ms)
tm new -d -s "$SESSION" -x 120 -y 40 "XDG_STATE_HOME=$dir $BIN demo --workers $WORKERS"
first=
for _ in $(seq 3000); do
  s=$(tm capture-pane -p -t "$SESSION" 2>/dev/null || true)
  if grep -qE "^w-[0-9]+ .* (healthy|stale|lost) " <<<"$s"; then
    first=$(( $(now_ms) - start )); break
  fi
  sleep 0.01
done
[ -n "$first" ] || { echo "the demo never showed a worker row"; tm capture-pane -p -t "$SESSION"; exit 1; }
echo "launch → first screen with a worker row: $first ms"
[ -n "${SHOW:-}" ] && tm capture-pane -p -t "$SESSION"
held() { tm capture-pane -p -t "$SESSION" | grep -oE "[0-9,]+ workers" | head -1; }
echo "fleet shown at the start of the rounds: $(held)"

# Send `key`; capture until the pane differs from before; print ms (3000+
# when it never does within 3 s).
lat() {
  local key=$1 before after t0
  before=$(tm capture-pane -p -t "$SESSION")
  t0=$(now_ms)
  tm send-keys -t "$SESSION" "$key"
  for _ in $(seq 1500); do
    after=$(tm capture-pane -p -t "$SESSION")
    [ "$after" != "$before" ] && { echo $(( $(now_ms) - t0 )); return; }
  done
  echo "3000+"
}
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
report() { local name=$1; shift; echo "$name: $* → median $(echo "$@" | median) ms"; }
rounds() {
  local j="" G="" g=""
  for _ in $(seq "$ROUNDS"); do
    j="$j $(lat j)"; sleep 0.3
    G="$G $(lat G)"; sleep 0.5
    g="$g $(lat g)"; sleep 0.5
  done
  echo "== key → screen in tmux (ms), the fleet registering ($1)"
  report "j" $j
  report "G" $G
  report "g" $g
}
rounds "from $(held)"
echo "fleet shown at the end of the rounds: $(held)"
# Again once the fleet is past the TUI's large-fleet line (200,000: the
# Workers view pages through the hub's windows).
if [ "$WORKERS" -gt "$LATER" ]; then
  t0=$(now_ms)
  until n=$(held | tr -d ', workers'); [ "${n:-0}" -ge "$LATER" ]; do
    [ $(( $(now_ms) - t0 )) -gt 600000 ] && { echo "the fleet never passed $LATER"; exit 1; }
    sleep 2
  done
  rounds "from $(held)"
  echo "fleet shown at the end of the rounds: $(held)"
  [ -n "${SHOW:-}" ] && tm capture-pane -p -t "$SESSION"
fi
tm new-window -t "$SESSION" "bash --norc --noprofile"
sleep 0.5
e=""
for _ in $(seq "$ROUNDS"); do e="$e $(lat x)"; sleep 0.1; done
report "shell echo (baseline)" $e
