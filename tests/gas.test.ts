import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  COMPUTE_BUDGET_PROGRAM_ADDRESS,
  getSetComputeUnitLimitInstruction,
  getSetComputeUnitPriceInstruction,
} from '@solana-program/compute-budget';
import { getTransferSolInstruction } from '@solana-program/system';
import {
  AccountRole,
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  createNoopSigner,
  createSolanaRpc,
  createTransactionMessage,
  getBase64Decoder,
  getBase64Encoder,
  getTransactionEncoder,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Base64EncodedWireTransaction,
  type Blockhash,
  type Instruction,
  type Signature,
} from '@solana/kit';
import {
  BadRequestError,
  InternalServerError,
  PaymentOutcomeUnknownError,
  UnprocessableEntityError,
  createClient,
  walletFromSecretKey,
} from '@agent-economy/sdk';
import { LocalLedger, startLedgerRpc, type LedgerRpcServer } from '../servers/src/ledger';
import { MEMO_PROGRAM } from '../servers/src/solana/programs';
import { generateWallet, signEd25519, type Wallet } from '../servers/src/solana/keys';
import { createGasApp } from '../servers/src/services/gas';
import { lamportsToSol } from '../servers/src/services/gas/domain';
import { startEconomy, type Economy } from './support/economy';
import { startService, type RunningService } from './support/servers';

// The gas optimizer against a local ledger whose slots are an hour long, so that the clock moves only
// by warp: 150 slots of real transactions with known compute-unit prices are played onto it, and every
// figure the service derives is checked against values computed here from what was sent.

const HOUR_SLOTS = 3_600_000;
const FREE = { kind: 'fixed', usd: '0' } as const;
const ZERO_PRICES = { recommend: FREE, networkStatus: FREE, simulate: FREE, feeHistory: FREE };
const DEAD_RPC = 'http://127.0.0.1:9';

let ledger: LocalLedger;
let rpcServer: LedgerRpcServer;
let rpc: ReturnType<typeof createSolanaRpc>;
let service: RunningService;
/** The gas service's clock: real time, or pinned where a test needs to know which quarter hour it is in. */
let pinned: Date | undefined;
const clock = () => pinned ?? new Date();
const payer = generateWallet();
/** An account some transactions write-lock at a higher price: its own local fee market. */
const hot = generateWallet();

interface PlayedSlot {
  slot: number;
  prices: number[];
  hotPrices: number[];
}
let played: PlayedSlot[] = [];
let sentCount = 0;

const gas = () => service.client.gas;

// ---------------------------------------------------------------------------------------------------
// Independent arithmetic: what the service should answer, computed here from what was sent

const round = (value: number, places: number) => Math.round(value * 10 ** places) / 10 ** places;

function nearestRank(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (p === 0) return sorted[0]!;
  return sorted[Math.ceil((p * sorted.length) / 100) - 1]!;
}
const percentilesOf = (values: number[]) => ({
  p0: nearestRank(values, 0),
  p25: nearestRank(values, 25),
  p50: nearestRank(values, 50),
  p75: nearestRank(values, 75),
  p95: nearestRank(values, 95),
  p100: nearestRank(values, 100),
});
const maxOf = (a: ReturnType<typeof percentilesOf>, b: ReturnType<typeof percentilesOf>) =>
  Object.fromEntries(Object.entries(a).map(([k, v]) => [k, Math.max(v, b[k as keyof typeof b])]));

/** Per slot, the lowest price that landed in it (0 for an empty slot), as a node reports it. */
const globalFees = () =>
  played.map((s) => ({
    slot: s.slot,
    fee: s.prices.length + s.hotPrices.length > 0 ? Math.min(...s.prices, ...s.hotPrices) : 0,
  }));
/** Over [hot]: the block's lowest fee raised to the lowest paid by transactions write-locking `hot`. */
const hotFees = () =>
  globalFees().map((g, i) => ({
    slot: g.slot,
    fee: played[i]!.hotPrices.length > 0 ? Math.max(g.fee, Math.min(...played[i]!.hotPrices)) : g.fee,
  }));

