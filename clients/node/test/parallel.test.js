// Ten tests at once against one mock, each in its own sandbox: records, clocks, scenarios and journals stay apart.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { useSandbox } from '../index.js';
import { APP, ORG, api, localMockForFile } from './support.js';

const server = localMockForFile();
const N = 10;

/** Resolves when all N tests have reached it: proof that they ran at the same time. */
function barrier(count, timeoutMs = 15_000) {
  let arrived = 0;
  let open;
  const opened = new Promise((resolve) => { open = resolve; });
  return async () => {
    arrived += 1;
    if (arrived === count) open();
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`only ${arrived} of ${count} tests were running at once`)), timeoutMs);
    });
    try { await Promise.race([opened, timeout]); } finally { clearTimeout(timer); }
  };
}

const together = barrier(N);
const seen = new Map();                    // test index -> its sandbox name (all different)

describe('tests in parallel, a sandbox each', { concurrency: N }, () => {
  for (let i = 0; i < N; i += 1) {
    it(`worker ${i} sees only its own world`, async (t) => {
      const sb = await useSandbox(t, server.ready, { clock: 'manual' });
      seen.set(i, sb.sandbox);
      const project = `parallel-project-${i}`;
      // write: a record, a clock move, a scenario (every worker its own), and a deploy
      const created = await api(sb.url, 'POST', `/organization/${ORG}/project`, { json: { name: project } });
      assert.equal(created.status, 201);
      await sb.advance(100 * (i + 1));
      await sb.scenario(`only-${i}`, { rules: [{ name: 'status-fails', match: { operation: 'getApplicationStatus' },
        effect: { status: 503, message: `worker ${i} scripted this` } }] });
      if (i % 2 === 0) {
        assert.equal((await api(sb.url, 'POST', `/application/${APP}/deploy`, { token: sb.token('deploy') })).status, 202);
      }

      await together();                    // every worker has written before any reads

      const projects = (await api(sb.url, 'GET', `/organization/${ORG}/project`)).body.results.map((p) => p.name);
      assert.ok(projects.includes(project), `${project} is in ${sb.sandbox}`);
      assert.deepEqual(projects.filter((name) => name.startsWith('parallel-project-')), [project]);
      assert.equal((await sb.clock()).offset_seconds, 100 * (i + 1));
      assert.deepEqual((await sb.scenarios()).map((s) => s.name), [`only-${i}`]);
      const status = await api(sb.url, 'GET', `/application/${APP}/status`);
      assert.equal(status.status, 503);
      assert.match(JSON.stringify(status.body), new RegExp(`worker ${i} scripted this`));
      await sb.assertCalled({ operation: 'createProject', times: 1 });
      await sb.assertCalled({ operation: 'deployApplication', times: i % 2 === 0 ? 1 : 0 });
      const calls = await sb.calls();
      assert.deepEqual(calls.map((c) => c.operation),
        ['createProject', ...(i % 2 === 0 ? ['deployApplication'] : []), 'listProjects', 'getApplicationStatus']);
      assert.equal(calls[0].body.name, project);
    });
  }
});

describe('after the parallel tests', () => {
  it('used ten different sandboxes, all deleted at their tests\' end', async () => {
    assert.equal(new Set(seen.values()).size, N);
    const live = (await server.mock.sandboxes()).results.map((s) => s.name);
    for (const name of seen.values()) assert.ok(!live.includes(name), `${name} was deleted`);
  });
});
