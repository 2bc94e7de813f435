// Snapshots (private to a test's sandbox, or shared) and consumer contracts (pact, HAR, merged pact files).
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { MockServerError, mergePacts, privateSnapshotName, useSandbox } from '../index.js';
import { APP, ORG, api, localMockForFile } from './support.js';

const server = localMockForFile();

async function projectNames(sb) {
  return (await api(sb.url, 'GET', `/organization/${ORG}/project`)).body.results.map((p) => p.name);
}

test('snapshot and restore: the world and its clock come back; the name is private to the sandbox', async (t) => {
  const sb = await useSandbox(t, server.ready);
  const twin = await useSandbox(t, server.ready);                    // same snapshot name, another sandbox
  await api(sb.url, 'POST', `/organization/${ORG}/project`, { json: { name: 'kept' } });
  await sb.advance(100);
  const saved = await sb.snapshot('checkpoint');
  assert.equal(saved.name, privateSnapshotName(sb.sandbox, 'checkpoint'));
  assert.equal(saved.private, true);
  assert.equal(saved.sandbox, sb.sandbox);
  assert.equal((await twin.snapshot('checkpoint')).sandbox, twin.sandbox, 'no clash on the same name');

  await api(sb.url, 'POST', `/organization/${ORG}/project`, { json: { name: 'dropped' } });
  await sb.advance(50);
  assert.ok((await projectNames(sb)).includes('dropped'));
  const restored = await sb.restore('checkpoint');
  assert.equal(restored.sandbox, sb.sandbox);
  assert.equal(restored.clock.offset_seconds, 100);
  const names = await projectNames(sb);
  assert.ok(names.includes('kept'));
  assert.ok(!names.includes('dropped'));
  assert.ok(!(await projectNames(twin)).includes('kept'), 'the twin restored nothing of it');

  const stored = saved.name;
  await sb.deleteSandbox();
  const gone = await server.mock.getSnapshot(stored).catch((error) => error);
  assert.ok(gone instanceof MockServerError && gone.status === 404, 'a private snapshot goes with its sandbox');
});

test('a shared snapshot is where other sandboxes start from', async (t) => {
  const setup = await useSandbox(t, server.ready);
  await api(setup.url, 'POST', `/organization/${ORG}/project`, { json: { name: 'from-setup' } });
  const name = `shared-${process.pid}-${Date.now()}`;
  const saved = await setup.snapshot(name, { shared: true });
  t.after(() => server.mock.deleteSnapshot(name));
  assert.equal(saved.name, name);
  assert.equal(saved.private, false);
  const started = await useSandbox(t, server.ready, { snapshot: name });
  assert.equal((await started.getSandbox()).source, `snapshot ${name}`);
  assert.ok((await projectNames(started)).includes('from-setup'));
  assert.ok((await server.mock.snapshots()).some((s) => s.name === name));
});

test('a pact export names the calls made, without credentials', async (t) => {
  const sb = await useSandbox(t, server.ready);
  await api(sb.url, 'POST', `/organization/${ORG}/project`, { json: { name: 'pact-project' } });
  await api(sb.url, 'POST', `/application/${APP}/deploy`, { token: sb.token('deploy') });
  await sb.advance(600);
  await api(sb.url, 'GET', `/application/${APP}/status`);
  await api(sb.url, 'GET', `/organization/${ORG}`, { token: 'not-a-token' });            // 401: left out
  const pact = await sb.exportPact({ consumer: 'node-client', provider: 'idp-platform' });
  assert.equal(pact.consumer.name, 'node-client');
  assert.equal(pact.provider.name, 'idp-platform');
  const descriptions = pact.interactions.map((i) => i.description);
  assert.equal(descriptions.length, 3, descriptions.join('\n'));
  assert.match(descriptions[0], /^createProject POST \/organization\/.+\/project -> 201/);
  assert.match(descriptions[1], /^deployApplication POST \/application\/.+\/deploy -> 202/);
  assert.match(descriptions[2], /^getApplicationStatus GET \/application\/.+\/status -> 200, DEPLOYED/);
  assert.doesNotMatch(JSON.stringify(pact), /mock-(admin|deploy)-token/);
  assert.equal(pact.metadata['idp-mockserver'].left_out.length, 1);
  const v3 = await sb.exportPact({ spec: 3, operation: 'createProject' });
  assert.equal(v3.metadata.pactSpecification.version, '3.0.0');
  assert.equal(v3.interactions.length, 1);
  const har = await sb.exportHar();
  assert.equal(har.log.version, '1.2');
  assert.ok(har.log.entries[0].request.url.includes(`/sandbox/${sb.sandbox}/`));
});

