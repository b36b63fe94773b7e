import { createHash, randomBytes } from 'node:crypto';
import {
  ESCROW_DISPUTE_AUTO_RESOLVE_HOURS,
  ESCROW_DISPUTE_RESPONSE_HOURS,
  atomicToUsd,
  base58Encode,
  type Escrow,
  type EscrowAgentSummary,
  type EscrowDelivery,
  type EscrowDispute,
  type EscrowDisputeReason,
  type EscrowEvent,
  type EscrowActor,
  type EscrowEvidence,
  type EscrowEvidenceInput,
  type EscrowInvestigation,
  type EscrowMediatorDecision,
  type EscrowMilestone,
  type EscrowNextAction,
  type EscrowParty,
  type EscrowState,
  type EscrowStats,
  type EscrowSummary,
  type EscrowTimelineEntry,
  type EscrowTransfer,
  type ReputationOutcome,
  type ScannableContent,
} from '@agent-economy/contracts';
import { HttpError, conflict, notFound } from '../../runtime/errors';

// Plain functions over plain data: an escrow is one document (the contract's shape, amounts as decimal strings);
// what can be derived from it (state, balances, next action, timers) is derived, never stored twice.

const HOUR = 3_600_000;

/** An escrow as stored: the contract's fields that are not derived, plus its timers in seconds. */
export interface EscrowDoc {
  id: string;
  kind: 'single' | 'milestones';
  title: string;
  description: string | null;
  terms: string | null;
  moduleId: string | null;
  negotiationId: string | null;
  buyer: string;
  seller: string;
  amount: string;
  fee: string;
  network: string;
  asset: string;
  vault: string;
  reviewSeconds: number;
  timeoutSeconds: number;
  /** When undelivered milestones are refunded (moved on by the time a dispute paused the timers). */
  timeoutAt: string;
  timersPausedAt: string | null;
  milestones: EscrowMilestone[];
  disputes: EscrowDispute[];
  timeline: EscrowTimelineEntry[];
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
  /**
   * A resolve under way on the open dispute (its paid investigation and its decision, before the commit): another
   * resolve is refused until `until`. Internal (never served); cleared by the commit or when the resolve fails, and
   * simply lapses when its process dies.
   */
  resolving?: Resolving | null;
}

/** A resolve's hold on a dispute: `token` names the request that took it. */
export interface Resolving {
  disputeId: string;
  token: string;
  until: string;
}

/** How long a resolve holds the open dispute while it investigates, decides and pays out. */
export const RESOLUTION_LEASE_MS = 120_000;

/** One transfer out of the vault an operation needs; `key` makes it happen once whatever retries it. */
export interface Payout {
  key: string;
  purpose: 'release' | 'refund';
  to: string;
  amount: string;
  milestoneIds: string[];
}

/** A decision without its transfers (they are known once sent). */
export type DraftDecision = Omit<EscrowMediatorDecision, 'transfers'>;

/**
 * An operation that moves money: recorded on the escrow first (with its transfers and their keys), then the
 * transfers are sent, then the escrow's state is committed. Until then the escrow shows its earlier state.
 */
export type PendingOp = {
  id: string;
  payouts: Payout[];
  createdAt: string;
} & (
  | { kind: 'confirm'; milestoneIds: string[]; rating: number | null; comment: string | null }
  | { kind: 'review'; milestoneIds: string[] }
  | { kind: 'timeout'; milestoneIds: string[] }
  | { kind: 'resolve'; disputeId: string; decision: DraftDecision; investigation: EscrowInvestigation }
);

/** A reputation report the escrow owes (sent after the commit, retried by the scheduler). */
export interface ReportDraft {
  subject: string;
  subjectRole: EscrowParty;
  ratedBy: string;
  outcome: ReputationOutcome;
  rating: number | null;
  comment: string | null;
  amount: string;
  signature: string;
  moduleId: string | null;
}

export const newId = (prefix: string) => `${prefix}_${base58Encode(randomBytes(16))}`;
export const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const iso = (d: Date) => d.toISOString();
const sum = (values: Iterable<bigint>) => [...values].reduce((a, b) => a + b, 0n);
const hours = (ms: number) => Math.round((ms / HOUR) * 100) / 100;
const ratio = (n: number, d: number) => (d === 0 ? null : Math.round((n / d) * 10_000) / 10_000);
const average = (values: number[]) =>
  values.length ? Math.round((values.reduce((a, b) => a + b, 0) / values.length) * 100) / 100 : null;

const UNSETTLED = new Set(['pending', 'delivered', 'disputed']);
export const isUnsettled = (m: EscrowMilestone) => UNSETTLED.has(m.state);
export const openDispute = (doc: EscrowDoc) => doc.disputes.find((d) => d.status === 'open');
export const partyOf = (doc: EscrowDoc, wallet: string): EscrowParty | undefined =>
  wallet === doc.buyer ? 'buyer' : wallet === doc.seller ? 'seller' : undefined;

export function stateOf(doc: EscrowDoc): EscrowState {
  if (openDispute(doc)) return 'disputed';
  if (doc.milestones.every((m) => !isUnsettled(m))) {
    if (doc.milestones.some((m) => m.state === 'resolved')) return 'resolved';
    if (doc.milestones.some((m) => m.state === 'refunded')) return 'expired';
    return 'completed';
  }
  return doc.milestones.some((m) => m.state === 'delivered') ? 'delivered' : 'funded';
}
export const isClosed = (doc: EscrowDoc) => ['completed', 'resolved', 'expired'].includes(stateOf(doc));

