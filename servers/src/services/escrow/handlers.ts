import {
  escrowFee,
  type EscrowDispute,
  type EscrowStats,
  type EscrowSummary,
  type ScanResult,
  escrow as escrowContract,
} from '@agent-economy/contracts';
import type { Response } from 'express';
import type { RouterImplementation } from '../../runtime/app';
import { callerOf } from '../../runtime/app';
import { HttpError, unprocessable } from '../../runtime/errors';
import { keepPayment, settlementOf } from '../../runtime/paywall';
import { recomputed } from '../../runtime/recomputed';
import {
  agentSummary,
  assertParty,
  buildStats,
  checkDeliver,
  checkDispute,
  checkNotResolving,
  checkResolve,
  createEscrow,
  deliver,
  dispute,
  escrowNotFound,
  planConfirm,
  recordInvestigation,
  sha256,
  stateOf,
  toEscrow,
  toSummary,
  type CreateInput,
  type DeliverInput,
  type DisputeInput,
  type EscrowDoc,
} from './domain';
import type { EscrowEngine, Finished } from './engine';
import { investigate, type Readers } from './mediator';
import type { EscrowStore } from './store';

export interface EscrowDeps {
  store: EscrowStore;
  engine: EscrowEngine;
  readers: Readers;
  /** A verification scan by id (free), for a delivery that names one; throws 404 scan_not_found or 502. */
  readScan(scanId: string): Promise<ScanResult>;
  generator: { engine: 'builtin' | 'llm'; model: string };
  chain: { network: string; asset: string; vault: string };
  /** Timers when the create body leaves them out (ESCROW_REVIEW_SECONDS, ESCROW_TIMEOUT_SECONDS). */
  reviewSeconds: number;
  timeoutSeconds: number;
  now: () => Date;
}

export interface CreateBody extends Omit<CreateInput, 'reviewSeconds' | 'timeoutSeconds'> {
  reviewPeriodHours: number;
  timeoutHours: number;
}

async function load(store: EscrowStore, id: string): Promise<EscrowDoc> {
  const found = await store.get(id);
  if (!found) throw escrowNotFound(id);
  return found.doc;
}

const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Every string of a request body must be text the database stores (jsonb refuses NUL and lone surrogates): 400 naming
 * the field, before anyone is quoted, rather than a 500 after the create's payment settled.
 */
export function checkStorable(value: unknown, field = 'body'): void {
  if (typeof value === 'string') {
    if (UNSTORABLE.test(value)) {
      const message = 'must be Unicode text without NUL characters or lone surrogates';
      throw new HttpError(400, 'invalid_request', `Invalid request: ${field} ${message}`, {
        fields: [{ field, message }],
      });
    }
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => checkStorable(item, `${field}.${i}`));
  } else if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) checkStorable(item, `${field}.${key}`);
  }
}

/**
 * A buyer cannot escrow with itself, nor name the vault as the seller (a release to itself): refused before anyone
 * pays.
 */
export function checkCreate(body: { seller: string }, buyer: string, vault: string): void {
  if (body.seller === buyer)
    throw unprocessable('self_escrow', 'The seller is the buyer: an escrow needs two parties', { seller: body.seller });
  if (body.seller === vault)
    throw unprocessable('invalid_seller', 'The seller is the escrow’s own vault', { seller: body.seller });
}

/** A delivery's attached scan must be of this exact content. */
export async function checkDeliveryScan(deps: EscrowDeps, body: DeliverInput): Promise<void> {
  if (!body.scanId) return;
  const scan = await deps.readScan(body.scanId);
  const hash = sha256(body.content.body);
  if (scan.contentHash !== hash) {
    throw unprocessable(
      'scan_content_mismatch',
      `Scan ${scan.id} is of other content (sha256 ${scan.contentHash}, the delivery is ${hash})`,
      { scanId: scan.id, scanHash: scan.contentHash, contentHash: hash },
    );
  }
}

export async function preflightDeliver(
  deps: EscrowDeps,
  body: DeliverInput & { escrowId: string },
  caller: string,
): Promise<void> {
  checkDeliver(await load(deps.store, body.escrowId), caller, body, deps.now());
  await checkDeliveryScan(deps, body);
}

export async function preflightConfirm(
  deps: EscrowDeps,
  body: { escrowId: string; milestoneIds?: string[] },
  caller: string,
): Promise<void> {
  planConfirm(await load(deps.store, body.escrowId), caller, body, deps.now());
}

