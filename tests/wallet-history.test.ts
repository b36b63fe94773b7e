import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Kysely } from 'kysely';
import { SOLANA_DEVNET, USDC_DEVNET, usdToAtomic } from '@agent-economy/contracts';
import {
  BadRequestError,
  InternalServerError,
  PaymentRequiredError,
  createClient,
  walletFromSecretKey,
} from '@agent-economy/sdk';
import { getSetComputeUnitLimitInstruction, getSetComputeUnitPriceInstruction } from '@solana-program/compute-budget';
import { getCreateAccountInstruction, getTransferSolInstruction } from '@solana-program/system';
import { getInitializeMint2Instruction, getTransferCheckedInstruction } from '@solana-program/token';
import {
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  createNoopSigner,
  createTransactionMessage,
  getTransactionEncoder,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Blockhash,
  type Instruction,
} from '@solana/kit';
import type { LocalLedger } from '../servers/src/ledger';
import { MEMO_PROGRAM, TOKEN_2022_PROGRAM, associatedTokenAddress } from '../servers/src/solana/programs';
import { parseTransaction } from '../servers/src/solana/wire';
import { generateWallet, signEd25519, type Wallet } from '../servers/src/solana/keys';
import { solanaSource } from '../servers/src/upstream/solana';
import { createWalletHistoryApp } from '../servers/src/services/wallet-history';
import { historyReader } from '../servers/src/services/wallet-history/history';
import { startEconomy, type Economy } from './support/economy';
import { startService, type RunningService } from './support/servers';

const ZERO = { protocols: { kind: 'fixed', usd: '0' } } as const;
const LOADER_PROGRAM = 'BPFLoaderUpgradeab1e11111111111111111111111';
const SOL = 1_000_000_000n;

