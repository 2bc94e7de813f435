// idp-mockserver-client: control client and per-test sandbox harness for the IDP mock server.
// MockServerClient, waitForHealth and assertRulesUsed are the deprecated names of Client, waitReady and
// assertRulesFired (kept for a release).
export { Client, MockServerClient, MockServerError, privateSnapshotName } from './lib/client.js';
export {
  connect, containerAvailable, freePort, startContainer, startLocal, startMock, waitForHealth, waitReady,
} from './lib/start.js';
export {
  assertRulesFired, assertRulesUsed, mockFor, sandboxFor, sandboxName, useSandbox,
} from './lib/harness.js';
export { mergePacts, writeJson } from './lib/files.js';
export { Tokens, UnknownTokenError } from './lib/tokens.js';
export { majorMinor, versionMismatch } from './lib/version.js';
export * from './lib/constants.js';
