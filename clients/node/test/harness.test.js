// The per-test sandbox: node:test's t.after, hooks (beforeEach/afterEach), names, a control token.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, test } from 'node:test';

import { MockServerError, SANDBOX_NAME, assertRulesFired, majorMinor, VERSION, sandboxFor, sandboxName, startLocal, useSandbox } from '../index.js';
import { APP, ORG, api, localMockForFile } from './support.js';

const server = localMockForFile();

test('the client\'s version is the mock\'s (major.minor)', async () => {
  assert.equal(majorMinor((await server.mock.health()).version), majorMinor(VERSION));
});

test('useSandbox(t): a fresh sandbox from the fixtures for the test, deleted at its end', async (t) => {
  let name;
  await t.test('inner test', async (inner) => {
    const sb = await useSandbox(inner, server.ready);
    name = sb.sandbox;
    assert.match(name, /inner-test-[0-9a-f]{10}$/, 'named after the test');
    assert.equal(sb.url, `${server.mock.root}/sandbox/${name}`);
    const record = await sb.getSandbox();
    assert.equal(record.source, 'fixtures');
    assert.equal(record.clock.mode, 'manual');
    await api(sb.url, 'POST', `/organization/${ORG}/project`, { json: { name: 'inner' } });
    await sb.snapshot('inner-snapshot');
  });
  const error = await server.mock.getSandbox(name).catch((caught) => caught);
  assert.ok(error instanceof MockServerError && error.status === 404, `${name} was deleted after the test`);
  const left = (await server.mock.snapshots()).filter((s) => s.sandbox === name);
  assert.deepEqual(left, [], 'with its private snapshots');
});

test('useSandbox options: the sandbox\'s own (clock, seed, ...) and the harness\'s (name, keep)', async (t) => {
  const name = `kept-${process.pid}`;
  await t.test('keeps it', async (inner) => {
    const sb = await useSandbox(inner, server.ready, { name, keep: true, clock: 'real', rateLimit: '100/1m' });
    assert.equal(sb.sandbox, name);
    assert.equal((await sb.clock()).mode, 'real');
  });
  assert.equal((await server.mock.getSandbox(name)).name, name, 'kept after the test');
  await server.mock.deleteSandbox(name);
});

test('a sandbox made with expires ends after its calls: the next call meets a fresh one', async (t) => {
  const sb = await useSandbox(t, server.ready, { expires: { calls: 3 } });
  assert.deepEqual((await sb.getSandbox()).expires, { calls: 3 });
  const projects = async () => (await api(sb.url, 'GET', `/organization/${ORG}/project`)).body.results.length;
  const start = await projects();                                                   // call 1
  assert.equal((await api(sb.url, 'POST', `/organization/${ORG}/project`, { json: { name: 'kept' } })).status, 201);
  assert.equal(await projects(), start + 1, 'the third call is the last it serves');
  assert.equal(await projects(), start, 'the fourth meets a fresh sandbox');
  assert.equal((await sb.getSandbox()).expires, undefined, 'made without the option');
});

test('useSandbox without a test context says what to use instead', async () => {
  await assert.rejects(useSandbox({}, server.ready), /sandboxFor\(mock, \{ beforeEach, afterEach \}\)/);
});

describe('sandboxFor with node:test\'s beforeEach/afterEach', () => {
  const sandbox = sandboxFor(server.ready, { beforeEach, afterEach });
  const names = [];

  it('gives each test a handle', async () => {
    names.push(sandbox.sandbox);
    assert.equal(sandbox.current.sandbox, sandbox.sandbox);
    assert.match(sandbox.sandbox, /gives-each-test-a-handle-[0-9a-f]{10}$/, 'named after the test');
    await api(sandbox.url, 'POST', `/application/${APP}/deploy`, { token: sandbox.token('deploy') });
    await sandbox.assertCalled({ operation: 'deployApplication', times: 1 });
  });

  it('and a fresh one to the next test', async () => {
    names.push(sandbox.sandbox);
    assert.notEqual(names[0], names[1]);
    await sandbox.assertNotCalled({ operation: 'deployApplication' });
    const error = await server.mock.getSandbox(names[0]).catch((caught) => caught);
    assert.equal(error.status, 404, 'the previous test\'s sandbox is gone');
  });
});

