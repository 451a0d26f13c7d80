-- wrk script: POST /v1/heartbeats for workers spread over a 100,000-worker
-- fleet. Requests are built once in init() so that the load generator's
-- own Lua work does not dominate a 2-core machine. WARM=1 walks every id
-- once in order (to register the whole fleet). The token comes from the
-- environment and is never written to a file.
local token = os.getenv("MAC_HUB_TOKEN")
local n = tonumber(os.getenv("WORKERS") or "100000")
local warm = os.getenv("WARM") == "1"
local reqs = {}
local i = 0
local counter = 0

local function body(id, host)
  return string.format([[{"worker":"w-%06d","host":"node-%04d","sent_at":"2026-11-29T15:04:05Z","config_revision":null,"agents":["opencode","pi","claude","codex"],"active_agent":"claude","capabilities":{"opencode":{"binary":true,"token":true,"preflight":"ok"},"pi":{"binary":false,"token":true,"preflight":"unknown"},"claude":{"binary":true,"token":true,"preflight":"ok"},"codex":{"binary":true,"token":false,"preflight":"unknown"}},"failovers":[]}]], id, host)
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
  math.randomseed(offset or 1)
  if not warm then
    for k = 1, 20000 do
      local id = math.random(0, n - 1)
      reqs[k] = wrk.format("POST", "/v1/heartbeats", headers, body(id, math.floor(id / 4)))
    end
  end
end

request = function()
  if warm then
    i = i + 1
    local id = ((offset or 1) - 1) * math.floor(n / 2) + (i % math.floor(n / 2))
    return wrk.format("POST", "/v1/heartbeats", headers, body(id, math.floor(id / 4)))
  end
  i = i % #reqs + 1
  return reqs[i]
end

done = function(summary, latency, requests)
  io.write(string.format("errors (non-2xx, connect, read, write, timeout): %d\n", summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
