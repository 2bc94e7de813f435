// Every control route reached through the client: each method called once against a live mock, and the requests
// it sent matched against the control document (per-sandbox routes through the sandbox's prefix).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Client, MockServerError } from '../index.js';
import { APP, ORG, api, controlOperations, GLOBAL_ONLY, localMockForFile } from './support.js';

const server = localMockForFile();

const SCENARIO = `
name: slow-org
rules:
  - name: slow
    match: {operation: getOrganizationById}
    effect: {latency_ms: 1}
`;

function matcher(document) {
  return controlOperations(document).filter((op) => op.client !== false).map((op) => ({
    ...op,
    regex: new RegExp(`^/_mock${op.path.replace(/^\/_mock/, '').replace(/\{[^}]+\}/g, '[^/]+')}$`),
  }));
}

test('each control method reaches its route once, per-sandbox routes through /sandbox/{name}', async () => {
  const { mock } = server;
  const operations = matcher(await mock.controlDocument());
  const sent = [];
  const recorder = (url, init = {}) => {
    sent.push({ method: (init.method ?? 'GET').toUpperCase(), url: new URL(url) });
    return fetch(url, init);
  };
  const name = `routes-${process.pid}`;
  await mock.createSandbox(name, { clock: 'manual' });
  const sb = new Client({ url: mock.root, sandbox: name, fetch: recorder, tokens: mock.tokens });
  const other = `routes-other-${process.pid}`;

  // health and documents
  assert.equal((await sb.health()).status, 'ok');
  assert.equal((await sb.controlDocument()).openapi.startsWith('3.'), true);
  assert.equal(typeof (await sb.scenarioSchema()).properties, 'object');
  const page = await recorder(sb.inspectorUrl());
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type'), /text\/html/);
  await page.text();

  // the sandbox's world
  assert.equal((await api(sb.url, 'POST', `/application/${APP}/deploy`, { token: sb.token('deployer') })).status, 202);
  assert.equal((await api(sb.url, 'GET', `/organization/${ORG}`)).status, 200);
  assert.equal((await sb.clock()).mode, 'manual');
  assert.equal((await sb.advance(600)).offset_seconds, 600);
  assert.equal(typeof (await sb.state()), 'object');
  assert.match(await sb.exportState(), /organizations/);
  assert.ok(Array.isArray((await sb.stateTree()).organizations));
  const calls = await sb.calls({ operation: 'deployApplication' });
  assert.equal(calls.length, 1);
  assert.equal((await sb.call(calls[0].id)).operation, 'deployApplication');
  assert.equal((await sb.callRows({ limit: 5 })).total, 2);
  assert.ok((await sb.coverage()).reached >= 2);
  assert.equal((await sb.usage()).operations.calls.deployApplication, 1);
  assert.equal((await sb.verify({ operation: 'deployApplication', times: 1 })).ok, true);
  assert.equal((await sb.exportPact()).interactions.length >= 1, true);
  assert.ok((await sb.export('har')).log);
  assert.equal((await sb.deployments()).results.length >= 1, true);
  assert.ok(Array.isArray(await sb.deliveries()));
  const minted = await sb.mintToken({ scopes: ['Read'], ttlSeconds: 60 });
  assert.equal((await api(sb.url, 'GET', `/organization/${ORG}`, { token: minted })).status, 200);
  assert.equal((await sb.scenario('slow-org', SCENARIO)).name, 'slow-org');
  assert.deepEqual((await sb.scenarios()).map((s) => s.name), ['slow-org']);
  assert.equal((await sb.getScenario('slow-org')).rules.length, 1);
  await sb.removeScenario('slow-org');
  assert.equal((await sb.activateScenario(SCENARIO.replace('slow-org', 'slow-org-2'))).name, 'slow-org-2');
  assert.equal((await sb.providerStates({ state: 'application {id} exists', params: { id: APP } })).sandbox, name);
  assert.deepEqual((await sb.reset()).scenarios, ['slow-org-2'], 'a reset keeps the scenarios');
  assert.deepEqual((await sb.reset({ scenarios: true })).scenarios, [], 'unless asked');
  await sb.clearCalls();
  assert.equal((await sb.calls()).length, 0);

  // snapshots
  assert.equal((await sb.snapshot('before')).private, true);
  assert.equal((await sb.getSnapshot('before')).sandbox, name);
  assert.ok((await sb.snapshots()).some((s) => s.name === sb.privateSnapshots.get('before')));
  assert.equal((await sb.restore('before')).sandbox, name);
  await sb.deleteSnapshot('before');

  // sandboxes
  assert.ok((await sb.sandboxes()).results.some((s) => s.name === name));
  assert.equal((await sb.getSandbox()).name, name);
  assert.equal((await sb.resetSandbox()).name, name);
  assert.equal((await sb.createSandbox(other)).name, other);
  await sb.deleteSandbox(other);
  await sb.deleteAllSandboxes();
  await assert.rejects(sb.getSandbox(), (error) => error instanceof MockServerError && error.status === 404);

  // what was sent: every operation's route, each per-sandbox one under the sandbox's prefix
  const reached = new Map();
  for (const { method, url } of sent) {
    let path = url.pathname;
    const prefixed = path.startsWith(`/sandbox/${name}/`);
    if (prefixed) path = path.slice(`/sandbox/${name}`.length);
    const candidates = operations.filter((op) => op.method === method && op.regex.test(path));
    // the most specific template wins (/_mock/calls/rows before /_mock/calls/{id})
    candidates.sort((a, b) => (a.path.match(/\{/g) ?? []).length - (b.path.match(/\{/g) ?? []).length);
    const op = candidates[0];
    assert.ok(op, `${method} ${url.pathname}: no route of the control document`);
    if (GLOBAL_ONLY.has(op.client)) assert.equal(prefixed, false, `${op.client} goes to the mock's root`);
    else assert.equal(prefixed, true, `${op.client} goes through the sandbox's prefix (${url.pathname})`);
    reached.set(op.client, (reached.get(op.client) ?? 0) + 1);
  }
  const all = [...new Set(operations.map((op) => op.client))].sort();
  assert.deepEqual([...reached.keys()].sort(), all, 'every x-client route was reached');
});