export async function preflightDispute(
  deps: EscrowDeps,
  body: { escrowId: string; milestoneIds?: string[] },
  caller: string,
): Promise<void> {
  checkDispute(await load(deps.store, body.escrowId), caller, body);
}

export async function preflightResolve(
  deps: EscrowDeps,
  body: { escrowId: string; disputeId?: string },
  caller: string,
): Promise<void> {
  const doc = await load(deps.store, body.escrowId);
  checkResolve(doc, caller, body.disputeId, deps.now());
  // Another resolve of this dispute under way: refused before the quote, as the resolve itself would refuse it.
  checkNotResolving(doc, deps.now());
}

const sameSet = (a: string[], b: string[]) => a.length === b.length && a.every((x) => b.includes(x));

/**
 * The answer to a create whose payment funded `funded`: that escrow again for its buyer (the same payment presented
 * again), else 409 payment_already_used, kept unrefunded (keepPayment): the payment is the escrow's funding, and a
 * refund would leave the escrow funded by the vault's other money.
 */
function answerFunded(funded: EscrowDoc, caller: string, res: Response, at: Date) {
  if (funded.buyer === caller) return { status: 201 as const, body: toEscrow(funded, at) };
  keepPayment(res);
  throw new HttpError(
    409,
    'payment_already_used',
    `This payment already funded escrow ${funded.id}; it is not refunded and funds nothing else. Pay again to create an escrow`,
    { escrowId: funded.id },
  );
}

