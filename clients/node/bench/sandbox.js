// How long a test waits for a fresh sandbox: create + delete through the harness (useSandbox), median over 100,
// against a local mock ($MOCKSERVER_COMMAND, or MOCKSERVER_URL when set).
//   node bench/sandbox.js [runs]
import { performance } from 'node:perf_hooks';

import { connect, startLocal, useSandbox } from '../index.js';

const runs = Number(process.argv[2] ?? 100);
const warmup = 10;
const mock = process.env.MOCKSERVER_URL ? await connect() : await startLocal();

/** One test's life cycle as the harness runs it: useSandbox before the body, its t.after callback at the end. */
async function oneTest(index) {
  const teardown = [];
  const context = { name: `bench-${index}`, after: (fn) => teardown.push(fn) };
  const started = performance.now();
  const sandbox = await useSandbox(context, mock);
  const created = performance.now();
  for (const fn of teardown) await fn();
  const ended = performance.now();
  if (!sandbox.sandbox) throw new Error('no sandbox');
  return { create: created - started, remove: ended - created, total: ended - started };
}

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  return sorted[low] + (sorted[Math.ceil(at)] - sorted[low]) * (at - low);
};

try {
  for (let i = 0; i < warmup; i += 1) await oneTest(`warmup-${i}`);
  const samples = [];
  for (let i = 0; i < runs; i += 1) samples.push(await oneTest(i));
  const row = (label, key) => {
    const values = samples.map((sample) => sample[key]);
    return `${label.padEnd(18)} median ${quantile(values, 0.5).toFixed(2)} ms   p90 ${quantile(values, 0.9).toFixed(2)} ms` +
      `   min ${Math.min(...values).toFixed(2)} ms   max ${Math.max(...values).toFixed(2)} ms`;
  };
  const health = await mock.health();
  console.log(`fresh sandbox per test through the harness, ${runs} runs (after ${warmup} warm-up), mock ${health.version} at ${mock.url}, node ${process.version}`);
  console.log(row('create (PUT)', 'create'));
  console.log(row('delete (DELETE)', 'remove'));
  console.log(row('create + delete', 'total'));
} finally {
  await mock.stop();
}
