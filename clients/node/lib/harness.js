// A fresh sandbox per test, deleted at the test's end: node:test (t.after), Vitest (onTestFinished), Jest/Vitest hooks.
// A test that failed leaves its sandbox's journal in a file and says so where the runner shows it; a mock per
// suite through the hooks (mockFor).
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { isAbsolute, relative, resolve } from 'node:path';

import { JOURNAL_BODY_LIMIT } from './constants.js';
import { startMock } from './start.js';

/** Options of the harness itself; every other option goes to the server as the sandbox's options. */
const HARNESS_OPTIONS = ['name', 'prefix', 'pact', 'consumer', 'provider', 'keep', 'journalDir'];

/** When a test's sandbox outlives it (the option `keep`, else env MOCKSERVER_KEEP_SANDBOX). */
const KEEP_MODES = ['never', 'on-failure', 'always'];

/** The calls a failing test's account lists (the newest); the file has them all. */
const ACCOUNT_CALLS = 20;

/**
 * A valid sandbox name (A-Z a-z 0-9 _ . -, at most 64) made of the prefix (env MOCKSERVER_SANDBOX_PREFIX, e.g.
 * a CI job id), the test's name and a random suffix: unique per run even when names repeat.
 */
export function sandboxName(testName = 'test', { prefix = process.env.MOCKSERVER_SANDBOX_PREFIX ?? '' } = {}) {
  const clean = (text) => String(text).replace(/[^A-Za-z0-9_.-]+/g, '-').replace(/^[-.]+|[-.]+$/g, '');
  const readable = [clean(prefix), clean(testName)].filter(Boolean).join('-') || 'test';
  const suffix = randomBytes(5).toString('hex');
  return `${readable.slice(0, 64 - suffix.length - 1)}-${suffix}`;
}

/**
 * At the end of a suite (node:test's `after`, Jest's or Vitest's `afterAll`): throw an AssertionError naming the
 * scenario rules that never fired in any sandbox of this prefix (env MOCKSERVER_SANDBOX_PREFIX; the sandboxes
 * useSandbox and sandboxFor made, deleted ones included); the usage report otherwise.
 */
export async function assertRulesFired(mock, { prefix = process.env.MOCKSERVER_SANDBOX_PREFIX ?? '' } = {}) {
  const client = await resolveMock(mock);
  const clean = String(prefix).replace(/[^A-Za-z0-9_.-]+/g, '-').replace(/^[-.]+|[-.]+$/g, '');
  return client.assertRulesFired({ scope: 'mock', prefix: clean ? `${clean}-` : '' });
}

/** Deprecated: the name assertRulesFired had (kept for a release). */
export const assertRulesUsed = assertRulesFired;

function split(options) {
  const harness = {};
  const sandbox = { journalBodyLimit: JOURNAL_BODY_LIMIT };
  for (const [key, value] of Object.entries(options ?? {})) {
    if (HARNESS_OPTIONS.includes(key)) harness[key] = value;
    else if (key === 'journal_body_limit') sandbox.journalBodyLimit = value;
    else sandbox[key] = value;
  }
  harness.pact ??= process.env.MOCKSERVER_PACT || undefined;
  harness.keepSaid = harness.keep === undefined ? `MOCKSERVER_KEEP_SANDBOX=${process.env.MOCKSERVER_KEEP_SANDBOX}`
    : `keep: ${JSON.stringify(harness.keep)}`;
  harness.keep = keepMode(harness.keep);
  return { harness, sandbox };
}

/** `keep`: true (always), false (never), or a mode; when not given, env MOCKSERVER_KEEP_SANDBOX (default never). */
function keepMode(keep) {
  if (keep === true) return 'always';
  if (keep === false) return 'never';
  const mode = keep ?? (process.env.MOCKSERVER_KEEP_SANDBOX || 'never');
  if (!KEEP_MODES.includes(mode)) {
    const where = keep === undefined ? 'the environment variable MOCKSERVER_KEEP_SANDBOX' : 'the option keep';
    throw new TypeError(`${where} is ${JSON.stringify(mode)}: use never, on-failure or always (or keep: true/false)`);
  }
  return mode;
}

/** The running test's own name from a node:test context, a Vitest context, or Jest's expect state. */
function testNameOf(context) {
  if (typeof context?.task?.name === 'string') return context.task.name;             // Vitest
  if (typeof context?.name === 'string' && context.name) return context.name;         // node:test
  try {
    const full = globalThis.expect?.getState?.().currentTestName;                    // Jest
    if (full) return full;
  } catch { /* no expect */ }
  return 'test';
}

/** The running test's whole name (its suites' names first), for the file its failure's journal goes to. */
function fullNameOf(context) {
  const task = context?.task;
  if (task && typeof task.name === 'string') {                                        // Vitest
    const names = [];
    for (let item = task; item && item !== task.file; item = item.suite) names.unshift(item.name);
    return names.join(' > ');
  }
  if (typeof context?.fullName === 'string' && context.fullName) return context.fullName;   // node:test 20.16+
  return testNameOf(context);
}

