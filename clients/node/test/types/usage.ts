// Compiled (not run) by `npm run typecheck` under strict: the declarations describe what a TypeScript test would
// write, and a field the server sends is typed (the replies are the control document's schemas, lib/control.d.ts):
// each line marked @ts-expect-error must be an error, or the compile fails.
import { test, after, afterEach, before, beforeEach } from 'node:test';
import {
  Client, DEFAULT_APPLICATION, DEFAULT_TOKENS, JOURNAL_BODY_LIMIT, MockServerClient, MockServerError, VERSION,
  assertRulesFired, connect, mockFor, sandboxFor, startContainer, startLocal, startMock, useSandbox, waitReady,
  type Call, type CallsElsewhere, type Health, type KeepSandbox, type Sandbox, type SuiteMock, type UsageReport, type VerifyResult,
} from '../../index.js';

// the guide's forms: a mock per suite through the hooks (stop safe when the start failed), a sandbox per test
const suite: SuiteMock = mockFor({ before, after }, { args: ['--seed', '7'] });
const keep: KeepSandbox = 'on-failure';
test('a sandbox of the suite\'s mock', async (t) => {
  const sandbox = await useSandbox(t, suite, { keep, journalDir: 'journals' });
  await useSandbox(t, suite, { keep: true });
  // @ts-expect-error keep takes a mode, not any text
  await useSandbox(t, suite, { keep: 'sometimes' });
  const root: Client = suite.current;
  console.log(sandbox.url, root.url, await suite.start());
});
after(() => suite.stop());

async function usage(): Promise<void> {
  const mock: Client = await startLocal({ clock: 'manual', args: ['--seed', '7'] });
  const other = await connect('http://127.0.0.1:8080', { startTimeoutMs: 1000 });
  const viaEnv = await connect();
  const container = await startContainer({ network: 'host', image: 'idp-mockserver:local' });
  const any = await startMock({ way: 'local' });
  const health: Health = await waitReady(mock.root);
  const old: MockServerClient = mock;                        // the deprecated name is the same type
  test('typed', async (t) => {
    const sb = await useSandbox(t, mock, { scenarios: ['build-fails'], pact: 'pacts/x.json', clock: 'manual',
      expires: { seconds: 3600 }, journalBodyLimit: JOURNAL_BODY_LIMIT });
    const headers: { Authorization: string } = sb.headers('deployer');
    await fetch(`${sb.url}/application/${DEFAULT_APPLICATION}/deploy`, { method: 'POST', headers });
    const clock = await sb.advance(30);
    const offset: number = clock.offset_seconds;
    const result: VerifyResult = await sb.assertCalled({ operation: 'deployApplication', atLeast: 1, times: 1 });
    await sb.assertNotCalled({ method: 'DELETE' });
    const pact = await sb.exportPact({ consumer: 'me' });
    const interactions: number = pact.metadata?.['idp-mockserver'].interactions ?? 0;
    await sb.writePact('pacts/me.json', { consumer: 'me', spec: 3 });
    const token: string = await sb.mintToken({ scopes: ['Read'], ttlSeconds: 60 });
    await sb.scenario('s', { rules: [] });
    await sb.snapshot('a', { journal: true });
    const restored: number = (await sb.restore('a')).clock.offset_seconds;
    const calls: Call[] = await sb.calls({ operation: 'deployApplication', requestId: 'x' });
    const filtered: Call[] = await sb.calls({ token: 'deployer', headers: { 'x-request-source': 'ci*' },
      body: { 'settings.replicas': 2, settings: { region: 'eu' } } });
    const verdict = await sb.verify({ token: sb.token('deployer'), body: { name: 'checkout' }, times: 1 });
    const elsewhere: CallsElsewhere[] = verdict.elsewhere ?? [];
    const misspelled: boolean | undefined = elsewhere[0]?.made_by_call;
    await sb.assertNotCalled({ token: 'reader', headers: { 'x-request-source': 'laptop' } });
    // @ts-expect-error headers are an object of names to globs
    await sb.calls({ headers: 'x-request-source: ci' });
    console.log(filtered, misspelled);
    const call = calls[0];
    const id: number = call.id;
    const rule: string | null = call.scenario_rule;           // the fields the hand-written Call lacked
    const body: unknown = call.body;
    const response: unknown = call.response;
    const caller: string | null = call.token;
    // @ts-expect-error a misspelled field is an error, not a silent undefined
    console.log(call.scenario_rulee);
    // @ts-expect-error nullable: a rule may be null
    const sure: string = call.scenario_rule;
    const state = await sb.state();
    const records: number = state.counts.projects ?? 0;
    const box: Sandbox = await sb.getSandbox();
    const ends: number | undefined = box.expires?.seconds;
    // @ts-expect-error the sandbox has no such field
    console.log(box.expired);
    const report: UsageReport = await assertRulesFired(mock, { prefix: 'ci-42' });
    const never: string[] = report.rules.never_fired;
    const rows = await sb.callRows({ drift: 'true' });
    const drift: number | null = rows.results[0].drift;
    try { await sb.verify({ operation: 'nope' }); } catch (error) {
      if (error instanceof MockServerError) console.log(error.status, error.serverMessage, error.details?.[0].location);
    }
    console.log(offset, result.ok, interactions, token, restored, id, rule, body, response, caller, sure, records,
      ends, never, drift, sb.inspectorUrl(), (await sb.health()).version, health.memory.rss_bytes, old.root,
      DEFAULT_TOKENS.admin, VERSION);
  });
  const hooked = sandboxFor(mock, { beforeEach, afterEach });
  test('hooked', async () => {
    await hooked.advance(1);
    console.log(hooked.current.url, hooked.url);
  });
  await Promise.all([mock.stop(), other.stop(), viaEnv.stop(), container.stop(), any.stop()]);
}
void usage;