/** Builds, signs and lands a legacy transaction on the ledger; returns its signature. */
function land(ledger: LocalLedger, feePayer: Wallet, instructions: Instruction[], signers: Wallet[] = []): string {
  const { blockhash, lastValidBlockHeight } = ledger.latestBlockhash('confirmed');
  const message = pipe(
    createTransactionMessage({ version: 'legacy' }),
    (m) => setTransactionMessageFeePayer(address(feePayer.address), m),
    (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash: blockhash as Blockhash, lastValidBlockHeight }, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const compiled = compileTransaction(message);
  const bytes = new Uint8Array(compiled.messageBytes);
  const signatures = Object.fromEntries([feePayer, ...signers].map((w) => [w.address, signEd25519(w, bytes)]));
  const wire = new Uint8Array(getTransactionEncoder().encode({ ...compiled, signatures: signatures as never }));
  const prepared = ledger.prepare(parseTransaction(wire));
  if ('error' in prepared) throw new Error(`not a valid transaction: ${JSON.stringify(prepared.error)}`);
  const outcome = ledger.submit(prepared);
  if (!outcome.landed) throw new Error(`did not land: ${JSON.stringify(outcome.err)}`);
  return outcome.record.signature;
}

const memo = (text: string): Instruction => ({
  programAddress: address(MEMO_PROGRAM),
  data: new TextEncoder().encode(text),
});
const signer = (w: Wallet) => createNoopSigner(address(w.address));

describe('a wallet history on the local ledger', () => {
  let economy: Economy;
  let service: RunningService;
  const wallet = generateWallet();
  const friend = generateWallet();
  const early: string[] = [];
  const late: string[] = [];
  let failedSignatures: string[] = [];
  /** How far the ledger's clock runs ahead of the wall clock. */
  let ledgerAhead = 0;
  const history = () => service.client.walletHistory;
  const quoteRows = async () =>
    Number(
      (
        await service.database.db
          .selectFrom('wallet_history_quotes')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  beforeAll(async () => {
    economy = await startEconomy({ ledgerNow: () => Date.now() + ledgerAhead });
    const { ledger } = economy;
    service = await startService((c) => createWalletHistoryApp({ ...c, prices: ZERO }), {
      id: 'wallet-history',
      rpcUrl: economy.rpcUrl,
    });
    const usdc = USDC_DEVNET;
    // Received: two airdrops (System transfers the faucet pays) and a token account opened for the wallet.
    early.push(await ledger.airdrop(wallet.address, 3n * SOL));
    early.push(await ledger.airdrop(wallet.address, (3n * SOL) / 2n));
    await ledger.openTokenAccount(friend.address);
    early.push(
      await ledger
        .openTokenAccount(wallet.address)
        .then(() => ledger.signaturesForAddress(wallet.address, { limit: 1, maxSlot: ledger.slot() })[0]!.signature),
    );
    // Minting touches the wallet's token account, not the wallet: it is not in the wallet's history.
    await ledger.mintTo(wallet.address, 5_000_000n);
    // A new second of block time, so that `since` can split the history: the ledger's clock moves 2 s on (a slot
    // starts at most one slotMs before now, so the next transaction's block time is over a second later).
    const lastEarly = ledger.transaction(early[2]!)!.blockTime;
    ledgerAhead += 2_000;
    expect(ledger.blockTime(ledger.slot())).toBeGreaterThan(lastEarly);

    // Sent by the wallet, which pays the fees.
    late.push(
      land(ledger, wallet, [
        getSetComputeUnitLimitInstruction({ units: 50_000 }),
        getSetComputeUnitPriceInstruction({ microLamports: 1000n }),
        getTransferCheckedInstruction({
          source: address(associatedTokenAddress(wallet.address, usdc)),
          mint: address(usdc),
          destination: address(associatedTokenAddress(friend.address, usdc)),
          authority: signer(wallet),
          amount: 1_500_000n,
          decimals: 6,
        }),
        memo('invoice 42'),
      ]),
    );
    late.push(land(ledger, wallet, [memo('hello chain')]));
    late.push(
      land(ledger, wallet, [
        getTransferSolInstruction({ source: signer(wallet), destination: address(friend.address), amount: SOL / 4n }),
        memo('for lunch'),
      ]),
    );
    const mint = generateWallet();
    late.push(
      land(
        ledger,
        wallet,
        [
          getCreateAccountInstruction({
            payer: signer(wallet),
            newAccount: signer(mint),
            lamports: ledger.minimumBalanceForRentExemption(82),
            space: 82,
            programAddress: address(TOKEN_2022_PROGRAM),
          }),
          getInitializeMint2Instruction(
            { mint: address(mint.address), decimals: 9, mintAuthority: address(wallet.address) },
            { programAddress: address(TOKEN_2022_PROGRAM) },
          ),
        ],
        [mint],
      ),
    );
    // Two that fail on chain (fee charged): a transfer beyond the balance, and garbage sent to the upgradeable loader
    // (a program no label names).
    const overdraw = land(ledger, wallet, [
      getTransferCheckedInstruction({
        source: address(associatedTokenAddress(wallet.address, usdc)),
        mint: address(usdc),
        destination: address(associatedTokenAddress(friend.address, usdc)),
        authority: signer(wallet),
        amount: 100_000_000n,
        decimals: 6,
      }),
    ]);
    const garbage = land(ledger, wallet, [
      { programAddress: address(LOADER_PROGRAM), accounts: [], data: new Uint8Array([9, 9, 9]) },
    ]);
    late.push(overdraw, garbage);
    failedSignatures = [overdraw, garbage];
  });
  afterAll(async () => {
    await service?.close();
    await economy?.close();
  });

  const all = () => [...early, ...late];
  const records = () => all().map((s) => economy.ledger.transaction(s)!);
  const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

  it('the history is what the test created (two failures among them)', () => {
    expect(
      records()
        .filter((r) => r.err !== null)
        .map((r) => r.signature),
    ).toEqual(failedSignatures);
    expect(
      economy.ledger
        .signaturesForAddress(wallet.address, { limit: 1000, maxSlot: economy.ledger.slot() })
        .map((r) => r.signature)
        .sort(),
    ).toEqual(all().sort());
  });

  it('quotes the transaction count, tier and price, and keeps the estimate for 10 minutes', async () => {
    const rowsBefore = await quoteRows();
    const quote = await history().quote({ body: { wallet: wallet.address } });
    expect(quote).toMatchObject({
      wallet: wallet.address,
      network: SOLANA_DEVNET,
      estimatedTransactionCount: 9,
      tier: 'light',
      // this deployment prices the route at 0
      priceUsd: '0',
      source: { mode: 'chain', providers: ['local-ledger'], asOf: quote.estimatedAt },
    });
    expect(quote.tiers.map((t) => [t.id, t.minTransactions, t.maxTransactions])).toEqual([
      ['light', 0, 99],
      ['moderate', 100, 999],
      ['heavy', 1000, 9999],
      ['whale', 10000, null],
    ]);
    expect(Date.parse(quote.validUntil) - Date.parse(quote.estimatedAt)).toBe(10 * 60 * 1000);
    expect(await quoteRows()).toBe(rowsBefore + 1);
    const again = await history().quote({ body: { wallet: wallet.address } });
    expect([again.estimatedAt, again.estimatedTransactionCount]).toEqual([quote.estimatedAt, 9]);
    expect(await quoteRows()).toBe(rowsBefore + 1);
  });

  it('counts only transactions at or after since', async () => {
    const from = economy.ledger.transaction(late[0]!)!.blockTime;
    const expected = records().filter((r) => r.blockTime >= from).length;
    expect(expected).toBeGreaterThanOrEqual(late.length);
    expect(expected).toBeLessThan(all().length);
    const quote = await history().quote({ body: { wallet: wallet.address, since: iso(from) } });
    expect(quote.estimatedTransactionCount).toBe(expected);
    const future = await history().quote({ body: { wallet: wallet.address, since: '2999-01-01T00:00:00.000Z' } });
    expect([future.estimatedTransactionCount, future.tier]).toEqual([0, 'light']);
    const analysis = await history().protocols({ body: { wallet: wallet.address, since: iso(from) } });
    expect(analysis.transactionCount).toBe(expected);
    expect(analysis.firstActivityAt).toBe(iso(from));
  });

  it('breaks the history down by protocol with exact counts, fees, volumes and days', async () => {
    const result = await history().protocols({ body: { wallet: wallet.address } });
    const times = records().map((r) => r.blockTime);
    const feesPaid = late.reduce((sum, s) => sum + economy.ledger.transaction(s)!.fee, 0n);
    const days = new Set(times.map((t) => Math.floor(t / 86_400))).size;
    expect(result).toMatchObject({
      wallet: wallet.address,
      network: SOLANA_DEVNET,
      tier: 'light',
      chargedUsd: '0',
      transactionCount: 9,
      failedTransactionCount: 2,
      truncated: false,
      firstActivityAt: iso(Math.min(...times)),
      lastActivityAt: iso(Math.max(...times)),
      activeDays: days,
      feesPaidLamports: feesPaid.toString(),
      unknownPrograms: [{ programId: LOADER_PROGRAM, transactionCount: 1 }],
      source: { mode: 'chain', providers: ['local-ledger'] },
    });
    expect(feesPaid).toBeGreaterThan(6n * 5000n); // the priority fee of the token transfer is in it
    expect(result.protocols.map((p) => [p.protocol, p.transactionCount, p.category, p.volumeUsd])).toEqual([
      ['system', 5, 'system', null],
      ['memo', 3, 'other', null],
      ['spl-token', 3, 'payments', '1.5'],
      ['associated-token-account', 1, 'system', null],
      ['compute-budget', 1, 'system', null],
      ['token-2022', 1, 'payments', '0'],
    ]);
    const system = result.protocols[0]!;
    expect(system).toMatchObject({
      name: 'System Program',
      programIds: ['11111111111111111111111111111111'],
      sharePercent: 55.56,
    });
    expect(result.protocols.find((p) => p.protocol === 'memo')!.programIds).toEqual([MEMO_PROGRAM]);
    expect(result.categories).toEqual([
      { category: 'system', transactionCount: 6, sharePercent: 66.67 },
      { category: 'payments', transactionCount: 4, sharePercent: 44.44 },
      { category: 'other', transactionCount: 3, sharePercent: 33.33 },
    ]);
  });

  it('describes a wallet without history', async () => {
    const empty = generateWallet().address;
    const result = await history().protocols({ body: { wallet: empty } });
    expect(result).toMatchObject({
      wallet: empty,
      tier: 'light',
      transactionCount: 0,
      firstActivityAt: null,
      lastActivityAt: null,
      activeDays: 0,
      protocols: [],
      categories: [],
      unknownPrograms: [],
    });
  });

  it('refuses bad input with 400 naming the field, and keeps no quote for it', async () => {
    const rowsBefore = await quoteRows();
    const cases: [unknown, string][] = [
      [{ wallet: 'not-an-address' }, 'body.wallet'],
      [{ wallet: '1111' }, 'body.wallet'],
      [{}, 'body.wallet'],
      [{ wallet: wallet.address, since: 'yesterday' }, 'body.since'],
      [{ wallet: wallet.address, since: '2025-02-30T00:00:00.000Z' }, 'body.since'],
      [{ wallet: wallet.address, limit: 5 }, 'body.limit'],
    ];
    for (const [body, field] of cases) {
      for (const route of ['quote', 'protocols'] as const) {
        const error = await (history()[route] as (args: unknown) => Promise<unknown>)({ body }).catch((e) => e);
        expect(error, `${route} ${JSON.stringify(body)}`).toBeInstanceOf(BadRequestError);
        expect((error as BadRequestError).fields.map((f) => f.field)).toContain(field);
      }
    }
    expect(await quoteRows()).toBe(rowsBefore);
  });

  it('reports health with the chain provider answering', async () => {
    const health = await history().health();
    expect(health).toMatchObject({
      status: 'ok',
      service: 'wallet-history',
      version: '1.0.0',
      database: 'ok',
      upstream: { mode: 'chain', providers: [{ name: 'local-ledger', status: 'ok' }] },
    });
  });

  it('keeps a quote across a restart', async () => {
    const quote = await history().quote({ body: { wallet: wallet.address } });
    const restarted = await startService((c) => createWalletHistoryApp({ ...c, prices: ZERO }), {
      id: 'wallet-history',
      rpcUrl: economy.rpcUrl,
      database: service.database,
    });
    try {
      const again = await restarted.client.walletHistory.quote({ body: { wallet: wallet.address } });
      expect(again).toEqual({ ...quote, source: again.source });
      expect(again.source.asOf).toBe(quote.estimatedAt);
    } finally {
      await restarted.close();
    }
  });

  describe('paid through the economy, priced by tier', () => {
    let paid: RunningService;
    const busy = generateWallet();
    beforeAll(async () => {
      paid = await economy.startPaidService(createWalletHistoryApp, { id: 'wallet-history' });
      // 99 transactions: the last light count.
      for (let i = 0; i < 99; i++) await economy.ledger.airdrop(busy.address, 1_000_000n + BigInt(i));
    });

    const payingClient = async () =>
      createClient({
        baseUrls: { 'wallet-history': paid.url },
        wallet: await walletFromSecretKey(economy.buyer.secretKey),
        payments: { rpcUrl: economy.rpcUrl },
        maxRetries: 0,
      });

    it('asks the quoted tier’s price in its 402, and nothing for a bad address', async () => {
      const quote = await paid.client.walletHistory.quote({ body: { wallet: busy.address } });
      expect([quote.estimatedTransactionCount, quote.tier, quote.priceUsd]).toEqual([99, 'light', '0.02']);
      const demand = await paid.client.walletHistory.protocols({ body: { wallet: busy.address } }).catch((e) => e);
      expect(demand).toBeInstanceOf(PaymentRequiredError);
      expect((demand as PaymentRequiredError).quote!.accepts[0]).toMatchObject({
        amount: usdToAtomic(quote.priceUsd).toString(),
        asset: USDC_DEVNET,
        payTo: paid.context.paywall.payTo,
      });
      const bad = await paid.client.walletHistory.protocols({ body: { wallet: 'zzz' } }).catch((e) => e);
      expect(bad).toBeInstanceOf(BadRequestError);
    });

    it('holds the quoted tier for its validity; a fresh estimate crosses into moderate at 100', async () => {
      await economy.ledger.airdrop(busy.address, 7_777_777n);
      const kept = await paid.client.walletHistory.quote({ body: { wallet: busy.address } });
      expect([kept.estimatedTransactionCount, kept.tier]).toEqual([99, 'light']);
      const fresh = await paid.client.walletHistory.quote({
        body: { wallet: busy.address, since: '2000-01-01T00:00:00.000Z' },
      });
      expect([fresh.estimatedTransactionCount, fresh.tier, fresh.priceUsd]).toEqual([100, 'moderate', '0.05']);
      const demand = await paid.client.walletHistory
        .protocols({ body: { wallet: busy.address, since: '2000-01-01T00:00:00.000Z' } })
        .catch((e) => e);
      expect((demand as PaymentRequiredError).quote!.accepts[0]!.amount).toBe('50000');
    });

    it('reads a 1,001-transaction wallet across two signature pages: heavy, priced 0.10', async () => {
      const heavy = generateWallet();
      for (let i = 0; i < 1001; i++) await economy.ledger.airdrop(heavy.address, 2_000_000n + BigInt(i));
      const quote = await paid.client.walletHistory.quote({ body: { wallet: heavy.address } });
      expect([quote.estimatedTransactionCount, quote.tier, quote.priceUsd]).toEqual([1001, 'heavy', '0.1']);
      const demand = await paid.client.walletHistory.protocols({ body: { wallet: heavy.address } }).catch((e) => e);
      expect((demand as PaymentRequiredError).quote!.accepts[0]!.amount).toBe('100000');
      // The reader stops at its limit and says the history goes on.
      const reader = historyReader(solanaSource({ rpcUrl: economy.rpcUrl, localChain: true }));
      const capped = await reader.signatures(heavy.address, undefined, 1000);
      expect([capped.entries.length, capped.truncated]).toEqual([1000, true]);
      const whole = await reader.signatures(heavy.address, undefined, 1001);
      expect([whole.entries.length, whole.truncated, new Set(whole.entries.map((e) => e.signature)).size]).toEqual([
        1001,
        false,
        1001,
      ]);
    });

    it('charges exactly the quoted price, moving it from buyer to seller on chain', async () => {
      const body = { wallet: busy.address, since: '2000-01-01T00:00:00.000Z' };
      const quote = await paid.client.walletHistory.quote({ body });
      const seller = paid.context.wallet.address;
      const before = [economy.ledger.tokenBalance(economy.buyer.address), economy.ledger.tokenBalance(seller)] as const;
      const client = await payingClient();
      const response = await client.walletHistory.protocols.withResponse({ body });
      expect(response.payment).toMatchObject({
        amountUsd: quote.priceUsd,
        amount: '50000',
        payTo: seller,
        payer: economy.buyer.address,
      });
      expect(response.data).toMatchObject({
        tier: 'moderate',
        chargedUsd: '0.05',
        transactionCount: 100,
        failedTransactionCount: 0,
      });
      expect(response.data.protocols.map((p) => [p.protocol, p.transactionCount])).toEqual([['system', 100]]);
      expect([economy.ledger.tokenBalance(economy.buyer.address), economy.ledger.tokenBalance(seller)]).toEqual([
        before[0] - 50_000n,
        before[1] + 50_000n,
      ]);

      const light = await client.walletHistory.protocols.withResponse({ body: { wallet: wallet.address } });
      expect([light.payment!.amountUsd, light.data.tier, light.data.chargedUsd, light.data.transactionCount]).toEqual([
        '0.02',
        'light',
        '0.02',
        9,
      ]);
      expect(economy.ledger.tokenBalance(seller)).toBe(before[1] + 70_000n);
    });
  });
});

describe('a long history', () => {
  let economy: Economy;
  let service: RunningService;
  let proxy: Server;
  const seen: string[] = [];
  const wallet = generateWallet();

  beforeAll(async () => {
    economy = await startEconomy();
    // Between the service and the chain: every JSON-RPC HTTP request it makes, by the methods in its body.
    proxy = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      seen.push([...new Set([...body.toString().matchAll(/"method":"(\w+)"/g)].map((m) => m[1]))].join(','));
      const upstream = await fetch(economy.rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      res
        .writeHead(upstream.status, { 'content-type': 'application/json' })
        .end(Buffer.from(await upstream.arrayBuffer()));
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const rpcUrl = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
    service = await startService((c) => createWalletHistoryApp({ ...c, prices: ZERO }), {
      id: 'wallet-history',
      rpcUrl,
    });
    await economy.ledger.airdrop(wallet.address, SOL);
    for (let i = 0; i < 150; i++) land(economy.ledger, wallet, [memo(`tick ${i}`)]);
  });
  afterAll(async () => {
    await service?.close();
    proxy?.close();
    await economy?.close();
  });

  it('reads transactions a hundred to a request, and a finalized history only once', async () => {
    const protocols = () => service.client.walletHistory.protocols({ body: { wallet: wallet.address } });
    const batches = () => seen.filter((methods) => methods === 'getTransaction').length;
    const signatureReads = () => seen.filter((methods) => methods === 'getSignaturesForAddress').length;
    let before = batches();
    const readsBefore = signatureReads();
    const first = await protocols();
    expect(first.transactionCount).toBe(151);
    // Unquoted: the call's fresh estimate reads the signatures, and the answer is made from that same list.
    expect(signatureReads() - readsBefore).toBe(1);
    expect(first.protocols.find((p) => p.protocol === 'memo')?.transactionCount).toBe(150);
    // 151 transactions: two batched requests, not 151.
    expect(batches() - before).toBe(2);
    // 32 slots later the transactions are finalized: read once more and kept, then never read again.
    economy.ledger.warp(40);
    await protocols();
    before = batches();
    const again = await protocols();
    expect(batches() - before).toBe(0);
    expect(again.protocols).toEqual(first.protocols);
    expect(again.transactionCount).toBe(151);
  });

  it('keeps finalized analyses in the database: a restarted service reads none of them from the chain', async () => {
    const body = { wallet: wallet.address };
    const answer = await service.client.walletHistory.protocols({ body });
    // Written after the answer that read them.
    const kept = () =>
      (service.database.db as unknown as Kysely<{ wallet_history_transactions: { wallet: string } }>)
        .selectFrom('wallet_history_transactions')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('wallet', '=', wallet.address)
        .executeTakeFirstOrThrow();
    await vi.waitFor(async () => expect(Number((await kept()).n)).toBe(151), { timeout: 10_000 });
    const restarted = await startService((c) => createWalletHistoryApp({ ...c, prices: ZERO }), {
      id: 'wallet-history',
      rpcUrl: service.context.rpcUrl,
      database: service.database,
    });
    try {
      const before = seen.length;
      const again = await restarted.client.walletHistory.protocols({ body });
      const reads = (from: number) => seen.slice(from).filter((m) => m !== 'getGenesisHash');
      expect(reads(before)).toEqual(['getSignaturesForAddress']);
      expect({ ...again, source: undefined }).toEqual({ ...answer, source: undefined });
      // A new transaction is not finalized yet: it alone is read from the chain, and the answer counts it.
      land(economy.ledger, wallet, [memo('one more')]);
      const after = seen.length;
      const more = await restarted.client.walletHistory.protocols({ body });
      expect(reads(after)).toEqual(['getSignaturesForAddress', 'getTransaction']);
      expect(more.transactionCount).toBe(152);
      expect(more.protocols.find((p) => p.protocol === 'memo')?.transactionCount).toBe(151);
    } finally {
      await restarted.stopServer();
    }
  });
});

describe('when the chain does not answer', () => {
  let service: RunningService;
  // No rpcUrl: the service's chain is a port nothing listens on.
  beforeAll(async () => {
    service = await startService(createWalletHistoryApp, { id: 'wallet-history' });
  });
  afterAll(() => service?.close());
  const someone = generateWallet().address;

  it('answers 502 upstream_unavailable with Retry-After, before any payment', async () => {
    for (const route of ['quote', 'protocols'] as const) {
      const error = await (service.client.walletHistory[route] as (args: unknown) => Promise<unknown>)({
        body: { wallet: someone },
      }).catch((e) => e);
      expect(error, route).toBeInstanceOf(InternalServerError);
      expect([
        (error as InternalServerError).status,
        (error as InternalServerError).code,
        (error as InternalServerError).headers['retry-after'],
      ]).toEqual([502, 'upstream_unavailable', '5']);
    }
    const rows = await service.database.db.selectFrom('wallet_history_quotes').selectAll().execute();
    expect(rows).toEqual([]);
  });

  it('reports itself degraded', async () => {
    const health = await service.client.walletHistory.health();
    expect(health).toMatchObject({
      status: 'degraded',
      upstream: { mode: 'chain', providers: [{ name: 'local-ledger', status: 'failing', lastSuccessAt: null }] },
    });
  });
});
