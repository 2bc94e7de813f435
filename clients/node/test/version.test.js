// A mock whose major.minor differs from the client's: one line at start, and the client goes on.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { VERSION, connect, versionMismatch } from '../index.js';
import { receiver } from './support.js';

/** A tiny HTTP server on 127.0.0.1 that answers /_mock/health with this version. */
function fakeMock(version) {
  return receiver((request) => (request.url === '/_mock/health'
    ? [200, JSON.stringify({ status: 'ok', version, clock: 'manual' })]
    : [404, JSON.stringify({ status: 404, error: 'Not Found', message: `no route for ${request.url}` })]));
}

test('a mock at 9.9.0: the client prints one line (console.warn) and goes on', async (t) => {
  const server = await fakeMock('9.9.0');
  t.after(() => server.close());
  const warn = t.mock.method(console, 'warn', () => {});
  const mock = await connect(server.url);
  const lines = warn.mock.calls.map((call) => call.arguments.join(' '));
  assert.deepEqual(lines, [`idp-mockserver client ${VERSION}: the mock at ${server.url} is 9.9.0 (major.minor differ); ` +
    'some calls may not match']);
  assert.equal(mock.serverVersion, '9.9.0');
  assert.equal(mock.tokens.source, 'defaults', 'no start page: the default tokens');
  assert.equal(mock.token('deployer'), 'mock-deploy-token');
  assert.equal((await mock.health()).version, '9.9.0', 'it goes on');
  await mock.inSandbox('after-warning').catch(() => {});
  assert.equal(warn.mock.callCount(), 1, 'one line only');
});

test('the line goes to the warn option when given; the same major.minor prints nothing', async (t) => {
  const lines = [];
  const other = await fakeMock('0.2.3');
  t.after(() => other.close());
  await connect(other.url, { warn: (line) => lines.push(line) });
  assert.equal(lines.length, 1);
  assert.match(lines[0], new RegExp(`^idp-mockserver client ${VERSION.replace(/\./g, '\\.')}: the mock at ${other.url} is 0\\.2\\.3 \\(major.minor differ\\); some calls may not match$`));
  const same = await fakeMock(VERSION.replace(/\d+$/, '99'));
  t.after(() => same.close());
  await connect(same.url, { warn: (line) => lines.push(line) });
  assert.equal(lines.length, 1, 'a patch release differs in nothing that matters');
});

test('versionMismatch compares major.minor', () => {
  assert.equal(versionMismatch('0.1.7', 'http://x', '0.1.0'), null);
  assert.equal(versionMismatch('1.1.0', 'http://x', '0.1.0'),
    'idp-mockserver client 0.1.0: the mock at http://x is 1.1.0 (major.minor differ); some calls may not match');
});
