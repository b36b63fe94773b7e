import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { adaptive, fixed, free, type RouteMeta } from '../core/payment';
import { AtomicAmount, PositiveAtomicAmount } from '../core/money';
import { Caip2Network, SolanaAddress, SolanaSignature, Timestamp } from '../core/chain';
import { Generator, authErrors } from './shared';
import { ScannableContent, ScannableContentInput, type ScanFindingSeverity, type ScanVerdict } from './verification';
import type { ReputationTier } from './reputation';

const c = initContract();

// Escrow for knowledge-module trades. Custody (DESIGN.md): the buyer's funds sit in the escrow service's own
// vault wallet on chain, and every movement (funding, release, refund) is an on-chain transfer whose
// signature is recorded in the escrow's timeline. Amounts are atomic units of the stablecoin (6 decimals).
//
// Funding: the create call is paid with x402, and its price IS the escrowed amount plus the service fee, paid
// to the vault (the service's payTo). One signed, gasless transfer from the buyer funds the escrow: no
// second step, no deposit that could arrive without an escrow, and the SDK's budgets guard the amount.
//
// States of an escrow: funded -> delivered -> (completed | disputed -> resolved), or expired when the
// timeout refunds what was never delivered. Each milestone has its own state (see EscrowMilestoneState).

/** Smallest and largest escrow: 0.01 and 10,000 USD. The fee is 1 percent, rounded up, at least 0.01 USD. */
export const ESCROW_MIN_ATOMIC = 10_000n;
export const ESCROW_MAX_ATOMIC = 10_000_000_000n;
export const ESCROW_FEE_BPS = 100n;
export const ESCROW_MIN_FEE_ATOMIC = 10_000n;
/** Default timers: 72 hours to review a delivery, 14 days (336 hours) for the seller to deliver. */
export const ESCROW_DEFAULT_REVIEW_HOURS = 72;
export const ESCROW_DEFAULT_TIMEOUT_HOURS = 336;
/** A dispute's counterparty may answer for 48 hours; an unresolved dispute is mediated automatically 72 hours later. */
export const ESCROW_DISPUTE_RESPONSE_HOURS = 48;
export const ESCROW_DISPUTE_AUTO_RESOLVE_HOURS = 72;

/** The service fee of an escrow of `amount` atomic units; the x402 price of create is amount + fee. */
export function escrowFee(amount: bigint): bigint {
  const fee = (amount * ESCROW_FEE_BPS + 9_999n) / 10_000n;
  return fee < ESCROW_MIN_FEE_ATOMIC ? ESCROW_MIN_FEE_ATOMIC : fee;
}

/**
 * funded: money locked, nothing awaiting review. delivered: at least one milestone awaits the buyer's review.
 * disputed: a dispute is open; every unreleased fund is frozen and the timers are paused.
 * Final: completed (every milestone released to the seller), resolved (every milestone settled, one at least
 * by the mediator), expired (the timeout refunded at least one undelivered milestone, none was mediated).
 */
export type EscrowState = 'funded' | 'delivered' | 'disputed' | 'completed' | 'resolved' | 'expired';
/**
 * pending: awaiting delivery. delivered: awaiting review (the review timer runs). released: paid to the seller.
 * disputed: frozen in an open dispute. resolved: distributed by the mediator. refunded: returned to the buyer
 * by the timeout.
 */
export type EscrowMilestoneState = 'pending' | 'delivered' | 'released' | 'disputed' | 'resolved' | 'refunded';
export type EscrowParty = 'buyer' | 'seller';
export type EscrowActor = 'buyer' | 'seller' | 'system' | 'mediator';
export type EscrowEvent =
  | 'funded'
  | 'delivered'
  | 'confirmed'
  | 'released'
  | 'review_timer_expired'
  | 'timeout_expired'
  | 'refunded'
  | 'disputed'
  | 'dispute_response'
  | 'investigation_updated'
  | 'timers_paused'
  | 'timers_resumed'
  | 'resolved'
  | 'reputation_reported'
  | 'closed';
export type EscrowDisputeReason =
  | 'not_delivered'
  | 'not_as_described'
  | 'low_quality'
  | 'plagiarism'
  | 'unsafe_content'
  | 'late_delivery'
  | 'unresponsive_buyer'
  | 'other';
export type EscrowMediatorOutcome = 'release_to_seller' | 'refund_to_buyer' | 'split';

/** One on-chain movement of escrowed funds. */
export interface EscrowTransfer {
  purpose: 'funding' | 'release' | 'refund';
  from: string;
  to: string;
  /** Atomic units; funding includes the fee. */
  amount: string;
  signature: string;
  at: string;
}
export interface EscrowDelivery {
  id: string;
  content: ScannableContent;
  /** SHA-256 of the UTF-8 content body, lowercase hex. */
  contentHash: string;
  sizeBytes: number;
  moduleId: string | null;
  notes: string | null;
  /** A verification scan of this exact content, when the seller attached one. */
  scanId: string | null;
  deliveredAt: string;
}
export interface EscrowMilestone {
  /** "m1", "m2", … by position; a single-release escrow has one milestone, "m1". */
  id: string;
  position: number;
  title: string;
  description: string | null;
  amount: string;
  state: EscrowMilestoneState;
  delivery: EscrowDelivery | null;
  /** When the review timer releases this delivered milestone to the seller; null unless delivered. */
  reviewEndsAt: string | null;
  settledAt: string | null;
  settledBy: 'buyer' | 'review_timer' | 'timeout' | 'mediator' | null;
  /** Atomic units paid to the seller and refunded to the buyer from this milestone so far. */
  toSeller: string;
  toBuyer: string;
}
export interface EscrowTimelineEntry {
  id: string;
  at: string;
  event: EscrowEvent;
  actor: EscrowActor;
  milestoneIds: string[];
  message: string;
  /** The on-chain transfer this entry records, for funding, releases and refunds. */
  transfer: EscrowTransfer | null;
}
export type EscrowEvidence =
  | { type: 'text'; text: string; description: string | null }
  | { type: 'url'; url: string; description: string | null }
  | { type: 'transaction'; signature: string; description: string | null }
  | { type: 'scan'; scanId: string; description: string | null };
