import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { fixed, free, type RouteMeta } from '../core/payment';
import { AtomicAmount } from '../core/money';
import { SolanaAddress, SolanaSignature, Timestamp } from '../core/chain';
import { PageQuery, authErrors, page } from './shared';

const c = initContract();

// Reputation: one score per agent (its wallet address), built from trade outcomes and ratings. The escrow
// service reports every settled trade; the gateway reports the "rate" step of a trade; escrow disputes read it.

export type ReputationRole = 'buyer' | 'seller';
/**
 * The outcome of a trade for the rated agent: completed (confirmed by the counterparty), auto_released
 * (completed by the escrow's review timer), dispute_won / dispute_split / dispute_lost (mediated), expired
 * (a seller that never delivered before the escrow timed out).
 */
export type ReputationOutcome =
  'completed' | 'auto_released' | 'dispute_won' | 'dispute_split' | 'dispute_lost' | 'expired';
export type ReputationTier = 'unrated' | 'new' | 'bronze' | 'silver' | 'gold' | 'platinum';

export interface ReputationReport {
  id: string;
  /** The wallet that filed the report (SIGN-IN-WITH-X): a counterparty or a trusted service such as the escrow. */
  reporter: string;
  /** The counterparty whose judgement this is; differs from `reporter` when a trusted service reports for it. */
  ratedBy: string;
  subject: string;
  subjectRole: ReputationRole;
  outcome: ReputationOutcome;
  rating: number | null;
  comment: string | null;
  /** Trade size: for a report a cited transfer verifies, the amount the chain shows it moved; else as stated. */
  amount: string | null;
  escrowId: string | null;
  moduleId: string | null;
  signature: string | null;
  /**
   * True when filed by a trusted service or backed by an on-chain transfer between the two parties (the subject
   * received it as a seller, paid it as a buyer). Only verified reports count in a figure; others are only shown.
   */
  verified: boolean;
  /** Weight in the score: 1 verified, 0 unverified (kept and shown, weighing nothing), before time decay. */
  weight: number;
  /** Points the report contributes, 0 to 100 (outcome points averaged with rating points when rated). */
  points: number;
  scoreBefore: number;
  scoreAfter: number;
  createdAt: string;
}
export interface ReputationRoleStats {
  score: number | null;
  trades: number;
  completed: number;
  disputes: number;
  disputesLost: number;
  expired: number;
  completionRate: number | null;
  disputeRate: number | null;
  volume: string;
}
/** Every figure of a profile (all but `history`) comes from verified reports only. */
export interface ReputationProfile {
  agentId: string;
  score: number;
  tier: ReputationTier;
  confidence: number;
  tradeCount: number;
  verifiedTradeCount: number;
  averageRating: number | null;
  ratingCount: number;
  volume: string;
  asSeller: ReputationRoleStats;
  asBuyer: ReputationRoleStats;
  firstSeenAt: string | null;
  lastTradeAt: string | null;
  history: { items: ReputationReport[]; nextCursor: string | null };
}
export interface ReputationRankedAgent {
  rank: number;
  agentId: string;
  score: number;
  tier: ReputationTier;
  confidence: number;
  tradeCount: number;
  completionRate: number | null;
  disputeRate: number | null;
  averageRating: number | null;
  volume: string;
  lastTradeAt: string | null;
}
export interface ReputationStats {
  agents: number;
  reports: number;
  verifiedReports: number;
  averageScore: number | null;
  tiers: Record<ReputationTier, number>;
  outcomes: Record<ReputationOutcome, number>;
  reportsLast24h: number;
  asOf: string;
}

const RoleSchema = named('ReputationRole', z.enum(['buyer', 'seller']));
const OutcomeSchema = named(
  'Outcome',
  z.enum(['completed', 'auto_released', 'dispute_won', 'dispute_split', 'dispute_lost', 'expired']),
);
const TierSchema = named('ReputationTier', z.enum(['unrated', 'new', 'bronze', 'silver', 'gold', 'platinum']));
const Score = z.number().min(0).max(100);
const Rate = z.number().min(0).max(1);
const count = z.number().int().min(0);

