import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Kysely, PostgresDialect, sql, type Migration } from 'kysely';
import pg from 'pg';
import { PGliteDialect, PGliteThread } from './pglite-dialect';
import { memoryTemplate } from './pglite-template';

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
  /** PGlite: how often at most its thread looks for a table to analyze (10 s; tests shorten it). */
  analyzeEveryMs?: number;
}

export interface Database {
  db: SharedDb;
  engine: 'pglite' | 'postgres';
  close(): Promise<void>;
}

const INT8_OID = 20;

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

export async function openDatabase(options: DatabaseOptions = {}): Promise<Database> {
  if (!options.url) {
    // On a thread of its own (pglite-dialect.ts), which reads int8 columns as bigint as the PostgreSQL engine does.
    let thread: PGliteThread;
    if (options.dataDir) {
      mkdirSync(options.dataDir, { recursive: true });
      if (!existsSync(join(options.dataDir, 'PG_VERSION'))) initdbApart(options.dataDir);
      thread = await PGliteThread.start({ dataDir: options.dataDir, analyzeEveryMs: options.analyzeEveryMs });
    } else {
      thread = await PGliteThread.start({ template: await memoryTemplate(), analyzeEveryMs: options.analyzeEveryMs });
    }
    const db = new Kysely<Record<string, never>>({ dialect: new PGliteDialect(thread) });
    return { db, engine: 'pglite', close: () => db.destroy() };
  }

  const schema = options.schema;
  if (schema && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`invalid schema name ${schema}`);
  const types = {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      oid === INT8_OID
        ? // int8 columns hold money in atomic units: read them as bigint, exactly, on both engines.
          (value: string) => BigInt(value)
        : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
  };
  const pool = new pg.Pool({
    connectionString: options.url,
    max: 10,
    types,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  const db = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool }) });
  if (schema) await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
  return {
    db,
    engine: 'postgres',
    async close() {
      // Dropping the schema locks every table in it; a background task (a sweep, a reconciliation) still querying can
      // deadlock with it, and PostgreSQL then cancels one side (40P01): the drop is tried again.
      for (let attempt = 1; schema && options.dropSchemaOnClose; attempt++) {
        try {
          await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(db);
          break;
        } catch (error) {
          if ((error as { code?: string }).code !== '40P01' || attempt >= 5) throw error;
        }
      }
      await db.destroy();
    },
  };
}

/**
 * The advisory lock Kysely's migrator takes on PostgreSQL: a replica still running a build that migrated with it
 * waits for this one, and the other way round.
 */
const MIGRATION_LOCK_ID = 3853314791062309107n;

/**
 * Runs a scope's migrations (a service's, the runtime's). Each scope keeps its own migration table, so services share
 * one database without stepping on each other's history. The table is the one Kysely's migrator keeps (name and
 * timestamp), so databases it migrated carry on. Not its migrator: to learn whether its two tables exist it reads
 * every column of every table (about 30 ms a scope on a full database, a second of each test file and eight seconds
 * of a fresh `npm start`), where one look at the table's rows says everything is applied.
 */
export async function migrate(db: SharedDb, scope: string, migrations: Record<string, Migration>): Promise<void> {
  const table = `${scope}_migrations`;
  const names = Object.keys(migrations).sort();
  // Most starts find every migration applied: one read, no lock, no DDL.
  const known = await appliedMigrations(db, table);
  if (known && pendingMigrations(scope, names, known).length === 0) return;
  let current: string | undefined;
  try {
    // Under the lock, in one transaction: replicas starting together migrate in turn, and a failed migration leaves
    // nothing behind.
    await db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${sql.lit(MIGRATION_LOCK_ID)})`.execute(trx);
      await sql`create table if not exists ${sql.id(table)} (name varchar(255) not null primary key, timestamp varchar(255) not null)`.execute(
        trx,
      );
      const applied = (await appliedMigrations(trx, table)) ?? new Set<string>();
      for (const name of pendingMigrations(scope, names, applied)) {
        current = name;
        await migrations[name]!.up(trx);
        await trx.insertInto(table).values({ name, timestamp: new Date().toISOString() }).execute();
      }
    });
  } catch (error) {
    throw new Error(`migrations of ${scope} failed${current ? ` at ${current}` : ''}: ${String(error)}`, {
      cause: error,
    });
  }
}

/** The names a scope's migration table holds in the connection's own schema; undefined when it has no table yet. */
async function appliedMigrations(db: SharedDb, table: string): Promise<Set<string> | undefined> {
  const { rows } = await sql<{ found: boolean }>`
    select to_regclass(quote_ident(current_schema()) || '.' || quote_ident(${table})) is not null as found`.execute(db);
  if (!rows[0]?.found) return undefined;
  // The current schema comes first in the search path: the name reads the same table.
  const applied = await sql<{ name: string }>`select name from ${sql.id(table)}`.execute(db);
  return new Set(applied.rows.map((row) => row.name));
}

/** The migrations still to run, in order; throws when the database is ahead of this build or out of its order. */
function pendingMigrations(scope: string, names: string[], applied: Set<string>): string[] {
  const unknown = [...applied].filter((name) => !names.includes(name));
  if (unknown.length)
    throw new Error(
      `migrations of ${scope}: the database has ${unknown.join(', ')}, which this build does not know (a newer build migrated it)`,
    );
  const pending = names.filter((name) => !applied.has(name));
  const last = names.filter((name) => applied.has(name)).at(-1);
  if (last && pending[0] && pending[0] < last)
    throw new Error(`migrations of ${scope}: ${pending[0]} sorts before ${last}, which already ran`);
  return pending;
}
