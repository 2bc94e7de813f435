-- The mixed load of bench/sandboxes.py, for wrk (one thread), spread over sandboxes:
--   wrk -t1 -c8 -d3s -s bench/sandboxes.lua http://127.0.0.1:8080 -- MODE COUNT TAG
-- Requests in turn: a GET status, b GET the organization's 50 projects, c POST a variable
-- (key K_<TAG>_<n>, unique per call), d GET /organization without credentials (401).
-- MODE: none    no sandbox named (the default sandbox; also the server before sandboxes)
--       header  X-Mock-Sandbox: s<k>
--       prefix  /sandbox/s<k>/<path>
-- k goes round 0 .. COUNT-1, one step every 4 requests (so each sandbox gets every request).
-- done() prints one line "RESULT {json}": requests, duration, p50/p99 and replies per status.

dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "result.lua")

local ORG = "8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10"
local PROJECT = "2f6b8d0a-4c1e-4b3d-9a5f-7e9c1b3d5f63"
local APP = "a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5"

function init(args)
  mode, count, tag = args[1], tonumber(args[2] or "1"), args[3] or "0"
  sent, statuses = 0, {}
end

function request()
  local turn = sent % 4
  local box = "s" .. (math.floor(sent / 4) % count)
  sent = sent + 1
  local headers = {}
  if turn ~= 3 then headers["Authorization"] = "Token mock-admin-token" end
  if mode == "header" then headers["X-Mock-Sandbox"] = box end
  local prefix = mode == "prefix" and ("/sandbox/" .. box) or ""
  if turn == 0 then
    return wrk.format("GET", prefix .. "/application/" .. APP .. "/status", headers)
  elseif turn == 1 then
    return wrk.format("GET", prefix .. "/organization/" .. ORG .. "/project", headers)
  elseif turn == 2 then
    headers["Content-Type"] = "application/json"
    return wrk.format("POST", prefix .. "/project/" .. PROJECT .. "/environmentVariable", headers,
      string.format('{"key":"K_%s_%d","value":"v"}', tag, sent))
  end
  return wrk.format("GET", prefix .. "/organization", headers)
end

function response(status, headers, body)
  tally(status)
end