export type EscrowEvidenceInput =
  | { type: 'text'; text: string; description?: string }
  | { type: 'url'; url: string; description?: string }
  | { type: 'transaction'; signature: string; description?: string }
  | { type: 'scan'; scanId: string; description?: string };
export interface EscrowDisputeStatement {
  party: EscrowParty;
  address: string;
  reason: EscrowDisputeReason;
  statement: string;
  evidence: EscrowEvidence[];
  submittedAt: string;
}
export interface EscrowScanSummary {
  scanId: string;
  milestoneId: string;
  score: number;
  verdict: ScanVerdict;
  findingCount: number;
  highestSeverity: ScanFindingSeverity | null;
  plagiarismSimilarity: number | null;
  certificateId: string | null;
}
export interface EscrowReputationSnapshot {
  agentId: string;
  score: number;
  tier: ReputationTier;
  confidence: number;
  tradeCount: number;
  disputeRate: number | null;
}
export interface EscrowInvestigation {
  /** partial when the verification or reputation service could not be read (see `unavailable`). */
  status: 'complete' | 'partial';
  scans: EscrowScanSummary[];
  reputation: { buyer: EscrowReputationSnapshot | null; seller: EscrowReputationSnapshot | null };
  milestonesDelivered: number;
  milestonesDisputed: number;
  deliveredBeforeTimeout: boolean | null;
  observations: string[];
  leaning: EscrowParty | 'neutral';
  unavailable: ('verification' | 'reputation')[];
  generator: Generator;
  updatedAt: string;
}
export interface EscrowMediatorFactor {
  factor: 'delivery' | 'terms' | 'quality' | 'safety' | 'plagiarism' | 'timeliness' | 'reputation' | 'evidence';
  finding: string;
  favors: EscrowParty | 'neutral';
  weight: number;
}
export interface EscrowMilestoneDistribution {
  milestoneId: string;
  amount: string;
  toSeller: string;
  toBuyer: string;
}
export interface EscrowMediatorDecision {
  id: string;
  outcome: EscrowMediatorOutcome;
  /** Whole percent of the disputed amount paid to the seller; the rest is refunded to the buyer. */
  sellerPercent: number;
  distribution: { total: string; toSeller: string; toBuyer: string };
  milestones: EscrowMilestoneDistribution[];
  rationale: string;
  factors: EscrowMediatorFactor[];
  confidence: number;
  binding: true;
  requestedBy: EscrowParty | 'system';
  transfers: EscrowTransfer[];
  decidedAt: string;
  generator: Generator;
}
export interface EscrowDispute {
  id: string;
  status: 'open' | 'resolved';
  openedBy: EscrowParty;
  milestoneIds: string[];
  /** Atomic units frozen by this dispute: the unreleased amount of its milestones. */
  frozenAmount: string;
  statements: EscrowDisputeStatement[];
  respondBy: string;
  autoResolveAt: string;
  investigation: EscrowInvestigation;
  decision: EscrowMediatorDecision | null;
  openedAt: string;
  resolvedAt: string | null;
}
export interface EscrowNextAction {
  party: EscrowParty | 'mediator' | 'none';
  action: 'deliver' | 'review' | 'respond_to_dispute' | 'resolve' | 'none';
  deadline: string | null;
}
export interface Escrow {
  id: string;
  state: EscrowState;
  kind: 'single' | 'milestones';
  title: string;
  description: string | null;
  terms: string | null;
  moduleId: string | null;
  negotiationId: string | null;
  buyer: string;
  seller: string;
  /** Escrowed amount, atomic units, the fee excluded. */
  amount: string;
  fee: string;
  network: string;
  asset: string;
  vault: string;
  /** locked + frozen + released + refunded = amount. */
  balances: { locked: string; frozen: string; released: string; refunded: string };
  milestones: EscrowMilestone[];
  reviewTimer: { periodHours: number; nextReleaseAt: string | null };
  timeoutRelease: { timeoutHours: number; at: string; action: 'refund_undelivered_to_buyer' };
  timersPausedAt: string | null;
  nextAction: EscrowNextAction;
  disputes: EscrowDispute[];
  timeline: EscrowTimelineEntry[];
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
}
export interface EscrowDeliverResult {
  escrow: Escrow;
  milestoneId: string;
  delivery: EscrowDelivery;
  reviewEndsAt: string;
}
export interface EscrowConfirmResult {
  escrow: Escrow;
  releasedMilestoneIds: string[];
  transfers: EscrowTransfer[];
  /** The automatic report to the reputation service: sent, or queued for retry when that service is unreachable. */
  reputationReport: { status: 'sent' | 'queued'; reportId: string | null };
}
export interface EscrowDisputeResult {
  escrow: Escrow;
  dispute: EscrowDispute;
}
export interface EscrowResolveResult {
  escrow: Escrow;
  dispute: EscrowDispute;
  decision: EscrowMediatorDecision;
}
export interface EscrowSummary {
  id: string;
  state: EscrowState;
  role: EscrowParty;
  counterparty: string;
  title: string;
  amount: string;
  released: string;
  refunded: string;
  milestones: number;
  milestonesSettled: number;
  nextAction: EscrowNextAction;
  /** True when the listed agent is the party `nextAction` waits for. */
  actionRequired: boolean;
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
}
export interface EscrowAgentSummary {
  total: number;
  active: number;
  completed: number;
  disputed: number;
  asBuyer: number;
  asSeller: number;
  actionRequired: number;
  /** Atomic units the agent has locked as a buyer, now. */
  lockedAsBuyer: string;
  /** Atomic units locked for the agent as a seller, now. */
  pendingAsSeller: string;
  spent: string;
  earned: string;
  refunded: string;
  disputesOpened: number;
  completionRate: number | null;
  averageCompletionHours: number | null;
}
export interface EscrowList {
  agentId: string;
  role: EscrowParty | 'any';
  active: EscrowSummary[];
  completed: EscrowSummary[];
  disputed: EscrowSummary[];
  /** True when a group held more than `limit` escrows (the newest are listed; the summary counts all). */
  truncated: boolean;
  summary: EscrowAgentSummary;
}
export interface EscrowStats {
  totalEscrows: number;
  byState: Record<EscrowState, number>;
  /** Atomic units the vault holds for open escrows (locked + frozen), now. */
  volumeLocked: string;
  volume: { escrowed: string; released: string; refunded: string; fees: string };
  disputes: { total: number; open: number; resolved: number; disputeRate: number | null };
  /** Shares of resolved disputes by outcome (0 to 1), null before the first resolution. */
  resolutionRates: { releasedToSeller: number | null; refundedToBuyer: number | null; split: number | null };
  averageResolutionHours: number | null;
  completionRate: number | null;
  averageCompletionHours: number | null;
  milestonesAutoReleased: number;
  network: string;
  asset: string;
  asOf: string;
}

