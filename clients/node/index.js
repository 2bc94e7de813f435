// idp-mockserver-client: control client and per-test sandbox harness for the IDP mock server.
export { MockServerClient, MockServerError, privateSnapshotName, SANDBOX_NAME } from './lib/client.js';
export { connect, containerAvailable, freePort, startContainer, startLocal, startMock, waitForHealth } from './lib/start.js';
export { assertRulesUsed, JOURNAL_BODY_LIMIT, sandboxFor, sandboxName, useSandbox } from './lib/harness.js';
export { mergePacts, writeJson } from './lib/files.js';
export { DEFAULT_TOKENS, Tokens, UnknownTokenError } from './lib/tokens.js';
export { majorMinor, VERSION, versionMismatch } from './lib/version.js';

/** The default organization and application of the fixtures. */
export const DEFAULT_ORGANIZATION = '8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10';
export const DEFAULT_APPLICATION = 'a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5';
