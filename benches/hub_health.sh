#!/bin/bash
# benches/hub_health.sh BINARY PORT: /v1/health (JSON) against a debug hub: hyperfine of
# 2,000 requests on one keep-alive connection (curl), and strace's count of
# the hub's syscalls over 2,000 more.
set -eu
bin=$1; port=$2
dir=$(mktemp -d); printf '[fleet]\nMAC_CODING_AGENTS = ["claude", "opencode"]\n' > "$dir/hub.toml"; "$bin" hub token --name alice --role owner --tokens "$dir/tokens.toml" >/dev/null
"$bin" hub --config "$dir/hub.toml" --tokens "$dir/tokens.toml" --listen 127.0.0.1:$port 2>"$dir/log" &
pid=$!
for i in $(seq 50); do curl -sf http://127.0.0.1:$port/v1/health >/dev/null && break; sleep 0.1; done
urls=$(for i in $(seq 2000); do printf 'http://127.0.0.1:%s/v1/health ' $port; done)
echo "$urls" > "$dir/urls"
cat > "$dir/run" <<EOR
curl -s -H "Accept: application/json" \$(cat $dir/urls) >/dev/null
EOR
hyperfine -N --warmup 1 --runs 8 "bash $dir/run" 2>&1 | grep -E "Time|Range"
strace -f -c -o "$dir/strace" -p $pid & st=$!
sleep 1
bash "$dir/run"
sleep 0.5
kill -INT $st; wait $st 2>/dev/null || true
head -25 "$dir/strace"
kill $pid; wait $pid 2>/dev/null || true
rm -rf "$dir"