test('writePact: tests writing one file at once are merged into one pact; the lock file is gone', async (t) => {
  const folder = await mkdtemp(join(tmpdir(), 'idp-pact-'));
  t.after(() => rm(folder, { recursive: true, force: true }));
  const file = join(folder, 'pacts', 'console.json');
  const writers = await Promise.all([0, 1, 2, 3].map(async (i) => {
    const sb = await useSandbox(t, server.ready);
    await api(sb.url, 'GET', `/organization/${ORG}`);                // the same interaction in every sandbox
    await api(sb.url, 'POST', `/organization/${ORG}/project`, { json: { name: `merged-${i}` } });
    return sb;
  }));
  await Promise.all(writers.map((sb) => sb.writePact(file, { consumer: 'console' })));
  const pact = JSON.parse(await readFile(file, 'utf8'));
  const descriptions = pact.interactions.map((i) => i.description);
  assert.equal(descriptions.filter((d) => d.startsWith('createProject')).length, 4, 'four different bodies');
  assert.equal(descriptions.filter((d) => d.startsWith('getOrganizationById')).length, 1, 'one shared interaction');
  assert.equal(pact.metadata['idp-mockserver'].interactions, 5);
  assert.equal(pact.metadata['idp-mockserver'].calls, 8);
  assert.deepEqual(await readdir(join(folder, 'pacts')), ['console.json']);
  await assert.rejects(writers[0].writePact(file, { consumer: 'someone-else' }), /the file holds a pact of console/);
  await writers[0].writeHar(join(folder, 'calls.har'));
  assert.equal(JSON.parse(await readFile(join(folder, 'calls.har'), 'utf8')).log.entries.length, 2);
});

test('the harness writes each test\'s calls into one pact (option pact)', async (t) => {
  const folder = await mkdtemp(join(tmpdir(), 'idp-pact-'));
  t.after(() => rm(folder, { recursive: true, force: true }));
  const file = join(folder, 'suite.json');
  for (const name of ['one', 'two']) {
    await t.test(`writes ${name}`, async (sub) => {
      const sb = await useSandbox(sub, server.ready, { pact: file, consumer: 'suite' });
      await api(sb.url, 'POST', `/organization/${ORG}/project`, { json: { name } });
    });
  }
  const pact = JSON.parse(await readFile(file, 'utf8'));
  assert.equal(pact.consumer.name, 'suite');
  assert.deepEqual(pact.interactions.map((i) => i.request.body?.name ?? i.request.body?.content?.name), ['one', 'two']);
});

test('mergePacts keeps the old interactions and numbers a taken description', () => {
  const base = { consumer: { name: 'c' }, provider: { name: 'p' }, metadata: { 'idp-mockserver': { calls: 1, cut: [], left_out: [] } } };
  const old = { ...base, interactions: [{ description: 'd', key: 'k1' }] };
  const fresh = { ...base, interactions: [{ description: 'd', key: 'k1' }, { description: 'd', key: 'k2' }] };
  const merged = mergePacts(old, fresh);
  assert.deepEqual(merged.interactions.map((i) => i.description), ['d', 'd #2']);
  assert.equal(merged.metadata['idp-mockserver'].calls, 2);
  assert.equal(merged.metadata['idp-mockserver'].interactions, 2);
});
