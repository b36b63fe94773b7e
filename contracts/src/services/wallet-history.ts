import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { UsdAmount } from '../core/money';
import { free, tiered, type RouteMeta } from '../core/payment';
import { Caip2Network, SolanaAddress, Timestamp } from '../core/chain';
import { DataServiceHealth, ServiceHealth, DataSource } from './shared';

const c = initContract();

export type WalletActivityTier = 'light' | 'moderate' | 'heavy' | 'whale';
export type ProtocolCategory =
  | 'dex'
  | 'aggregator'
  | 'lending'
  | 'liquid_staking'
  | 'staking'
  | 'perpetuals'
  | 'nft'
  | 'bridge'
  | 'launchpad'
  | 'payments'
  | 'governance'
  | 'system'
  | 'other';

export interface WalletTierDefinition {
  id: WalletActivityTier;
  usd: string;
  minTransactions: number;
  maxTransactions: number | null;
}

/**
 * Activity tiers by estimated transaction count (spec 001: light, moderate, heavy, whale; the thresholds are our
 * design): light 0–99, moderate 100–999, heavy 1,000–9,999, whale 10,000 or more.
 */
export const WALLET_ACTIVITY_TIERS: readonly WalletTierDefinition[] = [
  { id: 'light', usd: '0.02', minTransactions: 0, maxTransactions: 99 },
  { id: 'moderate', usd: '0.05', minTransactions: 100, maxTransactions: 999 },
  { id: 'heavy', usd: '0.10', minTransactions: 1000, maxTransactions: 9999 },
  { id: 'whale', usd: '0.15', minTransactions: 10000, maxTransactions: null },
];

/** Most recent transactions one analysis reads; older history is left out and the result says `truncated`. */
export const WALLET_HISTORY_MAX_TRANSACTIONS = 50_000;

export interface WalletProtocolActivity {
  protocol: string;
  name: string;
  category: ProtocolCategory;
  programIds: string[];
  transactionCount: number;
  sharePercent: number;
  firstInteractionAt: string;
  lastInteractionAt: string;
  activeDays: number;
  volumeUsd: string | null;
}
export interface WalletCategoryShare {
  category: ProtocolCategory;
  transactionCount: number;
  sharePercent: number;
}
export interface WalletUnknownProgram {
  programId: string;
  transactionCount: number;
}
export interface WalletProtocolHistory {
  wallet: string;
  network: string;
  tier: WalletActivityTier;
  chargedUsd: string;
  transactionCount: number;
  failedTransactionCount: number;
  truncated: boolean;
  firstActivityAt: string | null;
  lastActivityAt: string | null;
  activeDays: number;
  feesPaidLamports: string;
  protocols: WalletProtocolActivity[];
  categories: WalletCategoryShare[];
  unknownPrograms: WalletUnknownProgram[];
  source: DataSource;
}
export interface WalletQuote {
  wallet: string;
  network: string;
  estimatedTransactionCount: number;
  tier: WalletActivityTier;
  priceUsd: string;
  tiers: WalletTierDefinition[];
  estimatedAt: string;
  validUntil: string;
  source: DataSource;
}
export interface WalletHistoryRequest {
  wallet: string;
  since?: string;
}

const TierSchema = named('WalletHistoryTier', z.enum(['light', 'moderate', 'heavy', 'whale']));
const CategorySchema = named(
  'Category',
  z.enum([
    'dex',
    'aggregator',
    'lending',
    'liquid_staking',
    'staking',
    'perpetuals',
    'nft',
    'bridge',
    'launchpad',
    'payments',
    'governance',
    'system',
    'other',
  ]),
);
const Percent = z.number().min(0).max(100);
const TierDefinitionSchema: z.ZodType<WalletTierDefinition> = named(
  'WalletTierDefinition',
  z.object({
    id: TierSchema,
    usd: UsdAmount,
    minTransactions: z.number().int().min(0),
    maxTransactions: z.number().int().min(0).nullable().describe('null: no upper bound'),
  }),
);

