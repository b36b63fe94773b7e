import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { fixed, free, type RouteMeta } from '../core/payment';
import { SolanaAddress, Timestamp } from '../core/chain';
import { DataSource, DataServiceHealth, ServiceHealth } from './shared';

const c = initContract();

// Interfaces first, then schemas annotated with them: keeps the emitted declarations small.
// Fee rates are micro-lamports per compute unit (µL/CU) as integers, as Solana RPC and SetComputeUnitPrice speak them;
// fee totals are lamports as integer strings, plus SOL as a decimal string.

/** How soon the transaction must land: low = p25 of recent fees, normal = p50, high = p75, urgent = p95. */
export type Urgency = 'low' | 'normal' | 'high' | 'urgent';
export type CongestionLevel = 'low' | 'moderate' | 'high' | 'extreme';

/** Nearest-rank percentiles of per-slot priority fees, µL/CU. */
export interface FeePercentiles {
  p0: number;
  p25: number;
  p50: number;
  p75: number;
  p95: number;
  p100: number;
}
export interface NetworkCongestion {
  level: CongestionLevel;
  score: number;
}
export interface ComputeBudgetInstruction {
  name: 'SetComputeUnitLimit' | 'SetComputeUnitPrice';
  programId: string;
  value: number;
  /** The instruction data: 1-byte discriminator + little-endian argument, base64. */
  dataBase64: string;
}
export interface FeeTotals {
  computeUnitPrice: number;
  computeUnitLimit: number;
  priorityFeeLamports: string;
  baseFeeLamports: string;
  totalFeeLamports: string;
  totalFeeSol: string;
}
export interface FeeWindow {
  startsAt: string;
  endsAt: string;
  congestionLevel: CongestionLevel;
  expectedComputeUnitPrice: number;
  confidence: number;
}
export interface FeeRecommendation {
  urgency: Urgency;
  percentile: number;
  fee: FeeTotals;
  percentiles: FeePercentiles;
  global: FeePercentiles;
  local: FeePercentiles | null;
  congestion: NetworkCongestion;
  bestWindow: FeeWindow & { waitSeconds: number; savingsPercent: number; reason: string };
  computeBudgetInstructions: ComputeBudgetInstruction[];
  lookbackSlots: number;
  slot: number;
  source: DataSource;
}
export interface NetworkStatus {
  slot: number;
  epoch: number;
  tps: number;
  nonVoteTps: number;
  slotTimeMs: number;
  sample: { samples: number; periodSeconds: number; slots: number; transactions: number; nonVoteTransactions: number };
  congestion: NetworkCongestion & { drivers: { tpsLoad: number; feePressure: number; slotTimeDrift: number } };
  feePercentiles: FeePercentiles;
  lookbackSlots: number;
  forecast: FeeWindow[];
  forecastBasis: ForecastBasis;
  source: DataSource;
}
/** The history a forecast rests on: the congestion readings of the past 7 days. */
export interface ForecastBasis {
  observations: number;
  daysCovered: number;
  oldestAt: string | null;
}
export interface SimulationError {
  code: string;
  message: string;
  instructionIndex: number | null;
}
export interface TransactionSimulation {
  success: boolean;
  error: SimulationError | null;
  unitsConsumed: number;
  recommendedComputeUnitLimit: number;
  requestedComputeUnitLimit: number | null;
  requestedComputeUnitPrice: number | null;
  urgency: Urgency;
  fee: FeeTotals;
  signatures: number;
  instructionCount: number;
  logs: string[];
  computeBudgetInstructions: ComputeBudgetInstruction[];
  slot: number;
  source: DataSource;
}
export interface BlockFee {
  slot: number;
  prioritizationFee: number;
}
export interface FeeHistory {
  blocks: number;
  returned: number;
  fromSlot: number;
  toSlot: number;
  accounts: string[];
  percentiles: FeePercentiles;
  mean: number;
  emptySlotShare: number;
  trend: { direction: 'rising' | 'falling' | 'flat'; slopePerSlot: number; changePercent: number };
  perBlock: BlockFee[];
  source: DataSource;
}

