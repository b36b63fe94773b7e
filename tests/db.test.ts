import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
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
            const { n } = await tx.selectFrom('demo_entries').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
            await tx.insertInto('demo_entries').values({ id: `t${i}`, amount: BigInt(n) }).execute();
          }),
        ),
      );
      const amounts = (await database.db.selectFrom('demo_entries').select('amount').execute()).map((r) => r.amount as bigint);
      if (database.engine === 'pglite') expect(amounts.sort((a, b) => Number(a - b))).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(i)));
      else expect(amounts).toHaveLength(10);
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
});
