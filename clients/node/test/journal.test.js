// verify counts (count / at_least / at_most), assertions carrying the server's message, errors, tokens.
import assert from 'node:assert/strict';
import { AssertionError } from 'node:assert';
import { test } from 'node:test';
import { inspect } from 'node:util';

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
  // printed as an uncaught error would be: the server's message once, not once per property that holds it
  const printed = inspect(error);
  assert.equal(printed.split('no operation of the API document').length - 1, 1, printed);
  const missing = await sb.getScenario('nothing-here').catch((caught) => caught);
  assert.equal(missing.status, 404);
  await assert.rejects(sb.advance(-1), (e) => e instanceof MockServerError && e.status === 400);
  await assert.rejects(sb.getSandbox('../x'), TypeError);
  await assert.rejects(server.mock.inSandbox('no spaces allowed'), TypeError);
});

test('an assertion on a sandbox that was never made says so, with the name it may have meant', async (t) => {
  const sb = await useSandbox(t, server.ready);
  const typo = new (sb.constructor)({ url: sb.root, sandbox: `${sb.sandbox.slice(0, -1)}x` });  // one letter off
  for (const [assertion, said] of [
    [() => typo.assertCalled({ operation: 'deployApplication', times: 1 }), 'assertCalled(operation=deployApplication, times=1)'],
    [() => typo.assertNotCalled({ method: 'DELETE', body: { name: 'x' } }), 'assertNotCalled(method=DELETE, body={"name":"x"})'],
    [() => typo.assertRulesFired(), 'assertRulesFired()']]) {
    await assert.rejects(assertion(), (error) => {
      assert.ok(error instanceof AssertionError, `${error.name}: ${error.message}`);
      assert.equal(error.message, `mockserver: ${said} could not be checked: sandbox ${typo.sandbox} does not exist ` +
        `(control calls never create one: PUT /_mock/sandboxes/${typo.sandbox} does); did you mean ${sb.sandbox}?`);
      assert.equal(error.status, 404);
      assert.equal(error.sandbox, typo.sandbox);
      assert.ok(error.cause instanceof MockServerError);
      return true;
    });
  }
  // the calls that only read keep the MockServerError, whose message is the server's too
  for (const read of [() => typo.verify({ times: 1 }), () => typo.calls()]) {
    await assert.rejects(read(), (error) => error instanceof MockServerError && error.status === 404
      && error.message.includes(`sandbox ${typo.sandbox} does not exist`) && error.message.includes(`did you mean ${sb.sandbox}?`));
  }
  // another 404 of an assertion stays what it is: the sandbox exists
  await sb.assertNotCalled({ operation: 'deployApplication' });
});

