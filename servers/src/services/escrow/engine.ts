import type { EscrowInvestigation, EscrowTransfer } from '@agent-economy/contracts';
import type { Logger } from 'pino';
import type { Reasoner } from '../../ai';
import { HttpError } from '../../runtime/errors';
import type { Vault } from '../../runtime/vault';
import {
  applyOp,
  checkResolve,
  claimResolution,
  escrowNotFound,
  newId,
  openDispute,
  planResolve,
  planTimer,
  releaseResolution,
  type DraftDecision,
  type EscrowDoc,
  type PendingOp,
  type ReportDraft,
} from './domain';
import { decide, investigate, type Readers } from './mediator';
import type { Change, EscrowStore, Locked } from './store';

// Moving money: an operation is recorded on the escrow with its transfers and their keys (under the row lock),
// the transfers are sent from the vault (idempotent per key), then the new state is committed. A crash or an
// unreachable chain between the steps leaves the escrow as it was with the operation pending; whoever comes
// next (a retry, another request, the scheduler) finishes it with the same keys, so nothing moves twice.

/** How long a worker holds an operation it is finishing before another may take it over. */
export const LEASE_MS = 60_000;

export interface EngineDeps {
  store: EscrowStore;
  vault: Vault;
  reasoner: Reasoner;
  readers: Readers;
  /** Sends one reputation report (paying its fee); resolves to the report id, throws when it could not be sent. */
  report(draft: ReportDraft, escrowId: string): Promise<string>;
  now: () => Date;
  logger: Logger;
  /** Test hook: runs after an operation's transfers and before its commit (a throw is a crash there). */
  beforeCommit?: (op: PendingOp) => void | Promise<void>;
}

export interface Finished {
  doc: EscrowDoc;
  op: PendingOp;
  transfers: EscrowTransfer[];
}

export type Decision = { op: PendingOp } | { doc: EscrowDoc } | { none: true };

const busy = (id: string) =>
  new HttpError(
    409,
    'operation_in_progress',
    `Escrow ${id} is settling an earlier operation; try again in a moment`,
    { escrowId: id },
    { 'retry-after': '2' },
  );