const ESCROW_ID = /^esc_[A-Za-z0-9]{16,40}$/;
const EscrowId = z.string().regex(ESCROW_ID, 'must be an escrow id such as "esc_7Hq2Lm9PxV4tR8wZ"');
/** An escrow has at most 10 milestones, always m1…m10, in order. */
export const ESCROW_MILESTONE_IDS = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'm8', 'm9', 'm10'] as const;
export type EscrowMilestoneId = (typeof ESCROW_MILESTONE_IDS)[number];
// An enum, so the SDK types the ids; the message is the one the pattern gave.
const MilestoneId = z.enum(ESCROW_MILESTONE_IDS, {
  errorMap: (issue, ctx) => ({
    message: issue.code === 'invalid_enum_value' ? 'must be a milestone id "m1" to "m10"' : ctx.defaultError,
  }),
});
const ModuleRef = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/, 'must be a module id such as "mod_rag_basics"');
const ContentHash = z.string().regex(/^[0-9a-f]{64}$/);
const Rate = z.number().min(0).max(1);
const count = z.number().int().min(0);
const EscrowAmount = AtomicAmount.refine(
  // Zod runs refinements on values that failed the format too: leave those to AtomicAmount's message.
  (v) => !/^\d+$/.test(v) || (BigInt(v) >= ESCROW_MIN_ATOMIC && BigInt(v) <= ESCROW_MAX_ATOMIC),
  'must be between 10000 and 10000000000 atomic units (0.01 to 10,000 USD)',
);

const StateSchema = named(
  'EscrowState',
  z.enum(['funded', 'delivered', 'disputed', 'completed', 'resolved', 'expired']),
);
const MilestoneStateSchema = named(
  'MilestoneState',
  z.enum(['pending', 'delivered', 'released', 'disputed', 'resolved', 'refunded']),
);
const PartySchema = named('EscrowParty', z.enum(['buyer', 'seller']));
const LeaningSchema = named('Leaning', z.enum(['buyer', 'seller', 'neutral']));
const ReasonSchema = named(
  'Reason',
  z.enum([
    'not_delivered',
    'not_as_described',
    'low_quality',
    'plagiarism',
    'unsafe_content',
    'late_delivery',
    'unresponsive_buyer',
    'other',
  ]),
);
const EventSchema = named(
  'Event',
  z.enum([
    'funded',
    'delivered',
    'confirmed',
    'released',
    'review_timer_expired',
    'timeout_expired',
    'refunded',
    'disputed',
    'dispute_response',
    'investigation_updated',
    'timers_paused',
    'timers_resumed',
    'resolved',
    'reputation_reported',
    'closed',
  ]),
);

const TransferSchema: z.ZodType<EscrowTransfer> = named(
  'EscrowTransfer',
  z.object({
    purpose: z.enum(['funding', 'release', 'refund']),
    from: SolanaAddress,
    to: SolanaAddress,
    amount: AtomicAmount,
    signature: SolanaSignature,
    at: Timestamp,
  }),
);
const DeliverySchema: z.ZodType<EscrowDelivery> = named(
  'EscrowDelivery',
  z.object({
    id: z.string().describe('delivery id, dlv_…'),
    content: ScannableContent,
    contentHash: ContentHash.describe('SHA-256 of the UTF-8 content body, lowercase hex'),
    sizeBytes: count,
    moduleId: z.string().nullable(),
    notes: z.string().nullable(),
    scanId: z.string().nullable(),
    deliveredAt: Timestamp,
  }),
);
const MilestoneSchema: z.ZodType<EscrowMilestone> = named(
  'EscrowMilestone',
  z.object({
    id: z.string().describe('"m1", "m2", … by position'),
    position: z.number().int().min(1).max(10),
    title: z.string(),
    description: z.string().nullable(),
    amount: AtomicAmount,
    state: MilestoneStateSchema,
    delivery: DeliverySchema.nullable(),
    reviewEndsAt: Timestamp.nullable().describe('when the review timer releases this milestone to the seller'),
    settledAt: Timestamp.nullable(),
    settledBy: z.enum(['buyer', 'review_timer', 'timeout', 'mediator']).nullable(),
    toSeller: AtomicAmount,
    toBuyer: AtomicAmount,
  }),
);
const TimelineEntrySchema: z.ZodType<EscrowTimelineEntry> = named(
  'EscrowTimelineEntry',
  z.object({
    id: z.string().describe('entry id, evt_…'),
    at: Timestamp,
    event: EventSchema,
    actor: z.enum(['buyer', 'seller', 'system', 'mediator']),
    milestoneIds: z.array(z.string()),
    message: z.string(),
    transfer: TransferSchema.nullable().describe(
      'the on-chain transfer, with its signature, for funding, releases and refunds',
    ),
  }),
);

