import { randomBytes } from 'node:crypto';
import type { gas, Urgency } from '@agent-economy/contracts';
import type { Kysely } from 'kysely';
import type { RouterImplementation } from '../../runtime/app';
import { healthReply } from '../../runtime/health';
import type { SolanaSource } from '../../upstream/solana';
import {
  PLACEHOLDER_BLOCKHASH,
  compileInstructions,
  decodeTransaction,
  readEpoch,
  readLatestBlockhash,
  readPerformanceSamples,
  readSlot,
  readSlotFees,
  simulate,
  simulationError,
  type DecodedTransaction,
  type InstructionInput,
} from './chain';
import {
  FORECAST_WINDOW_MINUTES,
  URGENCY_PERCENTILE,
  bestWindow,
  combinePercentiles,
  computeBudgetInstructions,
  congestion,
  feeHistory,
  feePercentiles,
  feeTotals,
  forecastBasis,
  forecastWindows,
  networkFigures,
  priceForUrgency,
  recommendedComputeUnitLimit,
  requestedComputeBudget,
  sampleRates,
  windowsFor,
  type Observation,
  type PerformanceSample,
  type SlotFee,
} from './domain';
import { historyStart, type GasStore } from './store';
import type { SharedDb } from '../../db';

export interface GasDeps {
  chain: SolanaSource;
  store: GasStore;
  db: SharedDb;
  /** The clock readings are stamped with and forecasts count from. */
  now: () => Date;
}

/** The most accounts getRecentPrioritizationFees takes. */
const MAX_FEE_ACCOUNTS = 128;

/**
 * Records what was read, then rates congestion against the past 7 days (the readings just made
 * included) and records this reading for the hour-of-day profile.
 */
async function assess(
  store: GasStore,
  now: Date,
  slot: number,
  fees: readonly SlotFee[],
  samples: readonly PerformanceSample[],
) {
  await store.recordReadings({ fees, samples, at: now });
  const since = historyStart(now);
  const [p95Fee7d, maxNonVoteTps7d] = await Promise.all([store.feeP95Since(since), store.maxNonVoteTpsSince(since)]);
  const figures = networkFigures(samples);
  const rates = sampleRates(samples);
  const medianFee = feePercentiles(fees.map((f) => f.fee)).p50;
  const rating = congestion({
    nonVoteTps: rates.nonVoteTps,
    maxNonVoteTps7d,
    medianFee,
    p95Fee7d,
    slotTimeMs: rates.slotTimeMs,
  });
  await store.recordObservation({
    id: `obs_${randomBytes(12).toString('hex')}`,
    observedAt: now,
    slot,
    medianFee,
    score: rating.score,
  });
  const observations: Observation[] = await store.observationsSince(since);
  return { figures, rating, medianFee, observations };
}

/** The transaction a simulate request describes; the blockhash matters only when instructions are compiled. */
export function transactionOf(
  body:
    | { kind: 'transaction'; transaction: string }
    | { kind: 'instructions'; payer: string; instructions: InstructionInput[] },
  blockhash: { blockhash: string; lastValidBlockHeight: bigint },
): DecodedTransaction {
  return body.kind === 'transaction'
    ? decodeTransaction(body.transaction)
    : compileInstructions(body.payer, body.instructions, blockhash);
}

