// Three ways to have a mock: connect to a running one, start a local process, or start a container.
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { Client } from './client.js';
import { versionMismatch } from './version.js';

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/** The first line `mockserver serve` prints: `mockserver 0.1.0 on http://127.0.0.1:PORT: ...`. */
const START_LINE = /^mockserver \S+ on (https?:\/\/[^\s]+?):?(?:\s|$)/;

/**
 * Poll GET {url}/_mock/health until it answers 200 (or the deadline): the reply's JSON. Readiness is only ever
 * this HTTP answer, never a log line.
 */
export async function waitReady(url, { timeoutMs = 30_000, intervalMs = 50, fetch: fetcher = globalThis.fetch,
  controlToken, isAlive } = {}) {
  const root = String(url).replace(/\/+$/, '');
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  for (;;) {
    if (isAlive && !isAlive()) throw new Error(`the mock at ${root} stopped before it answered /_mock/health`);
    try {
      const response = await fetcher(`${root}/_mock/health`, {
        headers: controlToken ? { Authorization: `Bearer ${controlToken}` } : {},
        signal: AbortSignal.timeout(Math.max(500, Math.min(5_000, deadline - Date.now()))),
      });
      const text = await response.text();
      if (response.status === 200) {
        try { return JSON.parse(text); } catch { return { status: 'ok', version: null }; }
      }
      last = `HTTP ${response.status}`;
    } catch (error) {
      last = error?.cause?.code ?? error?.cause?.message ?? error?.message ?? String(error);
    }
    if (Date.now() >= deadline) {
      throw new Error(`the mock at ${root} did not answer 200 on /_mock/health within ${timeoutMs / 1000} s (last: ${last})`);
    }
    await sleep(intervalMs);
  }
}

/** Deprecated: the name waitReady had (kept for a release). */
export const waitForHealth = waitReady;

/** A root client for a mock that answers: health waited for, the version compared (one line), tokens read. */
async function ready(url, options, stop) {
  const client = new Client({ ...options, url });
  const health = await waitReady(client.root, { timeoutMs: options.startTimeoutMs ?? 30_000, fetch: client.fetch,
    controlToken: client.controlToken, isAlive: options.isAlive });
  client.serverVersion = health?.version ?? null;
  const line = versionMismatch(client.serverVersion, client.root);
  if (line) client.warn(line);
  if (options.tokens === undefined) await client.loadTokens();
  client._stop = stop ?? null;
  return client;
}

/**
 * Connect to a running mock: `url`, else the environment variable MOCKSERVER_URL. Waits until its
 * /_mock/health answers 200 (default 30 s), then returns the root client.
 */
export async function connect(urlOrOptions, maybeOptions = {}) {
  const options = typeof urlOrOptions === 'string' || urlOrOptions instanceof URL
    ? { ...maybeOptions, url: String(urlOrOptions) } : { ...(urlOrOptions ?? {}) };
  const given = options.url ?? process.env.MOCKSERVER_URL;
  if (!given) throw new Error('connect: no url given and the environment variable MOCKSERVER_URL is not set');
  const where = options.url ? 'the url given' : 'the environment variable MOCKSERVER_URL';
  try {
    return await ready(given, { startTimeoutMs: 10_000, ...options, url: given });
  } catch (error) {
    throw new Error(`mockserver: cannot use the mock at ${given}, given by ${where}: ${error.message}`, { cause: error });
  }
}

/** A free TCP port on 127.0.0.1. */
export function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

// ---- a local mock ends with this process ---------------------------------------------------------------------
// However this process ends, the local mocks it started end too:
// - `exit` (the event loop drained, process.exit, an uncaught error): each is killed (SIGKILL) from the handler;
// - SIGTERM or SIGINT with no handler of the program's own: each is sent SIGTERM, then the signal is raised
//   again, so this process still dies of it (its exit status says so) as it would have without the mocks;
//   with a handler of the program's own, the signal is the program's business: the mocks stay until `exit`;
// - SIGKILL (or any other end no handler sees): each mock was started with `--exit-with-parent` and stops by
//   itself when its parent process is gone, within a fraction of a second.
const SIGNALS = ['SIGTERM', 'SIGINT'];
const running = new Set();                      // the local mocks' processes not yet ended

function onSignal(signal) {
  if (process.listenerCount(signal) > 1) return;                  // the program handles it: its choice
  for (const child of running) child.kill('SIGTERM');
  unwatchSignals();
  process.kill(process.pid, signal);                              // no listener left: the default action
}