function slopeOf(points: { slot: number; fee: number }[]): number {
  const n = points.length;
  const xs = points.map((p) => p.slot - points[0]!.slot);
  const ys = points.map((p) => p.fee);
  const sx = xs.reduce((a, b) => a + b, 0);
  const sy = ys.reduce((a, b) => a + b, 0);
  const sxy = xs.reduce((a, x, i) => a + x * ys[i]!, 0);
  const sxx = xs.reduce((a, x) => a + x * x, 0);
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

function changeOf(points: { fee: number }[]): number {
  const half = Math.floor(points.length / 2);
  const older = nearestRank(
    points.slice(0, half).map((p) => p.fee),
    50,
  );
  const newer = nearestRank(
    points.slice(points.length - half).map((p) => p.fee),
    50,
  );
  return older === 0 ? (newer > 0 ? 100 : 0) : round(((newer - older) / older) * 100, 2);
}

const totalFee = (price: number, limit: number, signatures: number) =>
  BigInt(signatures) * 5000n + (BigInt(limit) * BigInt(price) + 999_999n) / 1_000_000n;

// ---------------------------------------------------------------------------------------------------
// Transactions

const memo = (text: string): Instruction => ({
  programAddress: address(MEMO_PROGRAM),
  data: new TextEncoder().encode(text),
});
const transfer = (lamports: bigint, to = hot.address, from: Wallet = payer): Instruction =>
  getTransferSolInstruction({
    source: createNoopSigner(address(from.address)),
    destination: address(to),
    amount: lamports,
  });
const budget = (price: number, units = 10_000): Instruction[] => [
  getSetComputeUnitLimitInstruction({ units }),
  getSetComputeUnitPriceInstruction({ microLamports: BigInt(price) }),
];

/** A v0 transaction paid by `from`, base64; signed, or with empty signatures (the simulator does not check them). */
function wireOf(instructions: Instruction[], options: { sign?: boolean; from?: Wallet } = {}): string {
  const from = options.from ?? payer;
  const lifetime = ledger.latestBlockhash('processed');
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(address(from.address), m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: lifetime.blockhash as Blockhash, lastValidBlockHeight: lifetime.lastValidBlockHeight },
        m,
      ),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const compiled = compileTransaction(message);
  const signatures = options.sign
    ? { ...compiled.signatures, [from.address]: signEd25519(from, new Uint8Array(compiled.messageBytes)) }
    : compiled.signatures;
  return getBase64Decoder().decode(getTransactionEncoder().encode({ ...compiled, signatures: signatures as never }));
}

async function send(instructions: Instruction[]): Promise<string> {
  return rpc
    .sendTransaction(wireOf(instructions, { sign: true }) as Base64EncodedWireTransaction, { encoding: 'base64' })
    .send();
}

async function landed(signature: string) {
  const tx = await rpc
    .getTransaction(signature as Signature, {
      commitment: 'confirmed',
      maxSupportedTransactionVersion: 0,
      encoding: 'json',
    })
    .send();
  if (!tx?.meta) throw new Error(`transaction ${signature} did not land`);
  return { fee: tx.meta.fee, units: tx.meta.computeUnitsConsumed, err: tx.meta.err };
}

/**
 * 150 slots of activity ending at the current slot: most carry memo transactions at a price that
 * moves from slot to slot, some a second one (higher or lower: the slot's fee is the lowest), some a
 * transfer write-locking `hot` at a much higher price, and every tenth slot is empty.
 */
async function playActivity(): Promise<void> {
  played = [];
  for (let i = 0; i < 150; i++) {
    if (i > 0) ledger.warp(1);
    const slot = Number(ledger.slot());
    const entry: PlayedSlot = { slot, prices: [], hotPrices: [] };
    played.push(entry);
    if (i % 10 === 7) continue;
    const base = 1000 * ((i * 37) % 97);
    entry.prices.push(base);
    if (i % 5 === 0) entry.prices.push(base + 500);
    if (i % 4 === 1 && base >= 250) entry.prices.push(base - 250);
    if (i % 6 === 2) entry.hotPrices.push(base + 20_000);
    for (const [k, price] of entry.prices.entries()) await send([...budget(price), memo(`gas test slot ${i} #${k}`)]);
    for (const price of entry.hotPrices) await send([...budget(price), transfer(BigInt(1000 + i))]);
    sentCount += entry.prices.length + entry.hotPrices.length;
  }
}

async function rowCounts(db = service.database.db): Promise<number[]> {
  const count = async (table: string) =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return Promise.all(['gas_slot_fees', 'gas_performance_samples', 'gas_observations'].map(count));
}

beforeAll(async () => {
  ledger = await LocalLedger.open({ mintAuthority: generateWallet(), slotMs: HOUR_SLOTS });
  rpcServer = await startLedgerRpc(ledger, { port: 0 });
  rpc = createSolanaRpc(rpcServer.url);
  await ledger.airdrop(payer.address, 100_000_000_000n);
  await ledger.airdrop(hot.address, 1_000_000_000n);
  // Move the airdrops out of the node's 150-slot fee cache and out of the newest performance sample.
  ledger.warp(400);
  await playActivity();
  service = await startService((c) => createGasApp({ ...c, prices: ZERO_PRICES }, { now: clock }), {
    id: 'gas',
    rpcUrl: rpcServer.url,
  });
});

