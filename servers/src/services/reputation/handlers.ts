import { randomBytes } from 'node:crypto';
import { reputation } from '@agent-economy/contracts';
import type { RouterImplementation } from '../../runtime/app';
import { callerOf } from '../../runtime/app';
import { HttpError, conflict, unprocessable } from '../../runtime/errors';
import { recomputed } from '../../runtime/recomputed';
import type { SolanaSource } from '../../upstream/solana';
import { checkTransfer, type TransferCheck } from './chain';
import {
  baseWeight,
  buildProfile,
  buildStats,
  decodeCursor,
  encodeCursor,
  rankAgents,
  reportPoints,
  scoreOf,
  toReport,
  type StoredReport,
} from './domain';
import type { HistoryPosition, ReputationStore } from './store';

export interface ReputationDeps {
  store: ReputationStore;
  chain: SolanaSource;
  /** The stablecoin whose transfers verify a trade. */
  mint: string;
  /** Wallets of the services trusted to report for a party (the escrow service, the gateway). */
  trustedReporters: ReadonlySet<string>;
  now: () => Date;
}

/** The fields a report body carries (the contract's, after validation). */
export interface ReportBody {
  subject: string;
  subjectRole: 'buyer' | 'seller';
  outcome: StoredReport['outcome'];
  rating?: number;
  comment?: string;
  amount?: string;
  escrowId?: string;
  moduleId?: string;
  signature?: string;
  ratedBy?: string;
}

const badField = (field: string, message: string) =>
  new HttpError(400, 'invalid_request', `Invalid request: ${field} ${message}`, { fields: [{ field, message }] });

/** NUL characters and lone surrogates: text the database cannot store (and no one means to send). */
const UNSTORABLE_TEXT = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A comment the database could not store is a 400 naming the field, not a 500. */
export function assertStorableComment(comment: string | undefined): void {
  if (comment !== undefined && UNSTORABLE_TEXT.test(comment))
    throw badField('body.comment', 'must be Unicode text without NUL characters or lone surrogates');
}

/** The history position a cursor of GET /api/reputation/agent/:agentId names, or a 400 naming the field. */
export function historyPosition(cursor: string | undefined): HistoryPosition | undefined {
  if (cursor === undefined) return undefined;
  const value = decodeCursor(cursor);
  const createdAt = typeof value?.t === 'string' ? new Date(value.t) : undefined;
  if (
    !createdAt ||
    Number.isNaN(createdAt.getTime()) ||
    typeof value?.id !== 'string' ||
    !/^rep_[0-9a-f]{24}$/.test(value.id)
  ) {
    throw badField('query.cursor', 'is not a cursor this route issued');
  }
  return { createdAt, id: value.id };
}

/** The ranking offset a cursor of GET /api/reputation/top names, or a 400 naming the field. */
export function rankingOffset(cursor: string | undefined): number {
  if (cursor === undefined) return 0;
  const offset = decodeCursor(cursor)?.o;
  if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0)
    throw badField('query.cursor', 'is not a cursor this route issued');
  return offset;
}

/**
 * Everything about a report that can fail, decided before payment (it runs again in the handler): who rates,
 * whether the report is verified, and that it is neither a self-report nor a duplicate.
 */
export function reportChecks(deps: ReputationDeps) {
  // Confirmed transfers stay confirmed: remembering them saves the handler a second read after the preflight.
  const confirmed = new Map<string, TransferCheck>();
  return async (body: ReportBody, caller: string) => {
    assertStorableComment(body.comment);
    const trusted = deps.trustedReporters.has(caller);
    if (body.ratedBy && !trusted) {
      throw new HttpError(
        403,
        'not_trusted_reporter',
        'Only a trusted service may report for another party (ratedBy); report as yourself',
        { caller },
      );
    }
    const ratedBy = body.ratedBy ?? caller;
    if (body.subject === caller || body.subject === ratedBy)
      throw unprocessable('self_report', 'An agent cannot report on itself', { subject: body.subject });
    const duplicate = await deps.store.findDuplicate(caller, body.subject, body.escrowId, body.signature);
    if (duplicate)
      throw conflict('duplicate_report', 'You already reported this escrow or transaction about this agent', {
        reportId: duplicate.id,
      });
    let transfer: TransferCheck | undefined;
    if (body.signature && !trusted) {
      const key = `${body.signature}:${ratedBy}:${body.subject}`;
      transfer =
        confirmed.get(key) ?? (await checkTransfer(deps.chain, body.signature, ratedBy, body.subject, deps.mint));
      if (transfer.transfer) {
        if (confirmed.size > 5_000) confirmed.clear();
        confirmed.set(key, transfer);
      }
    }
    // A transfer shows a trade in one direction: the seller received it, the buyer paid it. Cited the other way round,
    // it would let a real payment make the subject a trader of the role the reporter picks.
    const backed = !!transfer?.transfer && (transfer.payee === body.subject) === (body.subjectRole === 'seller');
    return { ratedBy, trusted, verified: trusted || backed, chainAmount: backed ? (transfer?.amount ?? null) : null };
  };
}

