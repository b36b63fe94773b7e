import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// The runtime (what every service runs on) and the local ledger (the chain simulator) meet only in servers/src/solana:
// neither imports the other, so a deployment on a real cluster loads no simulator code, and the simulator none of the
// paywall.

const root = resolve(import.meta.dirname, '../..');
const src = join(root, 'servers/src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

/** The folders under servers/src that a file imports from, by relative import. */
function importedFolders(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const targets = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)].map((m) => m[1]!);
  return targets.map((target) => relative(src, resolve(file, '..', target)).split('/')[0]!);
}

describe('module boundaries', () => {
  it('nothing under servers/src/runtime imports the ledger', () => {
    const offenders = sources(join(src, 'runtime')).filter((f) => importedFolders(f).includes('ledger'));
    expect(offenders.map((f) => relative(root, f))).toEqual([]);
  });

  it('nothing under servers/src/ledger imports the runtime', () => {
    const offenders = sources(join(src, 'ledger')).filter((f) => importedFolders(f).includes('runtime'));
    expect(offenders.map((f) => relative(root, f))).toEqual([]);
  });
});
