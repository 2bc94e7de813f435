-- The requests of the benchmark, for wrk (one thread):
--   wrk -t1 -c8 -d3s -s bench/requests.lua http://127.0.0.1:8080 -- KIND PATH [TAG] [STOP_AFTER]
-- KIND: get            authenticated GET of PATH
--       unauth         GET of PATH without Authorization
--       create_var     POST to PATH of a variable with key K_<TAG>_<n>, unique per call
--       create_project POST to PATH of a project named p_<TAG>_<n>
--       spread_var     POST of a variable to each project of the file PATH (one id a line) in turn
--       mixed          PATH is "K:ORG:PROJECT:APP": requests a, b, c, d of bench/run.py in turn, each in
--                      one of K sandboxes (/sandbox/bench-0 .. bench-<K-1>) in turn (bench/scale.py)
-- STOP_AFTER > 0: send exactly that many requests (a create_* kind then sends cheap GETs); once
-- as many replies arrived (plus a margin for the creates), print "STOP" and stop sending;
-- bench/run.py then interrupts wrk, which would otherwise wait out -d.
-- done() prints one line "RESULT {json}": requests, duration, p50/p99 and replies per status.

dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "result.lua")

function init(args)
  kind, path, tag, stop_after = args[1], args[2], args[3] or "0", tonumber(args[4] or "0")
  sent, replies, statuses = 0, 0, {}
  auth = { ["Authorization"] = "Token mock-admin-token" }
  post = { ["Authorization"] = "Token mock-admin-token", ["Content-Type"] = "application/json" }
  margin = (kind == "get" or kind == "unauth") and 0 or 64
  if kind == "spread_var" then
    ids = {}
    for line in io.lines(path) do ids[#ids + 1] = line end
  elseif kind == "mixed" then
    local k, o, p, a = path:match("^(%d+):([^:]+):([^:]+):([^:]+)$")
    boxes, org, project, app = tonumber(k), o, p, a
  end
end

local function mixed()
  local box = "/sandbox/bench-" .. (math.floor(sent / 4) % boxes)
  local step = sent % 4
  if step == 0 then
    return wrk.format("GET", box .. "/application/" .. app .. "/status", auth)
  elseif step == 1 then
    return wrk.format("GET", box .. "/organization/" .. org .. "/project", auth)
  elseif step == 2 then
    return wrk.format("POST", box .. "/project/" .. project .. "/environmentVariable", post,
      string.format('{"key":"K_%s_%d","value":"v"}', tag, sent))
  end
  return wrk.format("GET", box .. "/organization", {})
end

local function variable()
  return string.format('{"key":"K_%s_%d","value":"v"}', tag, sent)
end

function request()
  sent = sent + 1
  if stop_after > 0 and sent > stop_after then
    return wrk.format("GET", "/organization", auth)
  elseif kind == "unauth" then
    return wrk.format("GET", path, {})
  elseif kind == "create_var" then
    return wrk.format("POST", path, post, variable())
  elseif kind == "create_project" then
    return wrk.format("POST", path, post, string.format('{"name":"p_%s_%d"}', tag, sent))
  elseif kind == "mixed" then
    return mixed()
  elseif kind == "spread_var" then
    return wrk.format("POST", "/project/" .. ids[sent % #ids + 1] .. "/environmentVariable", post, variable())
  end
  return wrk.format("GET", path, auth)
end

function response(status, headers, body)
  replies = replies + 1
  tally(status)
  if stop_after > 0 and replies == stop_after + margin then
    io.write("STOP\n")
    io.stdout:flush()
    wrk.thread:stop()
  end
end
