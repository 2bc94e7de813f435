// The clock through a deployment, and a scenario that fails one (state, webhooks, journal).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';

import { useSandbox } from '../index.js';
import { APP, ORG, api, eventually, localMockForFile, receiver } from './support.js';

const server = localMockForFile();

async function state(sb) {
  return (await api(sb.url, 'GET', `/application/${APP}/status`, { token: sb.token('reader') })).body.state;
}

test('a clock advance moves a deploy through its states to DEPLOYED', async (t) => {
  const sb = await useSandbox(t, server.ready);
  const deploy = await api(sb.url, 'POST', `/application/${APP}/deploy`, { token: sb.token('deployer') });
  assert.equal(deploy.status, 202);
  assert.equal(deploy.body.state, 'DEPLOYMENT_QUEUED');
  // lifecycle of an application from git: 1 s queued, BUILDING 4 s (1+1+0+2), DEPLOYING 3 s (0+2+1)
  const seen = [await state(sb)];
  for (const step of [1.5, 3, 2, 3]) {
    await sb.advance(step);
    seen.push(await state(sb));
  }
  assert.deepEqual(seen, ['DEPLOYMENT_QUEUED', 'BUILDING', 'BUILDING', 'DEPLOYING', 'DEPLOYED']);
  const clock = await sb.clock();
  assert.equal(clock.mode, 'manual');
  assert.equal(clock.offset_seconds, 9.5);
  const timeline = (await sb.deployments()).results.flatMap((group) => group.requests)
    .find((request) => request.id === deploy.body.deployment_request_id);
  assert.equal(timeline.status, 'SUCCESS');
  assert.equal(timeline.outcome, 'DEPLOYED');
  await sb.assertCalled({ operation: 'getApplicationStatus', status: '200', times: 5 });
});

test('a scenario fails the deploy: BUILD_ERROR, a DEPLOYMENT_FAILED webhook, the rule in the journal', async (t) => {
  const hooks = await receiver();
  t.after(() => hooks.close());
  const sb = await useSandbox(t, server.ready);
  const scenario = await sb.scenario('build-fails',
    await readFile(new URL('./fixtures/build-fails.yaml', import.meta.url), 'utf8'));
  assert.equal(scenario.rules[0].name, 'build-fails/build-breaks');
  const webhook = await api(sb.url, 'POST', `/organization/${ORG}/webhook`, {
    json: { target_url: `${hooks.url}/hook`, events: ['DEPLOYMENT_STARTED', 'DEPLOYMENT_FAILED'], enabled: true },
  });
  assert.equal(webhook.status, 201);

  const deploy = await api(sb.url, 'POST', `/application/${APP}/deploy`, { token: sb.token('deploy') });
  assert.equal(deploy.status, 202, 'the deploy call itself is accepted');
  await sb.advance(600);
  assert.equal(await state(sb), 'BUILD_ERROR');

  const failed = await eventually(async () => (await sb.deliveries({ eventType: 'DEPLOYMENT_FAILED' }))
    .find((delivery) => delivery.status === 'DELIVERED'), { what: 'the DEPLOYMENT_FAILED delivery' });
  assert.equal(failed.webhook_id, webhook.body.id);
  assert.equal(failed.payload.application_id, APP);
  assert.equal(failed.attempts.at(-1).status_code, 200);
  const received = await eventually(() => hooks.received.find((r) => r.body?.event_type === 'DEPLOYMENT_FAILED'),
    { what: 'the receiver got DEPLOYMENT_FAILED' });
  assert.equal(received.body.payload.state, 'BUILD_ERROR');
  assert.equal(received.headers['x-mock-event'], 'DEPLOYMENT_FAILED');

  const [call] = await sb.calls({ operation: 'deployApplication' });
  assert.equal(call.scenario_rule, 'build-fails/build-breaks');
  assert.equal(call.status, 202);
  await sb.assertCalled({ scenario: 'build-fails', times: 1 });
  const described = await sb.getScenario('build-fails');
  assert.equal(described.rules[0].fired, 1);
  const timeline = (await sb.deployments()).results.flatMap((group) => group.requests)
    .find((request) => request.id === deploy.body.deployment_request_id);
  assert.equal(timeline.status, 'ERROR');
  assert.equal(timeline.outcome, 'BUILD_ERROR');
});

test('a scenario given as an object, and one of the sandbox\'s options', async (t) => {
  const sb = await useSandbox(t, server.ready, {
    scenarios: [{ name: 'org-down', rules: [{ name: 'down', match: { operation: 'getOrganizationById' },
      effect: { status: 503, message: 'organization backend down' } }] }],
  });
  assert.deepEqual((await sb.scenarios()).map((s) => s.name), ['org-down']);
  const reply = await api(sb.url, 'GET', `/organization/${ORG}`);
  assert.equal(reply.status, 503);
  assert.equal(reply.body.message, 'organization backend down');
  await sb.removeScenario('org-down');
  assert.equal((await api(sb.url, 'GET', `/organization/${ORG}`)).status, 200);
  const error = await sb.scenario('broken', 'name: broken\nrules:\n  - match: {operation: noSuchOperation}\n    effect: {status: 500}\n')
    .catch((caught) => caught);
  assert.equal(error.name, 'MockServerError');
  assert.equal(error.status, 400);
  assert.match(error.serverMessage, /noSuchOperation/);
});
