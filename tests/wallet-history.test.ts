import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOLANA_DEVNET, USDC_DEVNET, WALLET_ACTIVITY_TIERS, routeMeta, usdToAtomic, walletHistory, type WalletActivityTier } from '@agent-economy/contracts';
import { BadRequestError, InternalServerError, PaymentRequiredError, createClient, walletFromSecretKey } from '@agent-economy/sdk';
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
import { MEMO_PROGRAM, TOKEN_2022_PROGRAM, associatedTokenAddress } from '../servers/src/ledger/programs';
import { parseTransaction } from '../servers/src/ledger/wire';
import { generateWallet, signEd25519, type Wallet } from '../servers/src/runtime/wallet';
import { solanaSource } from '../servers/src/upstream/solana';
import { createWalletHistoryApp } from '../servers/src/services/wallet-history';
import { historyReader } from '../servers/src/services/wallet-history/history';
import { analyse, chargedTier, parseSince, tierFor, tierPriceUsd, type WalletTransaction } from '../servers/src/services/wallet-history/domain';
import { startEconomy, type Economy } from './support/economy';
import { startService, type RunningService } from './support/servers';

const ZERO = { protocols: { kind: 'fixed', usd: '0' } } as const;
const LOADER_PROGRAM = 'BPFLoaderUpgradeab1e11111111111111111111111';
const SOL = 1_000_000_000n;

describe('activity tiers (pure)', () => {
  it('puts 99/100, 999/1000 and 9999/10000 on either side of each boundary', () => {
    const cases: [number, WalletActivityTier][] = [
      [0, 'light'],
      [99, 'light'],
      [100, 'moderate'],
      [999, 'moderate'],
      [1000, 'heavy'],
      [9999, 'heavy'],
      [10000, 'whale'],
      [50000, 'whale'],
    ];
    expect(cases.map(([n]) => [n, tierFor(n)])).toEqual(cases);
    expect(() => tierFor(-1)).toThrow(RangeError);
    expect(() => tierFor(1.5)).toThrow(RangeError);
  });

  it('prices tiers as the contract states, and as a deployment reprices them', () => {
    const contract = routeMeta(walletHistory.router.protocols).payment;
    expect(contract.kind === 'tiered' && contract.tiers.map((t) => [t.id, t.usd])).toEqual(WALLET_ACTIVITY_TIERS.map((t) => [t.id, t.usd]));
    expect((['light', 'moderate', 'heavy', 'whale'] as const).map((t) => tierPriceUsd(contract, t))).toEqual(['0.02', '0.05', '0.1', '0.15']);
    expect(tierPriceUsd({ kind: 'free' }, 'whale')).toBe('0');
    expect(tierPriceUsd({ kind: 'fixed', usd: '0.07' }, 'light')).toBe('0.07');
    expect(tierPriceUsd({ kind: 'adaptive', minUsd: '0.03', maxUsd: '0.12' }, 'light')).toBe('0.03');
    expect(tierPriceUsd({ kind: 'adaptive', minUsd: '0.03', maxUsd: '0.12' }, 'whale')).toBe('0.12');
    // a paid amount names its tier; nothing paid keeps the estimate's
    expect(chargedTier(contract, 'light', 50_000n)).toBe('moderate');
    expect(chargedTier(contract, 'heavy', undefined)).toBe('heavy');
  });

  it('accepts only real instants for since', () => {
    expect(parseSince(undefined)).toBeUndefined();
    expect(parseSince('2025-03-01T10:00:00.000Z')).toEqual(new Date(Date.UTC(2025, 2, 1, 10)));
    expect(parseSince('2025-02-30T00:00:00.000Z')).toEqual({ error: 'is not a real date and time' });
    expect(parseSince('2025-01-01T24:30:00.000Z')).toEqual({ error: 'is not a real date and time' });
  });
});