afterAll(async () => {
  await service?.close();
  await rpcServer?.close();
  await ledger?.close();
});

// ---------------------------------------------------------------------------------------------------

describe('fee history', () => {
  it('reports the 150 slots the node remembers, their percentiles, mean, empty share and trend', async () => {
    const expected = globalFees();
    const fees = expected.map((f) => f.fee);
    const history = await gas().feeHistory({ body: { blocks: 150 } });
    expect(history.perBlock).toEqual(expected.map((f) => ({ slot: f.slot, prioritizationFee: f.fee })));
    expect(history).toMatchObject({
      blocks: 150,
      returned: 150,
      fromSlot: played[0]!.slot,
      toSlot: played[149]!.slot,
      accounts: [],
      percentiles: percentilesOf(fees),
      mean: round(fees.reduce((a, b) => a + b, 0) / 150, 2),
      emptySlotShare: round(fees.filter((f) => f === 0).length / 150, 4),
    });
    // 15 slots had no transaction (i = 7, 17, ... 147) and one a zero-priced one (i = 0)
    expect(fees.filter((f) => f === 0)).toHaveLength(16);
    expect(history.trend.slopePerSlot).toBeCloseTo(slopeOf(expected), 5);
    expect(history.trend.changePercent).toBe(changeOf(expected));
    const change = changeOf(expected);
    expect(history.trend.direction).toBe(change > 10 ? 'rising' : change < -10 ? 'falling' : 'flat');
    expect(history.source).toMatchObject({ mode: 'chain', providers: ['local-ledger'] });
  });

  it('keeps the last N blocks, oldest first, with the default of 50', async () => {
    const expected = globalFees().slice(-50);
    const history = await gas().feeHistory({ body: {} });
    expect(history.blocks).toBe(50);
    expect(history.returned).toBe(50);
    expect(history.perBlock.map((b) => b.slot)).toEqual(expected.map((f) => f.slot));
    expect(history.percentiles).toEqual(percentilesOf(expected.map((f) => f.fee)));
    expect(history.trend.changePercent).toBe(changeOf(expected));
    expect(history.trend.slopePerSlot).toBeCloseTo(slopeOf(expected), 5);
  });

  it('reads the local fee market of write-locked accounts', async () => {
    const expected = hotFees();
    const history = await gas().feeHistory({ body: { blocks: 150, accounts: [hot.address] } });
    expect(history.accounts).toEqual([hot.address]);
    expect(history.perBlock.map((b) => b.prioritizationFee)).toEqual(expected.map((f) => f.fee));
    expect(history.percentiles).toEqual(percentilesOf(expected.map((f) => f.fee)));
    // the hot account's market is dearer than the block's in every slot it was written
    const hotSlot = played.findIndex((s) => s.hotPrices.length > 0);
    expect(history.perBlock[hotSlot]!.prioritizationFee).toBe(played[hotSlot]!.hotPrices[0]);
    expect(history.perBlock[hotSlot]!.prioritizationFee).toBeGreaterThan(globalFees()[hotSlot]!.fee);
  });
});

describe('recommendation', () => {
  it('prices the urgency’s percentile of the dearer of the global and local markets, with totals and instructions', async () => {
    const global = percentilesOf(globalFees().map((f) => f.fee));
    const local = percentilesOf(hotFees().map((f) => f.fee));
    const combined = maxOf(global, local);
    const r = await gas().recommend({
      body: { urgency: 'high', computeUnitLimit: 300_000, signatures: 2, accounts: [hot.address] },
    });
    expect(r.global).toEqual(global);
    expect(r.local).toEqual(local);
    expect(r.percentiles).toEqual(combined);
    expect(r.percentile).toBe(75);
    const price = combined.p75!;
    expect(price).toBeGreaterThan(global.p75);
    const priority = (300_000n * BigInt(price) + 999_999n) / 1_000_000n;
    expect(r.fee).toEqual({
      computeUnitPrice: price,
      computeUnitLimit: 300_000,
      priorityFeeLamports: priority.toString(),
      baseFeeLamports: '10000',
      totalFeeLamports: (priority + 10_000n).toString(),
      totalFeeSol: lamportsToSol(priority + 10_000n),
    });
    // the instruction data the official compute-budget client encodes
    const toBase64 = (ix: Instruction) => Buffer.from(ix.data!).toString('base64');
    expect(r.computeBudgetInstructions).toEqual([
      {
        name: 'SetComputeUnitLimit',
        programId: COMPUTE_BUDGET_PROGRAM_ADDRESS,
        value: 300_000,
        dataBase64: toBase64(getSetComputeUnitLimitInstruction({ units: 300_000 })),
      },
      {
        name: 'SetComputeUnitPrice',
        programId: COMPUTE_BUDGET_PROGRAM_ADDRESS,
        value: price,
        dataBase64: toBase64(getSetComputeUnitPriceInstruction({ microLamports: BigInt(price) })),
      },
    ]);
    expect(r.lookbackSlots).toBe(150);
    expect(r.slot).toBe(played[149]!.slot);
    // high may wait 5 minutes: only the window starting now qualifies
    expect(r.bestWindow).toMatchObject({
      waitSeconds: 0,
      savingsPercent: 0,
      expectedComputeUnitPrice: global.p50,
      confidence: 1,
    });
  });

  it('defaults to normal urgency (p50), 200,000 CU and one signature, with no local market', async () => {
    const global = percentilesOf(globalFees().map((f) => f.fee));
    const r = await gas().recommend({ body: {} });
    expect(r).toMatchObject({ urgency: 'normal', percentile: 50, local: null, percentiles: global, global });
    expect(r.fee.computeUnitPrice).toBe(global.p50);
    expect(r.fee.totalFeeLamports).toBe(totalFee(global.p50, 200_000, 1).toString());
    const urgent = await gas().recommend({ body: { urgency: 'urgent' } });
    expect(urgent.fee.computeUnitPrice).toBe(global.p95);
    expect(urgent.bestWindow.waitSeconds).toBe(0);
    const low = await gas().recommend({ body: { urgency: 'low' } });
    expect(low.fee.computeUnitPrice).toBe(global.p25);
  });
});

