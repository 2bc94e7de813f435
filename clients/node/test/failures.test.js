// A failing test keeps its sandbox's journal where the runner shows it, and its sandbox on demand; a mock that
// cannot start is one failure, not two. The tests that fail on purpose are fixtures (test/fixtures/*.node.js
// and *.vitest.js), run here in a child node:test or Vitest run against this file's mock.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { MockServerError, mockFor, useSandbox } from '../index.js';
import { localMockForFile } from './support.js';

const server = localMockForFile();
const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const VITEST = here('../node_modules/vitest/vitest.mjs');

/** Run a command in a fresh directory: {code, output (stdout and stderr, no colours), dir}. */
function run(args, env = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'mockserver-failing-'));
  const clean = { ...process.env };
  for (const name of ['MOCKSERVER_URL', 'MOCKSERVER_JOURNAL_DIR', 'MOCKSERVER_KEEP_SANDBOX', 'NODE_TEST_CONTEXT']) {
    delete clean[name];
  }
  return new Promise((done) => {
    const child = spawn(process.execPath, args, { cwd: dir, env: { ...clean, NO_COLOR: '1', ...env } });
    let output = '';
    child.stdout.on('data', (chunk) => { output += chunk; });
    child.stderr.on('data', (chunk) => { output += chunk; });
    child.on('close', (code) => done({ code, output: output.replace(/\x1b\[[0-9;]*m/g, ''), dir }));   // eslint-disable-line no-control-regex
  });
}

/** The sandbox name a fixture's test said for itself (`sandbox NAME`), in the order they ran. */
function sandboxesSaid(output) {
  return [...output.matchAll(/sandbox ((?:fails-after-22-calls|passes|fails-too)-[0-9a-f]{10})$/gm)].map((m) => m[1]);
}

const RUNNERS = {
  'node:test': (env) => run(['--test', '--test-reporter=spec', here('./fixtures/journals.node.js')], env),
  Vitest: (env) => run([VITEST, 'run', '--config', here('./fixtures/vitest.config.js'), 'journals.vitest.js'], env),
};

