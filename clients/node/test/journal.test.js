// verify counts (count / at_least / at_most), assertions carrying the server's message, errors, tokens.
import assert from 'node:assert/strict';
import { AssertionError } from 'node:assert';
import { test } from 'node:test';

import { MockServerError, useSandbox } from '../index.js';
import { APP, ORG, api, localMockForFile } from './support.js';

const server = localMockForFile();

test('verify counts calls: times, atLeast, atMost, and the filters', async (t) => {
  const sb = await useSandbox(t, server.ready);
  for (let i = 0; i < 3; i += 1) await api(sb.url, 'GET', `/application/${APP}/status`);
  await api(sb.url, 'POST', `/application/${APP}/deploy`, { token: sb.token('reader') });       // 403: a Read token
  const exact = await sb.verify({ operation: 'getApplicationStatus', times: 3 });
  assert.equal(exact.ok, true);
  assert.equal(exact.actual, 3);
  assert.equal((await sb.verify({ operation: 'getApplicationStatus', count: 3 })).ok, true, 'count: the deprecated name of times');
  await assert.rejects(sb.verify({ operation: 'getApplicationStatus', times: 3, count: 3 }), TypeError);
  assert.equal((await sb.verify({ operation: 'getApplicationStatus', atLeast: 2 })).ok, true);
  assert.equal((await sb.verify({ operation: 'getApplicationStatus', at_least: 4 })).ok, false);
  assert.equal((await sb.verify({ operation: 'getApplicationStatus', atMost: 3 })).ok, true);
  assert.equal((await sb.verify({ operation: 'getApplicationStatus', atMost: 2 })).ok, false);
  assert.equal((await sb.verify({ method: 'POST', status: '4xx', times: 1 })).ok, true);
  assert.equal((await sb.verify({ path: '/application/*/deploy', status: 403, times: 1 })).ok, true);
  assert.equal((await sb.verify({ path: '/application/{app_id}/status', count: 3 })).ok, true);
  const [first] = await sb.calls({ limit: 1 });
  assert.equal((await sb.verify({ requestId: first.request_id, times: 1 })).ok, true, 'requestId is request_id');
  await sb.assertCalled({ operation: 'getApplicationStatus', atLeast: 1, atMost: 5 });
  await sb.assertNotCalled({ method: 'DELETE' });
});

test('a failing assertCalled is an AssertionError with the server\'s message', async (t) => {
  const sb = await useSandbox(t, server.ready);
  await api(sb.url, 'POST', `/application/${APP}/deploy`, { token: sb.token('deployer') });
  const expected = (await sb.verify({ operation: 'deployApplication', times: 2 })).message;
  assert.match(expected, /expected count 2 call\(s\) matching operation=deployApplication; found 1/);
  await assert.rejects(sb.assertCalled({ operation: 'deployApplication', times: 2 }), (error) => {
    assert.ok(error instanceof AssertionError);
    assert.equal(error.message, expected);
    assert.equal(error.result.actual, 1);
    return true;
  });
  await assert.rejects(sb.assertNotCalled({ operation: 'deployApplication' }),
    (error) => error instanceof AssertionError && /expected count 0 .*found 1/.test(error.message));
});

test('a control call answering >= 400 throws a MockServerError with the status and the server\'s message', async (t) => {
  const sb = await useSandbox(t, server.ready);
  const error = await sb.verify({ operation: 'deployApplicaton', times: 1 }).catch((caught) => caught);
  assert.ok(error instanceof MockServerError);
  assert.equal(error.status, 400);
  assert.equal(error.error, 'Bad Request');
  assert.match(error.serverMessage, /did you mean deployApplication/);
  assert.match(error.message, /^control API POST \/calls\/verify answered 400: operation: /);
  assert.equal(error.details[0].location, 'operation');
  const missing = await sb.getScenario('nothing-here').catch((caught) => caught);
  assert.equal(missing.status, 404);
  await assert.rejects(sb.advance(-1), (e) => e instanceof MockServerError && e.status === 400);
  await assert.rejects(sb.getSandbox('../x'), TypeError);
  await assert.rejects(server.mock.inSandbox('no spaces allowed'), TypeError);
});

test('tokens: every name of a default token, from the server\'s start page; headers; mintToken', async (t) => {
  const sb = await useSandbox(t, server.ready);
  assert.equal(sb.tokens.source, 'server');
  for (const [names, value] of [[['admin', 'Admin', 'ADMIN'], 'mock-admin-token'],
    [['read', 'reader', 'Read'], 'mock-read-token'], [['write', 'writer', 'Write'], 'mock-write-token'],
    [['deploy', 'deployer', 'Deploy'], 'mock-deploy-token']]) {
    for (const name of names) {
      assert.equal(sb.token(name), value, name);
      assert.deepEqual(sb.headers(name), { Authorization: `Token ${value}` });
    }
  }
  assert.equal(sb.tokens.deployer, 'mock-deploy-token');
  assert.deepEqual(sb.headers(), { Authorization: 'Token mock-admin-token' });
  assert.throws(() => sb.headers('root'), /no token named "root": use admin, read, write or deploy/);
  const jwt = await sb.mintToken({ kind: 'jwt', scopes: ['Read'], ttlSeconds: 60 });
  assert.equal(jwt.split('.').length, 3);
  assert.equal((await api(sb.url, 'GET', `/organization/${ORG}`, { token: jwt, scheme: 'Bearer' })).status, 200);
  await sb.advance(61);
  assert.equal((await api(sb.url, 'GET', `/organization/${ORG}`, { token: jwt, scheme: 'Bearer' })).status, 401, 'expired on the mock\'s clock');
  const reader = await sb.mintToken(['Read']);
  assert.equal((await api(sb.url, 'POST', `/application/${APP}/deploy`, { token: reader })).status, 403);
  // a token minted in one sandbox is unknown in another
  const other = await useSandbox(t, server.ready);
  assert.equal((await api(other.url, 'GET', `/organization/${ORG}`, { token: reader })).status, 401);
});