/** locked + frozen + released + refunded = amount. While a dispute is open every unreleased fund is frozen. */
export function balancesOf(doc: EscrowDoc) {
  const unsettled = sum(doc.milestones.filter(isUnsettled).map((m) => BigInt(m.amount)));
  const frozen = openDispute(doc) ? unsettled : 0n;
  return {
    locked: unsettled - frozen,
    frozen,
    released: sum(doc.milestones.map((m) => BigInt(m.toSeller))),
    refunded: sum(doc.milestones.map((m) => BigInt(m.toBuyer))),
  };
}

/** What the vault holds for this escrow now (the fee excluded: it is the service's). */
export const heldBy = (doc: EscrowDoc) => {
  const b = balancesOf(doc);
  return b.locked + b.frozen;
};

export function nextActionOf(doc: EscrowDoc, now: Date): EscrowNextAction {
  if (isClosed(doc)) return { party: 'none', action: 'none', deadline: null };
  const dispute = openDispute(doc);
  if (dispute) {
    const answered = dispute.statements.some((s) => s.party !== dispute.openedBy);
    if (!answered && now.getTime() < Date.parse(dispute.respondBy)) {
      return {
        party: dispute.openedBy === 'buyer' ? 'seller' : 'buyer',
        action: 'respond_to_dispute',
        deadline: dispute.respondBy,
      };
    }
    return { party: 'mediator', action: 'resolve', deadline: dispute.autoResolveAt };
  }
  const reviews = doc.milestones
    .filter((m) => m.state === 'delivered' && m.reviewEndsAt)
    .map((m) => m.reviewEndsAt!)
    .sort();
  if (reviews.length) return { party: 'buyer', action: 'review', deadline: reviews[0]! };
  return { party: 'seller', action: 'deliver', deadline: doc.timeoutAt };
}

/** When the scheduler must next look at this escrow, or null when no timer runs. */
export function nextTimerAt(doc: EscrowDoc): Date | null {
  if (isClosed(doc)) return null;
  const dispute = openDispute(doc);
  if (dispute) return new Date(dispute.autoResolveAt);
  const times = doc.milestones
    .filter((m) => m.state === 'delivered' && m.reviewEndsAt)
    .map((m) => Date.parse(m.reviewEndsAt!));
  if (doc.milestones.some((m) => m.state === 'pending')) times.push(Date.parse(doc.timeoutAt));
  return times.length ? new Date(Math.min(...times)) : null;
}

export function toEscrow(doc: EscrowDoc, now: Date): Escrow {
  const b = balancesOf(doc);
  const reviews = doc.milestones
    .filter((m) => m.state === 'delivered' && m.reviewEndsAt)
    .map((m) => m.reviewEndsAt!)
    .sort();
  return {
    id: doc.id,
    state: stateOf(doc),
    kind: doc.kind,
    title: doc.title,
    description: doc.description,
    terms: doc.terms,
    moduleId: doc.moduleId,
    negotiationId: doc.negotiationId,
    buyer: doc.buyer,
    seller: doc.seller,
    amount: doc.amount,
    fee: doc.fee,
    network: doc.network,
    asset: doc.asset,
    vault: doc.vault,
    balances: {
      locked: String(b.locked),
      frozen: String(b.frozen),
      released: String(b.released),
      refunded: String(b.refunded),
    },
    milestones: doc.milestones,
    // Whole hours, as the contract has them: a deployment with timers shorter than an hour (ESCROW_REVIEW_SECONDS)
    // rounds them.
    reviewTimer: {
      periodHours: Math.round(doc.reviewSeconds / 3600),
      nextReleaseAt: openDispute(doc) ? null : (reviews[0] ?? null),
    },
    timeoutRelease: {
      timeoutHours: Math.round(doc.timeoutSeconds / 3600),
      at: doc.timeoutAt,
      action: 'refund_undelivered_to_buyer',
    },
    timersPausedAt: doc.timersPausedAt,
    nextAction: nextActionOf(doc, now),
    disputes: doc.disputes,
    timeline: doc.timeline,
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
    closedAt: doc.closedAt,
  };
}

export function entry(
  at: Date,
  event: EscrowEvent,
  actor: EscrowActor,
  milestoneIds: string[],
  message: string,
  transfer: EscrowTransfer | null = null,
): EscrowTimelineEntry {
  return { id: newId('evt'), at: iso(at), event, actor, milestoneIds, message, transfer };
}

const usd = (atomic: bigint | string) => `${atomicToUsd(BigInt(atomic))} USD`;

export interface CreateInput {
  seller: string;
  title: string;
  description?: string;
  terms?: string;
  moduleId?: string;
  negotiationId?: string;
  amount: string;
  milestones?: { title: string; description?: string; amount: string }[];
  reviewSeconds: number;
  timeoutSeconds: number;
}

/** A funded escrow: the buyer's x402 payment of amount + fee (`funding`) is its first timeline entry. */
export function createEscrow(
  input: CreateInput,
  buyer: string,
  fee: bigint,
  chain: { network: string; asset: string; vault: string },
  funding: EscrowTransfer,
  now: Date,
): EscrowDoc {
  const parts = input.milestones ?? [{ title: input.title, amount: input.amount }];
  const milestones: EscrowMilestone[] = parts.map((m, i) => ({
    id: `m${i + 1}`,
    position: i + 1,
    title: m.title,
    description: ('description' in m && m.description) || null,
    amount: m.amount,
    state: 'pending',
    delivery: null,
    reviewEndsAt: null,
    settledAt: null,
    settledBy: null,
    toSeller: '0',
    toBuyer: '0',
  }));
  const ids = milestones.map((m) => m.id);
  return {
    id: newId('esc'),
    kind: input.milestones ? 'milestones' : 'single',
    title: input.title,
    description: input.description ?? null,
    terms: input.terms ?? null,
    moduleId: input.moduleId ?? null,
    negotiationId: input.negotiationId ?? null,
    buyer,
    seller: input.seller,
    amount: input.amount,
    fee: String(fee),
    ...chain,
    reviewSeconds: input.reviewSeconds,
    timeoutSeconds: input.timeoutSeconds,
    timeoutAt: iso(new Date(now.getTime() + input.timeoutSeconds * 1000)),
    timersPausedAt: null,
    milestones,
    disputes: [],
    timeline: [
      entry(
        now,
        'funded',
        'buyer',
        ids,
        `Funded with ${usd(input.amount)} and a fee of ${usd(fee)}, paid into the vault`,
        funding,
      ),
    ],
    createdAt: iso(now),
    updatedAt: iso(now),
    closedAt: null,
  };
}