// Handlers only translate between the contract and the domain.
export function escrowHandlers(deps: EscrowDeps): RouterImplementation<typeof escrowContract.router> {
  const { store, engine, now } = deps;
  const statsOf = recomputed<EscrowStats>();
  return {
    create: async ({ body, req, res }) => {
      const buyer = callerOf(res);
      const settlement = settlementOf(res);
      // A payment presented again after its escrow was stored (its first answer never left: the runtime runs the
      // handler again) is answered before any check that could fail: a failure here would refund a payment that
      // funds an escrow, which the vault would then pay out a second time.
      const funded = await store.byPaymentKey(settlement.key);
      if (funded) return answerFunded(funded, buyer, res, now());
      // The funding must come from the signed-in buyer's wallet (else the runtime refunds the payer).
      if (settlement.payer !== buyer) {
        throw new HttpError(
          403,
          'payer_mismatch',
          `The payment came from ${settlement.payer}, not from the signed-in wallet ${buyer}`,
          { payer: settlement.payer, caller: buyer },
        );
      }
      checkCreate(body, buyer, deps.chain.vault);
      const fee = escrowFee(BigInt(body.amount));
      if (BigInt(settlement.amount) !== BigInt(body.amount) + fee || settlement.payTo !== deps.chain.vault) {
        throw unprocessable(
          'funding_mismatch',
          `The payment of ${settlement.amount} to ${settlement.payTo} does not fund ${body.amount} + fee ${fee} into the vault`,
          { paid: settlement.amount },
        );
      }
      // Hours the caller chose, else this deployment's timers (which may be shorter than an hour).
      const raw = (req.body ?? {}) as unknown as Record<string, unknown>;
      const at = now();
      const doc = createEscrow(
        {
          ...body,
          reviewSeconds: raw.reviewPeriodHours === undefined ? deps.reviewSeconds : body.reviewPeriodHours * 3600,
          timeoutSeconds: raw.timeoutHours === undefined ? deps.timeoutSeconds : body.timeoutHours * 3600,
        },
        buyer,
        fee,
        deps.chain,
        {
          purpose: 'funding',
          from: settlement.payer,
          to: settlement.payTo,
          amount: settlement.amount,
          signature: settlement.transaction,
          at: at.toISOString(),
        },
        at,
      );
      // The same settled payment served again (a presentation racing this one) returns the escrow it funded.
      const stored = await store.insert(doc, settlement.key);
      return answerFunded(stored, buyer, res, now());
    },

    get: async ({ params, res }) => {
      const doc = await load(store, params.escrowId);
      assertParty(doc, callerOf(res));
      return { status: 200, body: toEscrow(doc, now()) };
    },

    deliver: async ({ body, res }) => {
      const caller = callerOf(res);
      await checkDeliveryScan(deps, body);
      let delivered: ReturnType<typeof deliver> | undefined;
      const done = await engine.execute(body.escrowId, (doc) => {
        delivered = deliver(doc, caller, body, now());
        return { doc: delivered.doc };
      });
      const { milestoneId, delivery, reviewEndsAt } = delivered!;
      return { status: 200, body: { escrow: toEscrow(done.doc, now()), milestoneId, delivery, reviewEndsAt } };
    },

    confirm: async ({ body, res }) => {
      const caller = callerOf(res);
      const done = (await engine.execute(
        body.escrowId,
        (doc) => ({ op: planConfirm(doc, caller, body, now()) }),
        // A retry of a confirm that the chain interrupted finishes it and answers with its result.
        (pending) =>
          pending.kind === 'confirm' && (!body.milestoneIds || sameSet(pending.milestoneIds, body.milestoneIds)),
      )) as Finished;
      const reports = await store.reportsOf(done.op.id);
      const seller = reports.find((r) => r.subject === done.doc.seller);
      return {
        status: 200,
        body: {
          escrow: toEscrow(done.doc, now()),
          releasedMilestoneIds: done.op.kind === 'confirm' ? done.op.milestoneIds : [],
          transfers: done.transfers,
          reputationReport:
            seller?.status === 'sent'
              ? { status: 'sent', reportId: seller.report_id }
              : { status: 'queued', reportId: null },
        },
      };
    },

    dispute: async ({ body, res }) => {
      const caller = callerOf(res);
      // The statement is taken under the row lock before anything is paid: a call refused there (the same party
      // stating twice, however many race) costs the vault no investigation, and is not charged either.
      let stated: { doc: EscrowDoc; dispute: EscrowDispute } | undefined;
      await engine.execute(body.escrowId, (doc) => {
        stated = dispute(doc, caller, body as DisputeInput, deps.generator, now());
        return { doc: stated.doc };
      });
      const { doc: statedDoc, dispute: opened } = stated!;
      // Then the investigation (paid reads of the verification and reputation services, a scan already made read
      // again for free), outside the lock, recorded on the dispute this call stated.
      const investigation = await investigate(
        statedDoc,
        opened.milestoneIds,
        opened.investigation,
        deps.readers,
        now(),
        deps.generator,
      );
      const done = await store.mutate(body.escrowId, ({ doc }) => {
        const recorded = recordInvestigation(doc, opened.id, investigation, now());
        // Resolved meanwhile, or a later investigation recorded: the dispute as it stands.
        const current = recorded ?? { doc, dispute: doc.disputes.find((d) => d.id === opened.id) ?? opened };
        return { change: recorded ? { doc: recorded.doc } : {}, result: current };
      });
      if (!done) throw escrowNotFound(body.escrowId);
      return { status: 200, body: { escrow: toEscrow(done.doc, now()), dispute: done.dispute } };
    },

    resolve: async ({ body, res }) => {
      const caller = callerOf(res);
      const done = await engine.resolve(body.escrowId, caller, body.disputeId, body.finalStatement);
      const decided = done.doc.disputes.find((d) => d.id === (done.op.kind === 'resolve' ? done.op.disputeId : ''))!;
      return {
        status: 200,
        body: { escrow: toEscrow(done.doc, now()), dispute: decided, decision: decided.decision! },
      };
    },

    list: async ({ params, query, res }) => {
      if (callerOf(res) !== params.agentId)
        throw new HttpError(403, 'not_your_escrows', 'Only the agent itself may list its escrows', {
          agentId: params.agentId,
        });
      const docs = await store.byAgent(params.agentId, query.role);
      const at = now();
      const groups: Record<'active' | 'completed' | 'disputed', EscrowSummary[]> = {
        active: [],
        completed: [],
        disputed: [],
      };
      for (const doc of docs) {
        const state = stateOf(doc);
        const group =
          state === 'disputed' ? 'disputed' : state === 'funded' || state === 'delivered' ? 'active' : 'completed';
        groups[group].push(toSummary(doc, params.agentId, at));
      }
      const truncated = Object.values(groups).some((g) => g.length > query.limit);
      return {
        status: 200,
        body: {
          agentId: params.agentId,
          role: query.role,
          active: groups.active.slice(0, query.limit),
          completed: groups.completed.slice(0, query.limit),
          disputed: groups.disputed.slice(0, query.limit),
          truncated,
          summary: agentSummary(docs, params.agentId, at),
        },
      };
    },

    stats: async () => {
      // A free route: the figures (a function of the escrows alone) are computed again only once one changed.
      const at = now();
      const stats = await statsOf(await store.fingerprint(), at, async () =>
        buildStats(await store.all(), deps.chain, at),
      );
      return { status: 200, body: { ...stats, asOf: at.toISOString() } };
    },
  };
}