describe('network status', () => {
  it('derives TPS, slot time and congestion from the performance samples and the fees', async () => {
    const samples = await rpc.getRecentPerformanceSamples(10).send();
    // the newest 60-second sample covers exactly the 150 played slots
    expect(Number(samples[0]!.numNonVoteTransactions)).toBe(sentCount);
    const sum = (pick: (s: (typeof samples)[number]) => bigint) => samples.reduce((a, s) => a + Number(pick(s)), 0);
    const [transactions, nonVote, slots, seconds] = [
      sum((s) => s.numTransactions),
      sum((s) => s.numNonVoteTransactions),
      sum((s) => s.numSlots),
      sum((s) => BigInt(s.samplePeriodSecs)),
    ];
    const fees = globalFees().map((f) => f.fee);
    const median = nearestRank(fees, 50);
    // this service has seen only these slots and samples: the 7-day p95 is theirs, the 7-day TPS peak the newest
    // sample's
    const tpsLoad =
      nonVote /
      seconds /
      Math.max(...samples.map((s) => Number(s.numNonVoteTransactions) / Number(s.samplePeriodSecs)));
    const feePressure = median / nearestRank(fees, 95);
    const score = round(100 * (0.4 * tpsLoad + 0.4 * feePressure + 0.2 * 0), 2);

    const status = await gas().networkStatus({ body: {} });
    expect(status).toMatchObject({
      slot: played[149]!.slot,
      epoch: Math.floor(played[149]!.slot / 432_000),
      tps: round(transactions / seconds, 2),
      nonVoteTps: round(nonVote / seconds, 2),
      slotTimeMs: 400,
      sample: { samples: samples.length, periodSeconds: seconds, slots, transactions, nonVoteTransactions: nonVote },
      feePercentiles: percentilesOf(fees),
      lookbackSlots: 150,
    });
    expect(status.congestion).toEqual({
      level: score < 25 ? 'low' : score < 50 ? 'moderate' : score < 75 ? 'high' : 'extreme',
      score,
      drivers: { tpsLoad: round(tpsLoad, 4), feePressure: round(feePressure, 4), slotTimeDrift: 0 },
    });
    // 60 minutes: four windows of 15 from now; nothing was observed at those times of day, so they repeat now with no
    // confidence
    expect(status.forecast).toHaveLength(4);
    status.forecast.forEach((w, i) => {
      expect(Date.parse(w.endsAt) - Date.parse(w.startsAt)).toBe(900_000);
      if (i > 0) expect(Date.parse(w.startsAt)).toBe(Date.parse(status.forecast[i - 1]!.endsAt));
      expect(w).toMatchObject({
        expectedComputeUnitPrice: median,
        confidence: i === 0 ? 1 : 0,
        congestionLevel: status.congestion.level,
      });
    });
  });

  it('forecasts from the hour-of-day profile of the past 7 days, persisted across restarts', async () => {
    // The service's clock is pinned a minute into the current quarter hour, so "now + 30 minutes" is in a known
    // quarter.
    pinned = new Date(Math.floor(Date.now() / 900_000) * 900_000 + 60_000);
    const target = new Date(pinned.getTime() + 30 * 60_000);
    const day = 24 * 3600_000;
    const seed = (id: string, at: Date, median: number, score: number) =>
      service.database.db
        .insertInto('gas_observations')
        .values({ id, observed_at: at, slot: 1n, median_fee: BigInt(median), congestion_score: score })
        .execute();
    await seed('obs_seed_2d', new Date(target.getTime() - 2 * day), 300, 90);
    await seed('obs_seed_3d', new Date(target.getTime() - 3 * day), 100, 80);
    await seed('obs_seed_8d', new Date(target.getTime() - 8 * day), 1, 0); // older than a week: ignored, then pruned

    const status = await gas().networkStatus({ body: { forecastMinutes: 120 } });
    expect(status.forecast).toHaveLength(8);
    // It rests on the two seeded days and the readings this file's calls made today (the 8-day-old one is pruned).
    expect(status.forecastBasis.oldestAt).toBe(new Date(target.getTime() - 3 * day).toISOString());
    expect(status.forecastBasis.daysCovered).toBeGreaterThanOrEqual(3);
    expect(status.forecastBasis.observations).toBeGreaterThanOrEqual(3);
    // nearest-rank median of 100 and 300 is 100; mean score 85 is extreme; 2 of the 7 days observed
    expect(status.forecast[2]).toMatchObject({
      expectedComputeUnitPrice: 100,
      congestionLevel: 'extreme',
      confidence: round(2 / 7, 4),
    });
    expect(status.forecast[3]!.confidence).toBe(0);
    const ids = (await service.database.db.selectFrom('gas_observations').select('id').execute()).map((r) => r.id);
    expect(ids).toContain('obs_seed_2d');
    expect(ids).not.toContain('obs_seed_8d');

    // A low-urgency caller may wait 2 hours: the cheaper window 30 minutes out is the best one.
    const median = nearestRank(
      globalFees().map((f) => f.fee),
      50,
    );
    expect(median).toBeGreaterThan(100);
    const low = await gas().recommend({ body: { urgency: 'low', computeUnitLimit: 200_000 } });
    const now = Number(totalFee(median, 200_000, 1));
    const later = Number(totalFee(100, 200_000, 1));
    expect(low.bestWindow).toMatchObject({
      waitSeconds: 1800,
      expectedComputeUnitPrice: 100,
      congestionLevel: 'extreme',
      savingsPercent: round((100 * (now - later)) / now, 2),
    });
    const quarter = (at: Date) => at.getUTCHours() * 4 + Math.floor(at.getUTCMinutes() / 15);
    expect(quarter(new Date(low.bestWindow.startsAt))).toBe(quarter(target));
    expect(Date.parse(low.bestWindow.startsAt) - pinned.getTime()).toBeGreaterThan(29 * 60_000);
    expect(low.bestWindow.reason).toContain('100 µL/CU');
    // normal waits up to 30 minutes (the same window), high only 5 (now)
    expect((await gas().recommend({ body: { urgency: 'normal' } })).bestWindow.waitSeconds).toBe(1800);
    expect((await gas().recommend({ body: { urgency: 'high' } })).bestWindow.waitSeconds).toBe(0);

    // Another instance on the same database forecasts from the same history.
    const restarted = await startService((c) => createGasApp({ ...c, prices: ZERO_PRICES }, { now: clock }), {
      id: 'gas',
      rpcUrl: rpcServer.url,
      database: service.database,
    });
    try {
      const again = await restarted.client.gas.networkStatus({ body: { forecastMinutes: 45 } });
      expect(again.forecast[2]).toMatchObject({ expectedComputeUnitPrice: 100, congestionLevel: 'extreme' });
    } finally {
      await restarted.stopServer();
      pinned = undefined;
    }
  });
});