let watching = false;

function watchSignals() {
  if (watching) return;
  watching = true;
  for (const signal of SIGNALS) process.on(signal, onSignal);
}

function unwatchSignals() {
  watching = false;
  for (const signal of SIGNALS) process.removeListener(signal, onSignal);
}

function forget(child) {
  running.delete(child);
  if (running.size === 0) unwatchSignals();
}

/**
 * Start `$MOCKSERVER_COMMAND serve --port 0 --exit-with-parent --clock manual [args]` (default command:
 * `mockserver` on PATH; spawned with no shell between, so this process is the mock's parent), read its URL from
 * the first line it prints, wait for health. `stop()` on the returned client ends it (SIGTERM, then SIGKILL
 * after `stopTimeoutMs`); it also ends with this process, however this process ends (above).
 */
export async function startLocal(options = {}) {
  const { command = process.env.MOCKSERVER_COMMAND || 'mockserver', clock = 'manual', args = [], env = {},
    startTimeoutMs = 30_000, stopTimeoutMs = 5_000, log } = options;
  const argv = ['serve', '--port', '0', '--exit-with-parent', ...(clock ? ['--clock', clock] : []), ...args];
  const child = spawn(command, argv, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PYTHONUNBUFFERED: '1', ...env },
  });
  const output = [];                            // the last lines, for an error that says why
  let exited = null;
  const exitedPromise = new Promise((done) => {
    child.once('exit', (code, signal) => { exited = { code, signal }; forget(child); done(exited); });
  });
  const killAtExit = () => { if (!exited) child.kill('SIGKILL'); };
  process.once('exit', killAtExit);
  if (child.pid !== undefined) {                // undefined: it could not be spawned (its 'error' says why)
    running.add(child);
    watchSignals();
  }

  const url = await new Promise((resolveUrl, reject) => {
    let settled = false;
    const timer = setTimeout(() => finish(new Error(`no start line within ${startTimeoutMs / 1000} s`)), startTimeoutMs);
    function finish(error, value) {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) reject(error); else resolveUrl(value);
    }
    for (const stream of [child.stdout, child.stderr]) {
      let pending = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk) => {
        pending += chunk;
        let index;
        while ((index = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, index).replace(/\r$/, '');
          pending = pending.slice(index + 1);
          output.push(line);
          if (output.length > 40) output.shift();
          if (log) log(line);
          const match = START_LINE.exec(line);
          if (match) finish(null, match[1].replace(/:$/, ''));
        }
      });
    }
    child.once('error', (error) => finish(error.code === 'ENOENT'
      ? new Error(`cannot run ${command} (not found; set MOCKSERVER_COMMAND to the mockserver executable)`)
      : error));
    child.once('exit', (code, signal) => finish(new Error(`it exited (${signal ?? `code ${code}`}) before printing its URL`)));
  }).catch((error) => {
    killAtExit();
    process.removeListener('exit', killAtExit);
    throw new Error(`mockserver: could not start \`${command} ${argv.join(' ')}\`: ${error.message}` +
      (output.length ? `\n${output.join('\n')}` : ''), { cause: error });
  });

  async function stop() {
    if (!exited) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => { if (!exited) child.kill('SIGKILL'); }, stopTimeoutMs);
      await exitedPromise;
      clearTimeout(timer);
    }
    process.removeListener('exit', killAtExit);
  }

  try {
    const client = await ready(url, { ...options, isAlive: () => !exited }, stop);
    // a forgotten stop() must not keep the test process alive: it is killed at exit instead
    child.unref();
    child.stdout.unref?.();
    child.stderr.unref?.();
    client.process = child;
    client.way = 'local';
    return client;
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Whether a Docker engine answers and the image exists: `{ok, reason}` (the reason a container test is skipped). */
export function containerAvailable(image = process.env.MOCKSERVER_IMAGE || 'idp-mockserver:local') {
  const info = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8', timeout: 20_000 });
  if (info.error || info.status !== 0) {
    const why = info.error?.code === 'ENOENT' ? 'no docker command' : (info.stderr || info.stdout || '').trim().split('\n').pop();
    return { ok: false, reason: `no Docker engine answers (docker info: ${why || 'failed'})` };
  }
  const inspect = spawnSync('docker', ['image', 'inspect', image], { encoding: 'utf8', timeout: 20_000 });
  if (inspect.status !== 0) {
    return { ok: false, reason: `the image ${image} does not exist on this engine (build it: docker build -t ${image} .)` };
  }
  const networks = spawnSync('docker', ['network', 'ls', '--format', '{{.Name}}'], { encoding: 'utf8', timeout: 20_000 });
  return { ok: true, reason: null, bridge: (networks.stdout || '').split('\n').includes('bridge') };
}

/** testcontainers, from this package's resolution or else from the working directory's (a linked install). */
async function loadTestcontainers() {
  try {
    return await import('testcontainers');
  } catch (first) {
    try {
      const resolved = createRequire(join(process.cwd(), 'package.json')).resolve('testcontainers');
      return await import(pathToFileURL(resolved).href);
    } catch {
      throw new Error('startContainer needs the npm package testcontainers (an optional peer dependency): ' +
        'npm install --save-dev testcontainers', { cause: first });
    }
  }
}

/** A Testcontainers wait strategy: HTTP 200 on {url()}/_mock/health, for host networking (no mapped port). */
function healthWaitStrategy(url) {
  let timeout = 120_000;
  let set = false;
  return {
    async waitUntilReady() { await waitReady(url(), { timeoutMs: timeout }); },
    withStartupTimeout(ms) { timeout = ms; set = true; return this; },
    isStartupTimeoutSet() { return set; },
    getStartupTimeout() { return timeout; },
  };
}

/**
 * Start the mock's image with Testcontainers (`image`, else env MOCKSERVER_IMAGE, else idp-mockserver:local):
 * mapped port 8080 by default, or `network: 'host'` (the server told its port with PORT and HOST=127.0.0.1).
 * Ryuk is turned off (TESTCONTAINERS_RYUK_DISABLED=true unless set): `stop()` stops and removes the container.
 */
export async function startContainer(options = {}) {
  const { image = process.env.MOCKSERVER_IMAGE || 'idp-mockserver:local',
    network = process.env.MOCKSERVER_CONTAINER_NETWORK || undefined, clock = 'manual', env = {}, args = [],
    startTimeoutMs = 120_000, testcontainers } = options;
  process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';
  // host networking: the container listens on this machine's loopback. Testcontainers, when it runs inside a
  // container itself, would otherwise look for the gateway of a bridge network that such an engine has not got.
  if (network === 'host') process.env.TESTCONTAINERS_HOST_OVERRIDE ??= '127.0.0.1';
  const { GenericContainer, Wait } = testcontainers ?? await loadTestcontainers();
  const environment = { MOCKSERVER_CLOCK: clock, ...env };
  let container = new GenericContainer(image).withStartupTimeout(startTimeoutMs);
  let hostPort;
  if (network === 'host') {
    hostPort = options.port ?? await freePort();
    Object.assign(environment, { PORT: String(hostPort), HOST: '127.0.0.1' });
    container = container.withNetworkMode('host')
      .withWaitStrategy(healthWaitStrategy(() => `http://127.0.0.1:${hostPort}`));
  } else {
    if (network) container = container.withNetworkMode(network);
    container = container.withExposedPorts(8080)
      .withWaitStrategy(Wait.forHttp('/_mock/health', 8080).forStatusCode(200));
  }
  container = container.withEnvironment(environment);
  if (args.length) container = container.withCommand(['mockserver', 'serve', ...args]);
  const started = await container.start();
  const url = network === 'host' ? `http://127.0.0.1:${hostPort}`
    : `http://${started.getHost()}:${started.getMappedPort(8080)}`;
  const stop = async () => { await started.stop({ timeout: 5_000, remove: true, removeVolumes: true }); };
  try {
    const client = await ready(url, { startTimeoutMs: 30_000, ...options }, stop);
    client.container = started;
    client.way = 'container';
    return client;
  } catch (error) {
    await stop().catch(() => {});
    throw error;
  }
}

/**
 * One entry point: `way` 'connect' | 'local' | 'container'; by default connect when a url or MOCKSERVER_URL is
 * given, else a local process.
 */
export async function startMock(options = {}) {
  const way = options.way ?? (options.url || process.env.MOCKSERVER_URL ? 'connect' : 'local');
  if (way === 'connect') {
    const client = await connect(options);
    client.way = 'connect';
    return client;
  }
  if (way === 'local') return startLocal(options);
  if (way === 'container') return startContainer(options);
  throw new TypeError(`startMock: way must be connect, local or container, not ${JSON.stringify(way)}`);
}
