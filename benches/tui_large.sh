#!/usr/bin/env bash
# The TUI over a large fleet (issue #22): a local hub holding WORKERS
# workers (default 1,000,000; registered by wrk, one heartbeat each), then
# `macfleet --read-only` in a 120x40 tmux pane. Prints:
#   - launch → first screen with rows (the status line shows `1/<total>`
#     and the first worker's row is drawn), in ms;
#   - the TUI's resident set after SETTLE s, and its peak (VmHWM);
#   - the bytes the TUI read until its first screen (/proc/PID/io rchar:
#     the hub's answers, plus the few files it reads at start: an upper
#     bound on what the hub sent it);
#   - key → screen in tmux (ms, the median of ROUNDS) for `j`, `G` and
#     `g`, and for `G` also key → the last row drawn (the window asked
#     and answered).
# Loopback only; every step is bounded in time; everything started here is
# stopped on exit.
#
#   apt-get install wrk tmux && cargo build --release && benches/tui_large.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/macfleet}
# The hub may be another build (HUB_BIN) than the TUI (BIN).
HUB_BIN=${HUB_BIN:-$BIN}
WORKERS=${WORKERS:-1000000}
PORT=${PORT:-17883}
ROUNDS=${ROUNDS:-10}
SETTLE=${SETTLE:-10}
SESSION=tui_large_$$
SOCK=tui_large_$$
tm() { tmux -L "$SOCK" "$@"; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
dir=$(mktemp -d)
hub=
cleanup() {
  tmux -L "$SOCK" kill-server 2>/dev/null || true
  [ -n "$hub" ] && kill "$hub" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
with_commas() { python3 -c "print(f'{$1:,}')"; }

cp assets/hub.toml "$dir/hub.toml"
$BIN hub token --name load --role worker --tokens "$dir/tokens.toml" > "$dir/worker.tok" 2>/dev/null
$BIN hub token --name look --role viewer --tokens "$dir/tokens.toml" > "$dir/viewer.tok" 2>/dev/null
$HUB_BIN hub --config "$dir/hub.toml" --tokens "$dir/tokens.toml" --listen 127.0.0.1:$PORT \
  --heartbeat-interval 60 --max-workers $(( WORKERS + 1000 )) > "$dir/hub.log" 2>&1 &
hub=$!
for _ in $(seq 50); do curl -sf http://127.0.0.1:$PORT/v1/health >/dev/null && break; sleep 0.1; done
view() { curl -sf -H "Authorization: Bearer $(cat "$dir/viewer.tok")" "http://127.0.0.1:$PORT$1"; }

echo "== register $WORKERS workers"
MAC_HUB_TOKEN=$(cat "$dir/worker.tok") WORKERS=$WORKERS WARM=1 \
  wrk -t2 -c64 -d$(( WORKERS / ${REG_RATE:-12000} + 5 ))s -s benches/heartbeat.lua http://127.0.0.1:$PORT > /dev/null
held=$(view /v1/summary | python3 -c 'import json,sys; print(json.load(sys.stdin)["workers"])')
echo "the hub holds $held workers (RSS $(( $(ps -o rss= -p "$hub") / 1024 )) MiB)"
want=$(with_commas "$held")

echo "== TUI"
start=$(now_ms)
tm new -d -s "$SESSION" -x 120 -y 40 \
  "XDG_STATE_HOME=$dir MACFLEET_LOG=macfleet=debug MAC_HUB_URL=http://127.0.0.1:$PORT MAC_HUB_TOKEN=$(cat "$dir/viewer.tok") $BIN --read-only"
pid=$(tm list-panes -t "$SESSION" -F '#{pane_pid}')
first=
for _ in $(seq 3000); do
  s=$(tm capture-pane -p -t "$SESSION" 2>/dev/null || true)
  if grep -q "1/$want" <<<"$s" && grep -q "^w-[0-9]* .* healthy " <<<"$s"; then
    first=$(( $(now_ms) - start ))
    break
  fi
  sleep 0.01
done
rchar=$(awk '/^rchar/ {print $2}' "/proc/$pid/io")
[ -n "$first" ] || { echo "the TUI never showed rows of $want"; tm capture-pane -p -t "$SESSION"; exit 1; }
echo "launch → first screen with rows: $first ms"
echo "bytes read by the TUI until then: $rchar ($(( rchar / 1024 )) KiB)"
sleep "$SETTLE"
echo "TUI RSS after ${SETTLE}s: $(( $(ps -o rss= -p "$pid") / 1024 )) MiB (peak $(( $(awk '/VmHWM/ {print $2}' /proc/$pid/status) / 1024 )) MiB)"
[ -n "${SHOW:-}" ] && tm capture-pane -p -t "$SESSION"

# Send `key`, then capture until the pane differs from before (or, with
# a third argument, until it shows that text); print ms. Gives up after
# 3 s (prints 3000+).
lat() {
  local key=$1 until=${2:-} before after t0
  before=$(tm capture-pane -p -t "$SESSION")
  t0=$(now_ms)
  tm send-keys -t "$SESSION" "$key"
  for _ in $(seq 1500); do
    after=$(tm capture-pane -p -t "$SESSION")
    if { [ -z "$until" ] && [ "$after" != "$before" ]; } || { [ -n "$until" ] && grep -q -- "$until" <<<"$after"; }; then
      echo $(( $(now_ms) - t0 )); return
    fi
  done
  echo "3000+"
}
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
report() { local name=$1; shift; echo "$name: $* → median $(echo "$@" | median) ms"; }

last=$(view "/v1/workers?sort=urgency&offset=$(( held - 1 ))&limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["workers"][0]["worker"])')
j=""; G=""; Grows=""; g=""
for _ in $(seq "$ROUNDS"); do
  j="$j $(lat j)"; sleep 0.2
  G="$G $(lat G)"; sleep 0.5
  # Long enough for the top window to answer (a window at a million took
  # up to 0.85 s): else `G` finds the end window still held.
  tm send-keys -t "$SESSION" g; sleep 1.5
  Grows="$Grows $(lat G "$last")"; sleep 0.5
  g="$g $(lat g)"; sleep 0.5
done
echo "== $want workers, key → screen in tmux (ms)"
report "j (one step)" $j
report "G (bottom: the cursor and position)" $G
report "G (bottom: its rows drawn)" $Grows
report "g (top)" $g
# The terminal's own delay: a shell echoing a typed character.
tm new-window -t "$SESSION" "bash --norc --noprofile"
sleep 0.5
e=""
for _ in $(seq "$ROUNDS"); do e="$e $(lat x)"; sleep 0.1; done
report "shell echo (baseline)" $e
echo "== the TUI's window requests (its log): ms each"
grep -o 'window fetched rows=[0-9]* ms=[0-9]*' "$dir/macfleet/macfleet.log" | sed 's/.*ms=//' | tr '\n' ' '; echo
