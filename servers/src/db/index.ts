import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, Migrator, PostgresDialect, sql, type Migration } from 'kysely';
import pg from 'pg';
import { PGliteDialect } from './pglite-dialect';

// One schema, one set of migrations, two engines: embedded PGlite by default, PostgreSQL when a URL is given.
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
  db: Kysely<any>;
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
      pglite = new PGlite(options.dataDir, { parsers: PARSERS });
    } else {
      pglite = new PGlite({ loadDataDir: await memoryTemplate(), parsers: PARSERS });
    }
    const db = new Kysely<any>({ dialect: new PGliteDialect(pglite) });
    return { db, engine: 'pglite', close: () => db.destroy() };
  }

  const schema = options.schema;
  if (schema && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`invalid schema name ${schema}`);
  const types = {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      oid === INT8_OID ? (value: string) => BigInt(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
  };
  const pool = new pg.Pool({
    connectionString: options.url,
    max: 10,
    types,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) });
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
export async function migrate(db: Kysely<any>, scope: string, migrations: Record<string, Migration>): Promise<void> {
  // Kysely looks for its migration tables in every schema unless told which one: with several schemas in
  // one database (replicas of other deployments, parallel tests) it would find another schema's tables.
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: `${scope}_migrations`,
    migrationLockTableName: `${scope}_migrations_lock`,
    migrationTableSchema: rows[0]!.schema,
  });
  const own = rows[0]!.schema;
  for (let attempt = 1; ; attempt++) {
    const { error, results } = await migrator.migrateToLatest();
    if (!error) return;
    // Kysely checks for its migration tables by introspecting every schema of the database: another tenant (a
    // replica of another deployment, a parallel test) dropping its schema at that moment fails the read with 3F000
    // naming that schema. That happens before any migration runs, so trying again is safe.
    const missing = /schema "([^"]+)" does not exist/.exec(String(error))?.[1];
    if (missing && missing !== own && attempt < 8) {
      await new Promise((resolve) => setTimeout(resolve, 25 * attempt));
      continue;
    }
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(`migrations of ${scope} failed${failed ? ` at ${failed}` : ''}: ${String(error)}`, { cause: error });
  }
}