const UrgencySchema = named('Urgency', z.enum(['low', 'normal', 'high', 'urgent']));
const CongestionLevelSchema = named('CongestionLevel', z.enum(['low', 'moderate', 'high', 'extreme']));
const MicroLamports = z.number().int().min(0).describe('micro-lamports per compute unit');
const Lamports = z
  .string()
  .regex(/^(0|[1-9]\d*)$/)
  .describe('lamports as an integer string');
const Sol = z
  .string()
  .regex(/^(0|[1-9]\d*)(\.\d{1,9})?$/)
  .describe('SOL as a decimal string (9 decimals at most)');
const Slot = z.number().int().min(0);
const Count = z.number().int().min(0);
const Unit = z.number().min(0).max(1);
const Base64 = (maxChars: number) =>
  z
    .string()
    .min(4)
    .max(maxChars)
    .regex(/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/, 'must be standard base64');
const MAX_COMPUTE_UNITS = 1_400_000;

const FeePercentilesSchema: z.ZodType<FeePercentiles> = named(
  'FeePercentiles',
  z
    .object({
      p0: MicroLamports,
      p25: MicroLamports,
      p50: MicroLamports,
      p75: MicroLamports,
      p95: MicroLamports,
      p100: MicroLamports,
    })
    .describe('nearest-rank percentiles of per-slot priority fees, µL/CU'),
);
const CongestionSchema = named(
  'Congestion',
  z.object({
    level: CongestionLevelSchema.describe('by score: low below 25, moderate to 50, high to 75, extreme above'),
    score: z.number().min(0).max(100),
  }),
);
const ComputeBudgetInstructionSchema: z.ZodType<ComputeBudgetInstruction> = named(
  'ComputeBudgetInstruction',
  z.object({
    name: z.enum(['SetComputeUnitLimit', 'SetComputeUnitPrice']),
    programId: SolanaAddress.describe('ComputeBudget111111111111111111111111111111'),
    value: z.number().int().min(0).describe('compute units, or µL/CU'),
    dataBase64: z.string().describe('instruction data: discriminator 2 + u32 LE, or 3 + u64 LE'),
  }),
);
const FeeTotalsSchema: z.ZodType<FeeTotals> = named(
  'FeeTotals',
  z.object({
    computeUnitPrice: MicroLamports,
    computeUnitLimit: z.number().int().min(1).max(MAX_COMPUTE_UNITS),
    priorityFeeLamports: Lamports.describe('ceil(computeUnitLimit × computeUnitPrice / 1,000,000)'),
    baseFeeLamports: Lamports.describe('5,000 per signature'),
    totalFeeLamports: Lamports,
    totalFeeSol: Sol,
  }),
);
const timeWindowFields = {
  startsAt: Timestamp,
  endsAt: Timestamp,
  congestionLevel: CongestionLevelSchema,
  expectedComputeUnitPrice: MicroLamports.describe('expected median fee in the window'),
  confidence: Unit,
};
const TimeWindowSchema: z.ZodType<FeeWindow> = named('FeeWindow', z.object(timeWindowFields));
const FeeRecommendationSchema: z.ZodType<FeeRecommendation> = named(
  'FeeRecommendation',
  z.object({
    urgency: UrgencySchema,
    percentile: z.number().int().min(0).max(100).describe('the percentile the urgency maps to'),
    fee: FeeTotalsSchema,
    percentiles: FeePercentilesSchema.describe('max(global, local) per level: what the recommendation reads'),
    global: FeePercentilesSchema,
    local: FeePercentilesSchema.nullable().describe('over the given writable accounts; null when none were given'),
    congestion: CongestionSchema,
    bestWindow: z
      .object({
        ...timeWindowFields,
        waitSeconds: Count.describe('0 when now is the best time'),
        savingsPercent: z.number().min(0).max(100).describe('expected saving on the fee against sending now'),
        reason: z.string(),
      })
      .describe('the cheapest window the urgency allows: urgent now, high within 5 minutes, normal 30, low 2 hours'),
    computeBudgetInstructions: z.array(ComputeBudgetInstructionSchema).describe('ready to prepend to the transaction'),
    lookbackSlots: Count,
    slot: Slot.describe('the slot the recommendation was computed at'),
    source: DataSource,
  }),
);
const NetworkStatusSchema: z.ZodType<NetworkStatus> = named(
  'NetworkStatus',
  z.object({
    slot: Slot,
    epoch: Count,
    tps: z.number().min(0).describe('numTransactions / samplePeriodSecs over the samples'),
    nonVoteTps: z.number().min(0),
    slotTimeMs: z.number().min(0).describe('samplePeriodSecs / numSlots, in milliseconds'),
    sample: z
      .object({
        samples: Count,
        periodSeconds: Count,
        slots: Count,
        transactions: Count,
        nonVoteTransactions: Count,
      })
      .describe('the performance samples the figures come from (60-second samples, newest 10)'),
    congestion: CongestionSchema.extend({
      drivers: z
        .object({
          tpsLoad: Unit.describe('non-vote TPS against the 7-day maximum'),
          feePressure: Unit.describe('median fee against the 7-day p95'),
          slotTimeDrift: Unit.describe('slot time above the 400 ms target, scaled'),
        })
        .describe('score = 100 × (0.4 × tpsLoad + 0.4 × feePressure + 0.2 × slotTimeDrift)'),
    }),
    feePercentiles: FeePercentilesSchema,
    lookbackSlots: Count,
    forecast: z
      .array(TimeWindowSchema)
      .describe('15-minute windows from now, from the hour-of-day profile of the past 7 days'),
    forecastBasis: z
      .object({
        observations: Count.describe(
          'congestion readings of the past 7 days the forecast draws on (one per status or recommendation call)',
        ),
        daysCovered: z.number().int().min(0).max(8).describe('distinct UTC days among them'),
        oldestAt: Timestamp.nullable().describe('the oldest reading used; null before the first'),
      })
      .describe(
        'how much history the forecast rests on: a window of a quarter hour never observed repeats the current reading with confidence 0',
      ),
    source: DataSource,
  }),
);
const SimulationSchema: z.ZodType<TransactionSimulation> = named(
  'TransactionSimulation',
  z.object({
    success: z.boolean().describe('false when the transaction would fail; the compute estimate is still given'),
    error: z
      .object({
        code: z.string().describe('the runtime error, e.g. InstructionError or InsufficientFundsForFee'),
        message: z.string(),
        instructionIndex: Count.nullable(),
      })
      .nullable(),
    unitsConsumed: Count.describe('compute units the simulation consumed'),
    recommendedComputeUnitLimit: z
      .number()
      .int()
      .min(1)
      .max(MAX_COMPUTE_UNITS)
      .describe(
        'ceil((unitsConsumed + 150 for each of SetComputeUnitLimit and SetComputeUnitPrice the transaction lacks) × 1.1), at most ' +
          '1,400,000: the compute-budget instructions to prepend consume 150 compute units each',
      ),
    requestedComputeUnitLimit: Count.nullable().describe('from a SetComputeUnitLimit in the transaction, if any'),
    requestedComputeUnitPrice: Count.nullable().describe('from a SetComputeUnitPrice in the transaction, if any'),
    urgency: UrgencySchema,
    fee: FeeTotalsSchema.describe('at the recommended limit and the urgency’s fee'),
    signatures: Count,
    instructionCount: Count,
    logs: z.array(z.string()),
    computeBudgetInstructions: z.array(ComputeBudgetInstructionSchema),
    slot: Slot.describe('the slot the simulation ran against'),
    source: DataSource,
  }),
);
const FeeHistorySchema: z.ZodType<FeeHistory> = named(
  'FeeHistory',
  z.object({
    blocks: z.number().int().min(1).max(150).describe('the N asked for'),
    returned: Count.describe('blocks the node still had (its cache holds at most 150)'),
    fromSlot: Slot,
    toSlot: Slot,
    accounts: z.array(SolanaAddress),
    percentiles: FeePercentilesSchema,
    mean: z.number().min(0),
    emptySlotShare: Unit.describe('share of blocks whose prioritization fee was 0'),
    trend: z.object({
      direction: z
        .enum(['rising', 'falling', 'flat'])
        .describe('by changePercent: rising above +10, falling below −10'),
      slopePerSlot: z.number().describe('least-squares slope of fee against slot, µL/CU per slot'),
      changePercent: z.number().describe('median of the newer half against median of the older half, percent'),
    }),
    perBlock: z.array(z.object({ slot: Slot, prioritizationFee: MicroLamports })).describe('oldest first'),
    source: DataSource,
  }),
);