/**
 * Whether the test failed, read at its end: Vitest's task result (onTestFinished, afterEach) or node:test's
 * `t.passed` (t.after, afterEach; Node 20.12 and later). null when the framework does not say (Jest).
 */
function failedOf(context) {
  const state = context?.task?.result?.state;
  if (typeof state === 'string') return state === 'fail';
  if (typeof context?.passed === 'boolean') return !context.passed;
  return null;
}

/**
 * Where lines go for the runner to show them with the test: node:test's diagnostics (`ℹ` lines under the test
 * in the spec reporter, `#` lines in TAP); elsewhere the console, which Vitest shows under the test's name.
 */
function reporterOf(context) {
  if (typeof context?.diagnostic === 'function') {
    return (lines) => { for (const line of lines) context.diagnostic(line); };
  }
  return (lines) => console.error(lines.join('\n'));
}

/** A call as one line, as the server's verify messages write it: `#id METHOD path -> status (operationId)`. */
function callLine(call) {
  return `#${call.id} ${call.method} ${call.path} -> ${call.status}${call.operation ? ` (${call.operation})` : ''}`;
}

/** The journals written for each test context so far: a test's second sandbox gets a file of its own. */
const journalsOf = new WeakMap();

/**
 * The file a failing test's journal goes to: `<dir>/<test name made file-safe>.json`; for the test's second
 * sandbox and on, `<name>.2.json` ...
 */
function journalPath(dir, testName, context) {
  const safe = String(testName).replace(/[^A-Za-z0-9_.-]+/g, '-').replace(/^[-.]+|[-.]+$/g, '').slice(0, 120) || 'test';
  const count = (context && typeof context === 'object' ? journalsOf.get(context) ?? 0 : 0) + 1;
  if (context && typeof context === 'object') journalsOf.set(context, count);
  return resolve(dir, count > 1 ? `${safe}.${count}.json` : `${safe}.json`);
}

/** A path as the account shows it: relative to the working directory when under it. */
function shown(path) {
  const near = relative(process.cwd(), path);
  return near && !near.startsWith('..') && !isAbsolute(near) ? near : path;
}

/**
 * The account of a failed test: its sandbox's whole journal written to a file (a JSON array of the journal's
 * entries, oldest first; the directory made now), and lines for the runner: the file and the newest calls.
 * Never throws: the test's own failure is the one to see.
 */
async function journalAccount(handle, context, harness) {
  const dir = harness.journalDir ?? (process.env.MOCKSERVER_JOURNAL_DIR || 'mockserver-journals');
  const path = journalPath(dir, fullNameOf(context), context);
  let calls;
  try {
    calls = await handle.calls();
  } catch (error) {
    return [`mockserver: the journal of sandbox ${handle.sandbox} could not be read: ${error.message}`];
  }
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(path, `${JSON.stringify(calls, null, 2)}\n`);
  } catch (error) {
    return [`mockserver: the journal of sandbox ${handle.sandbox} could not be written to ${shown(path)}: ` +
      error.message];
  }
  const last = calls.slice(-ACCOUNT_CALLS);
  const counted = `${calls.length} call${calls.length === 1 ? '' : 's'}`;
  return [`mockserver: the journal of sandbox ${handle.sandbox} (${counted}) is in ${shown(path)}` +
    (last.length ? `; the last ${last.length}:` : ''), ...last.map((call) => `  ${callLine(call)}`)];
}

/** The line that says where a kept sandbox is, and why: its URL and the inspector's page on it. */
function keptLine(handle, harness) {
  return `mockserver: sandbox ${handle.sandbox} kept (${harness.keepSaid}): ${handle.url}; ` +
    `inspector: ${handle.root}/_mock/ui?sandbox=${handle.sandbox}`;
}

async function resolveMock(mock) {
  const client = typeof mock === 'function' ? await mock() : await mock;
  if (!client || typeof client.inSandbox !== 'function') {
    throw new TypeError('give the mock: a client from connect/startLocal/startContainer/startMock (or a promise of one)');
  }
  return client;
}

async function open(mock, context, options) {
  const { harness, sandbox } = split(options);
  const client = await resolveMock(mock);
  const name = harness.name ?? sandboxName(testNameOf(context), { prefix: harness.prefix });
  return { handle: await client.inSandbox(name, sandbox), harness };
}

/**
 * The test's end: when it failed, its journal kept and told; the pact written; the sandbox deleted unless kept
 * (`always`, or `on-failure` and it failed), a kept one told.
 */
async function close({ handle, harness }, context) {
  const failed = failedOf(context);
  const keep = harness.keep === 'always' || (harness.keep === 'on-failure' && failed === true);
  const lines = failed ? await journalAccount(handle, context, harness) : [];
  if (keep) lines.push(keptLine(handle, harness));
  if (lines.length) reporterOf(context)(lines);
  try {
    if (harness.pact) await handle.writePact(harness.pact, { consumer: harness.consumer, provider: harness.provider });
  } finally {
    if (!keep) {
      await handle.deleteSandbox().catch((error) => { if (error.status !== 404) throw error; });   // gone: fine
    }
  }
}