// ---- refusals shared by the routes ----------------------------------------------------------------------------

export const escrowNotFound = (escrowId: string) => notFound('escrow_not_found', `No escrow ${escrowId}`, { escrowId });
const milestoneNotFound = (escrowId: string, milestoneId: string) =>
  notFound('milestone_not_found', `Escrow ${escrowId} has no milestone ${milestoneId}`, { escrowId, milestoneId });
const closed = (doc: EscrowDoc) =>
  conflict('escrow_closed', `Escrow ${doc.id} is ${stateOf(doc)}: nothing is left to settle`, {
    escrowId: doc.id,
    state: stateOf(doc),
  });
const disputed = (doc: EscrowDoc) =>
  conflict('escrow_disputed', `Escrow ${doc.id} has an open dispute: its funds are frozen until the mediator decides`, {
    escrowId: doc.id,
    disputeId: openDispute(doc)?.id,
  });

/** Escrows are visible to their buyer and seller only. */
export function assertParty(doc: EscrowDoc, caller: string): EscrowParty {
  const party = partyOf(doc, caller);
  if (!party)
    throw new HttpError(403, 'not_a_party', 'Only the buyer and the seller of an escrow may see or act on it', {
      escrowId: doc.id,
    });
  return party;
}

function milestone(doc: EscrowDoc, id: string): EscrowMilestone {
  const found = doc.milestones.find((m) => m.id === id);
  if (!found) throw milestoneNotFound(doc.id, id);
  return found;
}

// ---- deliver --------------------------------------------------------------------------------------------------

export interface DeliverInput {
  milestoneId?: string;
  content: { title: string; format: ScannableContent['format']; language?: string; body: string };
  moduleId?: string;
  notes?: string;
  scanId?: string;
}

/** Which milestone a delivery is for, or the refusal; nothing changes. */
export function checkDeliver(
  doc: EscrowDoc,
  caller: string,
  input: Pick<DeliverInput, 'milestoneId'>,
  now: Date,
): EscrowMilestone {
  if (caller !== doc.seller)
    throw new HttpError(
      403,
      partyOf(doc, caller) ? 'not_seller' : 'not_a_party',
      'Only the seller of an escrow delivers',
      { escrowId: doc.id },
    );
  if (isClosed(doc)) throw closed(doc);
  if (openDispute(doc)) throw disputed(doc);
  const target = input.milestoneId
    ? milestone(doc, input.milestoneId)
    : doc.milestones.find((m) => m.state === 'pending');
  if (!target || target.state !== 'pending') {
    const id = target?.id ?? input.milestoneId ?? null;
    throw conflict(
      'milestone_not_pending',
      id ? `Milestone ${id} is ${target?.state}, not awaiting delivery` : 'No milestone awaits delivery',
      { escrowId: doc.id, milestoneId: id },
    );
  }
  if (now.getTime() >= Date.parse(doc.timeoutAt)) {
    throw conflict(
      'delivery_deadline_passed',
      `The delivery deadline ${doc.timeoutAt} has passed; undelivered milestones are refunded`,
      { escrowId: doc.id, timeoutAt: doc.timeoutAt },
    );
  }
  return target;
}

export function deliver(
  doc: EscrowDoc,
  caller: string,
  input: DeliverInput,
  now: Date,
): { doc: EscrowDoc; milestoneId: string; delivery: EscrowDelivery; reviewEndsAt: string } {
  const target = checkDeliver(doc, caller, input, now);
  const delivery: EscrowDelivery = {
    id: newId('dlv'),
    content: {
      title: input.content.title,
      format: input.content.format,
      language: input.content.language ?? null,
      body: input.content.body,
    },
    contentHash: sha256(input.content.body),
    sizeBytes: Buffer.byteLength(input.content.body, 'utf8'),
    moduleId: input.moduleId ?? doc.moduleId,
    notes: input.notes ?? null,
    scanId: input.scanId ?? null,
    deliveredAt: iso(now),
  };
  const reviewEndsAt = iso(new Date(now.getTime() + doc.reviewSeconds * 1000));
  const next: EscrowDoc = {
    ...doc,
    milestones: doc.milestones.map((m) =>
      m.id === target.id ? { ...m, state: 'delivered', delivery, reviewEndsAt } : m,
    ),
    timeline: [
      ...doc.timeline,
      entry(
        now,
        'delivered',
        'seller',
        [target.id],
        `The seller delivered "${delivery.content.title}" (${delivery.sizeBytes} bytes, sha256 ${delivery.contentHash.slice(0, 12)}…); the buyer reviews it until ${reviewEndsAt}`,
      ),
    ],
    updatedAt: iso(now),
  };
  return { doc: next, milestoneId: target.id, delivery, reviewEndsAt };
}

// ---- confirm --------------------------------------------------------------------------------------------------

