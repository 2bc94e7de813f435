-- What the wrk scripts of bench/ share: keep every thread, count replies per status in `statuses`
-- (each script's init sets it to {} and its response() adds to it), and print one line
-- "RESULT {json}" when wrk is done: requests, duration, p50/p99 latency, socket errors, replies per status.
-- Loaded with dofile by requests.lua and sandboxes.lua from their own folder.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function tally(status)
  statuses[status] = (statuses[status] or 0) + 1
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
