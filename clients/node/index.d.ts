// Type declarations of idp-mockserver-client (hand-written; the package is plain ESM JavaScript).
import type { ChildProcess } from 'node:child_process';

export const VERSION: string;
export const DEFAULT_ORGANIZATION: string;
export const DEFAULT_APPLICATION: string;
export const DEFAULT_TOKENS: Readonly<{ admin: string; read: string; write: string; deploy: string }>;
export const JOURNAL_BODY_LIMIT: number;
export const SANDBOX_NAME: RegExp;

export type Json = any;
/** A token's name: admin/read/write/deploy, the fixtures' names admin/reader/writer/deployer, or a scope (any case). */
export type TokenName = 'admin' | 'read' | 'write' | 'deploy' | 'reader' | 'writer' | 'deployer'
  | 'Admin' | 'Read' | 'Write' | 'Deploy' | (string & {});

export class UnknownTokenError extends Error {
  tokenName: string;
}

export class Tokens {
  constructor(fromServer?: Record<string, { token: string; scopes?: string[] } | string> | null);
  /** 'server' when read from the mock's start page, 'defaults' otherwise. */
  readonly source: 'server' | 'defaults';
  readonly table: Readonly<Record<string, string>>;
  readonly admin: string;
  readonly read: string;
  readonly write: string;
  readonly deploy: string;
  readonly reader: string;
  readonly writer: string;
  readonly deployer: string;
  readonly [name: string]: any;
  lookup(name: string): string | undefined;
  /** The token's value; an unknown name throws UnknownTokenError listing the valid ones. */
  get(name: TokenName): string;
  toJSON(): Record<string, string>;
}

/** A control call that answered >= 400. */
export class MockServerError extends Error {
  status: number;
  error: string | null;
  /** The server's `message`. */
  serverMessage: string;
  details: Array<{ location: string; message: string }> | null;
  body: Json;
  method: string;
  path: string;
  url: string;
}

/** Journal filters of /_mock/calls, verify and export (camelCase or snake_case). */
export interface CallFilters {
  method?: string;
  path?: string;
  operation?: string;
  status?: string | number;
  since?: string | number;
  scenario?: string;
  requestId?: string;
  request_id?: string;
  limit?: number;
}

export interface VerifyOptions extends Omit<CallFilters, 'limit'> {
  count?: number;
  /** Same as count. */
  times?: number;
  atLeast?: number;
  at_least?: number;
  atMost?: number;
  at_most?: number;
}

export interface VerifyResult {
  ok: boolean;
  expected: Record<string, number>;
  actual: number;
  filters?: Record<string, string>;
  message: string;
  matched: string[];
}

export interface ExportOptions extends CallFilters {
  consumer?: string;
  provider?: string;
  spec?: '4' | '3' | 4 | 3;
}

export interface WritePactOptions extends ExportOptions {
  /** Merge into the pact already at the path (default true). */
  merge?: boolean;
}

export interface CallRowsFilters {
  method?: string;
  status?: string | number;
  operation?: string;
  path?: string;
  text?: string;
  before?: number;
  since?: number;
  limit?: number;
}

export interface MintTokenOptions {
  scopes?: Array<'Admin' | 'Read' | 'Write' | 'Deploy'>;
  kind?: 'token' | 'jwt';
  ttlSeconds?: number;
  organization?: string;
  name?: string;
}

/** Options of PUT /_mock/sandboxes/{name} (camelCase or snake_case). */
export interface SandboxOptions {
  clock?: 'real' | 'manual';
  start?: string | number;
  seed?: number;
  rateLimit?: string;
  scenarios?: Array<string | Record<string, Json>>;
  fixtures?: string;
  snapshot?: string;
  journalBodyLimit?: number;
  /** The sandbox ends after `seconds` on its own clock or after `calls` API calls (give at least one). */
  expires?: { seconds?: number; calls?: number };
  pollProgress?: {
    reads?: number;
    readsPerStep?: number;
    services?: { name?: string; id?: string; kind?: string };
    actions?: string[];
    failAt?: string;
    state?: string;
  };
  [option: string]: Json;
}

