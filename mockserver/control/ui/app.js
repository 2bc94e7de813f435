// Mock inspector: plain JavaScript over the control API, with URLs relative to this page.
// /_mock/ui reads /_mock/...; /sandbox/{name}/_mock/ui reads /sandbox/{name}/_mock/...
"use strict";

// ------------------------------------------------------------------ where we are
const PREFIX = location.pathname.slice(0, location.pathname.lastIndexOf("/_mock/ui"));
const CONTROL = PREFIX + "/_mock";
const SANDBOX = PREFIX.match(/^(.*)\/sandbox\/([^/]+)$/);
const ROOT = SANDBOX ? SANDBOX[1] : PREFIX;
const CURRENT_SANDBOX = SANDBOX ? decodeURIComponent(SANDBOX[2]) : "default";
const TOKEN_KEY = "mock.controlToken";
const PAGE_SIZE = 100;
const POLL_MS = 1000;

const $ = (selector, root = document) => root.querySelector(selector);
const $$ = (selector, root = document) => Array.from(root.querySelectorAll(selector));

// ------------------------------------------------------------------ small helpers
function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

function ms(iso) {            // ISO 8601 with microseconds -> epoch milliseconds
  if (!iso) return null;
  return Date.parse(iso.replace(/(\.\d{3})\d*/, "$1"));
}

function clockText(iso) {     // 2026-11-23 10:37:55.395 (UTC, as the mock keeps it)
  return iso ? iso.replace("T", " ").replace(/(\.\d{3})\d*Z$/, "$1") : "–";
}

function timeText(iso) {      // 10:37:55.395
  return iso ? iso.slice(11, 23) : "–";
}

function seconds(value) {
  if (value == null || !isFinite(value)) return "–";
  if (value < 60) return `${+value.toFixed(value < 10 ? 1 : 0)} s`;
  const m = Math.floor(value / 60), s = Math.round(value % 60);
  if (m < 60) return `${m} min ${s} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

function shortPath(path) {     // ids shortened to their first 8 characters; the full path is in the title
  return path.replace(/([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, "$1…");
}

function latency(value) {
  return value < 1 ? `${value.toFixed(2)} ms` : value < 100 ? `${value.toFixed(1)} ms` : `${Math.round(value)} ms`;
}

function json(value) {        // pretty-printed, highlighted JSON (escaped)
  if (value === undefined) return '<pre class="json">–</pre>';
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  const html = esc(text).replace(
    /(&quot;(?:\\.|(?!&quot;).)*?&quot;)(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g,
    (match, str, colon, literal, number) => {
      if (str) return colon ? `<span class="k">${str}</span>${colon}` : `<span class="s">${str}</span>`;
      if (literal) return `<span class="l">${literal}</span>`;
      return `<span class="n">${number}</span>`;
    });
  return `<pre class="json">${html}</pre>`;
}

function statusBadge(status) {
  const code = Number(status);
  const kind = code === 0 ? "bad" : code >= 500 ? "bad" : code >= 400 ? "warn" : code >= 200 && code < 300 ? "ok" : "info";
  const text = code === 0 ? "0 dropped" : String(code);
  return `<span class="badge ${kind}" data-status="${code}">${esc(text)}</span>`;
}

// a reply a scenario sent with a network fault: its status line went out, its body did not (whole)
function cutBadge(status, fault) {
  const words = { truncate: "body cut", reset: "connection reset", dribble: "body dribbled" };
  const said = fault.split(",").map((name) => words[name.trim()] || name.trim()).join(", ");
  return `<span class="badge warn" data-status="${Number(status)}">${esc(status)}</span> <span class="badge bad fault"
    data-testid="fault" title="Sent with a network fault: ${esc(said)}">cut</span>`;
}

function driftBadge(findings) {
  if (findings == null) return "";
  return findings
    ? `<span class="badge warn drift-badge" data-testid="drift" title="Forwarded: ${findings} finding(s) of drift from the document">drift ${findings}</span>`
    : '<span class="badge drift-badge" data-testid="drift" title="Forwarded: the exchange agrees with the document">forwarded</span>';
}

function sameInstant(rows) {    // call id -> its place among the shown calls of one mock-clock instant (1, 2 ...)
  const places = new Map(), seen = new Map(), counts = new Map();
  for (const row of rows) counts.set(row.time, (counts.get(row.time) || 0) + 1);
  for (const row of [...rows].sort((a, b) => a.id - b.id)) {
    if (counts.get(row.time) < 2) continue;
    seen.set(row.time, (seen.get(row.time) || 0) + 1);
    places.set(row.id, [seen.get(row.time), counts.get(row.time)]);
  }
  return places;
}

function stateBadge(state) {
  if (!state) return '<span class="badge">never deployed</span>';
  let kind = "";
  if (/_ERROR$/.test(state) || state === "FAILED") kind = "bad";
  else if (["DEPLOYED", "RESTARTED", "DELIVERED", "SUCCESS"].includes(state)) kind = "ok";
  else if (/ING$/.test(state) || state === "ONGOING" || state === "RETRYING") kind = "info";
  return `<span class="badge ${kind}" data-state="${esc(state)}">${esc(state)}</span>`;
}

function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") search.set(key, value);
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

// ------------------------------------------------------------------ the control API (token on 401)
let tokenPrompt = null;

function authHeaders() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { Authorization: `Bearer ${token}` } : {};
}

function askToken(refused) {
  if (tokenPrompt) return tokenPrompt;
  const dialog = $("#token-dialog");
  $("#token-error").hidden = !refused;
  $("#token-input").value = "";
  tokenPrompt = new Promise((resolve) => {
    $("#token-form").onsubmit = (event) => {
      event.preventDefault();
      const value = $("#token-input").value.trim();
      if (!value) return;
      sessionStorage.setItem(TOKEN_KEY, value);
      dialog.close();
      tokenPrompt = null;
      resolve();
    };
  });
  if (!dialog.open) dialog.showModal();
  $("#token-input").focus();
  return tokenPrompt;
}

$("#token-dialog").addEventListener("cancel", (event) => event.preventDefault());   // the control API needs it

async function call(url, options = {}) {
  for (let attempt = 0; ; attempt++) {
    const headers = { ...authHeaders(), ...(options.headers || {}) };
    let reply;
    try {
      reply = await fetch(url, { ...options, headers });
    } catch (error) {
      setLive("down");
      throw error;
    }
    if (reply.status === 401 && attempt < 5) {
      await askToken(Boolean(sessionStorage.getItem(TOKEN_KEY)));
      continue;
    }
    const text = await reply.text();
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch { body = text; }
    return { status: reply.status, ok: reply.ok, body };
  }
}

const api = {
  get: (path) => call(CONTROL + path),
  post: (path, body, type = "application/json") =>
    call(CONTROL + path, { method: "POST", headers: { "Content-Type": type }, body: typeof body === "string" ? body : JSON.stringify(body ?? {}) }),
  del: (path) => call(CONTROL + path, { method: "DELETE" }),
};

function notice(message) {
  const box = $("#notice");
  box.textContent = message || "";
  box.hidden = !message;
}

function failed(reply) {
  if (reply.ok) return false;
  const message = reply.body && reply.body.message ? reply.body.message : `HTTP ${reply.status}`;
  notice(`The mock answered ${reply.status}: ${message}`);
  return true;
}

function setLive(state) {
  const live = $("#live");
  live.classList.toggle("paused", state === "paused");
  live.classList.toggle("down", state === "down");
  $("#live-text").textContent = state === "paused" ? "Paused (tab hidden)" : state === "down" ? "Mock unreachable" : "Live";
}

// ------------------------------------------------------------------ views and the hash
const VIEWS = ["calls", "deployments", "state", "scenarios", "webhooks"];
let view = null;

function showView(name) {
  if (!VIEWS.includes(name)) name = "calls";
  view = name;
  for (const other of VIEWS) {
    $(`#view-${other}`).hidden = other !== name;
    $(`#tab-${other}`).setAttribute("aria-selected", String(other === name));
  }
  refresh(true);
}