test('sandbox names: valid, at most 64, unique, with the prefix (MOCKSERVER_SANDBOX_PREFIX)', () => {
  const long = sandboxName('a test name / with spaces, slashes and ünïcode '.repeat(4), { prefix: 'ci-job-42' });
  assert.ok(long.length <= 64);
  assert.match(long, SANDBOX_NAME);
  assert.match(long, /^ci-job-42-a-test-name-with-spaces-slashes-and-n-c/);
  assert.notEqual(sandboxName('same'), sandboxName('same'));
  assert.match(sandboxName('...'), /^test-[0-9a-f]{10}$/);
  const saved = process.env.MOCKSERVER_SANDBOX_PREFIX;
  process.env.MOCKSERVER_SANDBOX_PREFIX = 'job7';
  try {
    assert.match(sandboxName('x'), /^job7-x-[0-9a-f]{10}$/);
  } finally {
    if (saved === undefined) delete process.env.MOCKSERVER_SANDBOX_PREFIX; else process.env.MOCKSERVER_SANDBOX_PREFIX = saved;
  }
});

test('a mock with a control token: every control call carries it; the tokens fall back to the defaults', async (t) => {
  const mock = await startLocal({ args: ['--control-token', 'ctl-secret'], controlToken: 'ctl-secret' });
  try {
    assert.equal(mock.tokens.source, 'defaults', 'the start page lists no token values under --control-token');
    assert.equal(mock.token('deployer'), 'mock-deploy-token');
    const refused = await fetch(`${mock.root}/_mock/clock`);
    assert.equal(refused.status, 401);
    await refused.body.cancel();
    // node:test runs t.after callbacks in the order they were registered: the sandbox lives in a subtest
    await t.test('a sandbox of that mock', async (inner) => {
      const sb = await useSandbox(inner, mock);
      assert.equal((await api(sb.url, 'POST', `/application/${APP}/deploy`, { token: sb.token('deployer') })).status, 202);
      await sb.advance(600);
      await sb.assertCalled({ operation: 'deployApplication', times: 1 });
      const without = new (sb.constructor)({ url: mock.root, sandbox: sb.sandbox, controlToken: null });
      const error = await without.clock().catch((caught) => caught);
      assert.equal(error.status, 401);
    });
  } finally {
    await mock.stop();
  }
});

test('assertRulesFired at the end of a suite names the rules no test\'s sandbox made fire, deleted sandboxes included', async (t) => {
  const prefix = `rules-${process.pid}`;
  const flaky = { rules: [
    { name: 'orgs-fail', match: { operation: 'getOrganization' }, effect: { status: 503 } },
    { name: 'never-used', match: { operation: 'deleteProject' }, effect: { status: 500 } }] };
  await t.test('fires one rule', async (inner) => {
    const sb = await useSandbox(inner, server.ready, { prefix });
    await sb.scenario('flaky', flaky);
    assert.equal((await api(sb.url, 'GET', '/organization')).status, 503);
    assert.deepEqual((await sb.usage()).rules.never_fired, ['flaky/never-used']);
  });
  await t.test('loads it and fires none', async (inner) => {
    const sb = await useSandbox(inner, server.ready, { prefix });
    await sb.scenario('flaky', flaky);
    await sb.scenario('flaky', flaky);                  // the same name again: active once
    assert.deepEqual((await sb.scenarios()).map((s) => s.name), ['flaky']);
    await assert.rejects(sb.scenario('other', { ...flaky, name: 'flaky' }), /scenario "other": the document names itself "flaky"/);
  });
  const error = await assertRulesFired(server.ready, { prefix }).catch((caught) => caught);
  assert.ok(error instanceof assert.AssertionError, String(error));
  assert.equal(error.message, 'mockserver: 1 scenario rule(s) never fired: flaky/never-used');
  assert.equal(error.report.sandboxes, 2, 'both test sandboxes, deleted at their end, are counted');
  assert.equal((await assertRulesFired(server.ready, { prefix: `none-${process.pid}` })).rules.total, 0);
});