export interface SnapshotOptions {
  journal?: boolean;
  /** Overwrite a snapshot of that name (default true). */
  replace?: boolean;
  /** Save under the plain name, for other sandboxes to start from, and leave it in the server (default false). */
  shared?: boolean;
}

export interface Clock { mode: 'real' | 'manual'; now: string; epoch: number; offset_seconds: number }
export interface Health { status: 'ok' | 'degraded'; version: string; clock: 'real' | 'manual'; [key: string]: Json }
export interface Sandbox { name: string; source: string; created_at: string; last_used_at: string; calls: number;
  resources: number; clock: Clock; scenarios?: string[]; [key: string]: Json }
export interface Snapshot { name: string; sandbox?: string | null; private?: boolean; builtin?: boolean; [key: string]: Json }
export interface Scenario { name: string; source?: string; description?: string; rules: Json[]; warnings?: string[]; [key: string]: Json }
export interface Call { id: number; method: string; path: string; operation: string | null; status: number; [key: string]: Json }
export interface Delivery { id: number; webhook_id: string; event_type: string; status: string; payload: Json; attempts: Json[]; [key: string]: Json }

export interface ClientOptions {
  /** The mock's root URL. */
  url: string;
  /** The sandbox this handle acts on. */
  sandbox?: string | null;
  /** Sent as `Authorization: Bearer ...` on every control call (default: env MOCKSERVER_CONTROL_TOKEN). */
  controlToken?: string | null;
  /** A token table, or the start page's `quick_start.tokens`. */
  tokens?: Tokens | Record<string, { token: string; scopes?: string[] }>;
  /** Per control call (default 30 000). */
  timeoutMs?: number;
  fetch?: typeof globalThis.fetch;
  /** Where the version-mismatch line goes (default console.warn). */
  warn?: (line: string) => void;
}

/**
 * A handle on a running mock (the root) or on one of its sandboxes. One method per `x-client` name of the control
 * document, in camelCase. Routes of a sandbox's world act on the handle's sandbox; health, the sandbox and
 * snapshot registries and the documents act on the whole mock.
 */
export class MockServerClient {
  constructor(options: ClientOptions);
  /** The mock's root URL. */
  readonly root: string;
  /** The API base URL: `{root}/sandbox/{name}` for a sandbox handle, else the root. */
  readonly url: string;
  readonly sandbox: string | null;
  readonly controlToken: string | null;
  tokens: Tokens;
  readonly timeoutMs: number;
  readonly version: string;
  /** The mock's version (set by connect/startLocal/startContainer). */
  serverVersion?: string | null;
  /** How the mock was had: 'connect' | 'local' | 'container' (root clients of startMock and friends). */
  way?: 'connect' | 'local' | 'container';
  /** The local mock's process (startLocal). */
  process?: ChildProcess;
  /** The started Testcontainers container (startContainer). */
  container?: Json;
  /** Names given to snapshot() -> names stored (private to this sandbox). */
  readonly privateSnapshots: Map<string, string>;

  token(name?: TokenName): string;
  headers(token?: TokenName): { Authorization: string };
  loadTokens(): Promise<Tokens>;

  health(): Promise<Health>;
  controlDocument(): Promise<Json>;
  scenarioSchema(): Promise<Json>;
  inspectorUrl(): string;

  reset(options?: { scenarios?: boolean }): Promise<{ reset: boolean; scenarios: string[] }>;
  state(): Promise<Json>;
  /** The state as fixtures YAML text. */
  exportState(options?: { secrets?: 'placeholders' | 'include' }): Promise<string>;
  stateTree(): Promise<Json>;

  clock(): Promise<Clock>;
  advance(seconds: number): Promise<Clock>;