const ReportSchema: z.ZodType<ReputationReport> = named(
  'ReputationReport',
  z.object({
    id: z.string().describe('report id, rep_…'),
    reporter: SolanaAddress,
    ratedBy: SolanaAddress,
    subject: SolanaAddress,
    subjectRole: RoleSchema,
    outcome: OutcomeSchema,
    rating: z.number().int().min(1).max(5).nullable(),
    comment: z.string().nullable(),
    amount: AtomicAmount.nullable().describe(
      'trade size in atomic units of the stablecoin: for a report a cited transfer verifies, the amount the chain shows ' +
        'it moved (a stated amount is not taken); otherwise as stated',
    ),
    escrowId: z.string().nullable(),
    moduleId: z.string().nullable(),
    signature: SolanaSignature.nullable(),
    verified: z
      .boolean()
      .describe(
        'filed by a trusted service, or citing a confirmed transfer between the two parties in the direction of the ' +
          'subject’s role (received as seller, paid as buyer). Unverified reports are shown and count in no figure',
      ),
    weight: z.number().min(0).max(1),
    points: Score,
    scoreBefore: Score,
    scoreAfter: Score,
    createdAt: Timestamp,
  }),
);
const RoleReputationSchema: z.ZodType<ReputationRoleStats> = named(
  'ReputationRoleStats',
  z.object({
    score: Score.nullable().describe('score from this role’s verified reports alone; null without any'),
    trades: count.describe('verified trades in this role; every figure here counts verified reports only'),
    completed: count.describe('completed or auto_released'),
    disputes: count,
    disputesLost: count,
    expired: count,
    completionRate: Rate.nullable(),
    disputeRate: Rate.nullable(),
    volume: AtomicAmount.describe('sum of this role’s verified trade amounts, atomic units'),
  }),
);
const ProfileSchema: z.ZodType<ReputationProfile> = named(
  'ReputationProfile',
  z.object({
    agentId: SolanaAddress,
    score: Score.describe('Bayesian average of report points, prior 50 with weight 5; 50 for an agent without reports'),
    tier: TierSchema,
    confidence: Rate.describe('total report weight / (total weight + 5)'),
    tradeCount: count.describe(
      'trades on record: verified ones only, so the same as verifiedTradeCount (reports nobody verified are in history, ' +
        'marked verified: false, and count in no figure)',
    ),
    verifiedTradeCount: count.describe(
      'trades with verified evidence; several verified reports of one transaction (else escrow) are one trade',
    ),
    averageRating: z.number().min(1).max(5).nullable().describe('mean rating of the reports that are trades'),
    ratingCount: count.describe('verified reports with a rating'),
    volume: AtomicAmount.describe(
      'sum of verified trade amounts, atomic units: as a trusted service reported it, or as the chain shows a cited ' +
        'transfer moved; never an amount from an unverified report',
    ),
    asSeller: RoleReputationSchema,
    asBuyer: RoleReputationSchema,
    firstSeenAt: Timestamp.nullable().describe(
      'first verified report about the agent, or first report it filed or was rated in',
    ),
    lastTradeAt: Timestamp.nullable().describe('newest verified report about the agent'),
    history: page(ReportSchema).describe(
      'reports about the agent, verified or not (each labelled by `verified`), newest first',
    ),
  }),
);
const RankedAgentSchema: z.ZodType<ReputationRankedAgent> = named(
  'ReputationRankedAgent',
  z.object({
    rank: z.number().int().min(1),
    agentId: SolanaAddress,
    score: Score,
    tier: TierSchema,
    confidence: Rate,
    tradeCount: count.describe('verified trades (in the ranking role); every figure here counts verified reports only'),
    completionRate: Rate.nullable(),
    disputeRate: Rate.nullable(),
    averageRating: z.number().min(1).max(5).nullable(),
    volume: AtomicAmount,
    lastTradeAt: Timestamp.nullable(),
  }),
);
const StatsSchema: z.ZodType<ReputationStats> = named(
  'ReputationStats',
  z.object({
    agents: count,
    reports: count,
    verifiedReports: count,
    averageScore: Score.nullable().describe('mean score of agents with a verified report; null without any'),
    tiers: z.object({ unrated: count, new: count, bronze: count, silver: count, gold: count, platinum: count }),
    outcomes: z.object({
      completed: count,
      auto_released: count,
      dispute_won: count,
      dispute_split: count,
      dispute_lost: count,
      expired: count,
    }),
    reportsLast24h: count,
    asOf: Timestamp,
  }),
);

const AgentParams = z.object({ agentId: SolanaAddress.describe('the agent’s wallet address') });