window.addEventListener("hashchange", () => showView(location.hash.slice(1)));

let chain = Promise.resolve();
let pending = 0;

function refresh(full) {             // one refresh at a time, in order
  pending++;
  chain = chain.then(() => reload(full)).catch(() => setLive("down")).finally(() => pending--);
  return chain;
}

async function reload(full) {
  const work = [refreshClock()];
  if (view === "calls") work.push(full ? loadCalls() : pollCalls());
  if (view === "deployments") work.push(loadDeployments());
  if (view === "state" && full) work.push(loadState());
  if (view === "scenarios") work.push(loadScenarios(), loadUsage());
  if (view === "webhooks") work.push(loadDeliveries());
  await Promise.allSettled(work);
}

// ------------------------------------------------------------------ clock and controls
let clockNow = null;

async function refreshClock() {
  const reply = await api.get("/clock");
  if (!reply.ok) return;
  showClock(reply.body);
  setLive(document.hidden ? "paused" : "live");
}

function showClock(clock) {
  clockNow = clock;
  const time = $("#clock-now");
  time.textContent = `${clockText(clock.now)} UTC`;
  time.dateTime = clock.now;
  $("#clock-mode").textContent = `${clock.mode} clock`;
}

async function advance(secondsToAdd) {
  const reply = await api.post("/clock/advance", { seconds: secondsToAdd });
  if (failed(reply)) return;
  notice("");
  showClock(reply.body);
  await refresh(false);
}

for (const button of $$("[data-advance]")) {
  button.addEventListener("click", () => advance(Number(button.dataset.advance)));
}
$("#advance-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const value = Number($("#advance-seconds").value);
  if ($("#advance-seconds").value === "" || !(value >= 0)) {
    notice("Enter a number of seconds (0 or more) to advance the clock by.");
    return;
  }
  advance(value);
});
$("#reset").addEventListener("click", async () => {
  const reply = await api.post("/reset", {});
  if (failed(reply)) return;
  notice("");
  calls.lastId = 0;
  await refresh(true);
});