const payoutKey = (doc: EscrowDoc, purpose: string, ...parts: string[]) =>
  `escrow:${doc.id}:${purpose}:${parts.join(':')}`;

export function planConfirm(
  doc: EscrowDoc,
  caller: string,
  input: { milestoneIds?: string[]; rating?: number; comment?: string },
  now: Date,
): PendingOp {
  if (caller !== doc.buyer)
    throw new HttpError(
      403,
      partyOf(doc, caller) ? 'not_buyer' : 'not_a_party',
      'Only the buyer of an escrow confirms it',
      { escrowId: doc.id },
    );
  if (isClosed(doc)) throw closed(doc);
  if (openDispute(doc)) throw disputed(doc);
  const targets = input.milestoneIds
    ? input.milestoneIds.map((id) => milestone(doc, id))
    : doc.milestones.filter(isUnsettled);
  const settled = targets.find((m) => m.state !== 'pending' && m.state !== 'delivered');
  if (settled)
    throw conflict('milestone_not_releasable', `Milestone ${settled.id} is ${settled.state}`, {
      escrowId: doc.id,
      milestoneId: settled.id,
      state: settled.state,
    });
  return {
    id: newId('op'),
    kind: 'confirm',
    milestoneIds: targets.map((m) => m.id),
    rating: input.rating ?? null,
    comment: input.comment ?? null,
    payouts: targets.map((m) => ({
      key: payoutKey(doc, 'release', m.id),
      purpose: 'release',
      to: doc.seller,
      amount: m.amount,
      milestoneIds: [m.id],
    })),
    createdAt: iso(now),
  };
}

// ---- timers ---------------------------------------------------------------------------------------------------

/** The timer due on this escrow now (review release first, then the timeout refund), or null. */
export function planTimer(doc: EscrowDoc, now: Date): PendingOp | { kind: 'auto_resolve'; disputeId: string } | null {
  if (isClosed(doc)) return null;
  const dispute = openDispute(doc);
  if (dispute)
    return now.getTime() >= Date.parse(dispute.autoResolveAt) ? { kind: 'auto_resolve', disputeId: dispute.id } : null;
  const base = { id: newId('op'), createdAt: iso(now) };
  const due = doc.milestones.filter(
    (m) => m.state === 'delivered' && m.reviewEndsAt && now.getTime() >= Date.parse(m.reviewEndsAt),
  );
  if (due.length) {
    return {
      ...base,
      kind: 'review',
      milestoneIds: due.map((m) => m.id),
      payouts: due.map((m) => ({
        key: payoutKey(doc, 'release', m.id),
        purpose: 'release',
        to: doc.seller,
        amount: m.amount,
        milestoneIds: [m.id],
      })),
    };
  }
  const undelivered = doc.milestones.filter((m) => m.state === 'pending');
  if (undelivered.length && now.getTime() >= Date.parse(doc.timeoutAt)) {
    const amount = sum(undelivered.map((m) => BigInt(m.amount)));
    const ids = undelivered.map((m) => m.id);
    return {
      ...base,
      kind: 'timeout',
      milestoneIds: ids,
      payouts: [
        {
          key: payoutKey(doc, 'refund', 'timeout'),
          purpose: 'refund',
          to: doc.buyer,
          amount: String(amount),
          milestoneIds: ids,
        },
      ],
    };
  }
  return null;
}

// ---- disputes -------------------------------------------------------------------------------------------------

export interface DisputeInput {
  milestoneIds?: string[];
  reason: EscrowDisputeReason;
  statement: string;
  evidence: EscrowEvidenceInput[];
}

/** What a dispute call will do: open a dispute over these milestones, or answer the open one. Nothing changes. */
export function checkDispute(
  doc: EscrowDoc,
  caller: string,
  input: { milestoneIds?: string[] },
): { party: EscrowParty; answer: EscrowDispute | null; milestoneIds: string[] } {
  const party = assertParty(doc, caller);
  if (isClosed(doc)) throw closed(doc);
  const open = openDispute(doc);
  if (open) {
    if (open.statements.some((s) => s.party === party)) {
      throw conflict(
        'dispute_already_stated',
        'You already stated your side of the open dispute; ask the mediator to resolve it',
        { escrowId: doc.id, disputeId: open.id },
      );
    }
    return { party, answer: open, milestoneIds: open.milestoneIds };
  }
  const targets = input.milestoneIds
    ? input.milestoneIds.map((id) => milestone(doc, id))
    : doc.milestones.filter(isUnsettled);
  const settled = targets.find((m) => !isUnsettled(m));
  if (settled)
    throw conflict('milestone_not_disputable', `Milestone ${settled.id} is already ${settled.state}`, {
      escrowId: doc.id,
      milestoneId: settled.id,
      state: settled.state,
    });
  return { party, answer: null, milestoneIds: targets.map((m) => m.id) };
}

const toEvidence = (e: EscrowEvidenceInput): EscrowEvidence =>
  ({ ...e, description: e.description ?? null }) as EscrowEvidence;

/**
 * The delivery facts of the disputed milestones: which were disputed, which of them delivered, and whether every
 * delivery came before the timeout (null when none was delivered).
 */
export function deliveryFacts(doc: EscrowDoc, milestoneIds: string[]) {
  const disputed = doc.milestones.filter((m) => milestoneIds.includes(m.id));
  const delivered = disputed.filter((m) => m.delivery);
  const timeout = Date.parse(doc.timeoutAt);
  const deliveredBeforeTimeout = delivered.length
    ? delivered.every((m) => Date.parse(m.delivery!.deliveredAt) <= timeout)
    : null;
  return { disputed, delivered, deliveredBeforeTimeout };
}

