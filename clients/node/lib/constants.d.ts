// Written by `python -m mockserver.client.generate` from the control document's x-constants: do not edit.
// control.yaml sha256 eb6ccd5a014c1fd73926c6c9a1cee62e4397a1e9bc479415369faa6cd33ccd66
export const VERSION: string;
export const DEFAULT_TOKENS: Readonly<{ admin: string; read: string; write: string; deploy: string }>;
export const DEFAULT_TOKEN_NAMES: Readonly<Record<string, string>>;
export const DEFAULT_ORGANIZATION: string;
export const DEFAULT_APPLICATION: string;
export const SANDBOX_NAME: RegExp;
export const RESERVED_SANDBOX_NAMES: readonly string[];
export const SERVER_JOURNAL_BODY_LIMIT: number;
export const MIN_JOURNAL_BODY_LIMIT: number;
export const MAX_JOURNAL_BODY_LIMIT: number;
export const JOURNAL_BODY_LIMIT: number;
export const PRIVATE_SNAPSHOT: Readonly<{ head: number; digest: 'sha1'; digest_chars: number; key: string }>;
