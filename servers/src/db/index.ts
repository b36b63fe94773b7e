import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, Migrator, sql, type Migration } from 'kysely';
import pg from 'pg';
import { CurrentSchemaPostgresDialect } from './current-schema';
import { PGliteDialect } from './pglite-dialect';

// One schema, one set of migrations, two engines: embedded PGlite by default, PostgreSQL when a URL is given.

/**
 * The one database handle every service of a process shares. Its tables are not known here: each store declares its
 * own (`camelCaseDb<Tables>(db)`, or a cast to `Kysely<Tables>` where it opens), so this is the single place the
 * schema is left open.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above: stores name their tables
export type SharedDb = Kysely<any>;

export interface DatabaseOptions {
  /** postgres://… to use PostgreSQL; absent for embedded PGlite. */
  url?: string;
  /** Directory for PGlite's files; absent for an in-memory database. */
  dataDir?: string;
  /** PostgreSQL schema to use (created if missing); tests give each server its own. */
  schema?: string;
  /** Drop the schema when closing (tests only). */
  dropSchemaOnClose?: boolean;
}

export interface Database {
  db: SharedDb;
  engine: 'pglite' | 'postgres';
  close(): Promise<void>;
}

const PGLITE_VERSION: string = (() => {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const root = entry.slice(0, entry.lastIndexOf('@electric-sql/pglite') + '@electric-sql/pglite'.length);
  return JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
})();
const INT8_OID = 20;
const PARSERS = { [INT8_OID]: (value: string) => BigInt(value) };

// Initialising a PGlite cluster (initdb in WebAssembly) takes several seconds; loading a copy of an
// initialised one takes about one. In-memory databases (tests) are cloned from a template kept in the
// system's temporary directory, made once per PGlite version.
// PGlite's defaults plus a 32 MB buffer cache instead of PostgreSQL's 128 MB: the cache is WebAssembly memory
// that is never given back, and the services' working set is small (about 120 MB less RSS; fsync is off already: -F).
const PGLITE_START_PARAMS = [
  ...(PGlite as unknown as { defaultStartParams: string[] }).defaultStartParams,
  '-c',
  'shared_buffers=32MB',
];

/**
 * Creates a PGlite data directory in a short-lived child process: initdb's WebAssembly instance holds about
 * 450 MB that stays in a process's RSS after it is done, so a first start that ran it in process stayed
 * near 800 MB where a later start of the same directory sits near 250 MB.
 */
function initdbApart(dataDir: string): void {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const script = `const { PGlite } = await import(${JSON.stringify(pathToFileURL(entry).href)});
    const db = new PGlite(${JSON.stringify(dataDir)}); await db.waitReady; await db.close();`;
  execFileSync(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'inherit'] });
}

let template: Promise<Blob> | undefined;
function memoryTemplate(): Promise<Blob> {
  template ??= (async () => {
    const file = join(tmpdir(), `agent-economy-pglite-${PGLITE_VERSION}.tar`);
    if (existsSync(file)) return new Blob([readFileSync(file)]);
    const pglite = new PGlite();
    await pglite.waitReady;
    const dump = await pglite.dumpDataDir('none');
    await pglite.close();
    const partial = `${file}.${process.pid}`;
    writeFileSync(partial, Buffer.from(await dump.arrayBuffer()));
    renameSync(partial, file);
    return dump;
  })();
  return template;
}

export async function openDatabase(options: DatabaseOptions = {}): Promise<Database> {
  if (!options.url) {
    // int8 columns hold money in atomic units: read them as bigint, exactly, on both engines.
    let pglite: PGlite;
    if (options.dataDir) {
      mkdirSync(options.dataDir, { recursive: true });
      if (!existsSync(join(options.dataDir, 'PG_VERSION'))) initdbApart(options.dataDir);
      pglite = new PGlite(options.dataDir, { parsers: PARSERS, startParams: PGLITE_START_PARAMS });
    } else {
      pglite = new PGlite({ loadDataDir: await memoryTemplate(), parsers: PARSERS, startParams: PGLITE_START_PARAMS });
    }
    const db = new Kysely<Record<string, never>>({ dialect: new PGliteDialect(pglite) });
    return { db, engine: 'pglite', close: () => db.destroy() };
  }

  const schema = options.schema;
  if (schema && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`invalid schema name ${schema}`);
  const types = {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      oid === INT8_OID
        ? (value: string) => BigInt(value)
        : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
  };
  const pool = new pg.Pool({
    connectionString: options.url,
    max: 10,
    types,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  const db = new Kysely<Record<string, never>>({ dialect: new CurrentSchemaPostgresDialect({ pool }) });
  if (schema) await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
  return {
    db,
    engine: 'postgres',
    async close() {
      if (schema && options.dropSchemaOnClose) await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(db);
      await db.destroy();
    },
  };
}

/**
 * Runs a scope's migrations (a service's, the runtime's). Each scope keeps its own migration table,
 * so services share one database without stepping on each other's history.
 */
export async function migrate(db: SharedDb, scope: string, migrations: Record<string, Migration>): Promise<void> {
  // Kysely looks for its migration tables in every schema unless told which one: with several schemas in one database
  // (replicas of other deployments, parallel tests) it would find another schema's tables. The dialect's introspector
  // reads only our schema (current-schema.ts), so another tenant's DDL cannot fail this read either.
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: `${scope}_migrations`,
    migrationLockTableName: `${scope}_migrations_lock`,
    migrationTableSchema: rows[0]!.schema,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (!error) return;
  const failed = results?.find((r) => r.status === 'Error')?.migrationName;
  throw new Error(`migrations of ${scope} failed${failed ? ` at ${failed}` : ''}: ${String(error)}`, { cause: error });
}
