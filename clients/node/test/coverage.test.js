// The control document's x-client table against the client: one method per name, on the root and on a sandbox handle.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  Client, MockServerClient, assertRulesFired, assertRulesUsed, waitForHealth, waitReady,
} from '../index.js';
import { camel, controlOperations, localMockForFile } from './support.js';

const server = localMockForFile();

test('every x-client name of the running mock\'s control document is a method of the client and of a sandbox handle', async (t) => {
  const document = await server.mock.controlDocument();
  const operations = controlOperations(document);
  assert.ok(operations.length >= 30, `the document lists ${operations.length} operations`);
  const handle = await server.mock.inSandbox(`coverage-${process.pid}`);
  t.after(() => handle.deleteSandbox());
  const missing = [];
  for (const { method, path, client } of operations) {
    assert.ok(client === false || (typeof client === 'string' && /^[a-z][a-z0-9_]*$/.test(client)),
      `${method} ${path}: x-client must be a snake_case name or false, not ${JSON.stringify(client)}`);
    if (client === false) continue;
    const name = camel(client);
    for (const [label, target] of [['client', server.mock], ['sandbox handle', handle]]) {
      if (typeof target[name] !== 'function') missing.push(`${method} ${path}: x-client ${client} -> ${label}.${name}`);
    }
  }
  assert.deepEqual(missing, [], `operations without a method:\n${missing.join('\n')}`);
});

test('the routes no client needs are marked false, and `export` stays reachable under its own name', async () => {
  const operations = controlOperations(await server.mock.controlDocument());
  const unmarked = operations.filter((op) => !('client' in op) || op.client === undefined);
  assert.deepEqual(unmarked, [], 'every operation carries x-client');
  const falses = operations.filter((op) => op.client === false).map((op) => op.operationId);
  assert.deepEqual(falses, ['inspectorAsset']);
  assert.equal(typeof Client.prototype.export, 'function');
});

test('the helpers built on the table exist', () => {
  for (const name of ['assertCalled', 'assertNotCalled', 'assertRulesFired', 'exportPact', 'exportHar', 'writePact',
    'writeHar', 'headers', 'inSandbox', 'token']) {
    assert.equal(typeof Client.prototype[name], 'function', name);
  }
});

test('the names the client had are still there for a release, as the same things', () => {
  assert.equal(MockServerClient, Client);
  assert.equal(assertRulesUsed, assertRulesFired);
  assert.equal(waitForHealth, waitReady);
  assert.equal(typeof Client.prototype.exportCalls, 'function');
  assert.equal(typeof Client.prototype.dispose, 'function');
});