// Handlers only translate between the contract and the domain.
export function gasHandlers({ chain, store, db, now: clock }: GasDeps): RouterImplementation<typeof gas.router> {
  const source = (asOf: Date) => chain.tracker.source([chain.provider], asOf);

  return {
    recommend: async ({ body }) => {
      const accounts = body.accounts ?? [];
      const [globalFees, localFees, samples] = await Promise.all([
        readSlotFees(chain),
        accounts.length > 0 ? readSlotFees(chain, accounts) : Promise.resolve(null),
        readPerformanceSamples(chain),
      ]);
      const slot = globalFees[globalFees.length - 1]?.slot ?? (await readSlot(chain));
      const now = clock();
      const { rating, medianFee, observations } = await assess(store, now, slot, globalFees, samples);
      const global = feePercentiles(globalFees.map((f) => f.fee));
      const local = localFees ? feePercentiles(localFees.map((f) => f.fee)) : null;
      const percentiles = combinePercentiles(global, local);
      const urgency: Urgency = body.urgency;
      const price = priceForUrgency(percentiles, urgency);
      const windows = forecastWindows(now, windowsFor(urgency), observations, { medianFee, score: rating.score });
      return {
        status: 200,
        body: {
          urgency,
          percentile: URGENCY_PERCENTILE[urgency],
          fee: feeTotals(price, body.computeUnitLimit, body.signatures),
          percentiles,
          global,
          local,
          congestion: { level: rating.level, score: rating.score },
          bestWindow: bestWindow(windows, urgency, body.computeUnitLimit, body.signatures),
          computeBudgetInstructions: computeBudgetInstructions(body.computeUnitLimit, price),
          lookbackSlots: globalFees.length,
          slot,
          source: source(now),
        },
      };
    },

    networkStatus: async ({ body }) => {
      const [epoch, fees, samples] = await Promise.all([
        readEpoch(chain),
        readSlotFees(chain),
        readPerformanceSamples(chain),
      ]);
      const now = clock();
      const { figures, rating, medianFee, observations } = await assess(store, now, epoch.slot, fees, samples);
      return {
        status: 200,
        body: {
          slot: epoch.slot,
          epoch: epoch.epoch,
          ...figures,
          congestion: rating,
          feePercentiles: feePercentiles(fees.map((f) => f.fee)),
          lookbackSlots: fees.length,
          forecast: forecastWindows(now, body.forecastMinutes / FORECAST_WINDOW_MINUTES, observations, {
            medianFee,
            score: rating.score,
          }),
          forecastBasis: forecastBasis(observations),
          source: source(now),
        },
      };
    },

    simulate: async ({ body }) => {
      // compiled instructions get a recent blockhash; a given transaction keeps its own (the simulation replaces both)
      const blockhash = body.kind === 'instructions' ? await readLatestBlockhash(chain) : PLACEHOLDER_BLOCKHASH;
      const tx = transactionOf(body, blockhash);
      const writable = tx.writableAccounts.slice(0, MAX_FEE_ACCOUNTS);
      const [simulation, globalFees, localFees] = await Promise.all([
        simulate(chain, tx.wire),
        readSlotFees(chain),
        writable.length > 0 ? readSlotFees(chain, writable) : Promise.resolve(null),
      ]);
      const now = clock();
      const requested = requestedComputeBudget(tx.instructions);
      const missing = (requested.limit === null ? 1 : 0) + (requested.price === null ? 1 : 0);
      const limit = recommendedComputeUnitLimit(simulation.unitsConsumed, missing);
      const percentiles = combinePercentiles(
        feePercentiles(globalFees.map((f) => f.fee)),
        localFees ? feePercentiles(localFees.map((f) => f.fee)) : null,
      );
      const price = priceForUrgency(percentiles, body.urgency);
      return {
        status: 200,
        body: {
          success: simulation.err === null,
          error: simulationError(simulation.err),
          unitsConsumed: simulation.unitsConsumed,
          recommendedComputeUnitLimit: limit,
          requestedComputeUnitLimit: requested.limit,
          requestedComputeUnitPrice: requested.price,
          urgency: body.urgency,
          fee: feeTotals(price, limit, tx.signatures),
          signatures: tx.signatures,
          instructionCount: tx.instructions.length,
          logs: simulation.logs,
          computeBudgetInstructions: computeBudgetInstructions(limit, price),
          slot: simulation.slot,
          source: source(now),
        },
      };
    },

    feeHistory: async ({ body }) => {
      const accounts = body.accounts ?? [];
      const all = await readSlotFees(chain, accounts);
      const now = clock();
      // only the global market feeds the 7-day statistics
      if (accounts.length === 0) await store.recordReadings({ fees: all, samples: [], at: now });
      const perBlock = all.slice(-body.blocks);
      const currentSlot = perBlock.length > 0 ? perBlock[perBlock.length - 1]!.slot : await readSlot(chain);
      return {
        status: 200,
        body: { ...feeHistory(perBlock, body.blocks, accounts, currentSlot), source: source(now) },
      };
    },

    // Answered by the runtime's one health body (runtime/health.ts).
    health: async ({ res }) => healthReply(res),
  };
}
