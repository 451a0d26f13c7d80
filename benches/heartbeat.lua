-- wrk script: POST /v1/heartbeats for workers spread over a 100,000-worker
-- fleet. Token from the environment (never written to a file).
local token = os.getenv("MAC_HUB_TOKEN")
local n = tonumber(os.getenv("WORKERS") or "100000")
local counter = 0

request = function()
  counter = counter + 1
  local id = string.format("w-%06d", (counter * 7919 + math.random(0, 1000)) % n)
  local body = string.format([[{"worker":"%s","host":"node-%04d","sent_at":"2026-11-29T15:04:05Z","config_revision":null,"agents":["opencode","pi","claude","codex"],"active_agent":"claude","capabilities":{"opencode":{"binary":true,"token":true,"preflight":"ok"},"pi":{"binary":false,"token":true,"preflight":"unknown"},"claude":{"binary":true,"token":true,"preflight":"ok"},"codex":{"binary":true,"token":false,"preflight":"unknown"}},"failovers":[]}]], id, counter % 25000)
  return wrk.format("POST", "/v1/heartbeats", {
    ["Authorization"] = "Bearer " .. token,
    ["Content-Type"] = "application/json",
  }, body)
end

done = function(summary, latency, requests)
  io.write(string.format("non-2xx or errors: %d\n", summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
