import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Migrator, sql } from 'kysely';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { migrate, openDatabase } from '../servers/src/db';
import { testDatabase } from './support/servers';

const migrations = {
  '001_ledger': {
    async up(db: any) {
      await db.schema
        .createTable('demo_entries')
        .addColumn('id', 'text', (c: any) => c.primaryKey())
        .addColumn('amount', 'int8', (c: any) => c.notNull())
        .execute();
    },
  },
};

describe(`database (${process.env.TEST_DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, () => {
  it('runs migrations once and keeps int8 money exact as bigint', async () => {
    const database = await testDatabase();
    try {
      await migrate(database.db, 'demo', migrations);
      await migrate(database.db, 'demo', migrations);
      const big = 9_007_199_254_740_993n; // 2^53 + 1: a double would round it
      await database.db.insertInto('demo_entries').values({ id: 'e1', amount: big }).execute();
      const row = await database.db.selectFrom('demo_entries').selectAll().executeTakeFirstOrThrow();
      expect(row.amount).toBe(big);
      const { rows } = await sql<{ n: string }>`select count(*)::text as n from demo_migrations`.execute(database.db);
      expect(rows[0]!.n).toBe('1');
    } finally {
      await database.close();
    }
  });

  it('carries on a database Kysely’s migrator migrated; refuses one ahead of this build; a failed migration leaves nothing', async () => {
    const database = await testDatabase();
    try {
      // An earlier build migrated with Kysely's Migrator: its table is ours.
      const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(database.db);
      const kysely = new Migrator({
        db: database.db,
        provider: { getMigrations: async () => migrations },
        migrationTableName: 'demo_migrations',
        migrationLockTableName: 'demo_migrations_lock',
        migrationTableSchema: rows[0]!.schema,
      });
      // Kysely's migrator reads every table of every schema first (its introspection, which names each table's schema
      // again): on PostgreSQL, another test file dropping its schema at that moment fails the read (3F000, naming that
      // schema). Tried again, as the earlier build's start would have been.
      let result = await kysely.migrateToLatest();
      for (let attempt = 1; (result.error as { code?: string } | undefined)?.code === '3F000' && attempt < 5; attempt++)
        result = await kysely.migrateToLatest();
      expect(result.error).toBeUndefined();
      const next = {
        ...migrations,
        '002_note': {
          up: (db: any) => db.schema.alterTable('demo_entries').addColumn('note', 'text').execute(),
        },
      };
      await migrate(database.db, 'demo', next);
      await migrate(database.db, 'demo', next);
      const applied = await database.db.selectFrom('demo_migrations').select('name').orderBy('name').execute();
      expect(applied.map((row: { name: string }) => row.name)).toEqual(['001_ledger', '002_note']);
      await database.db.insertInto('demo_entries').values({ id: 'n', amount: 1n, note: 'kept' }).execute();

      // This build knows 001 only: the database is ahead of it.
      await expect(migrate(database.db, 'demo', migrations)).rejects.toThrow(
        /002_note, which this build does not know/,
      );

      // A migration that fails halfway leaves neither its first step nor its row.
      const failing = {
        ...next,
        '003_broken': {
          async up(db: any) {
            await db.schema.createTable('demo_half').addColumn('id', 'text').execute();
            await sql`select * from no_such_table`.execute(db);
          },
        },
      };
      await expect(migrate(database.db, 'demo', failing)).rejects.toThrow(/migrations of demo failed at 003_broken/);
      const { rows: half } = await sql<{
        found: boolean;
      }>`select to_regclass('demo_half') is not null as found`.execute(database.db);
      expect(half[0]!.found).toBe(false);
      expect(await database.db.selectFrom('demo_migrations').select('name').execute()).toHaveLength(2);
    } finally {
      await database.close();
    }
  });

  it('passes every kind of parameter the services use and reads it back the same on both engines', async () => {
    const database = await testDatabase();
    try {
      await sql`create table demo_kinds (id text primary key, n int4, big int8, f float8, ok bool, at timestamptz,
        note text, doc jsonb, raw bytea)`.execute(database.db);
      const at = new Date('2026-11-26T10:00:00.123Z');
      const values = {
        id: 'k1',
        n: -7,
        big: 9_007_199_254_740_993n,
        f: 0.1,
        ok: false,
        at,
        note: null,
        doc: JSON.stringify({ a: [1, 'two'] }),
        raw: Buffer.from([0, 255, 16]),
      };
      await database.db
        .insertInto('demo_kinds' as never)
        .values(values as never)
        .execute();
      const row = (await database.db
        .selectFrom('demo_kinds' as never)
        .selectAll()
        .where('id' as never, '=', 'k1' as never)
        .where('at' as never, '=', at as never)
        .where('big' as never, '>', 9_007_199_254_740_992n as never)
        .where('ok' as never, '=', false as never)
        .executeTakeFirstOrThrow()) as Record<string, unknown>;
      // bytea comes back as a Buffer (PostgreSQL) or a Uint8Array (PGlite): the bytes are compared.
      expect({ ...row, raw: [...(row.raw as Uint8Array)] }).toEqual({
        ...values,
        doc: { a: [1, 'two'] },
        raw: [0, 255, 16],
      });
      // A number passed where text is expected: the parameter's type is inferred from the statement.
      const { rows } = await sql<{ s: string }>`select ${42}::text as s`.execute(database.db);
      expect(rows[0]!.s).toBe('42');
      // Bad input is the database's error, with its code, and the connection goes on.
      await expect(
        sql`select * from demo_kinds where n = ${'not a number'}`.execute(database.db),
      ).rejects.toMatchObject({
        code: '22P02',
      });
      const { rows: after } = await sql<{ n: number }>`select n from demo_kinds`.execute(database.db);
      expect(after).toEqual([{ n: -7 }]);
    } finally {
      await database.close();
    }
  });

  it('reads answers as they are: multibyte text, long values, arrays, rows changed and the error’s fields', async () => {
    // PGlite's answers are read from PostgreSQL's wire protocol by the database thread itself (pglite-thread.mjs).
    const database = await testDatabase();
    try {
      const db = database.db;
      await sql`create table demo_text (id text primary key, body text not null, tags text[])`.execute(db);
      const accents = 'é 🐢 漢字 ß — "quoted" \\ back\nslash';
      // 600 KB: an answer longer than the thread's first read of it, so it arrives in several pieces.
      const long = 'x'.repeat(200_000) + '€'.repeat(100_000) + 'y';
      await db
        .insertInto('demo_text' as never)
        .values([
          { id: 'a', body: accents, tags: sql`array['un', 'deux', ${accents}]` },
          { id: 'b', body: long, tags: null },
          { id: 'c', body: '', tags: sql`array[]::text[]` },
        ] as never)
        .execute();
      const rows = (
        await sql<{ id: string; body: string; tags: string[] | null; ünïcode: number }>`
        select id, body, tags, 1 as "ünïcode" from demo_text order by id`.execute(db)
      ).rows;
      expect(rows.map((r) => [r.id, r.body.length, r.tags, r['ünïcode']])).toEqual([
        ['a', accents.length, ['un', 'deux', accents], 1],
        ['b', long.length, null, 1],
        ['c', 0, [], 1],
      ]);
      expect(rows[0]!.body).toBe(accents);
      expect(rows[1]!.body).toBe(long);
      // The same text again (a prepared statement by now) with a parameter that takes many bytes.
      for (let run = 0; run < 3; run++) {
        const found = await sql<{ id: string }>`select id from demo_text where body = ${long}`.execute(db);
        expect(found.rows).toEqual([{ id: 'b' }]);
      }
      const updated = await db
        .updateTable('demo_text' as never)
        .set({ body: 'changed' } as never)
        .where('id' as never, 'in', ['a', 'c'] as never)
        .executeTakeFirst();
      expect(updated.numUpdatedRows).toBe(2n);
      const none = await db
        .deleteFrom('demo_text' as never)
        .where('id' as never, '=', 'nobody' as never)
        .executeTakeFirst();
      expect(none.numDeletedRows).toBe(0n);
      const duplicate = await db
        .insertInto('demo_text' as never)
        .values({ id: 'a', body: 'again' } as never)
        .execute()
        .catch((error: unknown) => error);
      expect(duplicate).toMatchObject({
        code: '23505',
        constraint: 'demo_text_pkey',
        table: 'demo_text',
        detail: 'Key (id)=(a) already exists.',
        severity: 'ERROR',
      });
      expect((duplicate as Error).message).toBe('duplicate key value violates unique constraint "demo_text_pkey"');
    } finally {
      await database.close();
    }
  });

  it('rolls back a failed transaction and serializes concurrent ones', async () => {
    const database = await testDatabase();
    try {
      await migrate(database.db, 'demo', migrations);
      await expect(
        database.db.transaction().execute(async (tx) => {
          await tx.insertInto('demo_entries').values({ id: 'gone', amount: 1n }).execute();
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      // Ten concurrent read-then-write transactions: each sees the previous one's write.
      await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          database.db.transaction().execute(async (tx) => {
            const { n } = await tx
              .selectFrom('demo_entries')
              .select((eb) => eb.fn.countAll<string>().as('n'))
              .executeTakeFirstOrThrow();
            await tx
              .insertInto('demo_entries')
              .values({ id: `t${i}`, amount: BigInt(n) })
              .execute();
          }),
        ),
      );
      const amounts = (await database.db.selectFrom('demo_entries').select('amount').execute()).map(
        (r) => r.amount as bigint,
      );
      if (database.engine === 'pglite')
        expect(amounts.sort((a, b) => Number(a - b))).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(i)));
      else expect(amounts).toHaveLength(10);
    } finally {
      await database.close();
    }
  });

  it('gives a transaction the session to itself: a statement sent meanwhile is not part of it, nor of its rollback', async () => {
    // PGlite is one session, its statements sent to its thread without waiting for each other: a statement of another
    // user sent while a transaction is open must wait for its end, or the rollback would take it along.
    const database = await testDatabase();
    try {
      await migrate(database.db, 'demo', migrations);
      const db = database.db;
      let entered!: () => void;
      const inside = new Promise<void>((resolve) => (entered = resolve));
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const transaction = db.transaction().execute(async (tx) => {
        await tx.insertInto('demo_entries').values({ id: 'in-tx', amount: 1n }).execute();
        entered();
        await gate;
        // On PGlite the statement sent meanwhile waits for this transaction's end; on PostgreSQL it has committed on
        // another connection, and this transaction (read committed) sees it.
        const seen = await tx.selectFrom('demo_entries').select('id').orderBy('id').execute();
        expect(seen.map((r) => r.id)).toEqual(database.engine === 'pglite' ? ['in-tx'] : ['in-tx', 'outside']);
        throw new Error('abort');
      });
      await inside;
      const outside = db.insertInto('demo_entries').values({ id: 'outside', amount: 2n }).execute();
      // Sent once the first has landed: on PostgreSQL the two would race on two connections, either one first.
      const duplicate = outside
        .then(() => db.insertInto('demo_entries').values({ id: 'outside', amount: 3n }).execute())
        .catch((error: unknown) => error);
      // On PostgreSQL the statement commits on another connection without waiting: the transaction must see it, so
      // it is awaited before the transaction goes on. On PGlite it cannot land before the transaction ends: give it
      // time to be sent, so the transaction would see it if it were let in.
      if (database.engine === 'pglite') await new Promise((resolve) => setTimeout(resolve, 50));
      else await outside;
      release();
      await expect(transaction).rejects.toThrow('abort');
      await outside;
      // PostgreSQL's fields cross from the database thread with its error.
      expect(await duplicate).toMatchObject({ code: '23505', constraint: 'demo_entries_pkey' });
      const rows = await db.selectFrom('demo_entries').selectAll().execute();
      expect(rows).toEqual([{ id: 'outside', amount: 2n }]);
    } finally {
      await database.close();
    }
  });

  it('runs one statement many times, after it failed, inside a failed transaction and after its table changed', async () => {
    const database = await testDatabase();
    try {
      await migrate(database.db, 'demo', migrations);
      const db = database.db;
      const insert = (id: string, amount: bigint) => db.insertInto('demo_entries').values({ id, amount }).execute();
      const read = (id: string) => db.selectFrom('demo_entries').selectAll().where('id', '=', id).executeTakeFirst();
      // The first run of a text fails after it was parsed (a duplicate key), then the same text runs again.
      await insert('a', 1n);
      await expect(insert('a', 2n)).rejects.toThrow(/duplicate key|unique/);
      for (let i = 0; i < 5; i++) await insert(`b${i}`, BigInt(i));
      expect(await read('b4')).toEqual({ id: 'b4', amount: 4n });
      // A text that does not parse (no such column) fails each time with PostgreSQL's own error.
      const bad = () => sql`select nothing_here from demo_entries where id = ${'a'}`.execute(db);
      await expect(bad()).rejects.toThrow(/nothing_here/);
      await expect(bad()).rejects.toThrow(/nothing_here/);
      // Inside a transaction that failed: rolled back whole, and the statements still run afterwards.
      await expect(
        db.transaction().execute(async (tx) => {
          await tx.insertInto('demo_entries').values({ id: 'c', amount: 3n }).execute();
          await tx.insertInto('demo_entries').values({ id: 'a', amount: 3n }).execute();
        }),
      ).rejects.toThrow(/duplicate key|unique/);
      expect(await read('c')).toBeUndefined();
      await insert('c', 3n);
      // Its table gains a column: the same text reads the new shape.
      expect(await read('c')).toEqual({ id: 'c', amount: 3n });
      await sql`alter table demo_entries add column note text default 'n'`.execute(db);
      // Twice: a text is prepared on its second run, so the change below meets a prepared plan.
      expect(await read('c')).toEqual({ id: 'c', amount: 3n, note: 'n' });
      expect(await read('c')).toEqual({ id: 'c', amount: 3n, note: 'n' });
      // Changed again, then read inside a transaction: on PGlite the plan prepared before fails there (the error
      // aborts the transaction, so it is not parsed again inside it); outside, the next read has the new shape.
      await sql`alter table demo_entries drop column note`.execute(db);
      const inside = await db
        .transaction()
        .execute((tx) => tx.selectFrom('demo_entries').selectAll().where('id', '=', 'c').executeTakeFirst())
        .catch((error: Error) => error);
      if (database.engine === 'pglite') expect(String(inside)).toMatch(/cached plan must not change result type/);
      else expect(inside).toEqual({ id: 'c', amount: 3n });
      expect(await read('c')).toEqual({ id: 'c', amount: 3n });
      const { rows } = await sql<{ n: string }>`select count(*)::text as n from demo_entries`.execute(db);
      expect(rows[0]!.n).toBe('7');
    } finally {
      await database.close();
    }
  });
});

describe('PGlite in memory', () => {
  it('starts from a trimmed template (one database, the WAL cut after its last page) and writes on past the cut', async () => {
    const database = await openDatabase();
    try {
      const one = async <T>(query: ReturnType<typeof sql<T>>) => (await query.execute(database.db)).rows[0]!;
      const { oid } = await one(sql<{ oid: number }>`select oid from pg_database where datname = current_database()`);
      // template0 and template1 are still catalogued, but their files are not copied into every test database.
      const { dirs } = await one(
        sql<{ dirs: string[] }>`select array_agg(d order by d) as dirs from pg_ls_dir('base') d`,
      );
      expect(dirs).toEqual([String(oid)]);
      const wal = async () =>
        (
          await sql<{ name: string; size: number }>`
            select name, size::int from pg_ls_waldir() where name ~ '^[0-9A-F]{24}$' order by name`.execute(database.db)
        ).rows;
      const [segment] = await wal();
      expect(segment!.size % 8192).toBe(0);
      expect(segment!.size).toBeLessThan(16 * 1024 * 1024);
      // About 20 MB of WAL: PostgreSQL writes past the cut, fills the segment and goes on to the next.
      await sql`create table wal_filler (id int primary key, body text not null)`.execute(database.db);
      await sql`insert into wal_filler select i, repeat(md5(i::text), 32) from generate_series(1, 20000) i`.execute(
        database.db,
      );
      await sql`checkpoint`.execute(database.db);
      const after = await wal();
      expect(after.length).toBeGreaterThanOrEqual(2);
      expect(after[0]!.size).toBe(16 * 1024 * 1024);
      const { n } = await one(sql<{ n: number }>`select count(*)::int as n from wal_filler where length(body) = 1024`);
      expect(n).toBe(20000);
    } finally {
      await database.close();
    }
  });
});

describe('PGlite statistics', () => {
  // PGlite runs no autovacuum: its thread analyzes changed tables itself. Without statistics the planner takes
  // `state = 'open'` for 0.5 % of the rows and reads every open row through that index, as the paywall's voucher
  // update did (three vouchers joined to their sessions by key, among thousands of open sessions).
  it('are kept as autovacuum keeps them: a lookup by key among thousands of open rows reads by the key', async () => {
    const database = await openDatabase({ analyzeEveryMs: 20 });
    try {
      const { db } = database;
      await sql`create table stats_sessions (channel_id text primary key, seller text not null, state text not null)`.execute(
        db,
      );
      await sql`create index stats_sessions_state on stats_sessions (state)`.execute(db);
      await sql`insert into stats_sessions select 'ch' || i, 'seller' || (i % 20), 'open' from generate_series(1, 3000) i`.execute(
        db,
      );
      const plan = async () =>
        (
          await sql<{ 'QUERY PLAN': string }>`
            explain select s.channel_id from stats_sessions s
              join (values ('ch7'), ('ch70'), ('ch700')) as v(channel_id) on s.channel_id = v.channel_id
             where s.state = 'open'`.execute(db)
        ).rows
          .map((row) => row['QUERY PLAN'])
          .join('\n');
      const analyzed = async () =>
        (
          await sql<{ at: Date | null }>`
            select last_analyze as at from pg_stat_user_tables where relname = 'stats_sessions'`.execute(db)
        ).rows[0]?.at ?? null;
      // Each statement gives the thread its turn; the table's changes reach its statistics within a second.
      await vi.waitFor(async () => expect(await analyzed()).not.toBeNull(), { timeout: 15_000, interval: 50 });
      const { rows } = await sql<{ reltuples: number }>`
        select reltuples from pg_class where relname = 'stats_sessions'`.execute(db);
      expect(rows[0]!.reltuples).toBe(3000);
      const analyzedPlan = await plan();
      expect(analyzedPlan).toMatch(/Index Scan using stats_sessions_pkey/);
      expect(analyzedPlan).not.toMatch(/stats_sessions_state/);
    } finally {
      await database.close();
    }
  });
});

describe('PGlite on disk', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ae-db-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps its data across a close and reopen', async () => {
    const first = await openDatabase({ dataDir: dir });
    await migrate(first.db, 'demo', migrations);
    await first.db.insertInto('demo_entries').values({ id: 'kept', amount: 42n }).execute();
    await first.close();
    const second = await openDatabase({ dataDir: dir });
    await migrate(second.db, 'demo', migrations);
    expect(await second.db.selectFrom('demo_entries').selectAll().execute()).toEqual([{ id: 'kept', amount: 42n }]);
    await second.close();
  });

  it('lets a script with nothing else to do write, close and go on; one that never closes still exits', async () => {
    // The database thread keeps the process alive only while it works: a script is not cut off while it waits for a
    // statement or for the close, and a forgotten database does not keep it running.
    const script = (close: boolean) => `
      const { migrate, openDatabase } = await import(${JSON.stringify(fileURLToPath(new URL('../servers/src/db/index.ts', import.meta.url)))});
      const database = await openDatabase({ dataDir: ${JSON.stringify(dir)} });
      await migrate(database.db, 'demo', { '001_ledger': { up: async (db) => db.schema.createTable('demo_entries')
        .ifNotExists().addColumn('id', 'text', (c) => c.primaryKey()).addColumn('amount', 'int8').execute() } });
      await database.db.insertInto('demo_entries').values({ id: ${JSON.stringify(close ? 'closed' : 'open')}, amount: 7n }).execute();
      ${close ? 'await database.close();' : ''}
      console.log('went on');`;
    for (const close of [true, false]) {
      const file = join(dir, `script-${close}.mts`);
      writeFileSync(file, script(close));
      const run = spawnSync(process.execPath, ['--import', 'tsx', '--conditions=ae-source', file], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(run.stdout.trim(), run.stderr).toBe('went on');
      expect(run.status).toBe(0);
    }
    const reopened = await openDatabase({ dataDir: dir });
    const ids = await reopened.db
      .selectFrom('demo_entries')
      .select('id')
      .where('id', 'in', ['closed', 'open'])
      .execute();
    expect(ids.map((r) => r.id).sort()).toEqual(['closed', 'open']);
    await reopened.close();
  });
});

describe('migrations beside another schema', () => {
  it('create their tables in their own schema even when another schema has them already', async () => {
    const [first, second] = [await testDatabase(), await testDatabase()];
    try {
      await migrate(first.db, 'demo', migrations);
      await migrate(second.db, 'demo', migrations);
      await second.db.insertInto('demo_entries').values({ id: 'own', amount: 1n }).execute();
      expect(await second.db.selectFrom('demo_entries').selectAll().execute()).toEqual([{ id: 'own', amount: 1n }]);
      expect(await first.db.selectFrom('demo_entries').selectAll().execute()).toEqual([]);
    } finally {
      await first.close();
      await second.close();
    }
  });

  it.runIf(process.env.TEST_DATABASE_URL)(
    'see only their own schema, so another tenant creating and dropping schemas cannot fail them',
    async () => {
      const own = await testDatabase();
      const other = await testDatabase();
      await migrate(other.db, 'demo', migrations);
      let churning = true;
      // Another deployment (or test file) busy with DDL: schemas with tables appear, grow columns and disappear.
      const churn = (async () => {
        for (let i = 0; churning; i++) {
          const name = sql.id(`churn_${process.pid}_${i}`);
          await sql`create schema ${name}`.execute(other.db);
          await sql`create table ${name}.t (id int8 primary key)`.execute(other.db);
          await sql`alter table ${name}.t add column created_at text`.execute(other.db);
          await sql`drop schema ${name} cascade`.execute(other.db);
        }
      })();
      try {
        for (let i = 0; i < 15; i++) {
          await migrate(own.db, `scope${i}`, {
            '001': { up: (db: any) => db.schema.createTable(`entries_${i}`).addColumn('id', 'text').execute() },
          });
        }
        await migrate(own.db, 'demo', migrations);
        // The tables the migrations made, in this connection's schema.
        const { rows: tables } = await sql<{ name: string }>`
          select table_name as name from information_schema.tables where table_schema = current_schema()`.execute(
          own.db,
        );
        expect(tables.filter((t) => t.name.startsWith('entries_'))).toHaveLength(15);
        expect(tables.filter((t) => t.name.endsWith('_migrations'))).toHaveLength(16);
        const { rows: columns } = await sql<{ name: string; type: string; nullable: string }>`
          select column_name as name, udt_name as type, is_nullable as nullable from information_schema.columns
          where table_schema = current_schema() and table_name = 'demo_entries' order by ordinal_position`.execute(
          own.db,
        );
        expect(columns.map((c) => [c.name, c.type, c.nullable === 'YES'])).toEqual([
          ['id', 'text', false],
          ['amount', 'int8', false],
        ]);
      } finally {
        churning = false;
        await churn;
        await own.close();
        await other.close();
      }
    },
  );
});
