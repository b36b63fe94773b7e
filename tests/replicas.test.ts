import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PAYMENT_RESPONSE_HEADER, decodeX402Header, education } from '@agent-economy/contracts';
import { PaymentRequiredError, createServiceClient } from '@agent-economy/sdk';
import { createSolanaRpc } from '@solana/kit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateWallet } from '../servers/src/solana/keys';
import { startEconomy, type Economy } from './support/economy';
import { buildPaymentTransaction, paymentHeader } from './support/payments';
import { freePort, postgresReachable } from './support/servers';

// Two education processes behind one PostgreSQL, as replicas behind a load balancer: the same payment
// sent to both at once buys one lesson and settles once; the other replica answers a clear 402.

const DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const root = new URL('..', import.meta.url).pathname;

const hasPostgres = await postgresReachable(DATABASE_URL);

function startReplica(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=ae-source', 'servers/src/main.ts'], {
    cwd: root,
    env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = `http://127.0.0.1:${env.EDUCATION_PORT}`;
  return new Promise((resolve, reject) => {
    let output = '';
    const collect = (chunk: Buffer) => {
      output += chunk;
      if (output.includes('Ctrl-C stops')) resolve({ child, url });
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    child.on('exit', (code) => reject(new Error(`replica exited with ${code}:\n${output}`)));
  });
}

describe.skipIf(!hasPostgres)('replicas on one PostgreSQL', () => {
  let economy: Economy;
  let replicas: { child: ChildProcess; url: string }[] = [];
  let schema: string;
  const dataDirs: string[] = [];
  const sellerWallet = generateWallet();

  beforeAll(async () => {
    economy = await startEconomy();
    await economy.ledger.openTokenAccount(sellerWallet.address);
    // The replicas are education processes this facilitator settles for (FACILITATOR_RESOURCE_SERVERS).
    economy.sellers.add(sellerWallet.address);
    schema = `replicas_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: DATABASE_URL });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    await admin.end();
    const url = new URL(DATABASE_URL);
    url.searchParams.set('options', `-c search_path=${schema}`);
    const shared = {
      SERVICES: 'education',
      DATABASE_URL: url.toString(),
      SOLANA_RPC_URL: economy.rpcUrl,
      FACILITATOR_URL: economy.facilitator.url,
      EDUCATION_WALLET_SECRET: JSON.stringify([...sellerWallet.secretKey]),
    };
    // One at a time: the first runs the migrations, the second finds them done.
    for (let i = 0; i < 2; i++) {
      const dir = mkdtempSync(join(tmpdir(), 'ae-replica-'));
      dataDirs.push(dir);
      replicas.push(await startReplica({ ...shared, DATA_DIR: dir, EDUCATION_PORT: String(await freePort()) }));
    }
  }, 120_000);

  afterAll(async () => {
    for (const replica of replicas) replica.child.kill('SIGINT');
    await Promise.all(
      replicas.map(
        (r) => new Promise((resolve) => (r.child.exitCode !== null ? resolve(null) : r.child.on('exit', resolve))),
      ),
    );
    for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
    const admin = new pg.Client({ connectionString: DATABASE_URL });
    await admin.connect();
    await admin.query(`drop schema if exists ${schema} cascade`);
    await admin.end();
    await economy?.close();
  });

  it('serves and settles one payment once when it reaches both replicas at once', async () => {
    const [first, second] = replicas.map((r) => createServiceClient(education, r.url, { maxRetries: 0 }));
    const args = { body: { courseId: 'tool-use', lessonId: 'function-calling' } };
    const quoteError = await first!.lesson(args as never).catch((e) => e);
    expect(quoteError).toBeInstanceOf(PaymentRequiredError);
    const requirements = quoteError.quote.accepts[0];
    expect(requirements.payTo).toBe(sellerWallet.address);

    const { value } = await createSolanaRpc(economy.rpcUrl).getLatestBlockhash().send();
    const header = paymentHeader(
      requirements,
      await buildPaymentTransaction({ payer: economy.buyer, requirements, blockhash: value }),
      quoteError.quote.resource.url,
    );
    const before = economy.ledger.tokenBalance(economy.buyer.address);

    const outcomes = await Promise.allSettled(
      [first!, second!].map((client) =>
        client.lesson.withResponse(args as never, { headers: { 'payment-signature': header } }),
      ),
    );
    const served = outcomes.filter((o) => o.status === 'fulfilled');
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(served).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(refused[0]!.reason).toBeInstanceOf(PaymentRequiredError);
    expect(refused[0]!.reason.code).toBe('payment_already_used');

    const receipt = decodeX402Header(
      (served[0] as PromiseFulfilledResult<{ headers: Record<string, string> }>).value.headers[
        PAYMENT_RESPONSE_HEADER
      ]!,
    ) as { transaction: string };
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before - BigInt(requirements.amount));
    const settled = await economy.facilitator.database.db
      .selectFrom('facilitator_settlements')
      .select(['transaction', 'status'])
      .where('payer', '=', economy.buyer.address)
      .execute();
    expect(settled.filter((s) => s.status === 'settled').map((s) => s.transaction)).toContain(receipt.transaction);
    expect(settled).toHaveLength(1);
  });
});