// ------------------------------------------------------------------ sandboxes
async function loadSandboxes() {
  let reply;
  try {
    reply = await call(`${ROOT}/_mock/sandboxes`);
  } catch {
    return;
  }
  if (!reply.ok || !reply.body || !Array.isArray(reply.body.results)) return;   // 404: no sandboxes here
  const names = reply.body.results.map((item) => item.name);
  if (!names.includes("default")) names.unshift("default");
  if (!names.includes(CURRENT_SANDBOX)) names.push(CURRENT_SANDBOX);
  const select = $("#sandbox");
  select.innerHTML = names.map((name) => `<option${name === CURRENT_SANDBOX ? " selected" : ""}>${esc(name)}</option>`).join("");
  $("#sandbox-box").hidden = false;
  select.addEventListener("change", () => {
    const name = select.value;
    const base = name === "default" ? ROOT : `${ROOT}/sandbox/${encodeURIComponent(name)}`;
    location.href = `${base}/_mock/ui${location.hash}`;
  });
}

// ------------------------------------------------------------------ calls
const calls = { filters: {}, before: null, stack: [], rows: [], total: 0, newer: 0, lastId: 0, journalTotal: 0, selected: null,
  fresh: 0, dropped: 0 };

function callFilters() {
  return {
    status: $("#f-status").value,
    operation: $("#f-operation").value.trim(),
    path: $("#f-path").value.trim(),
    text: $("#f-text").value.trim(),
    drift: $("#f-drift").value,
  };
}

async function loadCalls() {
  const reply = await api.get(`/calls/rows${query({ ...calls.filters, before: calls.before, limit: PAGE_SIZE })}`);
  if (failed(reply)) return;
  const body = reply.body;
  calls.rows = body.results;
  calls.total = body.total;
  calls.newer = body.newer;
  calls.lastId = body.last_id;
  calls.journalTotal = body.journal_total;
  calls.dropped = body.dropped;
  calls.fresh = calls.before === null ? 0 : calls.fresh;
  $("#calls-count").textContent = body.journal_total.toLocaleString("en");
  renderCalls();
}

async function pollCalls() {
  const reply = await api.get(`/calls/rows${query({ ...calls.filters, since: calls.lastId, limit: PAGE_SIZE })}`);
  if (!reply.ok) return;
  const body = reply.body;
  $("#calls-count").textContent = body.journal_total.toLocaleString("en");
  const reset = body.last_id < calls.lastId || body.journal_total < calls.journalTotal;
  calls.journalTotal = body.journal_total;
  if (reset) {                                    // the journal was reset: start again from the newest
    calls.before = null;
    calls.stack = [];
    await loadCalls();
    return;
  }
  calls.lastId = body.last_id;
  calls.dropped = body.dropped;
  if (!body.total) return;
  calls.total += body.total;
  if (calls.before === null) {
    calls.rows = body.results.concat(calls.rows).slice(0, PAGE_SIZE);
  } else {
    calls.newer += body.total;
    calls.fresh += body.total;
  }
  renderCalls();
}

function timeCell(row, place) {
  if (!place) return `<td class="time" title="${esc(row.time)} on the mock clock">${esc(timeText(row.time))}</td>`;
  const [nth, of] = place;
  return `<td class="time" title="${esc(row.time)} on the mock clock: call ${nth} of ${of} at this instant (the clock did not move between them)">${esc(timeText(row.time))}<span class="seq" data-testid="seq"> ·${nth}</span></td>`;
}

function renderCalls() {
  const places = sameInstant(calls.rows);
  const rows = calls.rows.map((row) => `
    <tr data-id="${row.id}" tabindex="0" aria-selected="${row.id === calls.selected}">
      <td class="num muted">${row.id}</td>
      ${timeCell(row, places.get(row.id))}
      <td><span class="method ${esc(row.method)}">${esc(row.method)}</span></td>
      <td class="path" title="${esc(row.path)}"><span class="mono">${esc(shortPath(row.path))}</span>
        <span class="operation">${row.operation ? esc(row.operation) : "no route"}</span></td>
      <td class="status">${row.fault ? cutBadge(row.status, row.fault) : statusBadge(row.status)} ${driftBadge(row.drift)}</td>
      <td class="num">${esc(latency(row.duration_ms))}</td>
      <td>${row.token ? esc(row.token) : '<span class="muted">none</span>'}</td>
      <td class="rule-cell">${row.scenario_rule ? `<span class="badge accent rule" title="${esc(row.scenario_rule)}">${esc(row.scenario_rule)}</span>` : ""}</td>
    </tr>`).join("");
  $("#call-rows").innerHTML = rows;
  $("#calls-empty").hidden = calls.rows.length > 0;
  const first = calls.newer + 1, last = calls.newer + calls.rows.length;
  const dropped = calls.dropped ? ` · ${calls.dropped.toLocaleString("en")} older dropped` : "";
  $("#calls-range").textContent = calls.rows.length
    ? `Calls ${first.toLocaleString("en")}–${last.toLocaleString("en")} of ${calls.total.toLocaleString("en")}, newest first${dropped}`
    : `No calls${dropped}`;
  $("#calls-new").hidden = !calls.fresh;
  $("#calls-new").textContent = `${calls.fresh} new`;
  $("#page-newest").disabled = calls.before === null;
  $("#page-newer").disabled = calls.before === null;
  $("#page-older").disabled = calls.newer + calls.rows.length >= calls.total;
  if (!performance.getEntriesByName("inspector:calls").length) performance.mark("inspector:calls");   // first rows shown
}

