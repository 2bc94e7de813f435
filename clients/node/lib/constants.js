// Written by `python -m mockserver.client.generate` from the control document's x-constants: do not edit.
// control.yaml sha256 eb6ccd5a014c1fd73926c6c9a1cee62e4397a1e9bc479415369faa6cd33ccd66
export const VERSION = '0.1.0';
export const DEFAULT_TOKENS = Object.freeze({ admin: 'mock-admin-token', read: 'mock-read-token', write: 'mock-write-token', deploy: 'mock-deploy-token' });
export const DEFAULT_TOKEN_NAMES = Object.freeze({ admin: 'admin', read: 'read', write: 'write', deploy: 'deploy', reader: 'read', writer: 'write', deployer: 'deploy' });
export const DEFAULT_ORGANIZATION = '8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10';
export const DEFAULT_APPLICATION = 'a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5';
export const SANDBOX_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
export const RESERVED_SANDBOX_NAMES = Object.freeze(['.', '..']);
export const SERVER_JOURNAL_BODY_LIMIT = 65536;
export const MIN_JOURNAL_BODY_LIMIT = 1024;
export const MAX_JOURNAL_BODY_LIMIT = 16777216;
export const JOURNAL_BODY_LIMIT = 1048576;
export const PRIVATE_SNAPSHOT = Object.freeze({ head: 48, digest: 'sha1', digest_chars: 12, key: '{sandbox}|{name}' });
