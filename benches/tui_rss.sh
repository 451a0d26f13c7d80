#!/usr/bin/env bash
# Resident memory, first-screen time and idle CPU of `macfleet --read-only`
# against a local hub holding 100,000 workers (WORKERS=100 for the small
# fleet to compare idle CPU with). Idle: no key, and the fleet sends no
# heartbeat while CPU is counted (the TUI still ticks every second and
# polls the hub every 2 s). Loopback only; every step is bounded in
# time; everything started here is stopped on exit.
#
#   apt-get install wrk tmux && cargo build --release && benches/tui_rss.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/macfleet}
WORKERS=${WORKERS:-100000}
PORT=${PORT:-17879}
SETTLE=${SETTLE:-20}
SESSION=tui_rss_$$
. benches/lib.sh
on_exit 'tmux kill-session -t "$SESSION"'
start_hub
register_workers
want=$(with_commas "$WORKERS")
echo "== TUI"
start=$(date +%s%N)
tmux new -d -s "$SESSION" -x 120 -y 40 \
  "${TUI_ENV:-} MAC_HUB_URL=http://127.0.0.1:$PORT MAC_HUB_TOKEN=$(cat "$dir/viewer.tok") $BIN --read-only"
first=
for _ in $(seq 300); do
  if tmux capture-pane -p -t "$SESSION" 2>/dev/null | grep -q "$want"; then
    first=$(( ($(date +%s%N) - start) / 1000000 ))
    break
  fi
  sleep 0.1
done
pid=$(tmux list-panes -t "$SESSION" -F '#{pane_pid}')
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
sleep 3
cpu0=$(ticks); t0=$(date +%s%N)
samples=
for _ in $(seq "$SETTLE"); do
  sleep 1
  samples="$samples $(( $(ps -o rss= -p "$pid") / 1024 ))"
done
cpu1=$(ticks); t1=$(date +%s%N)
hz=$(getconf CLK_TCK)
echo "RSS MiB each second:$samples"
rss=$(ps -o rss= -p "$pid")
hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
echo "first screen showing $want: ${first:-never} ms"
echo "TUI RSS after ${SETTLE}s: $((rss / 1024)) MiB (peak $((hwm / 1024)) MiB)"
[ -n "${SHOW:-}" ] && tmux capture-pane -p -t "$SESSION"
echo "idle CPU over $(( (t1 - t0) / 1000000 )) ms: $(( (cpu1 - cpu0) * 1000 / hz )) ms of CPU"