/**
 * The investigation of a dispute just opened, until its facts are gathered: the dispute is stated first (under the
 * row lock), and investigated after (a refused statement costs no paid reads). Nothing is weighed yet.
 */
export function investigationUnderWay(
  doc: EscrowDoc,
  milestoneIds: string[],
  generator: EscrowInvestigation['generator'],
  now: Date,
): EscrowInvestigation {
  const { disputed, delivered, deliveredBeforeTimeout } = deliveryFacts(doc, milestoneIds);
  return {
    status: 'partial',
    scans: [],
    reputation: { buyer: null, seller: null },
    milestonesDelivered: delivered.length,
    milestonesDisputed: disputed.length,
    deliveredBeforeTimeout,
    observations: ['The investigation is under way: scans and reputation are not read yet'],
    leaning: 'neutral',
    unavailable: [],
    generator,
    updatedAt: iso(now),
  };
}

/**
 * States the caller's side: opens a dispute (its investigation under way) or answers the open one (its investigation
 * as it stands). The investigation is gathered afterwards and recorded with recordInvestigation.
 */
export function dispute(
  doc: EscrowDoc,
  caller: string,
  input: DisputeInput,
  generator: EscrowInvestigation['generator'],
  now: Date,
): { doc: EscrowDoc; dispute: EscrowDispute } {
  const { party, answer, milestoneIds } = checkDispute(doc, caller, input);
  const statement = {
    party,
    address: caller,
    reason: input.reason,
    statement: input.statement,
    evidence: input.evidence.map(toEvidence),
    submittedAt: iso(now),
  };
  const timeline = [...doc.timeline];
  let disputes: EscrowDispute[];
  let current: EscrowDispute;
  let milestones = doc.milestones;
  let timersPausedAt = doc.timersPausedAt;
  if (answer) {
    current = { ...answer, statements: [...answer.statements, statement] };
    disputes = doc.disputes.map((d) => (d.id === answer.id ? current : d));
    timeline.push(
      entry(now, 'dispute_response', party, milestoneIds, `The ${party} answered the dispute (${input.reason})`),
    );
  } else {
    const frozen = sum(doc.milestones.filter((m) => milestoneIds.includes(m.id)).map((m) => BigInt(m.amount)));
    const respondBy = new Date(now.getTime() + ESCROW_DISPUTE_RESPONSE_HOURS * HOUR);
    current = {
      id: newId('dsp'),
      status: 'open',
      openedBy: party,
      milestoneIds,
      frozenAmount: String(frozen),
      statements: [statement],
      respondBy: iso(respondBy),
      autoResolveAt: iso(new Date(respondBy.getTime() + ESCROW_DISPUTE_AUTO_RESOLVE_HOURS * HOUR)),
      investigation: investigationUnderWay(doc, milestoneIds, generator, now),
      decision: null,
      openedAt: iso(now),
      resolvedAt: null,
    };
    disputes = [...doc.disputes, current];
    milestones = doc.milestones.map((m) => (milestoneIds.includes(m.id) ? { ...m, state: 'disputed' } : m));
    timersPausedAt = iso(now);
    timeline.push(
      entry(
        now,
        'disputed',
        party,
        milestoneIds,
        `The ${party} disputed ${milestoneIds.join(', ')} (${input.reason}); ${usd(frozen)} is frozen`,
      ),
      entry(
        now,
        'timers_paused',
        'system',
        milestoneIds,
        'The review timer and the timeout release are paused while the dispute is open',
      ),
    );
  }
  return { doc: { ...doc, milestones, disputes, timersPausedAt, timeline, updatedAt: iso(now) }, dispute: current };
}

/**
 * Records the investigation a dispute call gathered on the dispute it stated, while that dispute is open and nothing
 * gathered later is recorded already (racing calls: the latest investigation stands). Null: nothing to change.
 */
export function recordInvestigation(
  doc: EscrowDoc,
  disputeId: string,
  investigation: EscrowInvestigation,
  now: Date,
): { doc: EscrowDoc; dispute: EscrowDispute } | null {
  const current = doc.disputes.find((d) => d.id === disputeId);
  if (!current || current.status !== 'open') return null;
  if (Date.parse(current.investigation.updatedAt) > Date.parse(investigation.updatedAt)) return null;
  const updated: EscrowDispute = { ...current, investigation };
  const timeline = [
    ...doc.timeline,
    entry(
      now,
      'investigation_updated',
      'mediator',
      current.milestoneIds,
      `Investigation ${investigation.status}: leaning ${investigation.leaning}${investigation.unavailable.length ? `; unavailable: ${investigation.unavailable.join(', ')}` : ''}`,
    ),
  ];
  return {
    doc: {
      ...doc,
      disputes: doc.disputes.map((d) => (d.id === disputeId ? updated : d)),
      timeline,
      updatedAt: iso(now),
    },
    dispute: updated,
  };
}

/** Who may ask the mediator now; the open dispute. Nothing changes. */
export function checkResolve(
  doc: EscrowDoc,
  caller: string,
  disputeId: string | undefined,
  now: Date,
): { party: EscrowParty; dispute: EscrowDispute } {
  const party = assertParty(doc, caller);
  if (disputeId && !doc.disputes.some((d) => d.id === disputeId))
    throw notFound('dispute_not_found', `Escrow ${doc.id} has no dispute ${disputeId}`, {
      escrowId: doc.id,
      disputeId,
    });
  const open = openDispute(doc);
  if (!open || (disputeId && open.id !== disputeId))
    throw conflict(
      'not_disputed',
      disputeId ? `Dispute ${disputeId} is already resolved` : `Escrow ${doc.id} has no open dispute`,
      { escrowId: doc.id, disputeId: disputeId ?? null },
    );
  const answered = open.statements.some((s) => s.party !== open.openedBy);
  // The opener cannot cut the counterparty's answer short; the counterparty calling waives it.
  if (party === open.openedBy && !answered && now.getTime() < Date.parse(open.respondBy)) {
    throw conflict(
      'awaiting_counterparty',
      `The ${party === 'buyer' ? 'seller' : 'buyer'} may answer until ${open.respondBy}; ask again then`,
      { escrowId: doc.id, disputeId: open.id, respondBy: open.respondBy },
    );
  }
  return { party, dispute: open };
}