describe('bad input is refused before anything is read, written or charged', () => {
  const cases: [string, string, unknown, string][] = [
    ['recommend', 'urgency', { urgency: 'asap' }, 'body.urgency'],
    ['recommend', 'zero limit', { computeUnitLimit: 0 }, 'body.computeUnitLimit'],
    ['recommend', 'limit above 1.4M', { computeUnitLimit: 1_400_001 }, 'body.computeUnitLimit'],
    ['recommend', 'fractional limit', { computeUnitLimit: 1000.5 }, 'body.computeUnitLimit'],
    ['recommend', 'signatures', { signatures: 13 }, 'body.signatures'],
    ['recommend', 'bad account', { accounts: ['not-an-address'] }, 'body.accounts.0'],
    ['recommend', '129 accounts', { accounts: Array.from({ length: 129 }, () => hot.address) }, 'body.accounts'],
    ['recommend', 'unknown field', { priority: 'max' }, 'body.priority'],
    ['networkStatus', 'forecast not in 15s', { forecastMinutes: 20 }, 'body.forecastMinutes'],
    ['networkStatus', 'forecast too long', { forecastMinutes: 255 }, 'body.forecastMinutes'],
    ['feeHistory', 'zero blocks', { blocks: 0 }, 'body.blocks'],
    ['feeHistory', '151 blocks', { blocks: 151 }, 'body.blocks'],
    ['simulate', 'no kind', { transaction: 'AAAA' }, 'body.kind'],
    ['simulate', 'not base64', { kind: 'transaction', transaction: 'not base64!' }, 'body.transaction'],
    ['simulate', 'non-canonical base64', { kind: 'transaction', transaction: 'AAB=' }, 'body.transaction'],
    [
      'simulate',
      'no instructions',
      { kind: 'instructions', payer: payer.address, instructions: [] },
      'body.instructions',
    ],
    [
      'simulate',
      'bad payer',
      { kind: 'instructions', payer: 'x', instructions: [{ programId: MEMO_PROGRAM, accounts: [], data: '' }] },
      'body.payer',
    ],
    [
      'simulate',
      'bad data',
      {
        kind: 'instructions',
        payer: payer.address,
        instructions: [{ programId: MEMO_PROGRAM, accounts: [], data: 'abc' }],
      },
      'body.instructions.0.data',
    ],
    [
      'simulate',
      'account meta',
      {
        kind: 'instructions',
        payer: payer.address,
        instructions: [
          { programId: MEMO_PROGRAM, accounts: [{ pubkey: hot.address, isSigner: 'yes', isWritable: true }], data: '' },
        ],
      },
      'body.instructions.0.accounts.0.isSigner',
    ],
  ];
  for (const [route, what, body, field] of cases) {
    it(`${route}: ${what} → 400 naming ${field}`, async () => {
      const before = await rowCounts();
      const error = await (gas()[route as 'recommend'] as (args: unknown) => Promise<unknown>)({ body }).catch(
        (e) => e,
      );
      expect(error).toBeInstanceOf(BadRequestError);
      expect((error as BadRequestError).fields.map((f) => f.field)).toContain(field);
      expect(await rowCounts()).toEqual(before);
    });
  }
});

