// The three ways of having a mock: connect (url or MOCKSERVER_URL), a local process, a container.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { connect, containerAvailable, freePort, startContainer, startLocal, startMock } from '../index.js';
import { APP, api } from './support.js';

/** A short tour of a mock: health, a sandbox, a deploy through the clock, the journal. */
async function tour(mock) {
  assert.equal((await mock.health()).status, 'ok');
  const sb = await mock.inSandbox(`tour-${process.pid}-${Date.now()}`, { clock: 'manual' });
  try {
    assert.equal((await api(sb.url, 'POST', `/application/${APP}/deploy`, { token: sb.token('deployer') })).status, 202);
    await sb.advance(600);
    assert.equal((await api(sb.url, 'GET', `/application/${APP}/status`)).body.state, 'DEPLOYED');
    await sb.assertCalled({ operation: 'deployApplication', times: 1 });
  } finally {
    await sb.deleteSandbox();
  }
}

function alive(pid) {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

/** A process's state letter and parent from /proc/PID/stat; null when there is no such process. */
function stat(pid) {
  let text;
  try { text = readFileSync(`/proc/${pid}/stat`, 'utf8'); } catch { return null; }
  const [state, ppid] = text.slice(text.lastIndexOf(')') + 2).split(' ');   // after `pid (name) `
  return { state, ppid: Number(ppid) };
}

/** Whether the process has ended: no such process, or a zombie (ended, not yet reaped). */
function gone(pid) {
  const found = stat(pid);
  return found === null || found.state === 'Z' || found.state === 'X';
}

async function waitGone(pid, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!gone(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  return gone(pid);
}

/** Run test/fixtures/start-and-wait.js: the program, its mock's pid, and a promise of its end. */
async function programWithMock(args = []) {
  const program = spawn(process.execPath, [new URL('./fixtures/start-and-wait.js', import.meta.url).pathname, ...args],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  const ended = new Promise((done) => program.once('exit', (code, signal) => done({ code, signal })));
  const lines = [];
  const mockPid = await new Promise((resolvePid, reject) => {
    let pending = '';
    program.stdout.setEncoding('utf8');
    program.stdout.on('data', (chunk) => {
      pending += chunk;
      lines.push(...pending.split('\n').slice(0, -1));
      pending = pending.slice(pending.lastIndexOf('\n') + 1);
      const said = lines.map((line) => /^mock (\d+)$/.exec(line)).find(Boolean);
      if (said) resolvePid(Number(said[1]));
    });
    ended.then(({ code, signal }) => reject(new Error(`the program ended (${signal ?? code}) before its mock started`)));
  });
  return { program, mockPid, ended, lines };
}

test('local process: MOCKSERVER_COMMAND serve --port 0, the URL read from its first line, stopped at the end', async () => {
  const lines = [];
  const mock = await startLocal({ args: ['--seed', '7'], log: (line) => lines.push(line) });
  try {
    assert.equal(mock.way, 'local');
    assert.match(mock.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.match(lines[0], new RegExp(`^mockserver \\S+ on ${mock.url}`));
    const health = await mock.health();
    assert.equal(health.clock, 'manual', 'the harness starts it with --clock manual');
    assert.equal(mock.serverVersion, health.version);
    await tour(mock);
  } finally {
    await mock.stop();
  }
  assert.ok(mock.process.exitCode !== null || mock.process.signalCode !== null, 'the process ended');
  assert.equal(alive(mock.process.pid), false);
  await assert.rejects(fetch(`${mock.url}/_mock/health`), 'nothing answers any more');
});

test('local process: two mocks side by side in one process, each with its own world', async () => {
  const [a, b] = await Promise.all([startLocal(), startLocal({ clock: 'real' })]);
  try {
    assert.notEqual(a.url, b.url);
    assert.equal((await a.health()).clock, 'manual');
    assert.equal((await b.health()).clock, 'real');
    await a.createSandbox('side-by-side');
    const names = (await b.sandboxes()).results.map((s) => s.name);
    assert.ok(!names.includes('side-by-side'));
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

test('local process: a command that cannot run says so and names MOCKSERVER_COMMAND', async () => {
  await assert.rejects(startLocal({ command: '/nonexistent/mockserver' }), /MOCKSERVER_COMMAND/);
  await assert.rejects(startLocal({ args: ['--no-such-option'] }), /exited \(code 2\) before printing its URL/);
});

const linux = process.platform === 'linux' ? false : 'reads /proc/PID/stat (Linux)';

for (const signal of ['SIGKILL', 'SIGTERM', 'SIGINT']) {
  test(`local process: a program killed with ${signal} takes its mock with it`, { skip: linux, timeout: 60_000 }, async () => {
    const { program, mockPid, ended } = await programWithMock();
    try {
      const mock = stat(mockPid);
      assert.equal(mock.ppid, program.pid, 'the mock\'s parent is the Node program itself (no shell between)');
      const argv = readFileSync(`/proc/${mockPid}/cmdline`, 'utf8').split('\0');
      assert.ok(argv.includes('--exit-with-parent'), argv.join(' '));
      program.kill(signal);
      assert.deepEqual(await ended, { code: null, signal }, `the program still dies of ${signal}`);
      assert.ok(await waitGone(mockPid, 5_000), `the mock (pid ${mockPid}) is gone within 5 s of its program's ${signal}`);
    } finally {
      if (!gone(mockPid)) process.kill(mockPid, 'SIGKILL');
      program.kill('SIGKILL');
    }
  });
}

test('local process: a program that handles SIGTERM itself keeps running, and so does its mock', { skip: linux, timeout: 60_000 }, async () => {
  const { program, mockPid, ended, lines } = await programWithMock(['handles']);
  try {
    program.kill('SIGTERM');
    const deadline = Date.now() + 5_000;
    while (!lines.includes('handled SIGTERM') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(lines.includes('handled SIGTERM'), 'the program\'s own handler ran');
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(program.exitCode, null, 'the signal is the program\'s business: it goes on');
    assert.equal(gone(mockPid), false, 'and its mock with it');
    program.kill('SIGKILL');
    await ended;
    assert.ok(await waitGone(mockPid, 5_000), 'a SIGKILL then takes the mock with it');
  } finally {
    if (!gone(mockPid)) process.kill(mockPid, 'SIGKILL');
    program.kill('SIGKILL');
  }
});

test('connect: a URL given, or MOCKSERVER_URL; readiness over /_mock/health', async (t) => {
  const local = await startLocal();
  t.after(() => local.stop());
  const given = await connect(local.url);
  assert.equal(given.way, undefined);
  await tour(given);
  await given.stop();                                   // nothing to stop: it was only connected to
  assert.equal((await local.health()).status, 'ok');

  const saved = process.env.MOCKSERVER_URL;
  process.env.MOCKSERVER_URL = local.url;
  t.after(() => { if (saved === undefined) delete process.env.MOCKSERVER_URL; else process.env.MOCKSERVER_URL = saved; });
  const fromEnv = await startMock();
  assert.equal(fromEnv.way, 'connect');
  assert.equal(fromEnv.root, local.url);
  await tour(fromEnv);
});

test('connect: a URL where nothing answers fails with one message naming it and where it came from', async () => {
  const port = await freePort();
  const started = Date.now();
  await assert.rejects(connect(`http://127.0.0.1:${port}`, { startTimeoutMs: 600 }), (error) => {
    assert.match(error.message, new RegExp(`^mockserver: cannot use the mock at http://127.0.0.1:${port}, given by the url given: `));
    assert.match(error.message, /did not answer 200 on \/_mock\/health within 0.6 s \(last: ECONNREFUSED\)/);
    return true;
  });
  assert.ok(Date.now() - started < 5_000);
});

const image = process.env.MOCKSERVER_IMAGE || 'idp-mockserver:local';
const engine = containerAvailable(image);

test(`container (host network): ${image} with Testcontainers, Ryuk off, stopped and removed at the end`,
  { skip: engine.ok ? false : engine.reason, timeout: 180_000 }, async () => {
    const mock = await startContainer({ image, network: 'host' });
    const id = mock.container.getId();
    try {
      assert.equal(mock.way, 'container');
      assert.match(mock.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal(process.env.TESTCONTAINERS_RYUK_DISABLED, 'true');
      assert.equal((await mock.health()).clock, 'manual');
      await tour(mock);
    } finally {
      await mock.stop();
    }
    const left = spawnSync('docker', ['ps', '-a', '-q', '--no-trunc', '--filter', `id=${id}`], { encoding: 'utf8' });
    assert.equal(left.stdout.trim(), '', 'the container is removed');
  });

test(`container (mapped port): ${image} on the engine's bridge network`,
  { skip: !engine.ok ? engine.reason : engine.bridge ? false : 'the Docker engine has no bridge network (host networking only): the mapped-port way cannot run here', timeout: 180_000 },
  async () => {
    const mock = await startContainer({ image });
    try {
      assert.equal((await mock.health()).status, 'ok');
      await tour(mock);
    } finally {
      await mock.stop();
    }
  });
