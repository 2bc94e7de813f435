// The project calls of examples/node/src/projects-client.js, a sandbox per test: what a fault campaign runs again
// and again (docs/guide/campaigns.md).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { startMock, useSandbox } from 'idp-mockserver-client';

import { ProjectsClient } from '../src/projects-client.js';

let mock;
before(async () => { mock = await startMock(); });
after(async () => { await mock?.stop(); });

describe('ProjectsClient against the mock', () => {
  it('a new project is listed', async (t) => {
    const sandbox = await useSandbox(t, mock);
    const projects = new ProjectsClient(sandbox.url, sandbox.token('admin'));
    assert.equal((await projects.createProject('checkout')).name, 'checkout');
    assert.ok((await projects.projectNames()).has('checkout'));
  });

  it('a project renamed is listed under its new name', async (t) => {
    const sandbox = await useSandbox(t, mock);
    const projects = new ProjectsClient(sandbox.url, sandbox.token('admin'));
    const made = await projects.createProject('billing');
    await projects.renameProject(made.id, 'invoicing');
    const names = await projects.projectNames();
    assert.ok(names.has('invoicing') && !names.has('billing'));
  });
});