describe('transactions that cannot be simulated: 422 before the paywall', () => {
  let priced: RunningService;
  beforeAll(async () => {
    priced = await startService(createGasApp, { id: 'gas', rpcUrl: rpcServer.url });
  });
  afterAll(() => priced?.close());

  it('quotes the contract prices for what can run', async () => {
    const quote = await priced.client.gas.recommend({ body: {} }).catch((e) => e);
    expect(quote.status).toBe(402);
    expect(quote.quote.accepts[0].amount).toBe('5000');
    const simulation = await priced.client.gas
      .simulate({ body: { kind: 'transaction', transaction: wireOf([transfer(1n)]) } })
      .catch((e) => e);
    expect(simulation.status).toBe(402);
    expect(simulation.quote.accepts[0].amount).toBe('10000');
  });

  it('answers bytes that are not a transaction with 422 transaction_undecodable, not 402', async () => {
    for (const transaction of ['aGVsbG8=', 'AAAA']) {
      const error = await priced.client.gas.simulate({ body: { kind: 'transaction', transaction } }).catch((e) => e);
      expect(error).toBeInstanceOf(UnprocessableEntityError);
      expect(error.code).toBe('transaction_undecodable');
    }
  });

  it('answers a malformed or oversized transaction with 422', async () => {
    // one signature short of what the message requires
    const bytes = getBase64Encoder().encode(wireOf([transfer(1n)]));
    const unsigned = new Uint8Array([0, ...bytes.slice(65)]);
    const malformed = await priced.client.gas
      .simulate({ body: { kind: 'transaction', transaction: Buffer.from(unsigned).toString('base64') } })
      .catch((e) => e);
    expect(malformed).toBeInstanceOf(UnprocessableEntityError);
    expect(malformed.code).toBe('transaction_invalid');

    const oversized = await priced.client.gas
      .simulate({ body: { kind: 'transaction', transaction: Buffer.alloc(1233, 1).toString('base64') } })
      .catch((e) => e);
    expect(oversized.code).toBe('transaction_too_large');
    const data = Buffer.alloc(1000, 7).toString('base64');
    const instructions = Array.from({ length: 3 }, () => ({ programId: MEMO_PROGRAM, accounts: [], data }));
    const tooMany = await priced.client.gas
      .simulate({ body: { kind: 'instructions', payer: payer.address, instructions } })
      .catch((e) => e);
    expect(tooMany).toBeInstanceOf(UnprocessableEntityError);
    expect(tooMany.code).toBe('transaction_too_large');
  });
});

