// Shared by the test files: one local mock per file (MOCKSERVER_COMMAND), and small helpers.
import { after, before } from 'node:test';
import { createServer } from 'node:http';

import { startLocal } from '../index.js';

export const ORG = '8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10';
export const APP = 'a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5';

/**
 * A local mock for this test file, started before its tests and stopped after them. The returned object's
 * `mock` is the root client once `before` has run; `ready` is a promise of it (for useSandbox).
 */
export function localMockForFile(options = {}) {
  const holder = { mock: null };
  let resolveReady;
  let rejectReady;
  holder.ready = new Promise((resolve, reject) => { resolveReady = resolve; rejectReady = reject; });
  holder.ready.catch(() => {});
  before(async () => {
    try {
      holder.mock = await startLocal(options);
      resolveReady(holder.mock);
    } catch (error) {
      rejectReady(error);
      throw error;
    }
  });
  after(async () => { await holder.mock?.stop(); });
  return holder;
}

/** A platform API call with a token: {status, body}. */
export async function api(base, method, path, { token = 'mock-admin-token', scheme = 'Token', json, headers = {} } = {}) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { Authorization: `${scheme} ${token}`, ...(json ? { 'Content-Type': 'application/json' } : {}), ...headers },
    body: json ? JSON.stringify(json) : undefined,
  });
  const text = await response.text();
  let body = text;
  try { body = JSON.parse(text); } catch { /* text */ }
  return { status: response.status, body };
}

/** A tiny HTTP server on 127.0.0.1 that records what it receives: {url, received, close()}. */
export async function receiver(answer = () => [200, '{}']) {
  const received = [];
  const server = createServer((request, response) => {
    let data = '';
    request.setEncoding('utf8');
    request.on('data', (chunk) => { data += chunk; });
    request.on('end', () => {
      let body = data;
      try { body = JSON.parse(data); } catch { /* text */ }
      received.push({ method: request.method, url: request.url, headers: request.headers, body });
      const [status, reply, type = 'application/json'] = answer(request);
      response.writeHead(status, { 'Content-Type': type });
      response.end(reply);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(resolve); }),
  };
}

/** Poll `probe` until it returns something truthy (or the deadline): that value. */
export async function eventually(probe, { timeoutMs = 10_000, intervalMs = 50, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** snake_name -> camelName, as the clients name the control document's x-client entries. */
export function camel(name) {
  return name.replace(/_([a-z0-9])/g, (_, letter) => letter.toUpperCase());
}

/** Every control operation of the document: {method, path, operationId, client}. */
export function controlOperations(document) {
  const out = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!operation || typeof operation !== 'object' || !('operationId' in operation)) continue;
      out.push({ method: method.toUpperCase(), path, operationId: operation.operationId, client: operation['x-client'] });
    }
  }
  return out;
}

/** Operations a sandbox handle reaches on the whole mock rather than through its sandbox's prefix. */
export const GLOBAL_ONLY = new Set(['health', 'sandboxes', 'delete_all_sandboxes', 'get_sandbox', 'create_sandbox',
  'delete_sandbox', 'reset_sandbox', 'snapshots', 'get_snapshot', 'delete_snapshot', 'control_document',
  'scenario_schema']);