async function openCall(id) {
  calls.selected = id;
  for (const tr of $$("#call-rows tr")) tr.setAttribute("aria-selected", String(Number(tr.dataset.id) === id));
  const pane = $("#call-detail");
  const reply = await api.get(`/calls/${id}`);
  if (!reply.ok) {
    pane.innerHTML = `<p class="empty">Call #${esc(id)} is no longer in the journal.</p>`;
    return;
  }
  const c = reply.body;
  const headers = Object.entries(c.headers || {}).map(([k, v]) => `<dt>${esc(k)}</dt><dd>${esc(v)}</dd>`).join("");
  const queryRows = Object.entries(c.query || {}).map(([k, v]) => `<dt>${esc(k)}</dt><dd>${esc(v)}</dd>`).join("");
  const deliveries = (c.webhook_deliveries || []).map((d) => `#${esc(d)}`).join(", ");
  const forwarded = Array.isArray(c.drift);       // a call the recording proxy forwarded to the upstream
  pane.innerHTML = `
    <h2 id="call-title">Call #${c.id}</h2>
    <div class="summary-line"><span class="method ${esc(c.method)}">${esc(c.method)}</span>
      <code>${esc(c.path)}</code> ${statusBadge(c.status)}</div>
    <h3>Summary</h3>
    <dl class="kv">
      <dt>Time</dt><dd>${esc(clockText(c.time))} UTC</dd>
      <dt>Operation</dt><dd>${esc(c.operation || "no route")}</dd>
      <dt>Path template</dt><dd>${esc(c.path_template || "–")}</dd>
      <dt>Latency</dt><dd>${esc(latency(c.duration_ms))}</dd>
      <dt>Request id</dt><dd class="mono">${esc(c.request_id || "–")}</dd>
      ${c.trace_id ? `<dt>Trace id</dt><dd class="mono trace-id">${esc(c.trace_id)}</dd>` : ""}
      <dt>Token</dt><dd>${esc(c.token || "none")}</dd>
      <dt>Scenario rule</dt><dd>${esc(c.scenario_rule || "none fired")}</dd>
      <dt>Webhook deliveries</dt><dd>${deliveries || "none"}</dd>
      <dt>Answered by</dt><dd>${forwarded ? "the upstream (recorded)" : "the mock"}</dd>
    </dl>
    ${forwarded ? driftSection(c.drift) : ""}
    <h3>Request</h3>
    ${queryRows ? `<dl class="kv">${queryRows}</dl>` : ""}
    <dl class="kv request-headers">${headers}</dl>
    <h3>Request body</h3>
    ${c.body === null || c.body === undefined ? '<p class="muted">No body</p>' : json(c.body)}
    <h3>Response ${statusBadge(c.status)}</h3>
    ${c.response === null || c.response === undefined ? '<p class="muted">No body</p>' : json(c.response)}`;
  pane.scrollTop = 0;
}

function driftSection(findings) {
  if (!findings.length) {
    return '<h3>Drift</h3><p class="muted drift-none">None: the exchange agrees with the mock\'s document.</p>';
  }
  const items = findings.map((f) => `
    <li><span class="badge warn">${esc(f.kind)}</span> <code>${esc(f.path)}</code> ${esc(f.message)}</li>`).join("");
  return `<h3>Drift <span class="badge warn">${findings.length}</span></h3><ul class="drift">${items}</ul>`;
}

$("#call-rows").addEventListener("click", (event) => {
  const tr = event.target.closest("tr[data-id]");
  if (tr) openCall(Number(tr.dataset.id));
});
$("#call-rows").addEventListener("keydown", (event) => {
  const tr = event.target.closest("tr[data-id]");
  if (!tr) return;
  if (event.key === "Enter" || event.key === " ") {
    event.preventDefault();
    openCall(Number(tr.dataset.id));
  } else if (event.key === "ArrowDown" && tr.nextElementSibling) {
    event.preventDefault();
    tr.nextElementSibling.focus();
  } else if (event.key === "ArrowUp" && tr.previousElementSibling) {
    event.preventDefault();
    tr.previousElementSibling.focus();
  }
});
$("#call-filters").addEventListener("submit", (event) => {
  event.preventDefault();
  calls.filters = callFilters();
  calls.before = null;
  calls.stack = [];
  loadCalls();
});
$("#f-status").addEventListener("change", () => $("#call-filters").requestSubmit());
$("#f-drift").addEventListener("change", () => $("#call-filters").requestSubmit());
$("#f-clear").addEventListener("click", () => {
  $("#call-filters").reset();
  $("#call-filters").requestSubmit();
});
$("#page-older").addEventListener("click", () => {
  if (!calls.rows.length) return;
  calls.stack.push(calls.before);
  calls.before = calls.rows[calls.rows.length - 1].id;
  loadCalls();
});
$("#page-newer").addEventListener("click", () => {
  calls.before = calls.stack.length ? calls.stack.pop() : null;
  loadCalls();
});
$("#page-newest").addEventListener("click", () => {
  calls.before = null;
  calls.stack = [];
  loadCalls();
});

async function loadOperations() {
  try {
    const reply = await fetch(`${PREFIX}/openapi.json`);
    if (!reply.ok) return;
    const document = await reply.json();
    const ids = [];
    for (const item of Object.values(document.paths || {})) {
      for (const operation of Object.values(item)) if (operation && operation.operationId) ids.push(operation.operationId);
    }
    $("#operations").innerHTML = [...new Set(ids)].sort().map((id) => `<option value="${esc(id)}">`).join("");
  } catch { /* the list of operations is a convenience */ }
}