  calls(filters?: CallFilters): Promise<Call[]>;
  clearCalls(): Promise<void>;
  call(id: number): Promise<Call>;
  callRows(filters?: CallRowsFilters): Promise<{ total: number; newer: number; journal_total: number; dropped: number;
    last_id: number; results: Json[] }>;
  coverage(): Promise<Json>;
  /** The scenario rules that never fired and the operations never called (of the sandbox, or of the mock). */
  usage(options?: UsageOptions): Promise<UsageReport>;
  /** Throws an AssertionError naming the rules that never fired; the report otherwise. */
  assertRulesFired(options?: UsageOptions): Promise<UsageReport>;
  verify(options?: VerifyOptions): Promise<VerifyResult>;
  /** Throws an AssertionError whose message is the server's when the count does not hold. */
  assertCalled(options?: VerifyOptions): Promise<VerifyResult>;
  assertNotCalled(filters?: Omit<CallFilters, 'limit'>): Promise<VerifyResult>;

  export(format: 'pact' | 'har', params?: ExportOptions): Promise<Json>;
  exportCalls(format: 'pact' | 'har', params?: ExportOptions): Promise<Json>;
  exportPact(params?: ExportOptions): Promise<Json>;
  exportHar(params?: CallFilters): Promise<Json>;
  writePact(path: string, options?: WritePactOptions): Promise<Json>;
  writeHar(path: string, filters?: CallFilters): Promise<Json>;
  providerStates(body?: { state?: string; params?: Record<string, Json>; action?: 'setup' | 'teardown' }): Promise<Json>;

  deployments(): Promise<{ clock: Clock; results: Json[] }>;
  deliveries(filters?: { webhookId?: string; eventType?: string; status?: string }): Promise<Delivery[]>;
  /** Mints a token in this sandbox and returns its value. */
  mintToken(options?: MintTokenOptions | Array<'Admin' | 'Read' | 'Write' | 'Deploy'>): Promise<string>;

  scenario(name: string, document: string | Record<string, Json>): Promise<Scenario>;
  activateScenario(document: string | Record<string, Json>): Promise<Scenario>;
  scenarios(): Promise<Scenario[]>;
  getScenario(name: string): Promise<Scenario>;
  removeScenario(name: string): Promise<void>;

  sandboxes(): Promise<{ replica: string | null; limit: number; ttl_seconds: number; results: Sandbox[] }>;
  deleteAllSandboxes(): Promise<void>;
  getSandbox(name?: string): Promise<Sandbox>;
  createSandbox(name: string, options?: SandboxOptions): Promise<Sandbox>;
  deleteSandbox(name?: string, options?: { snapshots?: 'keep' | 'delete' }): Promise<void>;
  resetSandbox(name?: string, options?: { scenarios?: boolean }): Promise<Sandbox>;
  /** createSandbox, then a handle scoped to that sandbox. */
  inSandbox(name: string, options?: SandboxOptions): Promise<MockServerClient>;
  /** Delete this handle's sandbox and its private snapshots (nothing on a root handle). */
  dispose(): Promise<void>;

  snapshots(): Promise<Snapshot[]>;
  snapshot(name: string, options?: SnapshotOptions): Promise<Snapshot>;
  restore(name: string): Promise<Json>;
  getSnapshot(name: string): Promise<Snapshot>;
  deleteSnapshot(name: string): Promise<void>;

  /** Stop the mock this client started (startLocal/startContainer); nothing for a connected one. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export interface ReadyOptions extends Partial<Omit<ClientOptions, 'url' | 'sandbox'>> {
  /** How long to wait for 200 on /_mock/health. */
  startTimeoutMs?: number;
}

export interface ConnectOptions extends ReadyOptions {
  /** Default: env MOCKSERVER_URL. */
  url?: string;
}

export interface LocalOptions extends ReadyOptions {
  /** The mockserver executable (default: env MOCKSERVER_COMMAND, else `mockserver` on PATH). */
  command?: string;
  /** --clock (default 'manual'; null for the server's default). */
  clock?: 'manual' | 'real' | null;
  /** More `serve` arguments (--scenario FILE, --seed 7 ...). */
  args?: string[];
  env?: Record<string, string>;
  /** SIGTERM, then SIGKILL after this (default 5 000). */
  stopTimeoutMs?: number;
  /** Each line the server prints. */
  log?: (line: string) => void;
}

