// The generated files of the client are current: lib/control.d.ts (openapi-typescript, from the control document's
// schemas: `npm run gen`) and lib/constants.js with its declarations (python -m mockserver.client.generate, from the
// document's x-constants), and package.json's version is the one the constants hold.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

import { PRIVATE_SNAPSHOT, VERSION, privateSnapshotName } from '../index.js';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const DOCUMENT = here('../../../mockserver/document/control.yaml');
const CLI = here('../node_modules/openapi-typescript/bin/cli.js');
const inRepository = { skip: existsSync(DOCUMENT) ? false : 'no control document: the package is not in the repository' };

/** openapi-typescript's own check: does `output` hold what it would write from the document? (its exit status) */
function checkTypes(output) {
  const run = spawnSync(process.execPath, [CLI, DOCUMENT, '-o', output, '--check'], { encoding: 'utf8' });
  return { status: run.status, said: `${run.stdout}${run.stderr}` };
}

test('lib/control.d.ts is what openapi-typescript writes from the control document (npm run gen)', inRepository, () => {
  const { status, said } = checkTypes(here('../lib/control.d.ts'));
  assert.equal(status, 0, `lib/control.d.ts is stale: run npm run gen in clients/node\n${said}`);
});

test('the check fails on a stale lib/control.d.ts', inRepository, () => {
  const folder = mkdtempSync(join(tmpdir(), 'control-types-'));
  try {
    const stale = join(folder, 'control.d.ts');
    copyFileSync(here('../lib/control.d.ts'), stale);
    writeFileSync(stale, readFileSync(stale, 'utf8').replace('scenario_rule: string | null;', 'scenario_rule: string;'));
    assert.notEqual(checkTypes(stale).status, 0);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});

test('lib/constants.js and its declarations were written from this control document', inRepository, () => {
  const digest = createHash('sha256').update(readFileSync(DOCUMENT)).digest('hex');
  for (const file of ['../lib/constants.js', '../lib/constants.d.ts']) {
    assert.ok(readFileSync(here(file), 'utf8').includes(`// control.yaml sha256 ${digest}\n`),
      `${file.slice(3)} is stale: run python -m mockserver.client.generate`);
  }
});

test('package.json holds the version of the constants (the server\'s)', () => {
  const pkg = JSON.parse(readFileSync(here('../package.json'), 'utf8'));
  assert.equal(pkg.version, VERSION);
  assert.match(VERSION, /^\d+\.\d+\.\d+/);
});

test('a private snapshot\'s name is the same as in the Python and Go clients', () => {
  assert.deepEqual(PRIVATE_SNAPSHOT, { head: 48, digest: 'sha1', digest_chars: 12, key: '{sandbox}|{name}' });
  assert.equal(privateSnapshotName('x', 'n'.repeat(60)), `${'n'.repeat(48)}.8daa9a0857cf`);
  const digest = createHash('sha1').update('sandbox-1|before').digest('hex').slice(0, 12);
  assert.equal(privateSnapshotName('sandbox-1', 'before'), `before.${digest}`);
});
