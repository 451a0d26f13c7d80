-- wrk script: first heartbeats only. Every request is a worker id the hub
-- has not seen, so the whole run measures registering (each new id bound
-- to its pool durably before its answer). The requests are built once in
-- init(), before wrk's clock starts, as benches/heartbeat.lua's known
-- workers are, so the load generator's own Lua work is the same as for
-- them. PER_THREAD ids per wrk thread (default 200,000: more than a
-- 4-second run answers on these machines); ids start at REG_BASE, so a
-- second run against the same hub registers fresh ids again. The token
-- comes from the environment and is never written to a file.
local token = os.getenv("MAC_HUB_TOKEN")
local per = tonumber(os.getenv("PER_THREAD") or "200000")
local base = tonumber(os.getenv("REG_BASE") or "0")
local reqs = {}
local i = 0
local counter = 0

local function body(id)
  return string.format([[{"worker":"r-%08d","host":"node-%06d","sent_at":"2026-11-29T15:04:05Z","config_revision":null,"agents":["opencode","pi","claude","codex"],"active_agent":"claude","capabilities":{"opencode":{"binary":true,"token":true,"preflight":"ok"},"pi":{"binary":false,"token":true,"preflight":"unknown"},"claude":{"binary":true,"token":true,"preflight":"ok"},"codex":{"binary":true,"token":false,"preflight":"unknown"}},"failovers":[]}]], id, math.floor(id / 4))
end

local headers = {
  ["Authorization"] = "Bearer " .. token,
  ["Content-Type"] = "application/json",
}

function setup(thread)
  counter = counter + 1
  thread:set("offset", counter)
end

function init(args)
  local first = base + ((offset or 1) - 1) * per
  for k = 1, per do
    reqs[k] = wrk.format("POST", "/v1/heartbeats", headers, body(first + k - 1))
  end
end

request = function()
  i = i + 1
  if i > #reqs then
    -- Out of fresh ids (the script checks the count afterwards).
    i = 1
  end
  return reqs[i]
end

done = function(summary, latency, requests)
  io.write(string.format("errors (non-2xx, connect, read, write, timeout): %d\n", summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