// Handlers only translate between the contract and the domain.
export function reputationHandlers(
  deps: ReputationDeps,
  check: ReturnType<typeof reportChecks>,
): RouterImplementation<typeof reputation.router> {
  const { store, now } = deps;
  const statsOf = recomputed<ReturnType<typeof buildStats>>({ maxAgeMs: 60_000 });
  return {
    report: async ({ body, res }) => {
      const caller = callerOf(res);
      const { ratedBy, trusted, verified, chainAmount } = await check(body, caller);
      const createdAt = now();
      const report = await store.insert(body.subject, (earlier) => {
        const draft: StoredReport = {
          id: `rep_${randomBytes(12).toString('hex')}`,
          reporter: caller,
          ratedBy,
          subject: body.subject,
          subjectRole: body.subjectRole,
          outcome: body.outcome,
          rating: body.rating ?? null,
          comment: body.comment ?? null,
          // A trade a cited transfer verifies is as large as the chain says, whatever the reporter states.
          amount: chainAmount ?? (body.amount !== undefined ? BigInt(body.amount) : null),
          escrowId: body.escrowId ?? null,
          moduleId: body.moduleId ?? null,
          signature: body.signature ?? null,
          verified,
          // What the report is worth: 1 from a trusted service, by the amount the chain shows for a cited transfer.
          weight: baseWeight({ trusted, chainAmount }),
          points: reportPoints(body.outcome, body.rating),
          scoreBefore: 0,
          scoreAfter: 0,
          createdAt,
        };
        draft.scoreBefore = scoreOf(earlier, createdAt).score;
        draft.scoreAfter = scoreOf([...earlier, draft], createdAt).score;
        return draft;
      });
      return { status: 201, body: toReport(report) };
    },

    get: async ({ params, query }) => {
      const at = now();
      const after = historyPosition(query.cursor);
      const verified = query.verified === undefined ? undefined : query.verified === 'true';
      const [reports, page, seen] = await Promise.all([
        store.verifiedReportsAbout(params.agentId),
        store.history(params.agentId, query.limit, after, verified),
        store.firstSeen(params.agentId),
      ]);
      const last = page.items.at(-1);
      const nextCursor = page.more && last ? encodeCursor({ t: last.createdAt.toISOString(), id: last.id }) : null;
      return { status: 200, body: buildProfile(params.agentId, reports, { items: page.items, nextCursor }, at, seen) };
    },

    top: async ({ query }) => {
      const offset = rankingOffset(query.cursor);
      const ranked = rankAgents(await store.all({ verifiedOnly: true }), query.role, query.minTrades, now());
      const items = ranked.slice(offset, offset + query.limit).map((agent, i) => ({ rank: offset + i + 1, ...agent }));
      const nextCursor = offset + query.limit < ranked.length ? encodeCursor({ o: offset + query.limit }) : null;
      return { status: 200, body: { items, nextCursor } };
    },

    stats: async () => {
      const at = now();
      // A free route: computed again once a report was filed, or after a minute (scores and "the last 24 hours" move
      // with the clock); asOf says when.
      const stats = await statsOf(await store.fingerprint(), at, async () => {
        const reports = await store.all();
        // Trusted services reporting for nobody in particular are not agents with a reputation.
        const counterparties = new Set(reports.map((r) => r.ratedBy).filter((a) => !deps.trustedReporters.has(a)));
        return buildStats(reports, counterparties, at);
      });
      return { status: 200, body: stats };
    },
  };
}
