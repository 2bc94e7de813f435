// The team's client against the mock: one local mock for the file, a fresh sandbox per test, the deploy's
// waiting done on the mock's clock, failures scripted with scenarios, and assertions on the journal.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';

import { mockFor, useSandbox } from 'idp-mockserver-client';

import { PlatformClient } from '../src/platform-client.js';

const ORG = '8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10';
const APP = 'a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5';

// started in `before` (MOCKSERVER_URL when set, else `$MOCKSERVER_COMMAND serve --port 0 --clock manual`) and
// stopped in `after`; a mock that cannot start is one failure, not a second one from its stop
const mock = mockFor({ before, after });

/** The client under test, pointed at the test's sandbox; its pauses move the sandbox's clock instead of waiting. */
function clientFor(sandbox, token = 'deployer') {
  return new PlatformClient(sandbox.url, sandbox.token(token), { sleep: (ms) => sandbox.advance(ms / 1000) });
}

describe('PlatformClient against the mock', { concurrency: 4 }, () => {
  it('deploys and waits until DEPLOYED, polling the status', async (t) => {
    const sandbox = await useSandbox(t, mock);
    const client = clientFor(sandbox);
    assert.equal(await client.deployAndWait(APP), 'DEPLOYED');
    await sandbox.assertCalled({ operation: 'deployApplication', times: 1 });
    await sandbox.assertCalled({ operation: 'getApplicationStatus', atLeast: 2, atMost: 10 });
    await sandbox.assertNotCalled({ status: '4xx' });
  });

  it('reports a failed build (scripted with a scenario)', async (t) => {
    const sandbox = await useSandbox(t, mock);
    await sandbox.scenario('build-fails', `
name: build-fails
rules:
  - name: build-breaks
    match: {operation: deployApplication}
    effect: {deployment: {fail_at: BUILD, state: BUILD_ERROR}}
`);
    const client = clientFor(sandbox);
    await assert.rejects(client.deployAndWait(APP), /deployment of .* failed: BUILD_ERROR/);
    await sandbox.assertCalled({ scenario: 'build-fails/build-breaks', times: 1 });
    const [deploy] = await sandbox.calls({ operation: 'deployApplication' });
    assert.equal(deploy.status, 202);
  });

  it('retries a status that answers 503 once, and still sees the deploy end', async (t) => {
    const sandbox = await useSandbox(t, mock, {
      scenarios: [{ name: 'status-blip', rules: [{ name: 'first-fails', match: { operation: 'getApplicationStatus', first: 1 },
        effect: { status: 503, message: 'status backend unavailable' } }] }],
    });
    const client = clientFor(sandbox);
    assert.equal(await client.deployAndWait(APP), 'DEPLOYED');
    await sandbox.assertCalled({ operation: 'getApplicationStatus', status: '503', times: 1 });
    await sandbox.assertCalled({ operation: 'getApplicationStatus', status: '200', atLeast: 1 });
  });

  it('sends what the platform expects when it creates a project (the journal shows the body)', async (t) => {
    const sandbox = await useSandbox(t, mock);
    const client = clientFor(sandbox, 'admin');
    const project = await client.createProject(ORG, 'checkout');
    assert.equal(project.name, 'checkout');
    assert.ok((await client.listProjects(ORG)).some((p) => p.id === project.id));
    const [call] = await sandbox.calls({ operation: 'createProject' });
    assert.deepEqual(call.body, { name: 'checkout' });
    assert.equal(call.token, 'admin');
  });

  it('a Read token may not deploy: the client surfaces the 403', async (t) => {
    const sandbox = await useSandbox(t, mock);
    const client = clientFor(sandbox, 'reader');
    await assert.rejects(client.deploy(APP), (error) => error.status === 403);
    await sandbox.assertCalled({ operation: 'deployApplication', status: '403', times: 1 });
  });
});

describe('consumer contract', () => {
  it('the calls of a test, written as a pact file', async (t) => {
    const folder = await mkdtemp(join(tmpdir(), 'example-pact-'));
    t.after(() => rm(folder, { recursive: true, force: true }));
    const sandbox = await useSandbox(t, mock);
    const client = clientFor(sandbox);
    await client.deployAndWait(APP);
    const file = join(folder, 'checkout-idp-platform.json');
    await sandbox.writePact(file, { consumer: 'checkout' });
    const pact = JSON.parse(await readFile(file, 'utf8'));
    assert.equal(pact.consumer.name, 'checkout');
    assert.ok(pact.interactions.some((i) => i.description.startsWith('deployApplication POST')));
  });
});