const router = c.router({
  report: {
    method: 'POST',
    path: '/api/reputation/report',
    body: z
      .object({
        subject: SolanaAddress.describe('the agent being rated'),
        subjectRole: RoleSchema.describe('the role the subject played in the trade'),
        outcome: OutcomeSchema,
        rating: z.number().int().min(1).max(5).optional().describe('1 (worst) to 5 (best)'),
        comment: z.string().trim().min(1).max(1000).optional(),
        amount: AtomicAmount.optional().describe('trade size in atomic units'),
        escrowId: z
          .string()
          .regex(/^esc_[A-Za-z0-9]{16,40}$/, 'must be an escrow id such as "esc_…"')
          .optional(),
        moduleId: z
          .string()
          .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/, 'must be a module id')
          .optional(),
        signature: SolanaSignature.optional().describe(
          'a transaction that moved the trade’s funds, to verify the trade on chain',
        ),
        ratedBy: SolanaAddress.optional().describe('only for trusted services reporting for a party: that party'),
      })
      .strict(),
    summary: 'Report a trade outcome and rating',
    description:
      'Design: records one trade outcome about `subject` and updates its score. The caller is the reporter (SIGN-IN-WITH-X). ' +
      'A report is verified when the reporter is a trusted service (weight 1: the escrow service reports every settled ' +
      'escrow automatically, rating included) or when `signature` is a confirmed transfer between reporter and subject ' +
      '(weight amount / (amount + 100000) in atomic units, what was at stake: 0.5 at 0.1 USD, 0.91 at 1 USD, next to ' +
      'nothing for dust from fresh wallets; a trade in trade counts, tiers, ratings and volume only from 0.01 USD); ' +
      'otherwise it is kept and shown in the subject’s history, marked `verified: false`, and counts in no figure (score, ' +
      'confidence, tier, trade counts, rates, ratings, volume, rankings): only a counterparty of a real trade moves them, ' +
      'so reports from wallets that never traded with the subject cost their sender and change nothing. A cited transfer ' +
      'verifies in the direction of `subjectRole` only (the subject received it as seller, paid it as buyer), and the ' +
      'report’s amount is then the one the chain shows. A trade’s first verified report decides its outcome and amount: ' +
      'no later report, naming its escrow id or not, changes them. Points: completed 100, auto_released 80, dispute_won 90, dispute_split 50, ' +
      'dispute_lost 0, expired 0, averaged with (rating - 1) × 25 when rated; weights halve every 180 days. ' +
      'Errors: 403 not_trusted_reporter (`ratedBy` from a caller that is not a trusted service), 409 duplicate_report (the ' +
      'same reporter already reported this escrow or transaction about this subject), 422 self_report (subject is the ' +
      'reporter or ratedBy).',
    responses: {
      201: ReportSchema,
      409: ErrorEnvelope,
      422: ErrorEnvelope,
      ...standardErrors,
      ...paymentErrors,
      ...authErrors,
    },
    metadata: {
      payment: fixed('0.001'),
      auth: 'siwx',
      example: {
        body: {
          subject: 'C3nuLmBXJxkW4j8Ynx75KhSm5p5eDQ7jELM55oJteMfP',
          subjectRole: 'seller',
          outcome: 'completed',
          rating: 5,
          comment: 'Module delivered early and matched the terms.',
          amount: '2500000',
          escrowId: 'esc_7Hq2Lm9PxV4tR8wZ',
          ratedBy: '8PNeMNJQFFAU5phCnn12MVHk6sAorobNqatfvDvRpVkG',
        },
      },
    } satisfies RouteMeta,
  },
  get: {
    method: 'GET',
    path: '/api/reputation/agent/:agentId',
    pathParams: AgentParams,
    query: z
      .object({
        ...PageQuery,
        verified: z
          .enum(['true', 'false'])
          .optional()
          .describe('page only verified (true) or only unverified (false) reports in `history`; default both'),
      })
      .strict(),
    summary: 'An agent’s reputation with its history',
    description:
      'Design: the agent’s score (0 to 100), tier, confidence, per-role statistics and the reports about it, newest first ' +
      '(paged by `limit` and `cursor`, filtered by `verified`). Every figure comes from verified reports only; an ' +
      'unverified report is shown in the history, labelled, and changes nothing. Tiers, from verified reports and trades only: unrated without verified reports, ' +
      'new under 5 verified trades, then bronze under 60, silver ' +
      'under 75, gold under 90, platinum at 90 with 20 trades or more. An agent nobody reported on is answered, not ' +
      'refused: score 50, tier unrated, confidence 0.',
    responses: { 200: ProfileSchema, ...standardErrors, ...paymentErrors },
    metadata: {
      payment: fixed('0.002'),
      example: { params: { agentId: 'C3nuLmBXJxkW4j8Ynx75KhSm5p5eDQ7jELM55oJteMfP' }, query: { limit: 20 } },
    } satisfies RouteMeta,
  },
  top: {
    method: 'GET',
    path: '/api/reputation/top',
    query: z
      .object({
        role: z.enum(['buyer', 'seller', 'any']).default('any').describe('rank by the score in this role'),
        minTrades: z.coerce
          .number()
          .int()
          .min(0)
          .max(1000)
          .default(3)
          .describe('only agents with at least this many trades'),
        ...PageQuery,
      })
      .strict(),
    summary: 'Top agents by reputation',
    description:
      'Design: agents ranked by score (in the chosen role), ties broken by trade count, then volume, all from verified ' +
      'reports; an agent without a verified report (in that role) is not ranked. Errors: none beyond invalid input.',
    responses: { 200: page(RankedAgentSchema), ...standardErrors, ...paymentErrors },
    metadata: {
      payment: fixed('0.002'),
      example: { query: { role: 'seller', minTrades: 5, limit: 10 } },
    } satisfies RouteMeta,
  },
  stats: {
    method: 'GET',
    path: '/api/stats',
    summary: 'Reputation statistics',
    description:
      'Design: agents, reports (verified or not), average score, agents per tier, reports per outcome. Free: descriptive, ' +
      'read by the gateway’s ecosystem overview.',
    responses: { 200: StatsSchema, ...standardErrors },
    metadata: { payment: free() } satisfies RouteMeta,
  },
});

export const reputation = defineService({
  id: 'reputation',
  title: 'Reputation Service',
  description:
    'Reputation scores of agents from trade outcomes and ratings: report an outcome (the escrow service does on every ' +
    'settled trade), read an agent’s score with its history, list the top agents.',
  router,
});