for (const [runner, runFixture] of Object.entries(RUNNERS)) {
  test(`${runner}: a failing test's journal is written to a file and told with its last 20 calls; on-failure keeps its sandbox`, async (t) => {
    const mock = await server.ready;
    const outside = mkdtempSync(join(tmpdir(), 'mockserver-journals-'));
    const journals = join(outside, 'nested');                    // made when the first test fails
    const { code, output, dir } = await runFixture({ MOCKSERVER_URL: mock.root, MOCKSERVER_JOURNAL_DIR: journals,
      MOCKSERVER_KEEP_SANDBOX: 'on-failure' });
    t.after(() => { for (const path of [dir, outside]) rmSync(path, { recursive: true, force: true }); });
    assert.notEqual(code, 0, output);
    const [failing, passing, hooked] = sandboxesSaid(output);
    assert.ok(failing && passing && hooked, output);

    // the file: the whole journal (22 calls), in <dir>/<the test's name made file-safe>.json
    const file = join(journals, 'fails-after-22-calls.json');
    const written = JSON.parse(readFileSync(file, 'utf8'));             // the journal's entries, oldest first
    assert.deepEqual(written.map((call) => call.id), Array.from({ length: 22 }, (_, i) => i + 1));
    assert.equal(written[21].operation, 'deployApplication');
    assert.equal(written[21].status, 202);

    // the account where the runner shows it: the file, then the last 20 calls one line each
    const account = new RegExp(`mockserver: the journal of sandbox ${failing} \\(22 calls\\) is in ${file}; the last 20:`);
    assert.match(output, account);
    const lines = output.split('\n');
    const start = lines.findIndex((line) => account.test(line));
    const listed = lines.slice(start + 1, start + 21).map((line) => line.replace(/^[\sℹ]+/, ''));
    assert.equal(listed[0], `#3 GET /organization/8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10/project -> 200 (listProjects)`);
    assert.equal(listed[19], `#22 POST /application/a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5/deploy -> 202 (deployApplication)`);
    assert.doesNotMatch(output, /#2 GET/, 'only the last 20');

    // through hooks too (sandboxFor): its file named after the suite and the test
    const hookedFile = join(journals, 'through-hooks-fails-too.json');
    assert.equal(JSON.parse(readFileSync(hookedFile, 'utf8'))[0].status, 403);
    assert.match(output, new RegExp(`sandbox ${hooked} \\(1 call\\) is in ${hookedFile}; the last 1:\\n` +
      '[\\sℹ]+#1 POST /application/\\S+/deploy -> 403 \\(deployApplication\\)'));

    // on-failure: the failing tests' sandboxes kept and told (URL, inspector page); the passing test's deleted
    const kept = [...output.matchAll(/mockserver: sandbox (\S+) kept /g)].map((m) => m[1]);
    t.after(() => Promise.all(kept.map((name) => mock.deleteSandbox(name).catch(() => {}))));
    for (const name of [failing, hooked]) {
      assert.match(output, new RegExp(`mockserver: sandbox ${name} kept \\(MOCKSERVER_KEEP_SANDBOX=on-failure\\): ` +
        `${mock.root}/sandbox/${name}; inspector: ${mock.root}/_mock/ui\\?sandbox=${name}$`, 'm'));
      assert.equal((await mock.getSandbox(name)).name, name);
    }
    const error = await mock.getSandbox(passing).catch((caught) => caught);
    assert.ok(error instanceof MockServerError && error.status === 404, 'the passing test\'s sandbox is deleted');
    assert.doesNotMatch(output, new RegExp(`journal of sandbox ${passing}`));
    assert.ok(!existsSync(join(journals, 'passes.json')));
    if (runner === 'node:test') {                    // a test with two sandboxes: a file for each
      const two = ['two-sandboxes-fail.json', 'two-sandboxes-fail.2.json'].map((name) => JSON.parse(readFileSync(join(journals, name), 'utf8')));
      assert.deepEqual(two.map((journal) => journal.map((call) => call.operation)), [['listProjects'], ['getOrganizationById']]);
    }
  });

  test(`${runner}: by default the journal goes to ./mockserver-journals and the failing test's sandbox is deleted`, async (t) => {
    const mock = await server.ready;
    const { output, dir } = await runFixture({ MOCKSERVER_URL: mock.root });
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const [failing] = sandboxesSaid(output);
    assert.match(output, new RegExp(`journal of sandbox ${failing} \\(22 calls\\) is in mockserver-journals/fails-after-22-calls.json`));
    assert.equal(JSON.parse(readFileSync(join(dir, 'mockserver-journals', 'fails-after-22-calls.json'), 'utf8')).length, 22);
    assert.doesNotMatch(output, / kept /);
    const error = await mock.getSandbox(failing).catch((caught) => caught);
    assert.equal(error.status, 404, 'never: the default');
  });
}

test('node:test: a run whose tests pass makes no journal directory', async (t) => {
  const mock = await server.ready;
  const { code, output, dir } = await run(['--test', '--test-reporter=spec', '--test-name-pattern=^passes$',
    here('./fixtures/journals.node.js')], { MOCKSERVER_URL: mock.root });
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  assert.equal(code, 0, output);
  assert.match(output, /ℹ pass 1\n/);
  assert.ok(!existsSync(join(dir, 'mockserver-journals')));
});

test('keep: true, \'always\', \'never\', \'on-failure\', or MOCKSERVER_KEEP_SANDBOX; anything else is refused', async (t) => {
  let said = [];
  const context = (name) => ({ name, passed: true, after: (fn) => { context.last = fn; }, diagnostic: (line) => said.push(line) });
  for (const [keep, kept] of [[true, true], ['always', true], [false, false], ['never', false], ['on-failure', false]]) {
    said = [];
    const sb = await useSandbox(context(`keep ${keep}`), server.ready, { keep });
    await context.last();
    const there = await sb.getSandbox().then(() => true, () => false);
    assert.equal(there, kept, `keep: ${keep} on a passing test`);
    assert.deepEqual(said, kept ? [`mockserver: sandbox ${sb.sandbox} kept (keep: ${JSON.stringify(keep)}): ${sb.url}; ` +
      `inspector: ${sb.root}/_mock/ui?sandbox=${sb.sandbox}`] : []);
    if (there) await sb.deleteSandbox();
  }
  await assert.rejects(useSandbox(context('bad'), server.ready, { keep: 'sometimes' }),
    /the option keep is "sometimes": use never, on-failure or always/);
  const saved = process.env.MOCKSERVER_KEEP_SANDBOX;
  t.after(() => { if (saved === undefined) delete process.env.MOCKSERVER_KEEP_SANDBOX; else process.env.MOCKSERVER_KEEP_SANDBOX = saved; });
  process.env.MOCKSERVER_KEEP_SANDBOX = 'yes';
  await assert.rejects(useSandbox(context('bad'), server.ready),
    /the environment variable MOCKSERVER_KEEP_SANDBOX is "yes": use never, on-failure or always/);
  process.env.MOCKSERVER_KEEP_SANDBOX = 'always';
  const sb = await useSandbox(context('from the environment'), server.ready);
  await context.last();
  assert.equal((await sb.getSandbox()).name, sb.sandbox, 'kept: MOCKSERVER_KEEP_SANDBOX=always');
  await sb.deleteSandbox();
});

test('mockFor: stop() is safe before the start, after a start that failed, and twice', async () => {
  const hooks = {};
  const mock = mockFor({ before: (fn) => { hooks.before = fn; }, after: (fn) => { hooks.after = fn; } },
    { way: 'local', command: '/nonexistent/mockserver' });
  await mock.stop();                                                       // never started
  assert.throws(() => mock.url, /no mock: use it inside a test/);
  await assert.rejects(hooks.before(), /cannot run \/nonexistent\/mockserver/);
  assert.throws(() => mock.url, /the mock did not start: mockserver: could not start/);
  await assert.rejects(useSandbox({ after() {} }, mock), /the mock did not start/);
  await hooks.after();                                                     // the failed start: nothing to stop
  await mock.stop();
});

test('mockFor: started in before, the root client in the tests, stopped in after', async () => {
  const hooks = {};
  const mock = mockFor({ beforeAll: (fn) => { hooks.before = fn; }, afterAll: (fn) => { hooks.after = fn; } });
  await hooks.before();
  const { pid } = mock.current.process;
  assert.equal((await mock.health()).status, 'ok');
  assert.equal(mock.url, mock.current.url);
  assert.equal(await mock.start(), mock.current, 'start() again: the same mock');
  await hooks.after();
  assert.ok(!existsSync(`/proc/${pid}`) || readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z '), 'stopped');
  await mock.stop();
  assert.throws(() => mockFor({ before() {} }), /give the test framework's two hooks/);
});

for (const [runner, args, summary] of [
  ['node:test', ['--test', '--test-reporter=spec', here('./fixtures/start-fails.node.js')], /ℹ fail 1\n/],
  ['Vitest', [VITEST, 'run', '--config', here('./fixtures/vitest.config.js'), 'start-fails.vitest.js'], /Test Files +1 failed \(1\)/],
]) {
  test(`${runner}: a mock that cannot start is one failure (the start's), not a second one from its stop`, async (t) => {
    const { code, output, dir } = await run(args);
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    assert.notEqual(code, 0);
    assert.match(output, /cannot run \/nonexistent\/mockserver/);
    assert.match(output, summary);
    assert.doesNotMatch(output, /TypeError|reading 'stop'|afterAll|after hook/, output);
  });
}