export interface ContainerOptions extends ReadyOptions {
  /** Default: env MOCKSERVER_IMAGE, else idp-mockserver:local. */
  image?: string;
  /** 'host' for host networking (default: env MOCKSERVER_CONTAINER_NETWORK, else mapped ports). */
  network?: 'host' | (string & {});
  /** Host networking: the port the server listens on (default: a free one). */
  port?: number;
  clock?: 'manual' | 'real';
  env?: Record<string, string>;
  /** `mockserver serve` arguments (replaces the image's command). */
  args?: string[];
  /** The testcontainers module, when this package cannot import it itself. */
  testcontainers?: Json;
}

export function waitForHealth(url: string, options?: { timeoutMs?: number; intervalMs?: number;
  fetch?: typeof globalThis.fetch; controlToken?: string | null; isAlive?: () => boolean }): Promise<Health>;
export function connect(url?: string | URL, options?: ReadyOptions): Promise<MockServerClient>;
export function connect(options?: ConnectOptions): Promise<MockServerClient>;
export function startLocal(options?: LocalOptions): Promise<MockServerClient>;
export function startContainer(options?: ContainerOptions): Promise<MockServerClient>;
export function startMock(options?: (ConnectOptions & LocalOptions & ContainerOptions) & {
  way?: 'connect' | 'local' | 'container' }): Promise<MockServerClient>;
export function containerAvailable(image?: string): { ok: boolean; reason: string | null; bridge?: boolean };
export function freePort(): Promise<number>;

export interface HarnessOptions extends SandboxOptions {
  /** The sandbox's name (default: the test's name and a random suffix). */
  name?: string;
  /** Default: env MOCKSERVER_SANDBOX_PREFIX. */
  prefix?: string;
  /** Write the test's calls into this pact file at its end (default: env MOCKSERVER_PACT). */
  pact?: string;
  consumer?: string;
  provider?: string;
  /** Leave the sandbox in place at the test's end. */
  keep?: boolean;
}

export interface UsageOptions {
  /** sandbox (the handle's; the default) or mock (every sandbox whose name starts with prefix, gone ones too). */
  scope?: 'sandbox' | 'mock';
  prefix?: string;
}

export interface UsageReport {
  scope: 'sandbox' | 'mock';
  sandboxes: number;
  rules: { total: number; fired: number; never_fired: string[];
    results: { rule: string; scenario: string; matched: number; fired: number }[] };
  operations: { total: number; called: number; never_called: string[]; calls: Record<string, number> };
  journal_dropped: number;
  [key: string]: any;
}

type MockLike = MockServerClient | Promise<MockServerClient> | (() => MockServerClient | Promise<MockServerClient>);

/** node:test's `t` (t.after) or Vitest's test context (onTestFinished). */
export interface TestContextLike {
  name?: string;
  after?: (fn: () => unknown) => unknown;
  onTestFinished?: (fn: () => unknown) => unknown;
  [key: string]: any;
}

export function useSandbox(context: TestContextLike, mock: MockLike, options?: HarnessOptions): Promise<MockServerClient>;
/** The running test's handle, through beforeEach/afterEach (Jest, Vitest, node:test); `.current` is the handle itself. */
export function sandboxFor(mock: MockLike, hooks: { beforeEach: (fn: (...args: any[]) => any) => unknown;
  afterEach: (fn: (...args: any[]) => any) => unknown }, options?: HarnessOptions): MockServerClient & { readonly current: MockServerClient };
export function sandboxName(testName?: string, options?: { prefix?: string }): string;
/**
 * At the end of a suite (node:test's after, Jest's or Vitest's afterAll): throw when a scenario rule loaded in the
 * sandboxes of this prefix (env MOCKSERVER_SANDBOX_PREFIX) never fired in any of them.
 */
export function assertRulesUsed(mock: MockLike, options?: { prefix?: string }): Promise<UsageReport>;
export function privateSnapshotName(sandbox: string, name: string): string;

export function mergePacts(old: Json, fresh: Json): Json;
export function writeJson(path: string, document: Json, merge?: ((old: Json, fresh: Json) => Json) | null): Promise<Json>;
export function majorMinor(version: string): string;
export function versionMismatch(serverVersion: string, url: string, clientVersion?: string): string | null;