/** The live hold of a resolve on the open dispute, if any (one on a dispute no longer open, or lapsed, is none). */
export function resolutionUnderWay(doc: EscrowDoc, now: Date): Resolving | null {
  const held = doc.resolving;
  if (!held || Date.parse(held.until) <= now.getTime()) return null;
  return openDispute(doc)?.id === held.disputeId ? held : null;
}

/** 409 resolution_in_progress while another resolve holds the open dispute. Nothing changes. */
export function checkNotResolving(doc: EscrowDoc, now: Date): void {
  const held = resolutionUnderWay(doc, now);
  if (!held) return;
  // Its answer is usually seconds away; a resolve that died lets go of the dispute at `until` at the latest.
  const seconds = Math.max(1, Math.min(5, Math.ceil((Date.parse(held.until) - now.getTime()) / 1000)));
  throw new HttpError(
    409,
    'resolution_in_progress',
    `The mediator is already resolving dispute ${held.disputeId} for another request; ask again in a moment (its hold lapses at ${held.until} at the latest)`,
    { escrowId: doc.id, disputeId: held.disputeId, resolvingUntil: held.until },
    { 'retry-after': String(seconds) },
  );
}

/**
 * Takes the open dispute for one resolve (under the row lock, before anything is paid): who asks (a party, else the
 * scheduler), the dispute, and the document holding it. Refuses what checkResolve refuses, and a dispute another
 * resolve holds.
 */
export function claimResolution(
  doc: EscrowDoc,
  caller: string | null,
  disputeId: string | undefined,
  token: string,
  now: Date,
): { doc: EscrowDoc; dispute: EscrowDispute; requestedBy: EscrowParty | 'system' } {
  const requestedBy = caller ? checkResolve(doc, caller, disputeId, now).party : 'system';
  const open = openDispute(doc);
  if (!open) throw conflict('not_disputed', `Escrow ${doc.id} has no open dispute`, { escrowId: doc.id });
  checkNotResolving(doc, now);
  const resolving = { disputeId: open.id, token, until: iso(new Date(now.getTime() + RESOLUTION_LEASE_MS)) };
  return { doc: { ...doc, resolving }, dispute: open, requestedBy };
}

/** The document without the hold `token` took (null: it holds nothing of that request's). */
export function releaseResolution(doc: EscrowDoc, token: string): EscrowDoc | null {
  return doc.resolving?.token === token ? { ...doc, resolving: null } : null;
}

/** The mediator's split of each disputed milestone: a whole percent to the seller, rounding dust to the buyer. */
export function distribute(doc: EscrowDoc, dispute: EscrowDispute, sellerPercent: number) {
  const milestones = doc.milestones
    .filter((m) => dispute.milestoneIds.includes(m.id))
    .map((m) => {
      const amount = BigInt(m.amount);
      const toSeller = (amount * BigInt(sellerPercent)) / 100n;
      return {
        milestoneId: m.id,
        amount: String(amount),
        toSeller: String(toSeller),
        toBuyer: String(amount - toSeller),
      };
    });
  const total = sum(milestones.map((m) => BigInt(m.amount)));
  const toSeller = sum(milestones.map((m) => BigInt(m.toSeller)));
  return {
    milestones,
    distribution: { total: String(total), toSeller: String(toSeller), toBuyer: String(total - toSeller) },
  };
}

export function planResolve(
  doc: EscrowDoc,
  dispute: EscrowDispute,
  decision: DraftDecision,
  investigation: EscrowInvestigation,
  now: Date,
): PendingOp {
  const { toSeller, toBuyer } = decision.distribution;
  const payouts: Payout[] = [];
  if (BigInt(toSeller) > 0n)
    payouts.push({
      key: payoutKey(doc, 'resolve', dispute.id, 'seller'),
      purpose: 'release',
      to: doc.seller,
      amount: toSeller,
      milestoneIds: dispute.milestoneIds,
    });
  if (BigInt(toBuyer) > 0n)
    payouts.push({
      key: payoutKey(doc, 'resolve', dispute.id, 'buyer'),
      purpose: 'refund',
      to: doc.buyer,
      amount: toBuyer,
      milestoneIds: dispute.milestoneIds,
    });
  return {
    id: newId('op'),
    kind: 'resolve',
    disputeId: dispute.id,
    decision,
    investigation,
    payouts,
    createdAt: iso(now),
  };
}

// ---- committing an operation ----------------------------------------------------------------------------------

/**
 * The escrow once an operation's transfers are on chain (`sent`: key -> transaction), and the reputation reports it
 * owes. Pure: the caller commits it only if the escrow still carries this operation.
 */