describe('protocol breakdown (pure)', () => {
  const JUPITER = 'JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4';
  const WHIRLPOOL = 'whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc';
  const RAYDIUM_CPMM = 'CPMMoo8L3F4NbTegBCKVNunggL7H1ZpdTHKxQB5qKP1C';
  const MARINADE = 'MarBmsSgKXdrN1egZf5sqe1TMai9K1rChYNDJgjq7aD';
  const PUMP = '6EF8rrecthR5Dkzon8Nwu78hRvfCKubJ14M5uBEwF6P';
  const TOKEN = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
  const BUDGET = 'ComputeBudget111111111111111111111111111111';
  const MYSTERY = 'Myst3ry1111111111111111111111111111111111111';
  const day = (d: number, h = 0) => Date.UTC(2025, 5, d, h) / 1000;
  const tx = (over: Partial<WalletTransaction> & { programs: string[]; blockTime: number }): WalletTransaction => ({
    signature: `sig${over.blockTime}`,
    failed: false,
    feePaid: 5000n,
    lamportChange: 0n,
    tokenChanges: [],
    ...over,
  });
  const history = [
    // a Jupiter swap routed through Whirlpools and Raydium: 20 USDC out, SOL in
    tx({
      blockTime: day(1, 9),
      programs: [BUDGET, JUPITER, WHIRLPOOL, RAYDIUM_CPMM, TOKEN],
      lamportChange: 150_000_000n,
      tokenChanges: [{ mint: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', decimals: 6, change: -20_000_000n }],
    }),
    // a second swap the same day, USDT in
    tx({ blockTime: day(1, 18), programs: [JUPITER, WHIRLPOOL, TOKEN], tokenChanges: [{ mint: 'Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB', decimals: 6, change: 2_500_000n }] }),
    // staking SOL for mSOL: nothing that can be priced
    tx({ blockTime: day(3), programs: [MARINADE, TOKEN], lamportChange: -1_000_000_000n, tokenChanges: [{ mint: 'mSoLzYCxHdYgdzU16g5QSh3i5K3z3KZK7ytfqcJm7So', decimals: 9, change: 990_000_000n }] }),
    // a failed pump.fun buy paid by someone else, and a program nobody labels
    tx({ blockTime: day(4), programs: [PUMP, MYSTERY], failed: true, feePaid: 0n }),
  ];

  it('counts each protocol once per transaction, with its programs, days, share and priced volume', () => {
    const result = analyse(history);
    expect(result).toMatchObject({
      transactionCount: 4,
      failedTransactionCount: 1,
      firstActivityAt: '2025-06-01T09:00:00.000Z',
      lastActivityAt: '2025-06-04T00:00:00.000Z',
      activeDays: 3,
      feesPaidLamports: '15000',
      unknownPrograms: [{ programId: MYSTERY, transactionCount: 1 }],
    });
    const byId = Object.fromEntries(result.protocols.map((p) => [p.protocol, p]));
    expect(result.protocols.map((p) => [p.protocol, p.transactionCount])).toEqual([
      ['spl-token', 3],
      ['jupiter', 2],
      ['orca', 2],
      ['compute-budget', 1],
      ['marinade', 1],
      ['pump-fun', 1],
      ['raydium', 1],
    ]);
    expect(byId.jupiter).toEqual({
      protocol: 'jupiter',
      name: 'Jupiter',
      category: 'aggregator',
      programIds: [JUPITER],
      transactionCount: 2,
      sharePercent: 50,
      firstInteractionAt: '2025-06-01T09:00:00.000Z',
      lastInteractionAt: '2025-06-01T18:00:00.000Z',
      activeDays: 1,
      // 20 USDC out plus 2.5 USDT in; the SOL leg has no price here
      volumeUsd: '22.5',
    });
    expect([byId.orca!.category, byId.raydium!.category, byId['pump-fun']!.category, byId.marinade!.category]).toEqual(['dex', 'dex', 'launchpad', 'liquid_staking']);
    expect([byId.marinade!.volumeUsd, byId['pump-fun']!.volumeUsd, byId['compute-budget']!.volumeUsd, byId['spl-token']!.volumeUsd]).toEqual([null, '0', null, '22.5']);
    expect(byId['spl-token']!.sharePercent).toBe(75);
    expect(result.categories).toEqual([
      { category: 'payments', transactionCount: 3, sharePercent: 75 },
      { category: 'dex', transactionCount: 2, sharePercent: 50 },
      { category: 'aggregator', transactionCount: 2, sharePercent: 50 },
      { category: 'launchpad', transactionCount: 1, sharePercent: 25 },
      { category: 'liquid_staking', transactionCount: 1, sharePercent: 25 },
      { category: 'system', transactionCount: 1, sharePercent: 25 },
    ].sort((a, b) => b.transactionCount - a.transactionCount || a.category.localeCompare(b.category)));
  });

  it('describes an empty history', () => {
    expect(analyse([])).toEqual({
      transactionCount: 0,
      failedTransactionCount: 0,
      firstActivityAt: null,
      lastActivityAt: null,
      activeDays: 0,
      feesPaidLamports: '0',
      protocols: [],
      categories: [],
      unknownPrograms: [],
    });
  });
});

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

const memo = (text: string): Instruction => ({ programAddress: address(MEMO_PROGRAM), data: new TextEncoder().encode(text) });
const signer = (w: Wallet) => createNoopSigner(address(w.address));

describe('a wallet history on the local ledger', () => {
  let economy: Economy;
  let service: RunningService;
  const wallet = generateWallet();
  const friend = generateWallet();
  const early: string[] = [];
  const late: string[] = [];
  let failedSignatures: string[] = [];
  const history = () => service.client.walletHistory;
  const quoteRows = async () => Number((await service.database.db.selectFrom('wallet_history_quotes').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n);

  beforeAll(async () => {
    economy = await startEconomy();
    const { ledger } = economy;
    service = await startService((c) => createWalletHistoryApp({ ...c, prices: ZERO }), { id: 'wallet-history', rpcUrl: economy.rpcUrl });
    const usdc = USDC_DEVNET;
    // Received: two airdrops (System transfers the faucet pays) and a token account opened for the wallet.
    early.push(await ledger.airdrop(wallet.address, 3n * SOL));
    early.push(await ledger.airdrop(wallet.address, (3n * SOL) / 2n));
    await ledger.openTokenAccount(friend.address);
    early.push(await ledger.openTokenAccount(wallet.address).then(() => ledger.signaturesForAddress(wallet.address, { limit: 1, maxSlot: ledger.slot() })[0]!.signature));
    // Minting touches the wallet's token account, not the wallet: it is not in the wallet's history.
    await ledger.mintTo(wallet.address, 5_000_000n);
    // A new second of block time, so that `since` can split the history.
    const lastEarly = ledger.transaction(early[2]!)!.blockTime;
    while (ledger.blockTime(ledger.slot()) <= lastEarly) await new Promise((r) => setTimeout(r, 100));

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
    late.push(land(ledger, wallet, [getTransferSolInstruction({ source: signer(wallet), destination: address(friend.address), amount: SOL / 4n }), memo('for lunch')]));
    const mint = generateWallet();
    late.push(
      land(
        ledger,
        wallet,
        [
          getCreateAccountInstruction({ payer: signer(wallet), newAccount: signer(mint), lamports: ledger.minimumBalanceForRentExemption(82), space: 82, programAddress: address(TOKEN_2022_PROGRAM) }),
          getInitializeMint2Instruction({ mint: address(mint.address), decimals: 9, mintAuthority: address(wallet.address) }, { programAddress: address(TOKEN_2022_PROGRAM) }),
        ],
        [mint],
      ),
    );
    // Two that fail on chain (fee charged): a transfer beyond the balance, and garbage sent to the upgradeable loader (a program no label names).
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
    const garbage = land(ledger, wallet, [{ programAddress: address(LOADER_PROGRAM), accounts: [], data: new Uint8Array([9, 9, 9]) }]);
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
    expect(records().filter((r) => r.err !== null).map((r) => r.signature)).toEqual(failedSignatures);
    expect(economy.ledger.signaturesForAddress(wallet.address, { limit: 1000, maxSlot: economy.ledger.slot() }).map((r) => r.signature).sort()).toEqual(all().sort());
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
    expect(system).toMatchObject({ name: 'System Program', programIds: ['11111111111111111111111111111111'], sharePercent: 55.56 });
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
    expect(result).toMatchObject({ wallet: empty, tier: 'light', transactionCount: 0, firstActivityAt: null, lastActivityAt: null, activeDays: 0, protocols: [], categories: [], unknownPrograms: [] });
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
    expect(health).toMatchObject({ status: 'ok', service: 'wallet-history', version: '1.0.0', database: 'ok', upstream: { mode: 'chain', providers: [{ name: 'local-ledger', status: 'ok' }] } });
  });

  it('keeps a quote across a restart', async () => {
    const quote = await history().quote({ body: { wallet: wallet.address } });
    const restarted = await startService((c) => createWalletHistoryApp({ ...c, prices: ZERO }), { id: 'wallet-history', rpcUrl: economy.rpcUrl, database: service.database });
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
      createClient({ baseUrls: { 'wallet-history': paid.url }, wallet: await walletFromSecretKey(economy.buyer.secretKey), payments: { rpcUrl: economy.rpcUrl }, maxRetries: 0 });

    it('asks the quoted tier’s price in its 402, and nothing for a bad address', async () => {
      const quote = await paid.client.walletHistory.quote({ body: { wallet: busy.address } });
      expect([quote.estimatedTransactionCount, quote.tier, quote.priceUsd]).toEqual([99, 'light', '0.02']);
      const demand = await paid.client.walletHistory.protocols({ body: { wallet: busy.address } }).catch((e) => e);
      expect(demand).toBeInstanceOf(PaymentRequiredError);
      expect((demand as PaymentRequiredError).quote!.accepts[0]).toMatchObject({ amount: usdToAtomic(quote.priceUsd).toString(), asset: USDC_DEVNET, payTo: paid.context.paywall.payTo });
      const bad = await paid.client.walletHistory.protocols({ body: { wallet: 'zzz' } }).catch((e) => e);
      expect(bad).toBeInstanceOf(BadRequestError);
    });

    it('holds the quoted tier for its validity; a fresh estimate crosses into moderate at 100', async () => {
      await economy.ledger.airdrop(busy.address, 7_777_777n);
      const kept = await paid.client.walletHistory.quote({ body: { wallet: busy.address } });
      expect([kept.estimatedTransactionCount, kept.tier]).toEqual([99, 'light']);
      const fresh = await paid.client.walletHistory.quote({ body: { wallet: busy.address, since: '2000-01-01T00:00:00.000Z' } });
      expect([fresh.estimatedTransactionCount, fresh.tier, fresh.priceUsd]).toEqual([100, 'moderate', '0.05']);
      const demand = await paid.client.walletHistory.protocols({ body: { wallet: busy.address, since: '2000-01-01T00:00:00.000Z' } }).catch((e) => e);
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
      expect([whole.entries.length, whole.truncated, new Set(whole.entries.map((e) => e.signature)).size]).toEqual([1001, false, 1001]);
    });

    it('charges exactly the quoted price, moving it from buyer to seller on chain', async () => {
      const body = { wallet: busy.address, since: '2000-01-01T00:00:00.000Z' };
      const quote = await paid.client.walletHistory.quote({ body });
      const seller = paid.context.wallet.address;
      const before = [economy.ledger.tokenBalance(economy.buyer.address), economy.ledger.tokenBalance(seller)] as const;
      const client = await payingClient();
      const response = await client.walletHistory.protocols.withResponse({ body });
      expect(response.payment).toMatchObject({ amountUsd: quote.priceUsd, amount: '50000', payTo: seller, payer: economy.buyer.address });
      expect(response.data).toMatchObject({ tier: 'moderate', chargedUsd: '0.05', transactionCount: 100, failedTransactionCount: 0 });
      expect(response.data.protocols.map((p) => [p.protocol, p.transactionCount])).toEqual([['system', 100]]);
      expect([economy.ledger.tokenBalance(economy.buyer.address), economy.ledger.tokenBalance(seller)]).toEqual([before[0] - 50_000n, before[1] + 50_000n]);

      const light = await client.walletHistory.protocols.withResponse({ body: { wallet: wallet.address } });
      expect([light.payment!.amountUsd, light.data.tier, light.data.chargedUsd, light.data.transactionCount]).toEqual(['0.02', 'light', '0.02', 9]);
      expect(economy.ledger.tokenBalance(seller)).toBe(before[1] + 70_000n);
    });
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
      const error = await (service.client.walletHistory[route] as (args: unknown) => Promise<unknown>)({ body: { wallet: someone } }).catch((e) => e);
      expect(error, route).toBeInstanceOf(InternalServerError);
      expect([(error as InternalServerError).status, (error as InternalServerError).code, (error as InternalServerError).headers['retry-after']]).toEqual([502, 'upstream_unavailable', '5']);
    }
    const rows = await service.database.db.selectFrom('wallet_history_quotes').selectAll().execute();
    expect(rows).toEqual([]);
  });

  it('reports itself degraded', async () => {
    const health = await service.client.walletHistory.health();
    expect(health).toMatchObject({ status: 'degraded', upstream: { mode: 'chain', providers: [{ name: 'local-ledger', status: 'failing', lastSuccessAt: null }] } });
  });
});
