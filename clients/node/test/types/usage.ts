// Compiled (not run) by `npm run typecheck`: the declarations describe what a TypeScript test would write.
import { test, beforeEach, afterEach } from 'node:test';
import {
  DEFAULT_APPLICATION, MockServerClient, MockServerError, connect, sandboxFor, startContainer, startLocal, startMock,
  useSandbox, type VerifyResult,
} from '../../index.js';

async function usage(): Promise<void> {
  const mock: MockServerClient = await startLocal({ clock: 'manual', args: ['--seed', '7'] });
  const other = await connect('http://127.0.0.1:8080', { startTimeoutMs: 1000 });
  const viaEnv = await connect();
  const container = await startContainer({ network: 'host', image: 'idp-mockserver:local' });
  const any = await startMock({ way: 'local' });
  test('typed', async (t) => {
    const sb = await useSandbox(t, mock, { scenarios: ['build-fails'], pact: 'pacts/x.json', clock: 'manual',
      expires: { seconds: 3600 } });
    const headers: { Authorization: string } = sb.headers('deployer');
    await fetch(`${sb.url}/application/${DEFAULT_APPLICATION}/deploy`, { method: 'POST', headers });
    const clock = await sb.advance(30);
    const offset: number = clock.offset_seconds;
    const result: VerifyResult = await sb.assertCalled({ operation: 'deployApplication', atLeast: 1 });
    await sb.assertNotCalled({ method: 'DELETE' });
    const pact = await sb.exportPact({ consumer: 'me' });
    await sb.writePact('pacts/me.json', { consumer: 'me', spec: 3 });
    const token: string = await sb.mintToken({ scopes: ['Read'], ttlSeconds: 60 });
    await sb.scenario('s', { rules: [] });
    await sb.snapshot('a', { journal: true });
    await sb.restore('a');
    const calls = await sb.calls({ operation: 'deployApplication', requestId: 'x' });
    const id: number = calls[0].id;
    try { await sb.verify({ operation: 'nope' }); } catch (error) {
      if (error instanceof MockServerError) console.log(error.status, error.serverMessage);
    }
    console.log(offset, result.ok, pact, token, id, sb.inspectorUrl(), (await sb.health()).version);
  });
  const hooked = sandboxFor(mock, { beforeEach, afterEach });
  test('hooked', async () => {
    await hooked.advance(1);
    console.log(hooked.current.url, hooked.url);
  });
  await Promise.all([mock.stop(), other.stop(), viaEnv.stop(), container.stop(), any.stop()]);
}
void usage;
