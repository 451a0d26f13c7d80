# Shared set-up of the TUI benches (sourced, not run): a temporary
# directory, a local hub on 127.0.0.1:$PORT with a worker and a viewer
# token, and $WORKERS workers registered through wrk. Set BIN, PORT and
# WORKERS first. Sets $dir and $hub; everything is stopped on exit, plus
# whatever the caller adds with `on_exit 'command'`.
dir=$(mktemp -d)
hub=
_on_exit=()
on_exit() { _on_exit+=("$1"); }
_cleanup() {
  local c
  for c in "${_on_exit[@]}"; do eval "$c" 2>/dev/null || true; done
  [ -n "$hub" ] && kill "$hub" 2>/dev/null || true
  rm -rf "$dir"
}
trap _cleanup EXIT

# The hub, its tokens ($dir/worker.tok, $dir/viewer.tok), ready in ≤5 s.
start_hub() {
  cp assets/hub.toml "$dir/hub.toml"
  $BIN hub token --name load --role worker --tokens "$dir/tokens.toml" > "$dir/worker.tok" 2>/dev/null
  $BIN hub token --name look --role viewer --tokens "$dir/tokens.toml" > "$dir/viewer.tok" 2>/dev/null
  $BIN hub --config "$dir/hub.toml" --tokens "$dir/tokens.toml" --listen 127.0.0.1:$PORT \
    --heartbeat-interval 60 > "$dir/hub.log" 2>&1 &
  hub=$!
  for _ in $(seq 50); do curl -sf http://127.0.0.1:$PORT/v1/health >/dev/null && return; sleep 0.1; done
  echo "the hub did not answer on 127.0.0.1:$PORT"; exit 1
}

# $WORKERS workers heartbeat once each (benches/heartbeat.lua, WARM=1).
register_workers() {
  echo "== register $WORKERS workers"
  MAC_HUB_TOKEN=$(cat "$dir/worker.tok") WORKERS=$WORKERS WARM=1 \
    wrk -t2 -c64 -d$(( WORKERS > 10000 ? 12 : 3 ))s -s benches/heartbeat.lua http://127.0.0.1:$PORT > /dev/null
}

# The fleet size as the TUI prints it: 100000 → 100,000.
with_commas() { python3 -c "print(f'{$1:,}')"; }