// ------------------------------------------------------------------ deployments
const TICKS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400];
const openHistories = new Set();

function chartWindow(groups, now) {
  const choice = $("#d-window").value;
  const requests = groups.flatMap((g) => g.requests);
  const planned = requests.filter((r) => r.in_queue).map((r) => ms(r.end_at) ?? now);
  let start, end = Math.max(now, ...planned);
  if (choice === "all") {
    start = Math.min(now - 10000, ...requests.map((r) => ms(r.created_at)));
  } else if (choice === "auto") {           // the requests of the last two minutes, with some time before them
    const recent = requests.filter((r) => r.in_queue || (ms(r.end_at) ?? now) >= now - 120000).map((r) => ms(r.created_at));
    if (!recent.length) {
      start = now - 60000;
    } else {
      const first = Math.min(...recent);
      start = first - Math.max(end - first, 15000) * 0.25;
    }
  } else {
    start = now - Number(choice) * 1000;
  }
  end += Math.max(2000, (end - start) * 0.06);
  return { start, end };
}

function ticks(window) {
  const span = (window.end - window.start) / 1000;
  const step = TICKS.find((t) => span / t <= 9) || 86400;
  const out = [];
  for (let t = Math.ceil(window.start / 1000 / step) * step; t * 1000 <= window.end; t += step) {
    const iso = new Date(t * 1000).toISOString();
    out.push({ at: t * 1000, label: step >= 60 ? iso.slice(11, 16) : iso.slice(11, 19) });
  }
  return out;
}

function laneHtml(lane, requests, window, now) {
  const span = window.end - window.start;
  const x = (t) => ((Math.min(Math.max(t, window.start), window.end) - window.start) / span) * 100;
  const bars = [], steps = [];
  for (const request of requests) {
    for (const interval of request.intervals) {
      if (!interval.start) continue;           // not reached yet (a deployment moved by status reads)
      const outcome = ["done", "error", "canceled"].includes(interval.kind);
      const from = ms(interval.start);
      let to = interval.end ? ms(interval.end) : (outcome ? now : window.end);
      if (outcome) {
        if (from > now) continue;              // an outcome is shown once it happened
        to = Math.min(to, now);
      }
      const pieces = outcome ? [[from, to, false]] : [[from, Math.min(to, now), false], [Math.max(from, now), to, true]];
      for (const [a, b, planned] of pieces) {
        if (b < a || b < window.start || a > window.end) continue;
        if (b === a && interval.kind !== "running") continue;
        const left = x(a), width = Math.max(x(b) - left, 0);
        const title = `${interval.state}${planned ? " (planned)" : ""}: ${clockText(interval.start)} → ${interval.end ? clockText(interval.end) : "…"} · ${request.action} request ${request.id}`;
        bars.push(`<span class="bar ${esc(interval.kind)} ${esc(interval.state)}${planned ? " planned" : ""}" style="left:${left}%;width:${width}%"
          title="${esc(title)}" data-state="${esc(interval.state)}">${width > 6 ? esc(interval.state) : ""}</span>`);
      }
    }
    for (const step of request.steps) {
      if (!step.start) continue;
      const a = ms(step.start), b = step.end ? ms(step.end) : window.end;
      if (b < window.start || a > window.end) continue;
      const left = x(a), width = Math.max(x(b) - left, 0);
      steps.push(`<span class="step ${esc(step.status)}" style="left:${left}%;width:${width}%"
        title="${esc(`${step.name} · ${step.status} · ${step.duration_sec} s`)}"></span>`);
    }
  }
  const latest = requests[requests.length - 1];
  const nowX = x(now);
  return `
    <div class="lane-label" data-lane="${esc(lane.name)}">
      <span class="name" title="${esc(lane.id)}">${esc(lane.name)}</span>
      <span class="meta"><span>${esc((lane.type || "").toLowerCase())}</span>
        <span class="lane-state" data-testid="lane-state">${stateBadge(latest ? latest.state : null)}</span></span>
    </div>
    <div class="track" role="img" aria-label="${esc(`${lane.name}: ${latest ? latest.state : "never deployed"}`)}">
      ${bars.join("")}${steps.join("")}
      <span class="now-line" style="left:${nowX}%"></span>
    </div>`;
}