export function applyOp(
  doc: EscrowDoc,
  op: PendingOp,
  sent: Record<string, string>,
  now: Date,
): { doc: EscrowDoc; transfers: EscrowTransfer[]; reports: ReportDraft[] } {
  const at = iso(now);
  const transferOf = (p: Payout): EscrowTransfer => ({
    purpose: p.purpose,
    from: doc.vault,
    to: p.to,
    amount: p.amount,
    signature: sent[p.key]!,
    at,
  });
  const transfers = op.payouts.map(transferOf);
  const timeline = [...doc.timeline];
  const reports: ReportDraft[] = [];
  let milestones = doc.milestones;
  let disputes = doc.disputes;
  let timersPausedAt = doc.timersPausedAt;
  let timeoutAt = doc.timeoutAt;
  const settle = (ids: string[], change: (m: EscrowMilestone) => Partial<EscrowMilestone>) => {
    milestones = milestones.map((m) =>
      ids.includes(m.id) ? { ...m, ...change(m), settledAt: at, reviewEndsAt: null } : m,
    );
  };
  const total = (p: Payout[]) => String(sum(p.map((x) => BigInt(x.amount))));

  if (op.kind === 'confirm' || op.kind === 'review') {
    const byBuyer = op.kind === 'confirm';
    settle(op.milestoneIds, (m) => ({
      state: 'released',
      settledBy: byBuyer ? 'buyer' : 'review_timer',
      toSeller: m.amount,
    }));
    timeline.push(
      byBuyer
        ? entry(
            now,
            'confirmed',
            'buyer',
            op.milestoneIds,
            `The buyer confirmed ${op.milestoneIds.join(', ')}${op.rating ? ` (rating ${op.rating}/5)` : ''}`,
          )
        : entry(
            now,
            'review_timer_expired',
            'system',
            op.milestoneIds,
            `The review period ended without a confirmation or a dispute: ${op.milestoneIds.join(', ')} released to the seller`,
          ),
    );
    for (const [i, p] of op.payouts.entries())
      timeline.push(
        entry(
          now,
          'released',
          byBuyer ? 'buyer' : 'system',
          p.milestoneIds,
          `Released ${usd(p.amount)} to the seller`,
          transfers[i]!,
        ),
      );
    reports.push({
      subject: doc.seller,
      subjectRole: 'seller',
      ratedBy: doc.buyer,
      outcome: byBuyer ? 'completed' : 'auto_released',
      rating: op.kind === 'confirm' ? op.rating : null,
      comment: op.kind === 'confirm' ? op.comment : null,
      amount: total(op.payouts),
      signature: transfers[0]!.signature,
      moduleId: doc.moduleId,
    });
  } else if (op.kind === 'timeout') {
    settle(op.milestoneIds, (m) => ({ state: 'refunded', settledBy: 'timeout', toBuyer: m.amount }));
    timeline.push(
      entry(
        now,
        'timeout_expired',
        'system',
        op.milestoneIds,
        `The seller did not deliver ${op.milestoneIds.join(', ')} by ${doc.timeoutAt}`,
      ),
      entry(
        now,
        'refunded',
        'system',
        op.milestoneIds,
        `Refunded ${usd(op.payouts[0]!.amount)} to the buyer`,
        transfers[0]!,
      ),
    );
    reports.push({
      subject: doc.seller,
      subjectRole: 'seller',
      ratedBy: doc.buyer,
      outcome: 'expired',
      rating: null,
      comment: null,
      amount: total(op.payouts),
      signature: transfers[0]!.signature,
      moduleId: doc.moduleId,
    });
  } else {
    const decision: EscrowMediatorDecision = { ...op.decision, transfers };
    const dispute = disputes.find((d) => d.id === op.disputeId)!;
    const shares = new Map(decision.milestones.map((m) => [m.milestoneId, m]));
    settle(dispute.milestoneIds, (m) => ({
      state: 'resolved',
      settledBy: 'mediator',
      toSeller: shares.get(m.id)!.toSeller,
      toBuyer: shares.get(m.id)!.toBuyer,
    }));
    disputes = disputes.map((d) =>
      d.id === dispute.id ? { ...d, status: 'resolved', investigation: op.investigation, decision, resolvedAt: at } : d,
    );
    timeline.push(
      entry(
        now,
        'resolved',
        'mediator',
        dispute.milestoneIds,
        `The mediator decided ${decision.outcome} (${decision.sellerPercent}% to the seller): ${usd(decision.distribution.toSeller)} to the seller, ${usd(decision.distribution.toBuyer)} to the buyer`,
      ),
    );
    for (const [i, p] of op.payouts.entries()) {
      timeline.push(
        entry(
          now,
          p.purpose === 'release' ? 'released' : 'refunded',
          'mediator',
          p.milestoneIds,
          `${p.purpose === 'release' ? 'Released' : 'Refunded'} ${usd(p.amount)} to the ${p.purpose === 'release' ? 'seller' : 'buyer'}`,
          transfers[i]!,
        ),
      );
    }
    // Timers resume where they stopped: deadlines move by the time the dispute held them.
    if (timersPausedAt) {
      const paused = now.getTime() - Date.parse(timersPausedAt);
      const shift = (t: string) => iso(new Date(Date.parse(t) + paused));
      timeoutAt = shift(timeoutAt);
      milestones = milestones.map((m) =>
        m.state === 'delivered' && m.reviewEndsAt ? { ...m, reviewEndsAt: shift(m.reviewEndsAt) } : m,
      );
      timersPausedAt = null;
      if (milestones.some(isUnsettled))
        timeline.push(
          entry(now, 'timers_resumed', 'system', [], `Timers resumed; deadlines moved by ${hours(paused)} hours`),
        );
    }
    const signature = (purpose: 'release' | 'refund') =>
      (transfers.find((t) => t.purpose === purpose) ?? transfers[0])!.signature;
    const outcomeFor = (party: EscrowParty): ReputationOutcome =>
      decision.outcome === 'split'
        ? 'dispute_split'
        : (decision.outcome === 'release_to_seller') === (party === 'seller')
          ? 'dispute_won'
          : 'dispute_lost';
    reports.push(
      {
        subject: doc.seller,
        subjectRole: 'seller',
        ratedBy: doc.buyer,
        outcome: outcomeFor('seller'),
        rating: null,
        comment: null,
        amount: decision.distribution.total,
        signature: signature('release'),
        moduleId: doc.moduleId,
      },
      {
        subject: doc.buyer,
        subjectRole: 'buyer',
        ratedBy: doc.seller,
        outcome: outcomeFor('buyer'),
        rating: null,
        comment: null,
        amount: decision.distribution.total,
        signature: signature('refund'),
        moduleId: doc.moduleId,
      },
    );
  }
  const next: EscrowDoc = { ...doc, milestones, disputes, timersPausedAt, timeoutAt, timeline, updatedAt: at };
  // The decision committed: the resolve's hold on the dispute ends with it.
  if (op.kind === 'resolve') next.resolving = null;
  if (isClosed(next)) {
    next.closedAt = at;
    next.timeline = [...next.timeline, entry(now, 'closed', 'system', [], `The escrow is ${stateOf(next)}`)];
  }
  return { doc: next, transfers, reports };
}

