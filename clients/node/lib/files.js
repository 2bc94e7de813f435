// Writing pacts and HAR logs: one file that several tests (and test processes) write in turn.
import { mkdir, open, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

const STALE_LOCK_MS = 30_000;           // a lock file older than this was left by a writer that died

/** JSON with its object keys sorted at every level (to compare two interactions whole). */
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * One pact of two of the same consumer and provider: the old interactions, then the new ones that differ
 * (one whose description is taken but differs gets a numbered description). As the Python plugin's merge_pacts.
 */
export function mergePacts(old, fresh) {
  if (canonical([old.consumer ?? null, old.provider ?? null]) !== canonical([fresh.consumer, fresh.provider])) {
    throw new Error(`${fresh.consumer?.name} -> ${fresh.provider?.name}: the file holds a pact of ` +
      `${old.consumer?.name} -> ${old.provider?.name}`);
  }
  const same = (item) => item.key || canonical(Object.fromEntries(Object.entries(item).filter(([k]) => k !== 'description')));
  const interactions = [...(old.interactions ?? [])];
  const held = new Set(interactions.map(same));
  const names = new Set(interactions.map((item) => item.description));
  for (let item of fresh.interactions ?? []) {
    const key = same(item);
    if (held.has(key)) continue;
    held.add(key);
    const base = item.description;
    let count = 1;
    while (names.has(item.description)) {
      count += 1;
      item = { ...item, description: `${base} #${count}` };
    }
    names.add(item.description);
    interactions.push(item);
  }
  const notes = { ...(fresh.metadata?.['idp-mockserver'] ?? {}) };
  const before = old.metadata?.['idp-mockserver'] ?? {};
  for (const key of ['cut', 'left_out']) notes[key] = [...(before[key] ?? []), ...(notes[key] ?? [])];
  notes.interactions = interactions.length;
  notes.calls = (before.calls ?? 0) + (notes.calls ?? 0);
  return { ...fresh, interactions, metadata: { ...(fresh.metadata ?? {}), 'idp-mockserver': notes } };
}

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

async function lock(where, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const handle = await open(where, 'wx');
      await handle.writeFile(String(process.pid));
      return handle;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
    }
    try {
      if (Date.now() - (await stat(where)).mtimeMs > STALE_LOCK_MS) await unlink(where).catch(() => {});
    } catch { /* gone meanwhile: try again */ }
    if (Date.now() > deadline) throw new Error(`could not lock ${where} within ${timeoutMs / 1000} s`);
    await sleep(10 + Math.random() * 20);
  }
}

/**
 * Write `document` as JSON at `path`; with `merge`, merged with the document already there, under the lock
 * file `path`.lock (created exclusively, deleted when the writing is done). Returns the document written.
 */
export async function writeJson(path, document, merge) {
  const target = resolve(String(path));
  await mkdir(dirname(target), { recursive: true });
  const lockFile = `${target}.lock`;
  const handle = await lock(lockFile);
  const temporary = `${target}.${process.pid}.${Math.random().toString(16).slice(2)}.tmp`;
  try {
    if (merge) {
      let old;
      try {
        old = JSON.parse(await readFile(target, 'utf8'));
      } catch (error) {
        if (error.code !== 'ENOENT') throw error;
      }
      if (old) document = merge(old, document);
    }
    try {
      await writeFile(temporary, `${JSON.stringify(document, null, 2)}\n`);
      await rename(temporary, target);
    } catch (error) {
      await unlink(temporary).catch(() => {});
      throw error;
    }
  } finally {
    await unlink(lockFile).catch(() => {});
    await handle.close();
  }
  return document;
}
