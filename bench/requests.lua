-- The requests of the benchmark, for wrk (one thread):
--   wrk -t1 -c8 -d3s -s bench/requests.lua http://127.0.0.1:8080 -- KIND PATH [TAG] [STOP_AFTER]
-- KIND: get (authenticated GET of PATH), unauth (GET of PATH without Authorization),
--       create_var (POST of a variable with key K_<TAG>_<n>, unique per call),
--       create_project (POST of a project named p_<TAG>_<n>; with STOP_AFTER, exactly that many
--       POSTs, then cheap GETs of /organization until wrk is stopped).
-- STOP_AFTER > 0: once that many replies arrived (plus a margin for create_project), print
-- "STOP" and stop sending; bench/run.py then interrupts wrk (wrk itself would wait out -d).
-- done() prints one line "RESULT {json}": requests, duration, p50/p99 and replies per status.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  kind, path, tag, stop_after = args[1], args[2], args[3] or "0", tonumber(args[4] or "0")
  sent, replies, statuses = 0, 0, {}
  auth = { ["Authorization"] = "Token mock-admin-token" }
  post = { ["Authorization"] = "Token mock-admin-token", ["Content-Type"] = "application/json" }
end

function request()
  sent = sent + 1
  if kind == "unauth" then
    return wrk.format("GET", path, {})
  elseif kind == "create_var" then
    return wrk.format("POST", path, post, string.format('{"key":"K_%s_%d","value":"v"}', tag, sent))
  elseif kind == "create_project" and (stop_after == 0 or sent <= stop_after) then
    return wrk.format("POST", path, post, string.format('{"name":"p_%s_%d"}', tag, sent))
  elseif kind == "create_project" then
    return wrk.format("GET", "/organization", auth)
  end
  return wrk.format("GET", path, auth)
end

function response(status, headers, body)
  replies = replies + 1
  statuses[status] = (statuses[status] or 0) + 1
  local margin = kind == "create_project" and 64 or 0
  if stop_after > 0 and replies == stop_after + margin then
    io.write("STOP\n")
    io.stdout:flush()
    wrk.thread:stop()
  end
end

function done(summary, latency, requests)
  local total, counts = {}, {}
  for _, thread in ipairs(threads) do
    for status, n in pairs(thread:get("statuses")) do total[status] = (total[status] or 0) + n end
  end
  for status, n in pairs(total) do counts[#counts + 1] = string.format('"%d":%d', status, n) end
  local e = summary.errors
  io.write(string.format('RESULT {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,' ..
    '"socket_errors":%d,"statuses":{%s}}\n', summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), e.connect + e.read + e.write + e.timeout,
    table.concat(counts, ",")))
end