const HistorySchema: z.ZodType<WalletProtocolHistory> = named(
  'WalletProtocolHistory',
  z.object({
    wallet: SolanaAddress,
    network: Caip2Network.describe('the cluster read'),
    tier: TierSchema.describe('the activity tier this call was charged at'),
    chargedUsd: UsdAmount.describe('the tier’s price, USD'),
    transactionCount: z.number().int().min(0).describe('transactions analysed'),
    failedTransactionCount: z.number().int().min(0).describe('of those, transactions that failed on chain'),
    truncated: z
      .boolean()
      .describe(
        `true when the wallet has more history than the ${WALLET_HISTORY_MAX_TRANSACTIONS} most recent transactions analysed`,
      ),
    firstActivityAt: Timestamp.nullable().describe('oldest transaction analysed; null for a wallet without history'),
    lastActivityAt: Timestamp.nullable(),
    activeDays: z.number().int().min(0).describe('distinct UTC days with at least one transaction'),
    feesPaidLamports: z
      .string()
      .regex(/^\d+$/)
      .describe('network fees the wallet paid as fee payer, lamports (integer string)'),
    protocols: z
      .array(
        z.object({
          protocol: z.string().describe('protocol id, e.g. "jupiter", "raydium", "marinade", "kamino"'),
          name: z.string(),
          category: CategorySchema,
          programIds: z.array(SolanaAddress).describe('the protocol’s programs the wallet invoked'),
          transactionCount: z.number().int().min(1),
          sharePercent: Percent.describe('share of the analysed transactions'),
          firstInteractionAt: Timestamp,
          lastInteractionAt: Timestamp,
          activeDays: z.number().int().min(1),
          volumeUsd: z
            .string()
            .regex(/^(0|[1-9]\d*)(\.\d+)?$/)
            .nullable()
            .describe('USD value moved through the protocol, a decimal string; null where it cannot be priced'),
        }),
      )
      .describe(
        'protocols interacted with, most transactions first; a transaction invoking several protocols counts for each',
      ),
    categories: z
      .array(z.object({ category: CategorySchema, transactionCount: z.number().int().min(0), sharePercent: Percent }))
      .describe('the same interactions grouped by category'),
    unknownPrograms: z
      .array(z.object({ programId: SolanaAddress, transactionCount: z.number().int().min(1) }))
      .describe('programs invoked that no protocol label matches, most used first (at most 20)'),
    source: DataSource,
  }),
);
const QuoteSchema: z.ZodType<WalletQuote> = named(
  'WalletQuote',
  z.object({
    wallet: SolanaAddress,
    network: Caip2Network,
    estimatedTransactionCount: z.number().int().min(0),
    tier: TierSchema,
    priceUsd: UsdAmount.describe('what POST /api/protocols charges for this wallet'),
    tiers: z.array(TierDefinitionSchema).describe('every tier with its thresholds and price'),
    estimatedAt: Timestamp,
    validUntil: Timestamp.describe('estimatedAt + 10 minutes: a paid call before then is charged this tier'),
    source: DataSource,
  }),
);
const RequestBody: z.ZodType<WalletHistoryRequest> = named(
  'WalletHistoryRequest',
  z
    .object({
      wallet: SolanaAddress.describe('the wallet address to analyse'),
      since: Timestamp.optional().describe('only transactions at or after this time (default: the whole history)'),
    })
    .strict(),
);

const tierText =
  'light: fewer than 100 transactions; moderate: 100 to 999; heavy: 1,000 to 9,999; whale: 10,000 or more';
const WALLET = '5Q544fKrFoe6tsEbD7S8EmxGTJYAKtTVhAW5Q5pge4j1';

const router = c.router({
  protocols: {
    method: 'POST',
    path: '/api/protocols',
    body: RequestBody,
    summary: 'Protocol interaction history of a wallet, priced by activity tier',
    description:
      'Breaks the wallet’s transaction history down by protocol: for each protocol its category, the programs invoked, ' +
      'transaction count and share, first and last interaction, active days and USD volume where it can be priced; then ' +
      'the same by category, and programs no label matches. The price depends on the wallet’s estimated transaction count ' +
      `(within \`since\` when given): ${tierText}. Ask POST /api/quote first to see it. Design: the tier of a quote holds ` +
      `for 10 minutes; at most the ${WALLET_HISTORY_MAX_TRANSACTIONS} most recent transactions are analysed (\`truncated\`). ` +
      '502 upstream_unavailable (with Retry-After) when the chain RPC fails; nothing is charged.',
    responses: { 200: HistorySchema, 502: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: {
      payment: tiered([
        { id: 'light', usd: '0.02', description: 'fewer than 100 transactions' },
        { id: 'moderate', usd: '0.05', description: '100 to 999 transactions' },
        { id: 'heavy', usd: '0.10', description: '1,000 to 9,999 transactions' },
        { id: 'whale', usd: '0.15', description: '10,000 transactions or more' },
      ]),
      example: { body: { wallet: WALLET } },
    } satisfies RouteMeta,
  },
  quote: {
    method: 'POST',
    path: '/api/quote',
    body: RequestBody,
    summary: 'Price quote before paying: estimated transactions, tier, price',
    description:
      'Estimates how many transactions the wallet has (within `since` when given), the activity tier that puts it in and ' +
      `the USD price POST /api/protocols will charge for the same body: ${tierText}. Free. Design: the estimate is kept ` +
      'for 10 minutes (`validUntil`) so the paid call is charged the quoted tier. 502 upstream_unavailable (with ' +
      'Retry-After) when the chain RPC fails.',
    responses: { 200: QuoteSchema, 502: ErrorEnvelope, ...standardErrors },
    metadata: {
      payment: free(),
      example: { body: { wallet: WALLET, since: '2025-01-01T00:00:00.000Z' } },
    } satisfies RouteMeta,
  },
  health: {
    method: 'GET',
    path: '/api/health',
    summary: 'Health check',
    description:
      'Whether the service, its database and the chain RPC answer. Free: monitors poll it. Design: status degraded when ' +
      'the last call to the chain RPC failed (analyses then fail with 502); 503 database_unavailable (with Retry-After) ' +
      'when the database does not answer.',
    responses: { 200: DataServiceHealth, 503: ServiceHealth, ...standardErrors },
    metadata: { payment: free(), example: {} } satisfies RouteMeta,
  },
});

export const walletHistory = defineService({
  id: 'wallet-history',
  title: 'Wallet Protocol History',
  description:
    'Analyses a Solana wallet’s transaction history by protocol interaction (DEXes, lending, staking, perpetuals, NFTs, ' +
    'bridges and more), priced by the wallet’s activity tier: light 0.02, moderate 0.05, heavy 0.10, whale 0.15 USD. ' +
    'A free quote tells the tier and price before paying.',
  router,
  dataModes: {
    chain: "the deployment's Solana RPC: the local ledger, or a cluster with SOLANA_RPC_URL",
  },
});