describe('without its chain', () => {
  let orphan: RunningService;
  beforeAll(async () => {
    orphan = await startService((c) => createGasApp({ ...c, prices: ZERO_PRICES }), { id: 'gas' });
  });
  afterAll(() => orphan?.close());

  it('is healthy but has not read the chain yet', async () => {
    const health = await orphan.client.gas.health();
    expect(health).toMatchObject({
      status: 'ok',
      service: 'gas',
      database: 'ok',
      upstream: { mode: 'chain', providers: [{ name: 'local-ledger', status: 'unknown', lastSuccessAt: null }] },
    });
  });

  it('answers every data route with 502 upstream_unavailable and Retry-After, recording nothing', async () => {
    const calls: (() => Promise<unknown>)[] = [
      () => orphan.client.gas.recommend({ body: {} }),
      () => orphan.client.gas.networkStatus({ body: {} }),
      () => orphan.client.gas.feeHistory({ body: { blocks: 10 } }),
      () => orphan.client.gas.simulate({ body: { kind: 'transaction', transaction: wireOf([transfer(1n)]) } }),
      () =>
        orphan.client.gas.simulate({
          body: {
            kind: 'instructions',
            payer: payer.address,
            instructions: [{ programId: MEMO_PROGRAM, accounts: [], data: 'aGk=' }],
          },
        }),
    ];
    for (const call of calls) {
      const error = (await call().catch((e: unknown) => e)) as InternalServerError;
      expect(error).toBeInstanceOf(InternalServerError);
      expect(error.status).toBe(502);
      expect(error.code).toBe('upstream_unavailable');
      expect(error.headers['retry-after']).toBe('5');
      expect(error.details).toEqual({ provider: 'local-ledger' });
    }
    expect(await rowCounts(orphan.database.db)).toEqual([0, 0, 0]);
    const health = await orphan.client.gas.health();
    expect(health.status).toBe('degraded');
    expect(health.upstream.providers).toEqual([{ name: 'local-ledger', status: 'failing', lastSuccessAt: null }]);
  });
});

// These send transactions, so they run last: the played fee history is not read exactly after them.
describe('simulation on the chain', () => {
  it('reports the units a transaction consumes, which its execution confirms, and a fee the chain charges exactly', async () => {
    const before = await gas().health();
    expect(before.status).toBe('ok');
    const wire = wireOf([transfer(5_000n)]); // unsigned: signatures are not verified
    const sim = await gas().simulate({ body: { kind: 'transaction', transaction: wire } });
    // the payer and hot are write-locked: the fee reads the dearer of the global and their local markets
    const expectedPrice = maxOf(
      percentilesOf(globalFees().map((f) => f.fee)),
      percentilesOf(hotFees().map((f) => f.fee)),
    ).p50!;
    expect(sim).toMatchObject({
      success: true,
      error: null,
      unitsConsumed: 150,
      // the two compute-budget instructions to prepend cost 150 units each
      recommendedComputeUnitLimit: 495, // ceil(450 × 1.1), exactly
      requestedComputeUnitLimit: null,
      requestedComputeUnitPrice: null,
      urgency: 'normal',
      signatures: 1,
      instructionCount: 1,
      slot: played[149]!.slot,
    });
    expect(sim.fee).toMatchObject({
      computeUnitPrice: expectedPrice,
      computeUnitLimit: 495,
      totalFeeLamports: totalFee(expectedPrice, 495, 1).toString(),
    });
    expect(sim.logs).toContain('Program 11111111111111111111111111111111 success');

    // Executed for real, the bare transfer consumes what the simulation said...
    expect((await landed(await send([transfer(5_000n)]))).units).toBe(150n);
    // ...and with the recommended instructions prepended it fits its limit and pays exactly the quoted fee.
    const prepended: Instruction[] = sim.computeBudgetInstructions.map((ix) => ({
      programAddress: address(ix.programId),
      data: new Uint8Array(Buffer.from(ix.dataBase64, 'base64')),
    }));
    const result = await landed(await send([...prepended, transfer(5_001n)]));
    expect(result.err).toBeNull();
    expect(result.units).toBe(450n);
    expect(result.units).toBeLessThanOrEqual(BigInt(sim.recommendedComputeUnitLimit));
    expect(result.fee.toString()).toBe(sim.fee.totalFeeLamports);
  });

  it('compiles instruction details into a transaction and simulates it', async () => {
    const text = 'hello gas optimizer';
    const sim = await gas().simulate({
      body: {
        kind: 'instructions',
        payer: payer.address,
        instructions: [
          {
            programId: MEMO_PROGRAM,
            accounts: [{ pubkey: payer.address, isSigner: true, isWritable: true }],
            data: Buffer.from(text).toString('base64'),
          },
        ],
        urgency: 'urgent',
      },
    });
    const executed = await landed(
      await send([
        { ...memo(text), accounts: [{ address: address(payer.address), role: AccountRole.WRITABLE_SIGNER }] },
      ]),
    );
    expect(sim).toMatchObject({
      success: true,
      signatures: 1,
      instructionCount: 1,
      urgency: 'urgent',
      unitsConsumed: Number(executed.units),
    });
    expect(sim.logs).toContain(`Program log: Memo (len ${text.length})`);
    expect(sim.recommendedComputeUnitLimit).toBe(Math.ceil(((Number(executed.units) + 300) * 11) / 10));
  });

  it('reads the compute budget a transaction already requests', async () => {
    const sim = await gas().simulate({
      body: { kind: 'transaction', transaction: wireOf([...budget(7, 5_000), memo('budgeted')]) },
    });
    expect(sim).toMatchObject({
      success: true,
      requestedComputeUnitLimit: 5_000,
      requestedComputeUnitPrice: 7,
      instructionCount: 3,
    });
    // it already has both instructions: only the margin is added
    expect(sim.recommendedComputeUnitLimit).toBe(Math.ceil((sim.unitsConsumed * 11) / 10));
    expect(sim.unitsConsumed).toBeGreaterThan(300);
  });

  it('reports a transaction that would fail with its error, still a 200', async () => {
    const broke = generateWallet();
    await ledger.airdrop(broke.address, 10_000_000n);
    const sim = await gas().simulate({
      body: {
        kind: 'transaction',
        transaction: wireOf([memo('first'), transfer(50_000_000n, hot.address, broke)], { from: broke }),
      },
    });
    expect(sim.success).toBe(false);
    expect(sim.error).toEqual({
      code: 'InstructionError',
      message: 'Error processing Instruction 1: custom program error: 0x1',
      instructionIndex: 1,
    });
    expect(sim.unitsConsumed).toBeGreaterThan(150);

    // a fee payer the chain has never seen
    const stranger = await gas().simulate({
      body: {
        kind: 'instructions',
        payer: generateWallet().address,
        instructions: [{ programId: MEMO_PROGRAM, accounts: [], data: 'aGk=' }],
      },
    });
    expect(stranger).toMatchObject({
      success: false,
      unitsConsumed: 0,
      recommendedComputeUnitLimit: 330,
      error: { code: 'AccountNotFound', instructionIndex: null },
    });
  });

  it('reports the chain provider healthy after reading it', async () => {
    const health = await gas().health();
    expect(health.status).toBe('ok');
    expect(health.upstream.providers[0]).toMatchObject({ name: 'local-ledger', status: 'ok' });
    expect(Date.parse(health.upstream.providers[0]!.lastSuccessAt!)).toBeGreaterThan(Date.now() - 600_000);
  });
});