// ---- lists and statistics -------------------------------------------------------------------------------------

export function toSummary(doc: EscrowDoc, agent: string, now: Date): EscrowSummary {
  const role = doc.buyer === agent ? 'buyer' : 'seller';
  const b = balancesOf(doc);
  const nextAction = nextActionOf(doc, now);
  return {
    id: doc.id,
    state: stateOf(doc),
    role,
    counterparty: role === 'buyer' ? doc.seller : doc.buyer,
    title: doc.title,
    amount: doc.amount,
    released: String(b.released),
    refunded: String(b.refunded),
    milestones: doc.milestones.length,
    milestonesSettled: doc.milestones.filter((m) => !isUnsettled(m)).length,
    nextAction,
    actionRequired: nextAction.party === role,
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
    closedAt: doc.closedAt,
  };
}

const completionHours = (docs: EscrowDoc[]) =>
  average(
    docs
      .filter((d) => stateOf(d) === 'completed' && d.closedAt)
      .map((d) => hours(Date.parse(d.closedAt!) - Date.parse(d.createdAt))),
  );

export function agentSummary(docs: EscrowDoc[], agent: string, now: Date): EscrowAgentSummary {
  const summaries = docs.map((d) => ({ doc: d, s: toSummary(d, agent, now) }));
  const asBuyer = docs.filter((d) => d.buyer === agent);
  const asSeller = docs.filter((d) => d.seller === agent);
  const closedDocs = docs.filter(isClosed);
  return {
    total: docs.length,
    active: summaries.filter(({ s }) => s.state === 'funded' || s.state === 'delivered').length,
    completed: closedDocs.length,
    disputed: summaries.filter(({ s }) => s.state === 'disputed').length,
    asBuyer: asBuyer.length,
    asSeller: asSeller.length,
    actionRequired: summaries.filter(({ s }) => s.actionRequired).length,
    lockedAsBuyer: String(sum(asBuyer.map(heldBy))),
    pendingAsSeller: String(sum(asSeller.map(heldBy))),
    spent: String(sum(asBuyer.map((d) => balancesOf(d).released))),
    earned: String(sum(asSeller.map((d) => balancesOf(d).released))),
    refunded: String(sum(asBuyer.map((d) => balancesOf(d).refunded))),
    disputesOpened: docs.reduce(
      (n, d) => n + d.disputes.filter((x) => (x.openedBy === 'buyer' ? d.buyer : d.seller) === agent).length,
      0,
    ),
    completionRate: ratio(closedDocs.filter((d) => stateOf(d) === 'completed').length, closedDocs.length),
    averageCompletionHours: completionHours(docs),
  };
}

export function buildStats(docs: EscrowDoc[], chain: { network: string; asset: string }, now: Date): EscrowStats {
  const byState: Record<EscrowState, number> = {
    funded: 0,
    delivered: 0,
    disputed: 0,
    completed: 0,
    resolved: 0,
    expired: 0,
  };
  for (const d of docs) byState[stateOf(d)] += 1;
  const disputes = docs.flatMap((d) => d.disputes);
  const decided = disputes.filter((d) => d.decision);
  const share = (outcome: string) =>
    ratio(decided.filter((d) => d.decision!.outcome === outcome).length, decided.length);
  const closedDocs = docs.filter(isClosed);
  return {
    totalEscrows: docs.length,
    byState,
    volumeLocked: String(sum(docs.map(heldBy))),
    volume: {
      escrowed: String(sum(docs.map((d) => BigInt(d.amount)))),
      released: String(sum(docs.map((d) => balancesOf(d).released))),
      refunded: String(sum(docs.map((d) => balancesOf(d).refunded))),
      fees: String(sum(docs.map((d) => BigInt(d.fee)))),
    },
    disputes: {
      total: disputes.length,
      open: disputes.filter((d) => d.status === 'open').length,
      resolved: decided.length,
      disputeRate: ratio(disputes.length, docs.length),
    },
    resolutionRates: {
      releasedToSeller: share('release_to_seller'),
      refundedToBuyer: share('refund_to_buyer'),
      split: share('split'),
    },
    averageResolutionHours: average(decided.map((d) => hours(Date.parse(d.resolvedAt!) - Date.parse(d.openedAt)))),
    completionRate: ratio(closedDocs.filter((d) => stateOf(d) === 'completed').length, closedDocs.length),
    averageCompletionHours: completionHours(docs),
    milestonesAutoReleased: docs.reduce(
      (n, d) => n + d.milestones.filter((m) => m.settledBy === 'review_timer').length,
      0,
    ),
    network: chain.network,
    asset: chain.asset,
    asOf: iso(now),
  };
}