export function escrowEngine(deps: EngineDeps) {
  const { store, vault, now, logger } = deps;

  /** Under the row lock: take over an abandoned operation, or decide a new one. */
  async function step(id: string, decideNew: (doc: EscrowDoc) => Decision, onBusy: () => never | 'skip') {
    return store.mutate(
      id,
      (locked: Locked): { change: Change; result: { takeover: PendingOp } | Decision | { skip: true } } => {
        const at = now();
        if (locked.pending) {
          if (locked.lease && locked.lease.getTime() > at.getTime()) {
            if (onBusy() === 'skip') return { change: {}, result: { skip: true } };
          }
          return { change: { lease: new Date(at.getTime() + LEASE_MS) }, result: { takeover: locked.pending } };
        }
        const decision = decideNew(locked.doc);
        if ('op' in decision)
          return { change: { pending: decision.op, lease: new Date(at.getTime() + LEASE_MS) }, result: decision };
        if ('doc' in decision) return { change: { doc: decision.doc }, result: decision };
        return { change: {}, result: decision };
      },
    );
  }

  /** Sends an operation's transfers, then commits its state; a failure on the way frees the operation for a retry. */
  async function finish(id: string, op: PendingOp): Promise<Finished> {
    const sent: Record<string, string> = {};
    try {
      for (const p of op.payouts) {
        const { transaction } = await vault.transfer({
          to: p.to,
          amount: BigInt(p.amount),
          key: p.key,
          memo: `${id} ${p.purpose} ${p.milestoneIds.join(',')}`,
        });
        sent[p.key] = transaction;
      }
      await deps.beforeCommit?.(op);
    } catch (error) {
      await store
        .mutate(id, (locked) => ({ change: locked.pending?.id === op.id ? { lease: null } : {}, result: null }))
        .catch(() => undefined);
      throw error;
    }
    const committed = await store.mutate<{ doc: EscrowDoc; transfers: EscrowTransfer[] | null }>(id, (locked) => {
      // Someone else finished it meanwhile (a lease taken over): their commit stands.
      if (locked.pending?.id !== op.id) return { change: {}, result: { doc: locked.doc, transfers: null } };
      const at = now();
      const applied = applyOp(locked.doc, op, sent, at);
      return {
        change: {
          doc: applied.doc,
          pending: null,
          lease: null,
          reports: applied.reports.map((draft) => ({ opId: op.id, draft, at })),
        },
        result: { doc: applied.doc, transfers: applied.transfers },
      };
    });
    if (!committed) throw escrowNotFound(id);
    const at = now().toISOString();
    const transfers =
      committed.transfers ??
      op.payouts.map((p) => ({
        purpose: p.purpose,
        from: committed.doc.vault,
        to: p.to,
        amount: p.amount,
        signature: sent[p.key]!,
        at,
      }));
    await flushReports(op.id);
    return { doc: committed.doc, op, transfers };
  }

  /**
   * Sends the reputation reports owed (one operation's, or all), each once: a sent or refused report is marked so.
   * The reputation service refusing a report for good (403, 409, 422) ends its retries; anything else retries later.
   */
  async function flushReports(opId?: string): Promise<void> {
    for (const row of await store.pendingReports(now(), opId)) {
      try {
        const reportId = await deps.report(row.draft, row.escrow_id);
        await store.markReport(row.id, { status: 'sent', reportId });
      } catch (error) {
        const status = (error as { status?: number }).status;
        const message = error instanceof Error ? error.message : String(error);
        // Already filed (another replica or a tick sent it meanwhile): the reputation service names it.
        const earlier = (error as { details?: { reportId?: unknown } }).details?.reportId;
        if (status === 409 && typeof earlier === 'string') {
          await store.markReport(row.id, { status: 'sent', reportId: earlier });
          continue;
        }
        if (status === 409 || status === 403 || status === 422 || status === 400) {
          logger.warn({ escrowId: row.escrow_id, err: message }, 'reputation report refused');
          await store.markReport(row.id, { status: 'refused', reportId: null, error: message });
        } else {
          await store.markReport(row.id, { status: 'pending', error: message });
        }
      }
    }
  }

  /**
   * Runs a request's operation on escrow `id`: finishes an abandoned operation first (if it is the one this
   * request asks for, as `same` tells, its result is this request's), then decides and runs the request's own.
   */
  async function execute(
    id: string,
    decideNew: (doc: EscrowDoc) => Decision,
    same?: (pending: PendingOp) => boolean,
  ): Promise<Finished | { doc: EscrowDoc }> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const result = await step(id, decideNew, () => {
        throw busy(id);
      });
      if (!result) throw escrowNotFound(id);
      if ('takeover' in result) {
        const done = await finish(id, result.takeover);
        if (same?.(result.takeover)) return done;
        continue;
      }
      if ('op' in result) return finish(id, result.op);
      if ('doc' in result) return { doc: result.doc };
      throw new Error('an escrow operation decided nothing');
    }
    throw busy(id);
  }

  /**
   * The mediator's binding decision over the open dispute, paid out. The dispute is first taken for this request under
   * the row lock (claimResolution, RESOLUTION_LEASE_MS): a concurrent resolve, however many race, is refused there at
   * once (409 resolution_in_progress), before any paid read or decision. The commit ends the hold; a failure lets go
   * of it; a process that dies leaves it to lapse.
   */
  async function resolve(
    id: string,
    caller: string | null,
    disputeId: string | undefined,
    finalStatement?: string,
  ): Promise<Finished> {
    const token = newId('rsv');
    const claimed = await store.mutate(id, (locked) => {
      const taken = claimResolution(locked.doc, caller, disputeId, token, now());
      return { change: { doc: taken.doc }, result: { ...taken, pending: locked.pending } };
    });
    if (!claimed) throw escrowNotFound(id);
    const { dispute, requestedBy, pending } = claimed;
    try {
      // A decision already recorded for this dispute (its transfers interrupted) is finished as it was: nothing is
      // read or decided again. Otherwise the investigation reads other services (paid) outside the lock.
      let decided: { decision: DraftDecision; investigation: EscrowInvestigation } | undefined;
      if (pending?.kind !== 'resolve' || pending.disputeId !== dispute.id) {
        const investigation = await investigate(
          claimed.doc,
          dispute.milestoneIds,
          dispute.investigation,
          deps.readers,
          now(),
          deps.reasoner.generator,
        );
        if (finalStatement) investigation.observations.push(`Final statement of the ${requestedBy}: ${finalStatement}`);
        const decision = await decide(
          deps.reasoner,
          claimed.doc,
          { ...dispute, investigation },
          investigation,
          requestedBy,
          now(),
        );
        decided = { decision, investigation };
      }
      const done = await execute(
        id,
        (doc) => {
          if (caller) checkResolve(doc, caller, disputeId, now());
          const open = openDispute(doc);
          if (!open || open.id !== dispute.id)
            throw new HttpError(409, 'not_disputed', `Dispute ${dispute.id} is already resolved`, {
              escrowId: id,
              disputeId: dispute.id,
            });
          if (!decided) throw busy(id);
          return { op: planResolve(doc, open, decided.decision, decided.investigation, now()) };
        },
        (op) => op.kind === 'resolve' && op.disputeId === dispute.id,
      );
      return done as Finished;
    } catch (error) {
      // Let go of the dispute at once, if this request still holds it: a retry need not wait for the hold to lapse.
      await store
        .mutate(id, (locked) => {
          const released = releaseResolution(locked.doc, token);
          return { change: released ? { doc: released } : {}, result: null };
        })
        .catch(() => undefined);
      throw error;
    }
  }

  /** The scheduler's work on one claimed escrow: finish what was abandoned, then fire every timer due. */
  async function runDue(id: string): Promise<number> {
    let fired = 0;
    for (let round = 0; round < 5; round++) {
      let autoResolve = false;
      const result = await step(
        id,
        (doc) => {
          const due = planTimer(doc, now());
          if (!due) return { none: true };
          if (due.kind === 'auto_resolve') {
            autoResolve = true;
            return { none: true };
          }
          return { op: due };
        },
        () => 'skip',
      );
      if (!result || 'skip' in result) return fired;
      if ('takeover' in result) {
        await finish(id, result.takeover);
        continue;
      }
      if ('op' in result) {
        await finish(id, result.op);
        fired += 1;
        continue;
      }
      if (autoResolve) {
        try {
          await resolve(id, null, undefined);
        } catch (error) {
          // A party's resolve holds the dispute: its decision stands, else the timer comes due again.
          if (error instanceof HttpError && error.code === 'resolution_in_progress') return fired;
          throw error;
        }
        fired += 1;
        continue;
      }
      return fired;
    }
    return fired;
  }

  return { execute, finish, resolve, runDue, flushReports };
}

export type EscrowEngine = ReturnType<typeof escrowEngine>;