describe('paid for real through the facilitator', () => {
  let economy: Economy;
  beforeAll(async () => {
    economy = await startEconomy();
  });
  afterAll(() => economy?.close());

  it('charges the recommendation’s price, and nothing when the chain does not answer', async () => {
    const live = await economy.startPaidService(createGasApp, { id: 'gas' });
    const seller = live.context.wallet.address;
    const buyer = await walletFromSecretKey(economy.buyer.secretKey);
    const client = createClient({
      baseUrls: { gas: live.url },
      wallet: buyer,
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    const [buyerBefore, sellerBefore] = [
      economy.ledger.tokenBalance(economy.buyer.address),
      economy.ledger.tokenBalance(seller),
    ];
    const r = await client.gas.recommend({ body: { urgency: 'normal' } });
    expect(r.source).toMatchObject({ mode: 'chain', providers: ['local-ledger'] });
    expect(r.lookbackSlots).toBeGreaterThan(0);
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(buyerBefore - 5_000n);
    expect(economy.ledger.tokenBalance(seller)).toBe(sellerBefore + 5_000n);

    // The same service reading a chain that does not answer: the payment is never settled.
    const dark = await economy.startPaidService((c) => createGasApp({ ...c, rpcUrl: DEAD_RPC }), { id: 'gas' });
    const darkClient = createClient({
      baseUrls: { gas: dark.url },
      wallet: buyer,
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    const error = await darkClient.gas.feeHistory({ body: {} }).catch((e) => e);
    // The service says in PAYMENT-RESPONSE that it settled nothing, so the SDK throws the 502 itself and
    // keeps none of the budget.
    expect(error).not.toBeInstanceOf(PaymentOutcomeUnknownError);
    expect(error).toMatchObject({ status: 502, code: 'upstream_unavailable' });
    expect(darkClient.payments.pending).toEqual([]);
    expect(darkClient.payments.spentUsd()).toBe('0');
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(buyerBefore - 5_000n);
    expect(economy.ledger.tokenBalance(dark.context.wallet.address)).toBe(0n);
  });
});
