// The API tokens of the mock's fixtures, found by every name a test may know them by. The default fixtures' tokens
// and their names are the control document's x-constants (lib/constants.js, generated).
import { DEFAULT_TOKENS, DEFAULT_TOKEN_NAMES as NAMES } from './constants.js';

export { DEFAULT_TOKENS };

export class UnknownTokenError extends Error {
  constructor(name, known) {
    const extra = known.filter((key) => !(key in NAMES));
    super(`no token named ${JSON.stringify(String(name))}: use admin, read, write or deploy (also the fixtures' ` +
      `token names admin, reader, writer, deployer, or the scopes Admin, Read, Write, Deploy)` +
      (extra.length ? `, or one of ${extra.join(', ')}` : ''));
    this.name = 'UnknownTokenError';
    this.tokenName = name;
  }
}

/**
 * A token table: `get(name)` finds a token by short key, fixtures name or scope, in any case.
 * `fromServer` is the start page's `quick_start.tokens` ({name: {token, scopes}}); the defaults fill the rest.
 */
export class Tokens {
  constructor(fromServer) {
    const table = { ...DEFAULT_TOKENS };
    this.source = 'defaults';
    if (fromServer && typeof fromServer === 'object') {
      const byScope = {};
      for (const [name, entry] of Object.entries(fromServer)) {
        const value = typeof entry === 'string' ? entry : entry?.token;
        if (typeof value !== 'string') continue;             // a mock with a control token lists them as null
        this.source = 'server';
        const lower = name.toLowerCase();
        table[lower] = value;
        if (NAMES[lower]) table[NAMES[lower]] = value;
        const scopes = Array.isArray(entry?.scopes) ? entry.scopes : [];
        if (scopes.length === 1 && NAMES[String(scopes[0]).toLowerCase()]) {
          byScope[NAMES[String(scopes[0]).toLowerCase()]] ??= value;
        }
      }
      // a scope finds the fixtures' token of that single scope when no token is named after it
      for (const [key, value] of Object.entries(byScope)) {
        const named = Object.entries(fromServer).some(([name, entry]) => NAMES[name.toLowerCase()] === key
          && typeof (typeof entry === 'string' ? entry : entry?.token) === 'string');
        if (!named) table[key] = value;
      }
    }
    this.table = Object.freeze(table);
    // plain properties too: tokens.admin, tokens.deployer, tokens.Deploy ...
    for (const name of [...Object.keys(NAMES), ...Object.keys(table)]) {
      const value = this.lookup(name);
      if (value !== undefined && !(name in this)) {
        Object.defineProperty(this, name, { value, enumerable: true });
        const scope = name[0].toUpperCase() + name.slice(1);
        if (NAMES[name] === name && !(scope in this)) Object.defineProperty(this, scope, { value, enumerable: false });
      }
    }
    Object.freeze(this);
  }

  lookup(name) {
    const lower = String(name).toLowerCase();
    return this.table[lower] ?? (NAMES[lower] ? this.table[NAMES[lower]] : undefined);
  }

  /** The token's value; an unknown name throws an error listing the valid ones. */
  get(name) {
    const value = this.lookup(name);
    if (value === undefined) throw new UnknownTokenError(name, Object.keys(this.table));
    return value;
  }

  toJSON() {
    return { ...this.table };
  }
}
