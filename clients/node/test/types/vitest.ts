// Compiled (not run) by `npm run typecheck` under strict, against Vitest's own declarations (the vitest package
// installed here): the forms the guide shows for Vitest must type-check as written. Vitest declares
// onTestFinished's handler as taking the context and returning Awaitable<void>, which a hook typed as a
// property would refuse (TS2345); each line marked @ts-expect-error must be an error, or the compile fails.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import {
  mockFor, sandboxFor, startMock, useSandbox, type Client, type SuiteMock, type VerifyResult,
} from '../../index.js';

// the guide's form: a mock in beforeAll, stopped in afterAll
let mock: Client;
beforeAll(async () => { mock = await startMock(); });
afterAll(() => mock.stop());

test('sees only its own world', async (context) => {
  const sandbox = await useSandbox(context, mock);
  await sandbox.advance(60);
  const result: VerifyResult = await sandbox.assertCalled({ operation: 'deployApplication', times: 0 });
  expect(result.ok).toBe(true);
});

describe.concurrent('concurrent tests, a sandbox each', () => {
  test('with options', async (context) => {
    const sandbox = await useSandbox(context, () => mock,
      { keep: 'on-failure', journalDir: 'journals', clock: 'manual', seed: 7 });
    expect(sandbox.sandbox).toMatch(/^with-options-/);
  });
});

// a mock per suite through Vitest's hooks, safe to stop when its start failed
const suite: SuiteMock = mockFor({ beforeAll, afterAll }, { way: 'local', args: ['--seed', '7'] });
const hooked = sandboxFor(suite, { beforeEach, afterEach }, { keep: true });
test('hooked', async (context) => {
  await hooked.advance(1);
  const root: Client = suite.current;
  const other = await useSandbox(context, suite);
  expect(other.root).toBe(root.root);
  // @ts-expect-error keep takes a mode, not any text
  await useSandbox(context, suite, { keep: 'sometimes' });
});
// @ts-expect-error mockFor needs both hooks of one framework
mockFor({ beforeAll });
