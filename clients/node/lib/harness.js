// A fresh sandbox per test, deleted at the test's end: node:test (t.after), Vitest (onTestFinished), Jest/Vitest hooks.
import { randomBytes } from 'node:crypto';

import { JOURNAL_BODY_LIMIT } from './constants.js';

/** Options of the harness itself; every other option goes to the server as the sandbox's options. */
const HARNESS_OPTIONS = ['name', 'prefix', 'pact', 'consumer', 'provider', 'keep'];

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
  return { harness, sandbox };
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

async function close({ handle, harness }) {
  try {
    if (harness.pact) await handle.writePact(harness.pact, { consumer: harness.consumer, provider: harness.provider });
  } finally {
    if (!harness.keep) {
      await handle.deleteSandbox().catch((error) => { if (error.status !== 404) throw error; });   // gone: fine
    }
  }
}

/**
 * A fresh sandbox for the running test, deleted when it ends. `context` is node:test's `t` (teardown with
 * t.after) or Vitest's test context (teardown with onTestFinished). Options: the sandbox's (clock, scenarios,
 * snapshot, seed ...) and the harness's: name, prefix, pact (write the test's calls into this pact file;
 * env MOCKSERVER_PACT), consumer, provider, keep (do not delete it).
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
  register(() => close(opened));
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
    if (current) await close(current);
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
