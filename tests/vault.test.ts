import { createServer, type Server } from 'node:http';
import { usdToAtomic } from '@agent-economy/contracts';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_BLOCKHASH_LIFETIME_SLOTS } from '../servers/src/ledger';
import type { ServiceContext } from '../servers/src/runtime/context';
import { HttpError } from '../servers/src/runtime/errors';
import { createVault, type Vault } from '../servers/src/runtime/vault';
import { generateWallet } from '../servers/src/solana/keys';
import { startEconomy, type Economy } from './support/economy';

// The vault on the local ledger: real transactions signed by the service's wallet, recorded in its
// database before they are sent.

let economy: Economy;
let context: ServiceContext;
let vault: Vault;

/** A JSON-RPC proxy to the ledger that can lose sendTransaction (answers 503 without forwarding it). */
async function lossyRpc(target: string) {
  let lose = false;
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    if (lose && JSON.parse(body).method === 'sendTransaction') {
      res.statusCode = 503;
      res.end('lost');
      return;
    }
    const answer = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    res.statusCode = answer.status;
    res.setHeader('content-type', 'application/json');
    res.end(await answer.text());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`,
    set lose(value: boolean) {
      lose = value;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function failure(promise: Promise<unknown>): Promise<HttpError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(HttpError);
  return error as HttpError;
}

const rowOf = (key: string) =>
  context.db.selectFrom('runtime_vault_transfers').selectAll().where('key', '=', key).executeTakeFirst();

beforeAll(async () => {
  economy = await startEconomy();
  const service = await economy.startPaidService(
    async (ctx) => {
      context = ctx;
      vault = await createVault(ctx);
      return express();
    },
    { id: 'vault-test', sol: true },
  );
  await economy.ledger.mintTo(service.context.wallet.address, usdToAtomic('5'));
}, 60_000);

afterAll(async () => {
  await economy?.close();
});

/** A new wallet with its stablecoin account open (a recipient the vault pays). */
async function openedWallet(): Promise<string> {
  const { address } = generateWallet();
  await economy.ledger.openTokenAccount(address);
  return address;
}

describe('vault', () => {
  it('is the service wallet, pays its own fees, and reads its balance on chain', async () => {
    expect(vault.address).toBe(context.wallet.address);
    expect(economy.ledger.lamports(vault.address)).toBeGreaterThan(0n);
    expect(await vault.balance()).toBe(economy.ledger.tokenBalance(vault.address));
    const empty = await createVault({ ...context, wallet: generateWallet() });
    expect(await empty.balance()).toBe(0n);
  });

  it('pays no wallet without a token account: it would pay the rent, which the wallet takes back by closing it', async () => {
    const to = generateWallet().address;
    const [tokens, lamports] = [economy.ledger.tokenBalance(vault.address), economy.ledger.lamports(vault.address)];
    const missing = await failure(vault.transfer({ to, amount: 1000n, key: 'test:no-account' }));
    expect([missing.status, missing.code]).toEqual([409, 'recipient_account_missing']);
    expect(missing.message).toContain('nothing was sent');
    expect(economy.ledger.tokenBalance(vault.address)).toBe(tokens);
    expect(economy.ledger.lamports(vault.address)).toBe(lamports);
    expect(await rowOf('test:no-account')).toBeUndefined();
    // Once the wallet has opened its account (at its own cost), the same transfer goes through, and the vault pays
    // nothing but the transaction's fee.
    await economy.ledger.openTokenAccount(to);
    await vault.transfer({ to, amount: 1000n, key: 'test:no-account' });
    expect(economy.ledger.tokenBalance(to)).toBe(1000n);
    expect(lamports - economy.ledger.lamports(vault.address)).toBeLessThan(10_000n);
  });

  it('moves exactly the amount', async () => {
    const to = await openedWallet();
    const before = economy.ledger.tokenBalance(vault.address);
    const amount = usdToAtomic('1.234567');
    const { transaction } = await vault.transfer({ to, amount, key: 'test:exact', memo: 'refund' });
    expect(economy.ledger.tokenBalance(to)).toBe(amount);
    expect(economy.ledger.tokenBalance(vault.address)).toBe(before - amount);
    expect(economy.ledger.transaction(transaction)?.err).toBeNull();
    expect(await rowOf('test:exact')).toMatchObject({ status: 'confirmed', transaction, to_address: to, amount });
  });

  it('sends a key once, however often and however concurrently it is asked', async () => {
    const to = await openedWallet();
    const before = economy.ledger.tokenBalance(vault.address);
    const results = await Promise.all([1, 2, 3].map(() => vault.transfer({ to, amount: 1000n, key: 'test:once' })));
    const again = await vault.transfer({ to, amount: 1000n, key: 'test:once' });
    expect(new Set([...results, again].map((r) => r.transaction)).size).toBe(1);
    expect(economy.ledger.tokenBalance(to)).toBe(1000n);
    expect(economy.ledger.tokenBalance(vault.address)).toBe(before - 1000n);
    // The same key for another transfer is a caller's bug: refused, nothing sent.
    const reused = await failure(vault.transfer({ to, amount: 2000n, key: 'test:once' }));
    expect([reused.status, reused.code]).toEqual([409, 'vault_key_reused']);
    expect(economy.ledger.tokenBalance(to)).toBe(1000n);
  });

  it('refuses more than it holds with 409, moving nothing and recording nothing', async () => {
    const to = generateWallet().address;
    const held = economy.ledger.tokenBalance(vault.address);
    const error = await failure(vault.transfer({ to, amount: held + 1n, key: 'test:too-much' }));
    expect([error.status, error.code]).toEqual([409, 'vault_insufficient_funds']);
    expect(economy.ledger.tokenBalance(vault.address)).toBe(held);
    expect(economy.ledger.tokenBalance(to)).toBe(0n);
    expect(await rowOf('test:too-much')).toBeUndefined();
  });

  it('answers 503 chain_unavailable with Retry-After when the chain does not answer, moving nothing', async () => {
    const offline = await createVault({ ...context, rpcUrl: 'http://127.0.0.1:9' });
    const held = economy.ledger.tokenBalance(vault.address);
    const error = await failure(offline.transfer({ to: generateWallet().address, amount: 10n, key: 'test:offline' }));
    expect([error.status, error.code, error.headers['retry-after']]).toEqual([503, 'chain_unavailable', '5']);
    expect(economy.ledger.tokenBalance(vault.address)).toBe(held);
    expect(await rowOf('test:offline')).toBeUndefined();
  });

  it('rejects malformed input before touching the chain', async () => {
    await expect(vault.transfer({ to: generateWallet().address, amount: 0n, key: 'test:zero' })).rejects.toThrow(
      /positive/,
    );
    await expect(vault.transfer({ to: 'not-an-address', amount: 1n, key: 'test:bad-to' })).rejects.toThrow();
    await expect(vault.transfer({ to: generateWallet().address, amount: 1n, key: '' })).rejects.toThrow(/key/);
  });

  it('resends the same transaction while its blockhash lives, and a new one once it expired unlanded', async () => {
    const proxy = await lossyRpc(economy.rpcUrl);
    try {
      const lossy = await createVault({ ...context, rpcUrl: proxy.url });
      const to = await openedWallet();
      const held = economy.ledger.tokenBalance(vault.address);
      proxy.lose = true;
      const lost = await failure(lossy.transfer({ to, amount: 777n, key: 'test:lost' }));
      expect([lost.status, lost.code]).toEqual([503, 'transfer_pending']);
      const recorded = (await rowOf('test:lost'))!;
      expect(recorded.status).toBe('signed');
      expect(economy.ledger.transaction(recorded.transaction)).toBeUndefined();
      expect(economy.ledger.tokenBalance(to)).toBe(0n);

      // Lost again, then the blockhash expires without the transaction ever landing: a new one is signed.
      await failure(lossy.transfer({ to, amount: 777n, key: 'test:lost' }));
      expect((await rowOf('test:lost'))!.transaction).toBe(recorded.transaction);
      economy.ledger.warp(DEFAULT_BLOCKHASH_LIFETIME_SLOTS + 1);
      proxy.lose = false;
      const { transaction } = await lossy.transfer({ to, amount: 777n, key: 'test:lost' });
      expect(transaction).not.toBe(recorded.transaction);
      expect(economy.ledger.transaction(recorded.transaction)).toBeUndefined();
      expect(economy.ledger.tokenBalance(to)).toBe(777n);
      expect(economy.ledger.tokenBalance(vault.address)).toBe(held - 777n);
      expect(await rowOf('test:lost')).toMatchObject({ status: 'confirmed', transaction, attempts: 2 });

      // A transfer lost once but still within its blockhash's life goes out as the same transaction.
      proxy.lose = true;
      await failure(lossy.transfer({ to, amount: 5n, key: 'test:lost-briefly' }));
      const first = (await rowOf('test:lost-briefly'))!.transaction;
      proxy.lose = false;
      expect(await lossy.transfer({ to, amount: 5n, key: 'test:lost-briefly' })).toEqual({ transaction: first });
      expect(economy.ledger.tokenBalance(to)).toBe(782n);
    } finally {
      await proxy.close();
    }
  });

  it('does not resend a transfer that landed though the crash left it unconfirmed in the database', async () => {
    const to = await openedWallet();
    const { transaction } = await vault.transfer({ to, amount: 4242n, key: 'test:landed' });
    const held = economy.ledger.tokenBalance(vault.address);
    // As if the process died between the broadcast and recording its confirmation.
    await context.db
      .updateTable('runtime_vault_transfers')
      .set({ status: 'signed', confirmed_at: null })
      .where('key', '=', 'test:landed')
      .execute();
    economy.ledger.warp(DEFAULT_BLOCKHASH_LIFETIME_SLOTS + 1);
    expect(await vault.transfer({ to, amount: 4242n, key: 'test:landed' })).toEqual({ transaction });
    expect(economy.ledger.tokenBalance(to)).toBe(4242n);
    expect(economy.ledger.tokenBalance(vault.address)).toBe(held);
    expect((await rowOf('test:landed'))!.status).toBe('confirmed');
  });
});
