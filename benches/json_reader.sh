#!/usr/bin/env bash
# The JSON reader's peak memory: `macfleet get workers -o json` and `-o jsonl`
# reading one large `/v1/workers` page of largest-shape workers (a 128-byte id,
# a 253-byte host, 64 agents of 32 characters, 64 capabilities, a 200-character
# detail: about 9.1 KB each), side by side for two binaries. The page comes
# from a stand-in (benches/workers_page.py serve) that generates it as it
# sends it, so the stand-in stays small and only the reader is measured.
# Peak RSS is /usr/bin/time's maximum resident set; stdout goes to `wc -c`.
# Not a timed test: docs/performance.md keeps the figures.
#
#   benches/json_reader.sh                       # this tree's release binary alone
#   OLD=/path/to/main/macfleet benches/json_reader.sh   # and main's, side by side
#
# COUNT workers (default 230000: a 2.1 GB page), PORT (default 17817),
# NEW (default target/release/macfleet), OLD (optional), OUTPUTS
# (default "json jsonl").
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-230000}
PORT=${PORT:-17817}
NEW=${NEW:-target/release/macfleet}
OLD=${OLD:-}
OUTPUTS=${OUTPUTS:-json jsonl}
[ -x "$NEW" ] || { echo "no $NEW: cargo build --release first"; exit 1; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian package time)"; exit 1; }

python3 benches/workers_page.py serve "$PORT" "$COUNT" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break
  sleep 0.1
done

bytes=$(curl -s "http://127.0.0.1:$PORT/v1/workers" | wc -c)
echo "== /v1/workers: $COUNT largest workers, $bytes bytes"
printf '%-8s %-6s %12s %10s %16s %s\n' BINARY OUTPUT PEAK_RSS_MiB WALL_s STDOUT_BYTES EXIT
run() { # name binary output
  local log; log=$(mktemp)
  local out code=0
  # No token leaves loopback; the stand-in does not check it.
  out=$( { MAC_HUB_TOKEN=bench-viewer MAC_HUB_URL="http://127.0.0.1:$PORT" \
    XDG_CONFIG_HOME=/nonexistent-macfleet-bench \
    /usr/bin/time -f '%M %e' -o "$log" "$2" get workers -o "$3" | wc -c; } 2>/dev/null) || code=$?
  read -r kib secs < "$log"
  printf '%-8s %-6s %12d %10s %16s %s\n' "$1" "$3" $((kib / 1024)) "$secs" "$out" "$code"
  rm -f "$log"
}
for o in $OUTPUTS; do
  run new "$NEW" "$o"
  [ -n "$OLD" ] && run old "$OLD" "$o"
done
