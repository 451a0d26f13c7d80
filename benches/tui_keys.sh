#!/usr/bin/env bash
# Key → screen latency of the TUI, observed from outside the process as a
# person sees it: tmux sends a key, then the pane is captured every ~2 ms
# until it shows the key's effect. Against a local hub holding WORKERS
# workers (100 and 100000 in docs/performance.md), for `G` (cursor to the
# bottom), `j` (one step) and a filter keystroke. Prints each sample and
# the median per key, in milliseconds. Also measures a shell's echo in the
# same tmux for comparison (the terminal's own delay).
#
# Loopback only; every step is bounded in time; everything started here is
# stopped on exit.
#
#   apt-get install wrk tmux && cargo build --release && benches/tui_keys.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/macfleet}
WORKERS=${WORKERS:-100}
PORT=${PORT:-17881}
ROUNDS=${ROUNDS:-10}
SESSION=tui_keys_$$
SOCK=tui_keys_$$
tm() { tmux -L "$SOCK" "$@"; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
. benches/lib.sh
on_exit 'tmux -L "$SOCK" kill-server'
start_hub
register_workers
want=$(with_commas "$WORKERS")

tm new -d -s "$SESSION" -x 120 -y 40 \
  "MAC_HUB_URL=http://127.0.0.1:$PORT MAC_HUB_TOKEN=$(cat "$dir/viewer.tok") $BIN --read-only"
shown=
for _ in $(seq 300); do
  tm capture-pane -p -t "$SESSION" 2>/dev/null | grep -q "$want workers" && { shown=1; break; }
  sleep 0.1
done
[ -n "$shown" ] || { echo "the TUI never showed $want workers"; exit 1; }
sleep 2

# Send `key`, then capture until the pane differs from before; print ms.
# Gives up after 3 s (prints 3000+).
lat() {
  local key=$1 before after t0 t1
  before=$(tm capture-pane -p -t "$SESSION")
  t0=$(now_ms)
  tm send-keys -t "$SESSION" "$key"
  for _ in $(seq 1500); do
    after=$(tm capture-pane -p -t "$SESSION")
    if [ "$after" != "$before" ]; then
      t1=$(now_ms); echo $(( t1 - t0 )); return
    fi
  done
  echo "3000+"
}
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

report() {
  local name=$1; shift
  echo "$name: $* → median $(echo "$@" | median) ms"
}

g=""; j=""; f=""
for _ in $(seq "$ROUNDS"); do
  g="$g $(lat G)"; sleep 0.2
  tm send-keys -t "$SESSION" g; sleep 0.3
  j="$j $(lat j)"; sleep 0.2
  tm send-keys -t "$SESSION" /; sleep 0.3
  f="$f $(lat w)"; sleep 0.2
  tm send-keys -t "$SESSION" Escape; sleep 0.3
  tm send-keys -t "$SESSION" Escape; sleep 0.3
done
echo "== $WORKERS workers, key → screen in tmux (ms)"
report "G (bottom)" $g
report "j (one step)" $j
report "filter keystroke" $f

# The terminal's own delay: a shell echoing a typed character.
tm new-window -t "$SESSION" "bash --norc --noprofile"
sleep 0.5
e=""
for _ in $(seq "$ROUNDS"); do
  e="$e $(lat x)"; sleep 0.1
done
report "shell echo (baseline)" $e