const evidenceDescription = z.string().trim().min(1).max(500).optional();
const EvidenceInput: z.ZodType<EscrowEvidenceInput> = named(
  'EscrowEvidenceInput',
  z.discriminatedUnion('type', [
    z
      .object({ type: z.literal('text'), text: z.string().trim().min(1).max(4000), description: evidenceDescription })
      .strict(),
    z
      .object({
        type: z.literal('url'),
        url: z
          .string()
          .url()
          .max(2000)
          .regex(/^https?:\/\//, 'must be an http(s) URL'),
        description: evidenceDescription,
      })
      .strict(),
    z.object({ type: z.literal('transaction'), signature: SolanaSignature, description: evidenceDescription }).strict(),
    z
      .object({
        type: z.literal('scan'),
        scanId: z.string().regex(/^scn_[A-Za-z0-9]{16,40}$/, 'must be a verification scan id such as "scn_…"'),
        description: evidenceDescription,
      })
      .strict(),
  ]),
);
const EvidenceSchema: z.ZodType<EscrowEvidence> = named(
  'EscrowEvidence',
  z.discriminatedUnion('type', [
    z.object({ type: z.literal('text'), text: z.string(), description: z.string().nullable() }),
    z.object({ type: z.literal('url'), url: z.string(), description: z.string().nullable() }),
    z.object({ type: z.literal('transaction'), signature: SolanaSignature, description: z.string().nullable() }),
    z.object({ type: z.literal('scan'), scanId: z.string(), description: z.string().nullable() }),
  ]),
);
const StatementSchema: z.ZodType<EscrowDisputeStatement> = named(
  'EscrowDisputeStatement',
  z.object({
    party: PartySchema,
    address: SolanaAddress,
    reason: ReasonSchema,
    statement: z.string(),
    evidence: z.array(EvidenceSchema),
    submittedAt: Timestamp,
  }),
);
const ReputationSnapshotSchema: z.ZodType<EscrowReputationSnapshot> = named(
  'EscrowReputationSnapshot',
  z.object({
    agentId: SolanaAddress,
    score: z.number().min(0).max(100),
    tier: z.enum(['unrated', 'new', 'bronze', 'silver', 'gold', 'platinum']),
    confidence: Rate,
    tradeCount: count,
    disputeRate: Rate.nullable(),
  }),
);
const InvestigationSchema: z.ZodType<EscrowInvestigation> = named(
  'EscrowInvestigation',
  z.object({
    status: z.enum(['complete', 'partial']),
    scans: z
      .array(
        z.object({
          scanId: z.string(),
          milestoneId: z.string(),
          score: z.number().min(0).max(100),
          verdict: z.enum(['pass', 'warn', 'fail']),
          findingCount: count,
          highestSeverity: z.enum(['info', 'low', 'medium', 'high', 'critical']).nullable(),
          plagiarismSimilarity: Rate.nullable(),
          certificateId: z.string().nullable(),
        }),
      )
      .describe('verification scans of the delivered content of the disputed milestones'),
    reputation: z.object({ buyer: ReputationSnapshotSchema.nullable(), seller: ReputationSnapshotSchema.nullable() }),
    milestonesDelivered: count,
    milestonesDisputed: count,
    deliveredBeforeTimeout: z.boolean().nullable().describe('null when nothing disputed was delivered'),
    observations: z.array(z.string()),
    leaning: LeaningSchema.describe('which side the evidence favours so far; the decision is made by resolve'),
    unavailable: z.array(z.enum(['verification', 'reputation'])),
    generator: Generator,
    updatedAt: Timestamp,
  }),
);
const DecisionSchema: z.ZodType<EscrowMediatorDecision> = named(
  'EscrowMediatorDecision',
  z.object({
    id: z.string().describe('decision id, dec_…'),
    outcome: z.enum(['release_to_seller', 'refund_to_buyer', 'split']),
    sellerPercent: z.number().int().min(0).max(100),
    distribution: z.object({ total: AtomicAmount, toSeller: AtomicAmount, toBuyer: AtomicAmount }),
    milestones: z.array(
      z.object({ milestoneId: z.string(), amount: AtomicAmount, toSeller: AtomicAmount, toBuyer: AtomicAmount }),
    ),
    rationale: z.string(),
    factors: z.array(
      z.object({
        factor: z.enum([
          'delivery',
          'terms',
          'quality',
          'safety',
          'plagiarism',
          'timeliness',
          'reputation',
          'evidence',
        ]),
        finding: z.string(),
        favors: LeaningSchema,
        weight: Rate,
      }),
    ),
    confidence: Rate,
    binding: z.literal(true),
    requestedBy: z.enum(['buyer', 'seller', 'system']),
    transfers: z.array(TransferSchema),
    decidedAt: Timestamp,
    generator: Generator,
  }),
);
const DisputeSchema: z.ZodType<EscrowDispute> = named(
  'EscrowDispute',
  z.object({
    id: z.string().describe('dispute id, dsp_…'),
    status: z.enum(['open', 'resolved']),
    openedBy: PartySchema,
    milestoneIds: z.array(z.string()),
    frozenAmount: AtomicAmount,
    statements: z.array(StatementSchema).describe('the opener’s statement, then the counterparty’s response'),
    respondBy: Timestamp.describe('the counterparty may answer until then (48 hours)'),
    autoResolveAt: Timestamp.describe('the mediator decides on its own then (72 hours after respondBy)'),
    investigation: InvestigationSchema,
    decision: DecisionSchema.nullable(),
    openedAt: Timestamp,
    resolvedAt: Timestamp.nullable(),
  }),
);
const NextActionSchema: z.ZodType<EscrowNextAction> = named(
  'EscrowNextAction',
  z.object({
    party: z.enum(['buyer', 'seller', 'mediator', 'none']),
    action: z.enum(['deliver', 'review', 'respond_to_dispute', 'resolve', 'none']),
    deadline: Timestamp.nullable(),
  }),
);
const EscrowSchema: z.ZodType<Escrow> = named(
  'Escrow',
  z.object({
    id: z.string().describe('escrow id, esc_…'),
    state: StateSchema,
    kind: z.enum(['single', 'milestones']),
    title: z.string(),
    description: z.string().nullable(),
    terms: z.string().nullable(),
    moduleId: z.string().nullable(),
    negotiationId: z.string().nullable(),
    buyer: SolanaAddress,
    seller: SolanaAddress,
    amount: AtomicAmount.describe('escrowed amount, atomic units, fee excluded'),
    fee: AtomicAmount.describe('service fee, atomic units: 1 percent rounded up, at least 10000'),
    network: Caip2Network,
    asset: SolanaAddress.describe('the stablecoin mint'),
    vault: SolanaAddress.describe('the escrow service’s vault wallet that holds the funds'),
    balances: z.object({
      locked: AtomicAmount,
      frozen: AtomicAmount,
      released: AtomicAmount,
      refunded: AtomicAmount,
    }),
    milestones: z.array(MilestoneSchema),
    reviewTimer: z.object({
      periodHours: z.number().int(),
      nextReleaseAt: Timestamp.nullable().describe('the earliest review deadline running now'),
    }),
    timeoutRelease: z.object({
      timeoutHours: z.number().int(),
      at: Timestamp.describe('undelivered milestones are refunded to the buyer then'),
      action: z.literal('refund_undelivered_to_buyer'),
    }),
    timersPausedAt: Timestamp.nullable().describe('set while a dispute is open; deadlines move by the paused time'),
    nextAction: NextActionSchema,
    disputes: z.array(DisputeSchema),
    timeline: z.array(TimelineEntrySchema).describe('the audit trail, oldest first'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    closedAt: Timestamp.nullable(),
  }),
);
const DeliverResultSchema: z.ZodType<EscrowDeliverResult> = named(
  'EscrowDeliverResult',
  z.object({
    escrow: EscrowSchema,
    milestoneId: z.string(),
    delivery: DeliverySchema,
    reviewEndsAt: Timestamp,
  }),
);
const ConfirmResultSchema: z.ZodType<EscrowConfirmResult> = named(
  'EscrowConfirmResult',
  z.object({
    escrow: EscrowSchema,
    releasedMilestoneIds: z.array(z.string()),
    transfers: z.array(TransferSchema).describe('one release transfer per confirmed milestone'),
    reputationReport: z.object({ status: z.enum(['sent', 'queued']), reportId: z.string().nullable() }),
  }),
);
const DisputeResultSchema: z.ZodType<EscrowDisputeResult> = named(
  'EscrowDisputeResult',
  z.object({ escrow: EscrowSchema, dispute: DisputeSchema }),
);
const ResolveResultSchema: z.ZodType<EscrowResolveResult> = named(
  'EscrowResolveResult',
  z.object({
    escrow: EscrowSchema,
    dispute: DisputeSchema,
    decision: DecisionSchema,
  }),
);
const SummarySchema: z.ZodType<EscrowSummary> = named(
  'EscrowSummary',
  z.object({
    id: z.string(),
    state: StateSchema,
    role: PartySchema,
    counterparty: SolanaAddress,
    title: z.string(),
    amount: AtomicAmount,
    released: AtomicAmount,
    refunded: AtomicAmount,
    milestones: count,
    milestonesSettled: count,
    nextAction: NextActionSchema,
    actionRequired: z.boolean(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    closedAt: Timestamp.nullable(),
  }),
);
const EscrowListSchema: z.ZodType<EscrowList> = named(
  'EscrowList',
  z.object({
    agentId: SolanaAddress,
    role: z.enum(['buyer', 'seller', 'any']),
    active: z.array(SummarySchema).describe('funded or delivered, newest first'),
    completed: z.array(SummarySchema).describe('completed, resolved or expired, newest first'),
    disputed: z.array(SummarySchema).describe('with an open dispute, newest first'),
    truncated: z.boolean(),
    summary: z.object({
      total: count,
      active: count,
      completed: count,
      disputed: count,
      asBuyer: count,
      asSeller: count,
      actionRequired: count,
      lockedAsBuyer: AtomicAmount,
      pendingAsSeller: AtomicAmount,
      spent: AtomicAmount.describe('released from the agent’s escrows to sellers'),
      earned: AtomicAmount.describe('released to the agent as a seller'),
      refunded: AtomicAmount.describe('refunded to the agent as a buyer'),
      disputesOpened: count,
      completionRate: Rate.nullable().describe('completed / closed escrows'),
      averageCompletionHours: z.number().nullable(),
    }),
  }),
);
const StatsSchema: z.ZodType<EscrowStats> = named(
  'EscrowStats',
  z.object({
    totalEscrows: count,
    byState: z.object({
      funded: count,
      delivered: count,
      disputed: count,
      completed: count,
      resolved: count,
      expired: count,
    }),
    volumeLocked: AtomicAmount.describe('held by the vault for open escrows now, atomic units'),
    volume: z.object({ escrowed: AtomicAmount, released: AtomicAmount, refunded: AtomicAmount, fees: AtomicAmount }),
    disputes: z.object({
      total: count,
      open: count,
      resolved: count,
      disputeRate: Rate.nullable().describe('disputes / escrows'),
    }),
    resolutionRates: z.object({
      releasedToSeller: Rate.nullable(),
      refundedToBuyer: Rate.nullable(),
      split: Rate.nullable(),
    }),
    averageResolutionHours: z.number().nullable(),
    completionRate: Rate.nullable().describe('completed / closed escrows'),
    averageCompletionHours: z.number().nullable().describe('creation to close of completed escrows'),
    milestonesAutoReleased: count,
    network: Caip2Network,
    asset: SolanaAddress,
    asOf: Timestamp,
  }),
);

export interface EscrowCreateBodyOut {
  seller: string;
  title: string;
  description?: string;
  terms?: string;
  moduleId?: string;
  negotiationId?: string;
  amount: string;
  milestones?: { title: string; description?: string; amount: string }[];
  reviewPeriodHours: number;
  timeoutHours: number;
}
type CreateBodyIn = Omit<EscrowCreateBodyOut, 'reviewPeriodHours' | 'timeoutHours'> & {
  reviewPeriodHours?: number;
  timeoutHours?: number;
};

const CreateBody: z.ZodType<EscrowCreateBodyOut, z.ZodTypeDef, CreateBodyIn> = named(
  'EscrowCreateBodyOut',
  z
    .object({
      seller: SolanaAddress.describe('the seller’s wallet: releases are paid to it'),
      title: z.string().trim().min(3).max(200).describe('what is being bought'),
      description: z.string().trim().min(1).max(2000).optional(),
      terms: z
        .string()
        .trim()
        .min(1)
        .max(4000)
        .optional()
        .describe('acceptance criteria; the mediator judges deliveries against them'),
      moduleId: ModuleRef.optional().describe('the knowledge-market module traded'),
      negotiationId: z.string().trim().min(1).max(128).optional().describe('the negotiation that agreed the price'),
      amount: EscrowAmount.describe('escrowed amount, atomic units (10000 = 0.01 USD), fee excluded'),
      milestones: z
        .array(
          z
            .object({
              title: z.string().trim().min(1).max(200),
              description: z.string().trim().min(1).max(1000).optional(),
              amount: PositiveAtomicAmount,
            })
            .strict(),
        )
        .min(2)
        .max(10)
        .optional()
        .describe('2 to 10 milestones whose amounts add up to `amount`; omit for a single release'),
      reviewPeriodHours: z
        .number()
        .int()
        .min(1)
        .max(720)
        .default(ESCROW_DEFAULT_REVIEW_HOURS)
        .describe(
          'hours the buyer has to review a delivery before it is released to the seller (1 to 720, default 72)',
        ),
      timeoutHours: z
        .number()
        .int()
        .min(24)
        .max(2160)
        .default(ESCROW_DEFAULT_TIMEOUT_HOURS)
        .describe(
          'hours the seller has to deliver; undelivered milestones are then refunded (24 to 2160, default 336 = 14 days)',
        ),
    })
    .strict()
    .superRefine((body, ctx) => {
      if (!body.milestones) return;
      const sum = body.milestones.reduce((total, m) => total + (/^\d+$/.test(m.amount) ? BigInt(m.amount) : 0n), 0n);
      if (/^\d+$/.test(body.amount) && sum !== BigInt(body.amount)) {
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          path: ['milestones'],
          message: `milestone amounts add up to ${sum}, not to amount ${body.amount}`,
        });
      }
    }),
);

const SELLER = 'C3nuLmBXJxkW4j8Ynx75KhSm5p5eDQ7jELM55oJteMfP';
const BUYER = '8PNeMNJQFFAU5phCnn12MVHk6sAorobNqatfvDvRpVkG';
const EXAMPLE_ESCROW = 'esc_7Hq2Lm9PxV4tR8wZ';

const router = c.router({
  create: {
    method: 'POST',
    path: '/api/escrow/create',
    body: CreateBody,
    summary: 'Create and fund an escrow for a knowledge trade',
    description:
      'Design: the caller (SIGN-IN-WITH-X) is the buyer. The x402 price of this call is the escrowed `amount` plus the fee ' +
      '(1 percent rounded up to an atomic unit, at least 0.01 USD), paid from the buyer’s wallet to the escrow’s vault: that ' +
      'payment is the funding, locked on creation, and its settlement signature is the `funded` timeline entry’s transfer. ' +
      'Without `milestones` the escrow is single-release (one milestone "m1" holding the whole amount); with 2 to 10 ' +
      'milestones, each is delivered, reviewed and released on its own. Timers: each delivery starts a review timer ' +
      '(`reviewPeriodHours`, default 72); when it ends unconfirmed and undisputed, the milestone is released to the seller. ' +
      'The timeout release (`timeoutHours`, default 336 = 14 days) refunds every milestone still undelivered to the buyer. ' +
      'Errors: 403 payer_mismatch (the x402 payment does not come from the signed-in wallet), 422 self_escrow (seller is ' +
      "the buyer), 422 invalid_seller (the seller is the escrow's own vault), 422 seller_account_missing (the seller has " +
      'no stablecoin account to be released to: the vault opens none), 409 payment_already_used (the payment already ' +
      'funded another buyer’s escrow, details.escrowId: not refunded; its own buyer presenting it again gets that ' +
      'escrow). The price ranges from 0.02 to 10,100 USD; it depends on the amount, not on demand.',
    responses: {
      201: EscrowSchema,
      409: ErrorEnvelope,
      422: ErrorEnvelope,
      ...standardErrors,
      ...paymentErrors,
      ...authErrors,
    },
    metadata: {
      payment: adaptive('0.02', '10100'),
      // The payment is the funding: settled before the escrow is created, refunded if creation then fails.
      settle: 'first',
      auth: 'siwx',
      example: {
        body: {
          seller: SELLER,
          title: 'RAG pipeline module with evaluation notebook',
          terms: 'Markdown module covering chunking, embedding and retrieval, with runnable TypeScript examples.',
          moduleId: 'mod_rag_basics',
          amount: '2500000',
          milestones: [
            { title: 'Chunking and embedding chapters', amount: '1000000' },
            { title: 'Retrieval chapter and evaluation', amount: '1500000' },
          ],
          reviewPeriodHours: 72,
          timeoutHours: 336,
        },
      },
    } satisfies RouteMeta,
  },
  get: {
    method: 'GET',
    path: '/api/escrow/:escrowId',
    pathParams: z.object({ escrowId: EscrowId }),
    summary: 'An escrow: state, milestones, timeline, disputes',
    description:
      'The escrow’s state, milestones with delivered content, timers, disputes with investigation and decision, and the ' +
      'timeline (every fund movement with its transaction signature). Visible to the buyer and the seller only ' +
      '(SIGN-IN-WITH-X). Errors: 403 not_a_party, 404 escrow_not_found.',
    responses: { 200: EscrowSchema, 404: ErrorEnvelope, ...standardErrors, ...authErrors },
    metadata: { payment: free(), auth: 'siwx', example: { params: { escrowId: EXAMPLE_ESCROW } } } satisfies RouteMeta,
  },
  deliver: {
    method: 'POST',
    path: '/api/escrow/deliver',
    body: z
      .object({
        escrowId: EscrowId,
        milestoneId: MilestoneId.optional().describe(
          'the milestone delivered; defaults to the first pending milestone',
        ),
        content: ScannableContentInput.describe(
          'the module content, held by the escrow and shown to the buyer for review',
        ),
        moduleId: ModuleRef.optional(),
        notes: z.string().trim().min(1).max(2000).optional().describe('a note to the buyer'),
        scanId: z
          .string()
          .regex(/^scn_[A-Za-z0-9]{16,40}$/, 'must be a verification scan id such as "scn_…"')
          .optional()
          .describe('a verification scan of this exact content (POST /api/scan of the verification service)'),
      })
      .strict(),
    summary: 'Seller delivers the module',
    description:
      'Design: the seller (SIGN-IN-WITH-X) delivers the content of one milestone. The escrow holds the content and its ' +
      'SHA-256, the milestone becomes `delivered`, the review timer starts (`reviewEndsAt`) and the buyer is notified: a ' +
      '`delivered` timeline entry, and `nextAction` asks the buyer to review. Errors: 403 not_seller, 404 escrow_not_found, ' +
      '404 milestone_not_found, 404 scan_not_found, 409 escrow_closed, 409 escrow_disputed, 409 milestone_not_pending, ' +
      '409 delivery_deadline_passed, 422 scan_content_mismatch (the scan is of other content).',
    responses: {
      200: DeliverResultSchema,
      404: ErrorEnvelope,
      409: ErrorEnvelope,
      422: ErrorEnvelope,
      ...standardErrors,
      ...paymentErrors,
      ...authErrors,
    },
    metadata: {
      payment: fixed('0.005'),
      auth: 'siwx',
      example: {
        body: {
          escrowId: EXAMPLE_ESCROW,
          milestoneId: 'm1',
          content: {
            title: 'Chunking and embedding',
            format: 'markdown',
            body: '# Chunking\n\nSplit documents into 300 to 500 token chunks with 50 tokens of overlap.\n',
          },
          notes: 'Chapter 1 and 2 as agreed.',
        },
      },
    } satisfies RouteMeta,
  },
  confirm: {
    method: 'POST',
    path: '/api/escrow/confirm',
    body: z
      .object({
        escrowId: EscrowId,
        milestoneIds: z
          .array(MilestoneId)
          .min(1)
          .max(10)
          .refine((ids) => new Set(ids).size === ids.length, 'must not repeat a milestone')
          .optional()
          .describe('milestones to confirm; omit to confirm the entire escrow'),
        rating: z
          .number()
          .int()
          .min(1)
          .max(5)
          .optional()
          .describe('the buyer’s rating of the seller, 1 to 5, passed to the reputation service'),
        comment: z.string().trim().min(1).max(1000).optional(),
      })
      .strict(),
    summary: 'Buyer confirms delivery; releases funds to the seller',
    description:
      'Design: the buyer (SIGN-IN-WITH-X) confirms named milestones, or the entire escrow when `milestoneIds` is omitted ' +
      '(every milestone not yet settled, delivered or not). Each confirmed milestone is released to the seller by an ' +
      'on-chain transfer from the vault, recorded in the timeline. A report (outcome completed, with the rating) is sent ' +
      'to the reputation service automatically; if that service is unreachable the report is queued and retried. ' +
      'Errors: 403 not_buyer, 404 escrow_not_found, 404 milestone_not_found, 409 escrow_closed, 409 escrow_disputed, ' +
      '409 milestone_not_releasable (already settled or disputed), 409 operation_in_progress (an earlier transfer of this ' +
      'escrow is being sent: retry shortly), 503 chain_unavailable (nothing moved; retrying finishes the release).',
    responses: {
      200: ConfirmResultSchema,
      404: ErrorEnvelope,
      409: ErrorEnvelope,
      ...standardErrors,
      ...paymentErrors,
      ...authErrors,
    },
    metadata: {
      payment: fixed('0.001'),
      auth: 'siwx',
      example: { body: { escrowId: EXAMPLE_ESCROW, milestoneIds: ['m1'], rating: 5, comment: 'Clear and complete.' } },
    } satisfies RouteMeta,
  },
  dispute: {
    method: 'POST',
    path: '/api/escrow/dispute',
    body: z
      .object({
        escrowId: EscrowId,
        milestoneIds: z
          .array(MilestoneId)
          .min(1)
          .max(10)
          .refine((ids) => new Set(ids).size === ids.length, 'must not repeat a milestone')
          .optional()
          .describe('milestones disputed; omit for every unsettled milestone (ignored when answering an open dispute)'),
        reason: ReasonSchema,
        statement: z.string().trim().min(10).max(4000).describe('your side of the story'),
        evidence: z.array(EvidenceInput).max(10).default([]).describe('up to 10 pieces of evidence'),
      })
      .strict(),
    summary: 'Either party disputes; funds freeze and an AI investigation starts',
    description:
      'Design: the buyer or the seller (SIGN-IN-WITH-X) opens a dispute over unsettled milestones; while it is open the ' +
      'escrow is `disputed`, every unreleased fund is frozen and the timers pause (deadlines move by the paused time). ' +
      'The counterparty answers by calling this route too, within 48 hours (`respondBy`): its statement and evidence join ' +
      'the open dispute. Each call (re)runs the investigation: verification scans of the delivered content of the ' +
      'disputed milestones (the seller’s attached scan, or a new one), both parties’ reputation, delivery timing and ' +
      'the evidence of both sides. Errors: 403 not_a_party, 404 escrow_not_found, 404 milestone_not_found, ' +
      '409 escrow_closed, 409 milestone_not_disputable (already settled), 409 dispute_already_stated (this party already ' +
      'stated its side of the open dispute).',
    responses: {
      200: DisputeResultSchema,
      404: ErrorEnvelope,
      409: ErrorEnvelope,
      ...standardErrors,
      ...paymentErrors,
      ...authErrors,
    },
    metadata: {
      payment: fixed('0.05'),
      auth: 'siwx',
      example: {
        body: {
          escrowId: EXAMPLE_ESCROW,
          milestoneIds: ['m2'],
          reason: 'not_as_described',
          statement: 'The retrieval chapter has no evaluation section although the terms require one.',
          evidence: [{ type: 'text', text: 'Terms: "with runnable TypeScript examples"; none are included.' }],
        },
      },
    } satisfies RouteMeta,
  },
  resolve: {
    method: 'POST',
    path: '/api/escrow/resolve',
    body: z
      .object({
        escrowId: EscrowId,
        disputeId: z
          .string()
          .regex(/^dsp_[A-Za-z0-9]{16,40}$/, 'must be a dispute id such as "dsp_…"')
          .optional()
          .describe('the open dispute; the only one there can be, so optional'),
        finalStatement: z.string().trim().min(1).max(2000).optional().describe('last words to the mediator'),
      })
      .strict(),
    summary: 'AI mediator resolves a disputed escrow',
    description:
      'Design: the buyer or the seller (SIGN-IN-WITH-X) asks the mediator to decide. The decision is binding: it pays a ' +
      'whole percent (`sellerPercent`) of each disputed milestone to the seller and refunds the rest to the buyer (rounding ' +
      'dust goes to the buyer), by on-chain transfers recorded in the timeline; a split is a partial refund. The ' +
      'rationale lists the factors weighed (delivery, terms, scan quality, safety, plagiarism, timeliness, reputation, ' +
      "evidence). Both parties get a reputation report (dispute_won, dispute_lost or dispute_split). The dispute's opener " +
      'may call before the counterparty has answered only after `respondBy`; the counterparty calling waives its answer. ' +
      'Unresolved disputes are decided automatically at `autoResolveAt`. Errors: 403 not_a_party, 404 escrow_not_found, ' +
      '404 dispute_not_found, 409 not_disputed, 409 awaiting_counterparty.',
    responses: {
      200: ResolveResultSchema,
      404: ErrorEnvelope,
      409: ErrorEnvelope,
      ...standardErrors,
      ...paymentErrors,
      ...authErrors,
    },
    metadata: {
      payment: fixed('0.05'),
      auth: 'siwx',
      example: {
        body: {
          escrowId: EXAMPLE_ESCROW,
          finalStatement: 'The scan found no evaluation section; I ask for a refund of m2.',
        },
      },
    } satisfies RouteMeta,
  },
  list: {
    method: 'GET',
    path: '/api/escrow/list/:agentId',
    pathParams: z.object({ agentId: SolanaAddress.describe('the agent’s wallet address') }),
    query: z
      .object({
        role: z
          .enum(['buyer', 'seller', 'any'])
          .default('any')
          .describe('escrows where the agent is buyer, seller, or either'),
        limit: z.coerce.number().int().min(1).max(100).default(50).describe('escrows listed per group, 1 to 100'),
      })
      .strict(),
    summary: 'All escrows of an agent, grouped, with summary stats',
    description:
      'The agent’s escrows grouped as active (funded or delivered), completed (completed, resolved or expired) and ' +
      'disputed (a dispute is open), newest first, with summary stats over all of them. Design: only the agent itself ' +
      'may list (SIGN-IN-WITH-X as `agentId`); `actionRequired` marks escrows waiting for it. Errors: 403 not_your_escrows.',
    responses: { 200: EscrowListSchema, ...standardErrors, ...authErrors },
    metadata: {
      payment: free(),
      auth: 'siwx',
      example: { params: { agentId: BUYER }, query: { role: 'any', limit: 50 } },
    } satisfies RouteMeta,
  },
  stats: {
    method: 'GET',
    path: '/api/stats',
    summary: 'Escrow service statistics',
    description:
      'Total escrows, escrows per state, volume locked now and volume moved, disputes and the dispute rate, resolution ' +
      'rates by outcome, average resolution and completion times. Amounts in atomic units.',
    responses: { 200: StatsSchema, ...standardErrors },
    metadata: { payment: free() } satisfies RouteMeta,
  },
});

export const escrow = defineService({
  id: 'escrow',
  title: 'Escrow Service',
  description:
    'Trustless escrow for knowledge-module trades between a buyer agent and a seller agent: funds held in the service’s ' +
    'vault on chain until the module is delivered and confirmed, single-release or multi-milestone, review timers and ' +
    'timeout release, disputes by either party with AI mediation (verification scans and reputation data), partial ' +
    'refunds and an on-chain audit trail.',
  router,
});
