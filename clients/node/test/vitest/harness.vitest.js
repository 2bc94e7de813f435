// The harness under Vitest: a mock for the file through beforeAll/afterAll (mockFor), useSandbox(context)
// (onTestFinished) in concurrent tests, and sandboxFor(hooks).
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest';

import { mockFor, sandboxFor, useSandbox } from '../../index.js';

const ORG = '8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10';
const APP = 'a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5';

const mock = mockFor({ beforeAll, afterAll }, { way: 'local' });

async function call(base, method, path, token = 'mock-admin-token', json) {
  const response = await fetch(`${base}${path}`, { method, body: json && JSON.stringify(json),
    headers: { Authorization: `Token ${token}`, ...(json ? { 'Content-Type': 'application/json' } : {}) } });
  return { status: response.status, body: await response.json().catch(() => null) };
}

const names = [];

describe.concurrent('useSandbox(context) in concurrent tests', () => {
  for (const i of [0, 1, 2, 3]) {
    test(`concurrent ${i}`, async (context) => {
      const sb = await useSandbox(context, mock);
      names.push(sb.sandbox);
      expect(sb.sandbox).toMatch(new RegExp(`^concurrent-${i}-[0-9a-f]{10}$`));
      expect((await call(sb.url, 'POST', `/organization/${ORG}/project`, undefined, { name: `v-${i}` })).status).toBe(201);
      await sb.advance(10 * (i + 1));
      const projects = (await call(sb.url, 'GET', `/organization/${ORG}/project`)).body.results.map((p) => p.name);
      expect(projects.filter((name) => name.startsWith('v-'))).toEqual([`v-${i}`]);
      expect((await sb.clock()).offset_seconds).toBe(10 * (i + 1));
      await sb.assertCalled({ operation: 'createProject', times: 1 });
    });
  }
});

describe('after the concurrent tests', () => {
  test('their sandboxes are deleted (onTestFinished)', async () => {
    expect(new Set(names).size).toBe(4);
    const live = (await mock.sandboxes()).results.map((s) => s.name);
    for (const name of names) expect(live).not.toContain(name);
  });
});

describe('sandboxFor({ beforeEach, afterEach })', () => {
  const sandbox = sandboxFor(mock, { beforeEach, afterEach });
  let first;

  test('a deploy in this test', async () => {
    first = sandbox.sandbox;
    expect(first).toMatch(/^a-deploy-in-this-test-[0-9a-f]{10}$/);
    expect((await call(sandbox.url, 'POST', `/application/${APP}/deploy`, sandbox.token('deployer'))).status).toBe(202);
    await sandbox.advance(600);
    expect((await call(sandbox.url, 'GET', `/application/${APP}/status`)).body.state).toBe('DEPLOYED');
    await sandbox.assertCalled({ operation: 'deployApplication', times: 1 });
  });

  test('none in the next one, whose sandbox is fresh', async () => {
    expect(sandbox.sandbox).not.toBe(first);
    await sandbox.assertNotCalled({ operation: 'deployApplication' });
    await expect(mock.getSandbox(first)).rejects.toMatchObject({ status: 404 });
    await expect(sandbox.assertCalled({ operation: 'deployApplication', times: 1 }))
      .rejects.toThrow(/expected count 1 call\(s\) matching operation=deployApplication; found 0/);
  });
});