/**
 * A fresh sandbox for the running test, deleted when it ends. `context` is node:test's `t` (teardown with
 * t.after) or Vitest's test context (teardown with onTestFinished). Options: the sandbox's (clock, scenarios,
 * snapshot, seed ...) and the harness's: name, prefix, pact (write the test's calls into this pact file;
 * env MOCKSERVER_PACT), consumer, provider, keep (true: do not delete it; or 'never' | 'on-failure' |
 * 'always'; default env MOCKSERVER_KEEP_SANDBOX, else never), journalDir (where a failed test's journal goes;
 * default env MOCKSERVER_JOURNAL_DIR, else mockserver-journals).
 */
export async function useSandbox(context, mock, options = {}) {
  let register;
  if (typeof context?.after === 'function') register = (fn) => context.after(fn);
  else if (typeof context?.onTestFinished === 'function') register = (fn) => context.onTestFinished(fn);
  else {
    throw new TypeError('useSandbox needs the test context: node:test\'s t, or Vitest\'s test context; with Jest ' +
      'use sandboxFor(mock, { beforeEach, afterEach })');
  }
  const opened = await open(mock, context, options);
  register(() => close(opened, context));
  return opened.handle;
}

/**
 * A sandbox per test through the framework's hooks (Jest, Vitest, node:test's beforeEach/afterEach): returns
 * an object that stands for the running test's handle (`sandbox.url`, `await sandbox.advance(30)`, or
 * `sandbox.current`). For tests of one file that run concurrently, use useSandbox with each test's context.
 */
export function sandboxFor(mock, { beforeEach, afterEach }, options = {}) {
  if (typeof beforeEach !== 'function' || typeof afterEach !== 'function') {
    throw new TypeError('sandboxFor(mock, { beforeEach, afterEach }): give the test framework\'s two hooks');
  }
  let opened = null;
  // no declared parameter: Jest would take one for a `done` callback; Vitest and node:test pass their context
  beforeEach(async function openSandbox() {
    opened = await open(mock, arguments[0], options);      // eslint-disable-line prefer-rest-params
  });
  afterEach(async function closeSandbox() {
    const current = opened;
    opened = null;
    if (current) await close(current, arguments[0]);      // eslint-disable-line prefer-rest-params
  });
  const current = () => {
    if (!opened) throw new Error('no sandbox: use it inside a test (sandboxFor opens one in beforeEach)');
    return opened.handle;
  };
  return new Proxy({}, {
    get(_, property) {
      if (property === 'current') return current();
      if (property === 'then' || typeof property === 'symbol') return undefined;
      const handle = current();
      const value = handle[property];
      return typeof value === 'function' ? value.bind(handle) : value;
    },
    has(_, property) { return opened ? property in opened.handle : false; },
  });
}

/**
 * A mock for a suite through the framework's hooks: started (startMock(options)) in node:test's `before` or
 * Vitest's and Jest's `beforeAll`, stopped in `after` / `afterAll`. Returns an object that stands for the root
 * client (`mock.url`, `mock.inSandbox(...)`, `useSandbox(t, mock)`, or the client itself as `mock.current`).
 * Its `stop()` is safe at any time: before the start, after a start that failed (the hook that started it has
 * reported that failure; the stop adds none), or a second time.
 */
export function mockFor(hooks, options = {}) {
  const before = hooks?.before ?? hooks?.beforeAll;
  const after = hooks?.after ?? hooks?.afterAll;
  if (typeof before !== 'function' || typeof after !== 'function') {
    throw new TypeError('mockFor({ before, after }) (node:test) or mockFor({ beforeAll, afterAll }) (Vitest, Jest): ' +
      'give the test framework\'s two hooks');
  }
  let client = null;
  let starting = null;
  let failure = null;

  function start() {
    starting ??= startMock(options).then(
      (started) => { client = started; failure = null; return started; },
      (error) => { failure = error; throw error; });
    return starting;
  }

  async function stop() {
    const pending = starting;
    starting = null;
    if (!pending) return;                       // never started, or stopped already
    const started = await pending.catch(() => null);
    client = null;
    if (started) await started.stop();          // a start that failed has nothing to stop
  }

  const current = () => {
    if (client) return client;
    if (failure) throw new Error(`the mock did not start: ${failure.message}`, { cause: failure });
    throw new Error('no mock: use it inside a test (mockFor starts it in before/beforeAll)');
  };
  // no declared parameter: Jest would take one for a `done` callback
  before(function startSuiteMock() { return start(); });
  after(function stopSuiteMock() { return stop(); });
  return new Proxy({}, {
    get(_, property) {
      if (property === 'start') return start;
      if (property === 'stop') return stop;
      if (property === 'current') return current();
      if (property === 'then' || typeof property === 'symbol') return undefined;
      const started = current();
      const value = started[property];
      return typeof value === 'function' ? value.bind(started) : value;
    },
    has(_, property) { return client ? property in client : false; },
  });
}