test('journal filters by token (name or value), headers (globs) and body (dotted paths): calls, verify, the assertions, export', async (t) => {
  const sb = await useSandbox(t, server.ready);
  const post = (token, source, json) => api(sb.url, 'POST', `/organization/${ORG}/project`,
    { token: sb.token(token), json, headers: { 'X-Request-Source': source } });
  await post('admin', 'ci-nightly', { name: 'checkout', settings: { replicas: 2, region: 'eu' }, ports: [{ port: 8080 }] });
  await post('writer', 'laptop', { name: 'billing', settings: { replicas: '2' }, ports: [{ port: 9090 }] });
  await api(sb.url, 'GET', `/organization/${ORG}/project`, { token: sb.token('reader') });
  const names = async (filters) => (await sb.calls(filters)).map((call) => call.body?.name ?? call.method);

  assert.deepEqual(await names({ token: 'writer' }), ['billing'], 'a token by its name');
  assert.deepEqual(await names({ token: sb.token('writer') }), ['billing'], 'a token by its value');
  assert.deepEqual(await names({ token: 'reader' }), ['GET']);
  assert.deepEqual(await names({ headers: { 'X-Request-Source': 'ci*' } }), ['checkout'], 'a glob; the name in any case');
  assert.deepEqual(await names({ headers: { 'x-request-source': '*', 'content-type': 'application/json*' } }),
    ['checkout', 'billing'], 'every header given must match');
  assert.deepEqual(await names({ body: { 'settings.replicas': 2 } }), ['checkout'], 'a dotted path; 2 is a number');
  assert.deepEqual(await names({ body: { 'settings.replicas': '2' } }), ['billing'], '"2" is text');
  assert.deepEqual(await names({ body: { settings: { region: 'eu' } } }), ['checkout'], 'an object matches partially');
  assert.deepEqual(await names({ body: { 'ports.0.port': 9090, name: 'billing' } }), ['billing'], 'a list item by index');
  assert.deepEqual(await names({ body: { name: 'nobody' } }), []);
  assert.deepEqual(await names({ token: 'admin', body: { name: 'billing' } }), [], 'every filter must hold');

  const verdict = await sb.verify({ token: 'admin', headers: { 'x-request-source': 'ci-*' }, body: { 'settings.replicas': 2 }, times: 1 });
  assert.equal(verdict.ok, true, verdict.message);
  assert.deepEqual(verdict.filters.headers, { 'x-request-source': 'ci-*' });
  assert.equal(verdict.filters.token, 'admin');
  await sb.assertCalled({ operation: 'createProject', token: sb.token('admin'), body: { settings: { region: 'eu' } }, times: 1 });
  await sb.assertNotCalled({ operation: 'createProject', token: 'reader' });
  await assert.rejects(sb.assertCalled({ headers: { 'X-Request-Source': 'laptop' }, body: { name: 'checkout' } }),
    (error) => error instanceof AssertionError && /found 0/.test(error.message));
  const har = await sb.exportHar({ token: 'writer', body: { name: 'billing' } });
  assert.equal(har.log.entries.length, 1);
  assert.equal((await sb.calls({ body: { name: 'billing' }, limit: 5 })).length, 1, 'with a limit too');

  // what the server refuses says why: a token nobody has, the headers not kept
  await assert.rejects(sb.calls({ token: 'writr' }),
    (error) => error instanceof MockServerError && error.status === 400 && /did you mean writer\?/.test(error.serverMessage));
  await assert.rejects(sb.verify({ token: 'adminn', times: 1 }), (error) => error.status === 400 && /did you mean admin\?/.test(error.message));
  await assert.rejects(sb.calls({ headers: { Authorization: 'Token *' } }),
    (error) => error.status === 400 && /authorization is kept masked.*filter by token/i.test(error.serverMessage));
  await assert.rejects(sb.calls({ headers: 'x-request-source: ci' }), TypeError);
});

test('a failed verify names where the calls went instead: the mock\'s root, a misspelled sandbox', async (t) => {
  const sb = await useSandbox(t, server.ready);
  const misspelled = `${sb.sandbox.slice(0, -1)}x`;                        // one letter off
  t.after(() => server.mock.deleteSandbox(misspelled).catch(() => {}));
  t.after(() => server.mock.resetSandbox('default'));
  const deploy = (base) => api(base, 'POST', `/application/${APP}/deploy`, { token: sb.token('deployer') });
  await deploy(sb.root);                                                    // no /sandbox/NAME: the default one
  await deploy(`${sb.root}/sandbox/${misspelled}`);                         // a sandbox this call makes
  await deploy(`${sb.root}/sandbox/${misspelled}`);
  const filters = { operation: 'deployApplication', token: 'deployer', times: 1 };
  const result = await sb.verify(filters);
  assert.equal(result.ok, false);
  const summary = ({ calls, ...rest }) => ({ ...rest, calls: calls.length });
  assert.deepEqual(result.elsewhere.map(summary), [
    { sandbox: misspelled, count: 2, calls: 2, made_by_call: true },          // the most first
    { sandbox: 'default', count: 1, calls: 1, made_by_call: false }]);
  assert.match(result.elsewhere[1].calls[0], /^#\d+ POST \/application\/\S+\/deploy -> 202 \(deployApplication\)$/);
  await assert.rejects(sb.assertCalled(filters), (error) => {
    assert.ok(error instanceof AssertionError);
    assert.equal(error.message, result.message);
    assert.match(error.message, new RegExp(`elsewhere: 2 matching call\\(s\\) went to sandbox ${misspelled} \\(.*misspelled sandbox name\\?\\)`));
    assert.match(error.message, /elsewhere: 1 matching call\(s\) went to sandbox default \(the mock's root/);
    assert.deepEqual(error.result.elsewhere, result.elsewhere);
    return true;
  });
  assert.equal((await sb.verify({ ...filters, times: 0 })).elsewhere, undefined, 'not when the count holds');
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