const Accounts = z
  .array(SolanaAddress)
  .max(128)
  .optional()
  .describe('writable accounts the transaction locks (at most 128): their local fee markets are read too');
const UrgencyInput = UrgencySchema.default('normal').describe('low = p25, normal = p50, high = p75, urgent = p95');

const AccountMeta = z.object({ pubkey: SolanaAddress, isSigner: z.boolean(), isWritable: z.boolean() }).strict();
const SimulateBody = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('transaction'),
      transaction: Base64(1644).describe(
        'a serialized transaction (legacy or v0, at most 1,232 bytes), base64; signatures need not be valid',
      ),
      urgency: UrgencyInput,
    })
    .strict(),
  z
    .object({
      kind: z.literal('instructions'),
      payer: SolanaAddress.describe('the fee payer'),
      instructions: z
        .array(
          z
            .object({
              programId: SolanaAddress,
              accounts: z.array(AccountMeta).max(64),
              data: z
                .string()
                .max(1644)
                .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be standard base64')
                .describe('instruction data, base64'),
            })
            .strict(),
        )
        .min(1)
        .max(32),
      urgency: UrgencyInput,
    })
    .strict(),
]);

const dataErrors = { 502: ErrorEnvelope, ...standardErrors, ...paymentErrors } as const;

const router = c.router({
  recommend: {
    method: 'POST',
    path: '/api/recommend',
    body: z
      .object({
        urgency: UrgencyInput,
        computeUnitLimit: z
          .number()
          .int()
          .min(1)
          .max(MAX_COMPUTE_UNITS)
          .default(200_000)
          .describe('the limit the transaction will request, 1 to 1,400,000'),
        signatures: z
          .number()
          .int()
          .min(1)
          .max(12)
          .default(1)
          .describe('signatures on the transaction (base fee 5,000 lamports each)'),
        accounts: Accounts,
      })
      .strict(),
    summary: 'Optimal priority fee and best time window',
    description:
      'Recommends a compute-unit price from the recent per-slot fee distribution (last 150 slots, nearest-rank percentiles, ' +
      'global and over the given writable accounts, the higher per level), the congestion level and your urgency (low p25, ' +
      'normal p50, high p75, urgent p95), the totals in lamports and SOL for your compute-unit limit, ready-made ' +
      'compute-budget instructions, and the cheapest time window your urgency allows. Design: priority fee = ceil(limit × ' +
      'price / 1,000,000) lamports; 502 upstream_unavailable when the chain cannot be read (not charged).',
    responses: { 200: FeeRecommendationSchema, ...dataErrors },
    metadata: {
      payment: fixed('0.005'),
      example: { body: { urgency: 'high', computeUnitLimit: 300_000 } },
    } satisfies RouteMeta,
  },
  networkStatus: {
    method: 'POST',
    path: '/api/network-status',
    body: z
      .object({
        forecastMinutes: z
          .number()
          .int()
          .min(15)
          .max(240)
          .multipleOf(15)
          .default(60)
          .describe('how far ahead to forecast, 15 to 240 minutes in 15-minute windows'),
      })
      .strict(),
    summary: 'TPS, slot time, congestion level, fee percentiles and forecast',
    description:
      'Network figures from the latest performance samples (TPS = transactions / sample seconds, slot time = sample seconds / ' +
      'slots), the congestion level with its drivers, percentiles of recent per-slot priority fees and a forecast of ' +
      'congestion windows. Design: the forecast is the hour-of-day profile of the past 7 days, one window per 15 minutes; ' +
      'send `{}` for the defaults. 502 upstream_unavailable when the chain cannot be read (not charged).',
    responses: { 200: NetworkStatusSchema, ...dataErrors },
    metadata: { payment: fixed('0.003'), example: { body: { forecastMinutes: 120 } } } satisfies RouteMeta,
  },
  simulate: {
    method: 'POST',
    path: '/api/simulate',
    body: SimulateBody,
    summary: 'Simulate a transaction for exact compute units and a recommended fee',
    description:
      'Simulates a transaction and returns the exact compute units consumed, a compute-unit limit with a 10 % margin, the fee ' +
      'at your urgency and the logs. Input is either `kind: "transaction"` with a base64-encoded serialized transaction, or ' +
      '`kind: "instructions"` with a fee payer and instruction details (program, accounts, base64 data), which the service ' +
      'compiles into a transaction with a recent blockhash. Signatures are not verified and the blockhash is replaced. A ' +
      'transaction that would fail is still a 200 (`success: false`, `error`). Design: 422 transaction_undecodable when the ' +
      'bytes are not a transaction; 502 upstream_unavailable when the chain cannot be reached; neither is charged.',
    responses: { 200: SimulationSchema, 422: ErrorEnvelope, ...dataErrors },
    metadata: {
      payment: fixed('0.01'),
      example: {
        body: {
          kind: 'instructions',
          payer: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM',
          instructions: [
            {
              programId: 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr',
              accounts: [{ pubkey: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM', isSigner: true, isWritable: true }],
              data: 'aGVsbG8=',
            },
          ],
          urgency: 'normal',
        },
      },
    } satisfies RouteMeta,
  },
  feeHistory: {
    method: 'POST',
    path: '/api/fee-history',
    body: z
      .object({
        blocks: z
          .number()
          .int()
          .min(1)
          .max(150)
          .default(50)
          .describe('the last N blocks, 1 to 150 (the node’s fee cache)'),
        accounts: Accounts,
      })
      .strict(),
    summary: 'Priority-fee history of the last N blocks',
    description:
      'Per-block prioritization fees of the last N blocks (getRecentPrioritizationFees, optionally over writable accounts), ' +
      'their nearest-rank percentile distribution, mean, share of empty (zero-fee) blocks, and the trend: least-squares slope ' +
      'and the newer half’s median against the older half’s. Design: 502 upstream_unavailable when the chain cannot be read ' +
      '(not charged).',
    responses: { 200: FeeHistorySchema, ...dataErrors },
    metadata: { payment: fixed('0.005'), example: { body: { blocks: 100 } } } satisfies RouteMeta,
  },
  health: {
    method: 'GET',
    path: '/health',
    summary: 'Health check',
    description:
      'Liveness for monitors: free. Design: status degraded when the chain RPC’s last call failed; 503 ' +
      'database_unavailable when the database does not answer.',
    responses: { 200: DataServiceHealth, 503: ServiceHealth, ...standardErrors },
    metadata: { payment: free(), example: {} } satisfies RouteMeta,
  },
});

export const gas = defineService({
  id: 'gas',
  title: 'Gas Fee Optimizer',
  description:
    'Recommends a priority fee and a time window for a Solana transaction, reports network status (TPS, slot time, ' +
    'congestion, fee percentiles, forecast), simulates transactions for compute-unit estimates and returns fee history.',
  router,
  dataModes: {
    chain: "the deployment's Solana RPC: the local ledger, or a cluster with SOLANA_RPC_URL",
  },
});