function groupHtml(group, window, now) {
  const axis = ticks(window).map((t) => `<span class="tick" style="left:${((t.at - window.start) / (window.end - window.start)) * 100}%">${t.label}</span>`).join("");
  const lanes = group.lanes.length
    ? group.lanes.map((lane) => laneHtml(lane, group.requests.filter((r) => r.target_id === lane.id), window, now)).join("")
    : '<div></div><p class="muted no-lanes">No services in this environment.</p>';
  const nowX = ((now - window.start) / (window.end - window.start)) * 100;
  const byId = Object.fromEntries(group.requests.map((r) => [r.id, r]));
  const queue = group.queue.map((id) => byId[id]).map((r) => `${esc(r.target_name)} ${stateBadge(r.state)}`).join(" → ");
  const history = group.requests.slice().reverse().map((r) => `
    <tr>
      <td class="mono" title="${esc(r.id)}">${esc(r.id.slice(0, 8))}</td>
      <td>${esc(r.target_name)}</td><td>${esc(r.action)}</td>
      <td class="mono">${esc(timeText(r.created_at))}</td><td class="mono">${esc(timeText(r.start_at))}</td>
      <td class="mono">${r.end_at ? esc(timeText(r.end_at)) : "–"}</td>
      <td>${stateBadge(r.outcome && !r.in_queue ? r.outcome : r.state)}</td>
      <td class="steps-list">${r.steps.map((s) => `${esc(s.name)} ${s.duration_sec}s ${s.status === "SUCCESS" ? "✓" : s.status === "ERROR" ? "✕" : s.status.toLowerCase()}`).join(" · ")}</td>
      <td>${r.call_id ? `<button type="button" class="link" data-call="${r.call_id}">#${r.call_id}</button>` : `<span class="muted">${esc(r.triggered_by)}</span>`}</td>
    </tr>`).join("");
  const title = group.kind === "environment"
    ? `<span class="crumb">${esc(group.project ? group.project.name : "")} /</span> ${esc(group.name)}`
    : `<span class="crumb">cluster /</span> ${esc(group.name)}`;
  return `
    <section class="group" data-group="${esc(group.id)}" aria-label="${esc(`${group.kind} ${group.name}`)}">
      <div class="group-head"><h2>${title}</h2>
        <span class="badge">${group.requests.length} request${group.requests.length === 1 ? "" : "s"}</span>
        <span class="queue-now">Queue now: ${queue || "empty"}</span></div>
      <div class="chart">
        ${group.lanes.length ? '<div class="axis-label"></div><div class="axis">' : '<div hidden>'}${axis}<span class="now-mark" style="left:${nowX}%">now ${esc(timeText(new Date(now).toISOString()).slice(0, 8))}</span></div>
        ${lanes}
      </div>
      <details class="history" data-history="${esc(group.id)}"${openHistories.has(group.id) ? " open" : ""}>
        <summary>History (${group.requests.length})</summary>
        <div class="table-wrap"><table class="grid">
          <thead><tr><th scope="col">Request</th><th scope="col">Target</th><th scope="col">Action</th><th scope="col">Created</th>
            <th scope="col">Started</th><th scope="col">Ended</th><th scope="col">State now / outcome</th><th scope="col">Steps</th><th scope="col">Call</th></tr></thead>
          <tbody>${history}</tbody></table></div>
      </details>
    </section>`;
}

async function loadDeployments() {
  const reply = await api.get("/deployments");
  if (failed(reply)) return;
  const { clock, results } = reply.body;
  showClock(clock);
  const now = ms(clock.now);
  const window = chartWindow(results, now);
  const active = results.reduce((n, g) => n + g.queue.length, 0);
  $("#deployments-count").textContent = active ? `${active} active` : "";
  $("#deployment-groups").innerHTML = results.length
    ? results.map((group) => groupHtml(group, window, now)).join("")
    : '<p class="empty">No environments.</p>';
}

$("#d-window").addEventListener("change", loadDeployments);
$("#deployment-groups").addEventListener("toggle", (event) => {
  const id = event.target.dataset && event.target.dataset.history;
  if (id) event.target.open ? openHistories.add(id) : openHistories.delete(id);
}, true);
$("#deployment-groups").addEventListener("click", (event) => {
  const button = event.target.closest("[data-call]");
  if (!button) return;
  location.hash = "#calls";
  openCall(Number(button.dataset.call));
});

// ------------------------------------------------------------------ state
let tree = null;
const records = new Map();

function nodeButton(kind, item, label) {
  records.set(`${kind}:${item.id}`, { kind, item });
  return `<button type="button" class="node" data-node="${esc(`${kind}:${item.id}`)}" aria-selected="false">
    <span class="kind">${esc(kind)}</span> <span>${esc(label ?? item.name ?? item.id)}</span></button>`;
}

function list(kind, label, items, render) {
  if (!items.length) return `<li><span class="group-label">${esc(label)} (0)</span></li>`;
  return `<li><span class="group-label">${esc(label)} (${items.length})</span><ul>${items.map((item) => `<li>${render(item)}</li>`).join("")}</ul></li>`;
}

function serviceLabel(service) {
  return `${service.name} · ${(service.type || "").toLowerCase()}`;
}

async function loadState() {
  const reply = await api.get("/state/tree");
  if (failed(reply)) return;
  tree = reply.body;
  records.clear();
  const counts = ["organizations", "projects", "environments", "services", "clusters", "registries", "webhooks", "variables", "secrets"];
  $("#state-counts").innerHTML = counts.map((name) => `<span class="badge">${esc(name)}: ${tree.counts[name] ?? 0}</span>`).join("");
  $("#state-tree").innerHTML = `<ul>${tree.organizations.map((org) => `
    <li>${nodeButton("organization", org)}
      <span class="muted">${Object.entries(org.counts).map(([k, v]) => `${v} ${k}`).join(" · ")}</span>
      <ul>
        ${list("project", "Projects", org.projects, (project) => `${nodeButton("project", project)}
          <ul>${list("environment", "Environments", project.environments, (env) => `${nodeButton("environment", env)}
            <ul>${list("service", "Services", env.services, (service) => nodeButton("service", service, serviceLabel(service)))}</ul>`)}</ul>`)}
        ${list("cluster", "Clusters", org.clusters, (item) => nodeButton("cluster", item))}
        ${list("registry", "Container registries", org.registries, (item) => nodeButton("registry", item))}
        ${list("webhook", "Webhooks", org.webhooks, (item) => nodeButton("webhook", item, item.record.target_url || item.id))}
      </ul>
    </li>`).join("")}</ul>`;
}

$("#state-tree").addEventListener("click", (event) => {
  const button = event.target.closest("[data-node]");
  if (!button) return;
  for (const other of $$("#state-tree [data-node]")) other.setAttribute("aria-selected", String(other === button));
  const { kind, item } = records.get(button.dataset.node);
  $("#state-detail").innerHTML = `<h2>${esc(kind)} ${esc(item.name || "")}</h2>
    <p class="muted mono">${esc(item.id)}</p><h3>Record</h3>${json(item.record)}`;
});
$("#state-refresh").addEventListener("click", loadState);

// ------------------------------------------------------------------ scenarios
async function loadScenarios() {
  const reply = await api.get("/scenarios");
  if (failed(reply)) return;
  const scenarios = reply.body.results;
  $("#scenarios-count").textContent = scenarios.length || "";
  $("#scenario-list").innerHTML = scenarios.length ? scenarios.map((s) => `
    <article class="scenario" data-scenario="${esc(s.name)}">
      <div class="scenario-head"><h3>${esc(s.name)}</h3><span class="badge ok">active</span><span class="spacer"></span>
        <button type="button" class="danger" data-deactivate="${esc(s.name)}" aria-label="Deactivate scenario ${esc(s.name)}">Deactivate</button></div>
      <p>${esc(s.description || "")} <span class="mono">${esc(s.source)}</span></p>
      <div class="table-wrap"><table class="grid">
        <colgroup><col class="rule-name"><col class="count"><col class="count"><col><col></colgroup>
        <thead><tr><th scope="col">Rule</th><th scope="col" class="num">Matched</th><th scope="col" class="num">Fired</th>
          <th scope="col">Match</th><th scope="col">Effect</th></tr></thead>
        <tbody>${s.rules.map((rule) => `<tr data-rule="${esc(rule.name)}"><td class="wrap">${esc(rule.name)}</td>
          <td class="num" data-testid="matched">${rule.matched}</td><td class="num" data-testid="fired">${rule.fired}</td>
          <td class="mono wrap">${esc(compact(rule.match) || "every call")}</td><td class="mono wrap">${esc(compact(rule.effect))}</td></tr>`).join("")}</tbody>
      </table></div>
    </article>`).join("") : '<p class="empty">No scenario is active. Paste one on the right to activate it.</p>';
}

async function loadUsage() {
  const reply = await api.get("/usage");
  if (!reply.ok) return;
  const { rules, operations } = reply.body;
  const never = rules.never_fired.length
    ? `<ul class="never-fired">${rules.never_fired.map((name) => `<li><span class="badge warn" data-testid="never-fired">${esc(name)}</span></li>`).join("")}</ul>`
    : "";
  $("#usage").innerHTML = `
    <p data-testid="rules-usage">${rules.total ? `${rules.fired} of ${rules.total} rule(s) fired${rules.never_fired.length ? "; never fired:" : "."}` : "No rule is loaded."}</p>
    ${never}
    <details><summary data-testid="operations-usage">${operations.never_called.length} of ${operations.total} operation(s) never called</summary>
      <p class="mono wrap">${operations.never_called.map(esc).join(", ") || "none"}</p></details>`;
}

function compact(object) {    // {status: 503, message: "down"} -> "status: 503, message: down"
  return Object.entries(object || {}).map(([key, value]) =>
    `${key}: ${value !== null && typeof value === "object" ? JSON.stringify(value) : value}`).join(", ");
}

$("#scenario-list").addEventListener("click", async (event) => {
  const button = event.target.closest("[data-deactivate]");
  if (!button) return;
  const reply = await api.del(`/scenarios/${encodeURIComponent(button.dataset.deactivate)}`);
  if (reply.status !== 404 && failed(reply)) return;
  await loadScenarios();
});

function showScenarioError(body, text) {
  const box = $("#scenario-error");
  const detail = (body && body.details && body.details[0]) || null;
  const match = detail && /^line (\d+)$/.exec(detail.location);
  const line = match ? Number(match[1]) : null;
  const problem = detail ? detail.message : (body && body.message) || "the scenario was refused";
  let snippet = "";
  if (line) {
    const lines = text.split("\n");
    const from = Math.max(1, line - 2), to = Math.min(lines.length, line + 2);
    for (let n = from; n <= to; n++) {
      snippet += `<li class="${n === line ? "hit" : ""}"><span class="ln">${n}</span><span>${esc(lines[n - 1])}</span></li>`;
    }
    const textarea = $("#scenario-yaml");
    const start = lines.slice(0, line - 1).join("\n").length + (line > 1 ? 1 : 0);
    textarea.setSelectionRange(start, start + lines[line - 1].length);
  }
  box.innerHTML = `<strong>${line ? `Line ${line}: ` : ""}</strong>${esc(problem)}${snippet ? `<ol aria-label="Lines around the error">${snippet}</ol>` : ""}`;
  box.dataset.line = line || "";
  box.hidden = false;
}

$("#scenario-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const text = $("#scenario-yaml").value;
  const box = $("#scenario-error");
  if (!text.trim()) {
    box.hidden = false;
    box.textContent = "Paste a scenario document first.";
    return;
  }
  const reply = await api.post("/scenarios", text, "application/yaml");
  if (reply.status === 400) {
    showScenarioError(reply.body, text);
    return;
  }
  if (failed(reply)) return;
  box.hidden = true;
  notice("");
  await loadScenarios();
});

// ------------------------------------------------------------------ webhooks
const openDeliveries = new Set();
const SHOWN_DELIVERIES = 200;

async function loadDeliveries() {
  const reply = await api.get("/webhooks/deliveries");
  if (failed(reply)) return;
  const all = reply.body.results;
  $("#webhooks-count").textContent = all.length || "";
  const shown = all.slice(-SHOWN_DELIVERIES).reverse();
  $("#deliveries-empty").hidden = all.length > 0;
  $("#deliveries-shown").textContent = all.length > SHOWN_DELIVERIES
    ? `The newest ${SHOWN_DELIVERIES} of ${all.length.toLocaleString("en")} deliveries.` : "";
  $("#delivery-rows").innerHTML = shown.map((d) => {
    const last = d.attempts[d.attempts.length - 1];
    const lastText = !last ? '<span class="muted">not tried yet</span>'
      : last.status_code != null ? statusBadge(last.status_code) : `<span class="badge bad">${esc(last.error || "no reply")}</span>`;
    const row = `<tr data-delivery="${d.id}" tabindex="0" aria-expanded="${openDeliveries.has(d.id)}">
      <td class="num muted">${d.id}</td><td class="mono">${esc(timeText(d.created_at))}</td><td>${esc(d.event_type)}</td>
      <td class="mono">${esc(d.target_url)}</td><td>${stateBadge(d.status)}</td><td class="num">${d.attempts.length}</td>
      <td>${lastText}</td><td class="mono">${d.next_attempt_at ? esc(timeText(d.next_attempt_at)) : "–"}</td>
      <td>${d.caused_by_call ? `<button type="button" class="link" data-call="${d.caused_by_call}">#${d.caused_by_call}</button>` : "–"}</td></tr>`;
    if (!openDeliveries.has(d.id)) return row;
    const attempts = d.attempts.map((a) => `<tr><td class="num">${a.number}</td><td class="mono">${esc(clockText(a.at))}</td>
      <td>${a.status_code != null ? statusBadge(a.status_code) : `<span class="badge bad">${esc(a.error || "no reply")}</span>`}</td>
      <td class="num">${esc(latency(a.duration_ms))}</td><td class="mono">${a.signature ? esc(`X-Mock-Signature: ${a.signature}`) : '<span class="muted">unsigned (no webhook secret)</span>'}</td></tr>`).join("");
    return `${row}<tr class="expanded"><td></td><td colspan="8">
      <h3>Attempts</h3>
      ${attempts ? `<table class="grid"><thead><tr><th scope="col" class="num">#</th><th scope="col">At</th><th scope="col">Reply</th>
        <th scope="col" class="num">Duration</th><th scope="col">Signature header</th></tr></thead><tbody>${attempts}</tbody></table>` : '<p class="muted">No attempt yet.</p>'}
      <h3>Payload</h3>${json(d.payload)}</td></tr>`;
  }).join("");
}

function toggleDelivery(tr) {
  const id = Number(tr.dataset.delivery);
  openDeliveries.has(id) ? openDeliveries.delete(id) : openDeliveries.add(id);
  loadDeliveries();
}
$("#delivery-rows").addEventListener("click", (event) => {
  const link = event.target.closest("[data-call]");
  if (link) {
    location.hash = "#calls";
    openCall(Number(link.dataset.call));
    return;
  }
  const tr = event.target.closest("tr[data-delivery]");
  if (tr) toggleDelivery(tr);
});
$("#delivery-rows").addEventListener("keydown", (event) => {
  const tr = event.target.closest("tr[data-delivery]");
  if (tr && (event.key === "Enter" || event.key === " ")) {
    event.preventDefault();
    toggleDelivery(tr);
  }
});

// ------------------------------------------------------------------ live
function tick() {
  if (document.hidden) {
    setLive("paused");
    return;
  }
  if (pending || tokenPrompt) return;
  refresh(false);
}

document.addEventListener("visibilitychange", () => { if (!document.hidden) tick(); });

// a pure recording proxy (every API path forwarded): the mock's clock and reset have nothing to act on
async function loadMode() {
  let reply;
  try {
    reply = await call(`${ROOT}/_mock/health`);
  } catch {
    return;
  }
  const proxy = Boolean(reply.ok && reply.body && reply.body.forwards === "all");
  $("#clock-controls").hidden = proxy;
  $("#proxy-mode").hidden = !proxy;
}

calls.filters = callFilters();
loadMode();
showView(location.hash.slice(1) || "calls");
loadSandboxes();
loadOperations();
setInterval(tick, POLL_MS);
