// The control client: one method per `x-client` name of the mock's control document, in camelCase.
import { AssertionError } from 'node:assert';
import { createHash } from 'node:crypto';

import { mergePacts, writeJson } from './files.js';
import { Tokens } from './tokens.js';
import { VERSION } from './version.js';

export const SANDBOX_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** A control call that answered >= 400: the status and the server's `{status, error, message}`. */
export class MockServerError extends Error {
  constructor({ method, path, url, status, body }) {
    const parsed = body && typeof body === 'object' ? body : {};
    const text = typeof body === 'string' ? body : '';
    const message = parsed.message ?? (text.trim() || `HTTP ${status}`);
    super(`control API ${method} ${path} answered ${status}: ${message}`);
    this.name = 'MockServerError';
    this.status = status;
    this.error = parsed.error ?? null;
    this.serverMessage = message;
    this.details = parsed.details ?? null;
    this.body = body;
    this.method = method;
    this.path = path;
    this.url = url;
  }
}

/** camelCase -> snake_case (requestId -> request_id); snake_case and other names stay as they are. */
export function snake(key) {
  return key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

/** An options object with snake_case keys and without undefined values (`nested` keys converted one level down). */
function snaked(options, nested = []) {
  const out = {};
  for (const [key, value] of Object.entries(options ?? {})) {
    if (value === undefined) continue;
    const name = snake(key);
    out[name] = nested.includes(name) && value && typeof value === 'object' && !Array.isArray(value)
      ? snaked(value, nested) : value;
  }
  return out;
}

function checkSandboxName(name) {
  if (typeof name !== 'string' || !SANDBOX_NAME.test(name) || name === '.' || name === '..') {
    throw new TypeError(`not a sandbox name: ${JSON.stringify(name)} (1 to 64 of A-Z a-z 0-9 _ . -, not . or ..)`);
  }
  return name;
}

/** The name a handle stores a private snapshot under: as the Python plugin, `name[:48].sha1(sandbox|name)[:12]`. */
export function privateSnapshotName(sandbox, name) {
  const digest = createHash('sha1').update(`${sandbox}|${name}`).digest('hex').slice(0, 12);
  return `${name.slice(0, 48)}.${digest}`;
}

/**
 * A handle on a running mock (the root) or on one sandbox of it (`inSandbox`). Every control operation is a
 * method; those of a sandbox's world (clock, journal, scenarios, snapshots saved and restored, tokens minted,
 * state, deliveries ...) act on the handle's sandbox, the rest (health, the sandboxes and snapshot
 * registries, the documents) on the whole mock.
 */
export class MockServerClient {
  /**
   * @param {object} options
   * @param {string} options.url the mock's root URL (http://127.0.0.1:8080)
   * @param {string} [options.sandbox] the sandbox this handle acts on
   * @param {string} [options.controlToken] default: env MOCKSERVER_CONTROL_TOKEN
   */
  constructor({ url, sandbox = null, controlToken, tokens, timeoutMs = 30_000, fetch: fetcher, warn } = {}) {
    if (!url) throw new TypeError('MockServerClient needs the mock\'s url');
    this.root = String(url).replace(/\/+$/, '');
    this.sandbox = sandbox === null ? null : checkSandboxName(sandbox);
    this.url = this.sandbox ? `${this.root}/sandbox/${this.sandbox}` : this.root;
    this.controlToken = controlToken === undefined ? (process.env.MOCKSERVER_CONTROL_TOKEN || null) : controlToken;
    this.tokens = tokens instanceof Tokens ? tokens : new Tokens(tokens);
    this.timeoutMs = timeoutMs;
    this.fetch = fetcher ?? globalThis.fetch;
    this.warn = warn ?? ((line) => console.warn(line));
    this.privateSnapshots = new Map();          // name given -> name stored, for this sandbox only
    this.version = VERSION;
    this._stop = null;                          // set by startLocal / startContainer on the root handle
  }

  // ---- plumbing -------------------------------------------------------------------------------------------

  /** The options a handle derived from this one shares. */
  _shared() {
    return { url: this.root, controlToken: this.controlToken, tokens: this.tokens, timeoutMs: this.timeoutMs,
      fetch: this.fetch, warn: this.warn };
  }

  /**
   * One control call. `path` is under /_mock; `global` routes go to the mock's root, the others to this
   * handle's sandbox. Answers >= 400 throw a MockServerError; 204 gives undefined; JSON is parsed.
   */
  async _control(method, path, { query, json, body, contentType, global = false, raw = false } = {}) {
    const base = global ? this.root : this.url;
    let url = `${base}/_mock${path}`;
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value === undefined || value === null) continue;
      for (const item of Array.isArray(value) ? value : [value]) params.append(key, String(item));
    }
    if ([...params].length) url += `?${params}`;
    const headers = { Accept: 'application/json' };
    if (this.controlToken) headers.Authorization = `Bearer ${this.controlToken}`;
    let payload = body;
    if (json !== undefined) {
      payload = JSON.stringify(json);
      headers['Content-Type'] = 'application/json';
    } else if (body !== undefined) {
      headers['Content-Type'] = contentType ?? 'application/yaml';
    }
    let response;
    try {
      response = await this.fetch(url, { method, headers, body: payload, signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (error) {
      const reason = error?.cause?.code ?? error?.cause?.message ?? error?.message ?? String(error);
      throw new Error(`control API ${method} ${path}: cannot reach the mock at ${this.root} (${reason})`, { cause: error });
    }
    const type = response.headers.get('content-type') ?? '';
    const text = await response.text();
    let parsed = text;
    if (text && /json/.test(type)) {
      try { parsed = JSON.parse(text); } catch { /* keep the text */ }
    }
    if (response.status >= 400) {
      throw new MockServerError({ method, path, url, status: response.status, body: parsed });
    }
    if (raw) return { status: response.status, headers: response.headers, body: parsed };
    return text === '' ? undefined : parsed;
  }

  /** A short name -> value lookup of the fixtures' tokens (admin, reader, Deploy ...). */
  token(name = 'admin') {
    return this.tokens.get(name);
  }

  /** `{Authorization: "Token <value>"}` for a default token: admin/read/write/deploy, reader/writer/deployer or a scope. */
  headers(token = 'admin') {
    return { Authorization: `Token ${this.tokens.get(token)}` };
  }

  /** Read the tokens from the start page of this handle's sandbox (GET / with Accept: application/json). */
  async loadTokens() {
    try {
      const response = await this.fetch(`${this.url}/`, {
        headers: { Accept: 'application/json',
          ...(this.controlToken ? { Authorization: `Bearer ${this.controlToken}` } : {}) },
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      if (response.ok) {
        const page = await response.json();
        const listed = page?.quick_start?.tokens;
        const tokens = new Tokens(listed);
        if (tokens.source === 'server') this.tokens = tokens;
      } else {
        await response.body?.cancel();
      }
    } catch { /* the defaults stay */ }
    return this.tokens;
  }

  // ---- health and documents (global) ----------------------------------------------------------------------

  /** GET /_mock/health: {status, version, clock, ...}. */
  health() { return this._control('GET', '/health', { global: true }); }

  /** GET /_mock/openapi.json: the control API's OpenAPI document. */
  controlDocument() { return this._control('GET', '/openapi.json', { global: true }); }

  /** GET /_mock/schemas/scenario.json: the JSON Schema of scenario files. */
  scenarioSchema() { return this._control('GET', '/schemas/scenario.json', { global: true }); }

  /** The inspector page's URL for this handle's sandbox (GET /_mock/ui; a page for a browser, so no call is made). */
  inspectorUrl() { return `${this.url}/_mock/ui`; }

  // ---- state ----------------------------------------------------------------------------------------------

  /** POST /_mock/reset: back to the sandbox's start world; `{scenarios: true}` also removes scenarios. */
  reset({ scenarios = false } = {}) { return this._control('POST', '/reset', { json: { scenarios } }); }

  /** GET /_mock/state: record counts, token names, active deployments, journal size. */
  state() { return this._control('GET', '/state'); }

  /** GET /_mock/state/export: the state as fixtures YAML (text); `{secrets: 'include'}` writes secrets in clear. */
  exportState({ secrets } = {}) { return this._control('GET', '/state/export', { query: { secrets } }); }

  /** GET /_mock/state/tree: organization -> projects -> environments -> services, with counts. */
  stateTree() { return this._control('GET', '/state/tree'); }

  // ---- clock ----------------------------------------------------------------------------------------------

  /** GET /_mock/clock. */
  clock() { return this._control('GET', '/clock'); }

  /** POST /_mock/clock/advance: move the sandbox's clock forward `seconds`; returns the clock. */
  advance(seconds) { return this._control('POST', '/clock/advance', { json: { seconds } }); }

  // ---- journal --------------------------------------------------------------------------------------------

  /** GET /_mock/calls: the journal entries matching every filter, oldest first (the `results` array). */
  async calls(filters = {}) {
    const query = snaked(filters);
    let page = await this._control('GET', '/calls', { query });
    const found = page.results;
    while (query.limit === undefined && page.more) {      // without a limit: every page, by the cursor given
      page = await this._control('GET', '/calls', { query: { ...query, after: page.next_after } });
      found.push(...page.results);
    }
    return found;
  }

  /** DELETE /_mock/calls: empty the journal. */
  async clearCalls() { await this._control('DELETE', '/calls'); }

  /** GET /_mock/calls/{id}: one journal entry in full. */
  call(id) { return this._control('GET', `/calls/${encodeURIComponent(id)}`); }

  /** GET /_mock/calls/rows: a page of rows (the whole reply: total, newer, last_id, results ...). */
  callRows(filters = {}) { return this._control('GET', '/calls/rows', { query: snaked(filters) }); }

  /** GET /_mock/calls/coverage: per documented operation, calls by status and whether one answered 2xx. */
  coverage() { return this._control('GET', '/calls/coverage'); }

  /**
   * GET /_mock/usage: the scenario rules that never fired and the operations never called, of this handle's
   * sandbox, or with `scope: 'mock'` of every sandbox whose name starts with `prefix` (those gone included).
   */
  usage({ scope, prefix } = {}) { return this._control('GET', '/usage', { query: { scope, prefix } }); }

  /** usage, and throw an AssertionError naming the scenario rules that never fired; the report otherwise. */
  async assertRulesFired(options = {}) {
    const report = await this.usage(options);
    const unused = report.rules.never_fired;
    if (unused.length) {
      const error = new AssertionError({ message: `mockserver: ${unused.length} scenario rule(s) never fired: ${unused.join(', ')}` });
      error.report = report;
      throw error;
    }
    return report;
  }

  /**
   * POST /_mock/calls/verify: `{ok, expected, actual, message, matched}`. Filters as `calls`, plus one of
   * `count` (or `times`), `atLeast`, `atMost`.
   */
  verify({ times, ...filters } = {}) {
    if (times !== undefined && filters.count !== undefined) {
      return Promise.reject(new TypeError('verify: times and count are two names of one bound: give one of them'));
    }
    const body = snaked(filters);
    if (times !== undefined) body.count = times;
    return this._control('POST', '/calls/verify', { json: body });
  }

  /** verify, and throw an AssertionError carrying the server's message when it does not hold. */
  async assertCalled(filters = {}) {
    const result = await this.verify(filters);
    if (!result.ok) {
      const error = new AssertionError({ message: result.message });
      error.result = result;
      throw error;
    }
    return result;
  }

  /** assertCalled with count 0. */
  assertNotCalled(filters = {}) {
    const { times, count, atLeast, at_least: atLeastSnake, atMost, at_most: atMostSnake, ...rest } = filters;
    return this.assertCalled({ ...rest, count: 0 });
  }

  // ---- consumer contracts ---------------------------------------------------------------------------------

  /** GET /_mock/calls/export: the sandbox's calls (filtered as `calls`) as a pact or a HAR document. */
  export(format, params = {}) {
    return this._control('GET', '/calls/export', { query: { format, ...snaked(params) } });
  }

  /** The same as `export` (a name that is not a keyword anywhere). */
  exportCalls(format, params = {}) { return this.export(format, params); }

  /** export('pact', params): consumer, provider, spec ('4' or '3') and the journal filters. */
  exportPact(params = {}) { return this.export('pact', params); }

  /** export('har', params). */
  exportHar(params = {}) { return this.export('har', params); }

  /**
   * Write the sandbox's calls as a pact file; with `merge` (default), into the pact already at `path` (same
   * consumer and provider: its interactions kept, the new ones added), under the lock file `path`.lock.
   * Returns the document written.
   */
  async writePact(path, { consumer = 'consumer', provider = 'idp-platform', spec = 4, merge = true, ...filters } = {}) {
    const document = await this.exportPact({ consumer, provider, spec, ...filters });
    return writeJson(path, document, merge ? mergePacts : null);
  }

  /** Write the sandbox's calls as a HAR 1.2 log. */
  async writeHar(path, filters = {}) {
    return writeJson(path, await this.exportHar(filters), null);
  }

  /** POST /_mock/provider-states: make a provider state true in this sandbox (`{state, params, action}`). */
  providerStates(body = {}) { return this._control('POST', '/provider-states', { json: body }); }

  // ---- deployments, webhooks, tokens ----------------------------------------------------------------------

  /** GET /_mock/deployments: the whole reply ({clock, results}). */
  deployments() { return this._control('GET', '/deployments'); }

  /** GET /_mock/webhooks/deliveries: the deliveries (the `results` array); filters webhookId, eventType, status. */
  async deliveries(filters = {}) {
    return (await this._control('GET', '/webhooks/deliveries', { query: snaked(filters) })).results;
  }

  /**
   * POST /_mock/tokens: mint a token in this sandbox; returns its value. `scopes` (default ['Admin']), `kind`
   * ('token' | 'jwt'), `ttlSeconds`, `organization`, `name`. An array argument is the scopes.
   */
  async mintToken(options = {}) {
    const { scopes = ['Admin'], kind = 'token', ...rest } = Array.isArray(options) ? { scopes: options } : options;
    const reply = await this._control('POST', '/tokens', { json: { scopes: [...scopes], kind, ...snaked(rest) } });
    return reply.token;
  }

  // ---- scenarios ------------------------------------------------------------------------------------------

  /**
   * PUT /_mock/scenarios/{name}: activate a scenario from YAML or JSON text, or an object (its `name` is set to
   * `name`). Returns the scenario as the server describes it (with `warnings`).
   */
  async scenario(name, document) {
    const path = `/scenarios/${encodeURIComponent(name)}`;
    if (typeof document === 'string' || document instanceof Uint8Array) {
      return this._control('PUT', path, { body: document, contentType: 'application/yaml' });
    }
    if (document?.name !== undefined && document.name !== name) {
      throw new TypeError(`scenario ${JSON.stringify(name)}: the document names itself ${JSON.stringify(document.name)}; give one name (or leave the document's out)`);
    }
    return this._control('PUT', path, { json: { ...document, name } });
  }

  /** POST /_mock/scenarios: activate a scenario (YAML or JSON text, or an object) under the name it declares. */
  activateScenario(document) {
    const text = typeof document === 'string' || document instanceof Uint8Array ? document : JSON.stringify(document);
    return this._control('POST', '/scenarios', { body: text, contentType: 'application/yaml' });
  }

  /** GET /_mock/scenarios: the active scenarios (the `results` array). */
  async scenarios() { return (await this._control('GET', '/scenarios')).results; }

  /** GET /_mock/scenarios/{name}. */
  getScenario(name) { return this._control('GET', `/scenarios/${encodeURIComponent(name)}`); }

  /** DELETE /_mock/scenarios/{name}. */
  async removeScenario(name) { await this._control('DELETE', `/scenarios/${encodeURIComponent(name)}`); }

  // ---- sandboxes (global routes; the name defaults to this handle's sandbox) ------------------------------

  _sandboxName(name) {
    const chosen = name ?? this.sandbox;
    if (!chosen) throw new TypeError('name the sandbox (this handle is the mock\'s root, not a sandbox)');
    return checkSandboxName(chosen);
  }

  /** GET /_mock/sandboxes: the whole reply ({replica, limit, ttl_seconds, results}). */
  sandboxes() { return this._control('GET', '/sandboxes', { global: true }); }

  /** DELETE /_mock/sandboxes: every sandbox but default deleted, default reset. */
  async deleteAllSandboxes() { await this._control('DELETE', '/sandboxes', { global: true }); }

  /** GET /_mock/sandboxes/{name}. */
  async getSandbox(name) { return this._control('GET', `/sandboxes/${this._sandboxName(name)}`, { global: true }); }

  /**
   * PUT /_mock/sandboxes/{name}: create the sandbox fresh (or replace it) with options (clock, start, seed,
   * rateLimit, scenarios, fixtures, snapshot, journalBodyLimit, pollProgress, expires); returns the server's
   * record.
   */
  async createSandbox(name, options = {}) {
    return this._control('PUT', `/sandboxes/${checkSandboxName(name)}`,
      { json: snaked(options, ['poll_progress']), global: true });
  }

  /**
   * DELETE /_mock/sandboxes/{name} (default: this handle's sandbox, with the private snapshots it saved).
   * `{snapshots: 'delete'}` also deletes the shared snapshots saved from it.
   */
  async deleteSandbox(name, { snapshots } = {}) {
    const chosen = this._sandboxName(name);
    if (chosen === this.sandbox) {
      for (const stored of this.privateSnapshots.values()) {
        await this._control('DELETE', `/snapshots/${encodeURIComponent(stored)}`, { global: true })
          .catch((error) => { if (error.status !== 404) throw error; });
      }
      this.privateSnapshots.clear();
    }
    await this._control('DELETE', `/sandboxes/${chosen}`, { query: { snapshots }, global: true });
  }

  /** POST /_mock/sandboxes/{name}/reset (default: this handle's sandbox). */
  async resetSandbox(name, { scenarios = false } = {}) {
    return this._control('POST', `/sandboxes/${this._sandboxName(name)}/reset`, { json: { scenarios }, global: true });
  }

  /** createSandbox, then a handle scoped to that sandbox (same mock, tokens and control token). */
  async inSandbox(name, options = {}) {
    await this.createSandbox(name, options);
    const handle = new MockServerClient({ ...this._shared(), sandbox: name });
    if (options.fixtures || options.snapshot) await handle.loadTokens();
    return handle;
  }

  /** Delete this handle's sandbox and its private snapshots; a sandbox already gone is fine. */
  async dispose() {
    if (!this.sandbox) return;
    try {
      await this.deleteSandbox();
    } catch (error) {
      if (error.status !== 404) throw error;
    }
  }

  // ---- snapshots ------------------------------------------------------------------------------------------

  _stored(name) { return this.privateSnapshots.get(name) ?? name; }

  /** GET /_mock/snapshots: every snapshot (the `results` array; shared by all sandboxes). */
  async snapshots() { return (await this._control('GET', '/snapshots', { global: true })).results; }

  /**
   * POST /_mock/snapshots: save this sandbox's world under `name`. On a sandbox handle the name is private to
   * it (stored as `name.<hash>`, deleted with the sandbox) unless `shared: true`; `journal` keeps the journal;
   * `replace` (default true) overwrites a snapshot of that name.
   */
  snapshot(name, { journal = false, replace = true, shared = false } = {}) {
    let stored = name;
    if (this.sandbox && !shared) {
      stored = privateSnapshotName(this.sandbox, name);
      this.privateSnapshots.set(name, stored);
    }
    return this._control('POST', '/snapshots', { json: { name: stored, journal, replace, private: stored !== name } });
  }

  /** POST /_mock/snapshots/{name}/restore: this sandbox's world replaced by the snapshot (its private name first). */
  restore(name) { return this._control('POST', `/snapshots/${encodeURIComponent(this._stored(name))}/restore`); }

  /** GET /_mock/snapshots/{name} (a private name of this handle found first). */
  getSnapshot(name) {
    return this._control('GET', `/snapshots/${encodeURIComponent(this._stored(name))}`, { global: true });
  }

  /** DELETE /_mock/snapshots/{name} (a private name of this handle found first). */
  async deleteSnapshot(name) {
    await this._control('DELETE', `/snapshots/${encodeURIComponent(this._stored(name))}`, { global: true });
    this.privateSnapshots.delete(name);
  }

  // ---- lifecycle ------------------------------------------------------------------------------------------

  /** Stop the mock this client started (startLocal / startContainer); nothing for a mock it connected to. */
  async stop() {
    if (this._stop) {
      const stop = this._stop;
      this._stop = null;
      await stop();
    }
  }
}

if (Symbol.asyncDispose) {
  // `await using sandbox = await mock.inSandbox(...)` where the language has it
  MockServerClient.prototype[Symbol.asyncDispose] = async function asyncDispose() {
    if (this.sandbox) await this.dispose(); else await this.stop();
  };
}
