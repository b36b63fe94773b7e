import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';

// Initialising a PGlite cluster (initdb in WebAssembly) takes several seconds; loading a copy of an initialised one
// takes a fraction of that. In-memory databases (tests: a few hundred a run) are loaded from a template kept in the
// system's temporary directory, made once per PGlite version. Each load copies the template into the thread's memory
// file system, so the template holds only what a database needs (trimTemplate): about 16 MB instead of 40, and a
// database starts in about 0.9 s of CPU instead of 2.2, its thread's start included.

const BLOCK = 512;
/** PostgreSQL's WAL page: a segment is cut after its last page that holds anything. */
const WAL_PAGE = 8192;
const WAL_SEGMENT = /^pg_wal\/[0-9A-F]{24}$/;

let template: Promise<Uint8Array> | undefined;

/**
 * The template of in-memory databases (PGlite's dumpDataDir, trimmed), in memory shared by the process's threads:
 * each database thread gets it without a copy of its own (an ordinary buffer would be copied to every thread).
 */
export function memoryTemplate(): Promise<Uint8Array> {
  template ??= (async () => {
    // Named for what trimTemplate keeps: a change to it takes a new name, so no machine loads a template made before.
    const file = join(tmpdir(), `agent-economy-pglite-${pgliteVersion()}-trimmed.tar`);
    const bytes = existsSync(file) ? new Uint8Array(readFileSync(file)) : await makeTemplate(file);
    const shared = new Uint8Array(new SharedArrayBuffer(bytes.byteLength));
    shared.set(bytes);
    return shared;
  })();
  return template;
}

/** The installed PGlite's version: a template is made by, and for, one version. */
function pgliteVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const root = entry.slice(0, entry.lastIndexOf('@electric-sql/pglite') + '@electric-sql/pglite'.length);
  return (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
}

async function makeTemplate(file: string): Promise<Uint8Array> {
  // Loaded here only (tests' first in-memory database on a machine); the services' PGlite runs on its own thread.
  const { PGlite } = await import('@electric-sql/pglite');
  const pglite = new PGlite();
  await pglite.waitReady;
  const { rows } = await pglite.query<{ oid: number }>(
    'select oid from pg_database where datname = current_database()',
  );
  const dump = new Uint8Array(await (await pglite.dumpDataDir('none')).arrayBuffer());
  await pglite.close();
  const trimmed = trimTemplate(dump, Number(rows[0]!.oid));
  // Written under a name of its own first (test files run as threads of one process): none reads half a template.
  const partial = `${file}.${process.pid}.${threadId}`;
  writeFileSync(partial, trimmed);
  renameSync(partial, file);
  return trimmed;
}

/**
 * A data directory's tar without what an in-memory database never reads: the directories of the databases other than
 * the one it connects to (template0 and template1, 15 MB, used only by CREATE DATABASE), and the zeros after the last
 * written page of each WAL segment (9 of its 16 MB; PostgreSQL reads its last checkpoint from the written part and
 * writes on from there, and a file system extends a file written past its end). A tar laid out otherwise than the
 * one PGlite writes (ustar, regular files and directories) is returned as it is.
 */
export function trimTemplate(tar: Uint8Array, keepDatabaseOid: number): Uint8Array {
  const parts: Uint8Array[] = [];
  let at = 0;
  while (at + BLOCK <= tar.length) {
    const header = tar.subarray(at, at + BLOCK);
    if (header.every((byte) => byte === 0)) break;
    if (text(header, 257, 5) !== 'ustar') return tar;
    const type = String.fromCharCode(header[156]!);
    const size = parseInt(text(header, 124, 12) || '0', 8);
    if (!['0', '5', '\0'].includes(type) || !Number.isSafeInteger(size)) return tar;
    const prefix = text(header, 345, 155);
    const name = `${prefix ? `${prefix}/` : ''}${text(header, 0, 100)}`.replace(/^\/+/, '');
    if (at + BLOCK + size > tar.length) return tar;
    const data = tar.subarray(at + BLOCK, at + BLOCK + size);
    at += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
    const database = /^base\/(\d+)(\/|$)/.exec(name);
    if (database && Number(database[1]) !== keepDatabaseOid) continue;
    if (type === '0' && WAL_SEGMENT.test(name)) {
      let end = data.length;
      while (end > 0 && data[end - 1] === 0) end--;
      const kept = data.subarray(0, Math.ceil(end / WAL_PAGE) * WAL_PAGE);
      parts.push(withSize(header, kept.length), padded(kept));
    } else parts.push(header.slice(), padded(data));
  }
  parts.push(new Uint8Array(2 * BLOCK));
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** A NUL-ended ASCII field of a header. */
function text(header: Uint8Array, start: number, length: number): string {
  const field = header.subarray(start, start + length);
  const end = field.indexOf(0);
  return String.fromCharCode(...field.subarray(0, end < 0 ? field.length : end)).trim();
}

/** A copy of a header with another size, its checksum made again. */
function withSize(header: Uint8Array, size: number): Uint8Array {
  const copy = header.slice();
  copy.set(ascii(`${size.toString(8).padStart(11, '0')}\0`), 124);
  // The checksum is the sum of the header's bytes, its own field counted as spaces.
  copy.fill(0x20, 148, 156);
  const sum = copy.reduce((total, byte) => total + byte, 0);
  copy.set(ascii(`${sum.toString(8).padStart(6, '0')}\0 `), 148);
  return copy;
}

function padded(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(Math.ceil(data.length / BLOCK) * BLOCK);
  out.set(data);
  return out;
}

function ascii(value: string): Uint8Array {
  return Uint8Array.from(value, (char) => char.charCodeAt(0));
}
