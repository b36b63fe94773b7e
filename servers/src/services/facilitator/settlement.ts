import type {
  PaymentRequirements,
  X402FacilitatorRequest,
  X402SettleResponse,
  X402SupportedResponse,
  X402VerifyResponse,
} from '@agent-economy/contracts';
import {
  SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE,
  isSolanaError,
  type Rpc,
  type SolanaRpcApi,
  type Signature,
  type Base64EncodedWireTransaction,
} from '@solana/kit';
import type { Logger } from 'pino';
import { toBase64 } from '../../solana/wire';
import { unavailable } from '../../runtime/errors';
import type { Wallet } from '../../solana/keys';
import type { SettlementKind, SettlementStore } from './store';
import { coSign, type ReadTransaction } from './transaction';
import { PaymentRejected, checkTransaction, type CheckedPayment, type VerifyPolicy } from './verify';

// Verify, co-sign, simulate, send and confirm (research/x402.md §2.5). A payment is claimed in the
// database before it is broadcast, so it settles once however many replicas or requests race for it.
// simulate / submit / follow are the one pipeline every kind of settlement goes through (x402 /settle
// here, charges in charge.ts); each route only words the outcome its own way. Both leave the last
// simulation to the node's preflight as it sends (x402's /verify has simulated the payment already).

export interface FacilitatorOptions {
  rpc: Rpc<SolanaRpcApi>;
  store: SettlementStore;
  feePayer: Wallet;
  policy: VerifyPolicy;
  logger: Logger;
  /** How long to wait for `confirmed` before answering settlement_pending; default 30 s. */
  confirmTimeoutMs?: number;
  /** Checked before an x402 payment is simulated and sent (the settle caps): throws an HttpError to refuse it. */
  admit?: (payment: { payer: string; payTo: string }) => Promise<void>;
  now?: () => Date;
}

/** A payment that passed its rules, ready to be co-signed and sent. */
export interface Submission {
  tx: ReadTransaction;
  kind: SettlementKind;
  scheme: string;
  network: string;
  payer: string;
  payTo: string;
  amount: bigint;
  asset: string;
  resource: string | null;
  description: string | null;
  /**
   * The node simulates it before sending (sendTransaction's preflight) instead of the caller beforehand: one
   * simulation and one round trip fewer. One that would fail is refused unsent (state `refused`, with `rejection`).
   */
  preflight?: boolean;
}

/** What became of a submitted (or re-examined) payment. */
export type SubmitOutcome =
  /** Seen `confirmed` on chain, recorded settled. */
  | { state: 'confirmed'; transaction: string; slot: number; at: Date }
  /** Landed with an error: nothing moved but the fee. */
  | { state: 'failed'; transaction: string; error: string }
  /** Sent (or maybe sent), confirmation not seen: reconciliation or a repeated request settles its fate. */
  | { state: 'pending'; transaction: string; message: string }
  /**
   * The node refused it before broadcasting: nothing can land, the claim was released. `rejection`: refused in
   * preflight, the chain's error and logs as a simulation gives them, for the caller to word.
   */
  | { state: 'refused'; message: string; rejection?: { err: unknown; logs: readonly string[] } }
  /** Another request (on any replica) claimed the same payment first. */
  | { state: 'taken' };

/** The chain's JSON-RPC endpoint did not answer: a 503 with Retry-After, nothing broadcast. */
export function chainDown(error: unknown): boolean {
  if (error instanceof TypeError) return true; // fetch failed: refused, reset, DNS
  return (
    isSolanaError(error) &&
    (error.context as { statusCode?: number }).statusCode !== undefined &&
    (error.context as { statusCode: number }).statusCode >= 500
  );
}

/** fetch failures that happen before a connection is made (refused, no such host or route, a port fetch refuses). */
const NO_CONNECTION = /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|bad port/;

export async function onChain<T>(action: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (chainDown(error))
      throw unavailable(
        'chain_unavailable',
        `The Solana RPC endpoint does not answer (${action}); nothing was broadcast`,
        5,
      );
    throw error;
  }
}

export const stringify = (value: unknown) => JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? Number(v) : v));

/** Reads a simulation or transaction error in the node's JSON form as an x402 reason. */
function chainRejection(err: unknown, logs: readonly string[] | null | undefined, payer: string): PaymentRejected {
  if (err === 'BlockhashNotFound') {
    return new PaymentRejected(
      'invalid_exact_svm_blockhash_expired',
      'the transaction’s blockhash has expired; build the payment again with a recent blockhash',
      payer,
    );
  }
  if (err === 'AlreadyProcessed')
    return new PaymentRejected('duplicate_settlement', 'this transaction has already been processed on chain', payer);
  const instruction = (err as { InstructionError?: [number, unknown] })?.InstructionError;
  // Token program error 1 in the transfer (instruction 2) is InsufficientFunds.
  // kit reads the node's integers as bigint, hence Number().
  if (
    instruction &&
    Number(instruction[0]) === 2 &&
    Number((instruction[1] as { Custom?: number | bigint })?.Custom) === 1
  ) {
    return new PaymentRejected('insufficient_funds', 'the payer’s token account holds less than the amount', payer);
  }
  const tail = logs?.length ? `; logs: ${logs.slice(-3).join(' | ')}` : '';
  return new PaymentRejected(
    'invalid_exact_svm_transaction_simulation_failed',
    `simulation failed: ${stringify(err)}${tail}`,
    payer,
  );
}

export function createFacilitator(options: FacilitatorOptions) {
  const { rpc, store, feePayer, policy, logger } = options;
  const now = options.now ?? (() => new Date());
  const confirmTimeoutMs = options.confirmTimeoutMs ?? 30_000;

  /**
   * The chain's verdict on the transaction as it stands (fee-payer slot not yet signed): null when it would succeed.
   */
  async function simulate(tx: ReadTransaction): Promise<{ err: unknown; logs: readonly string[] } | null> {
    const wire = toBase64(tx.wire) as Base64EncodedWireTransaction;
    const { value } = await onChain('simulateTransaction', () =>
      rpc
        .simulateTransaction(wire, {
          encoding: 'base64',
          sigVerify: false,
          replaceRecentBlockhash: false,
          commitment: 'confirmed',
        })
        .send(),
    );
    return value.err ? { err: value.err, logs: value.logs ?? [] } : null;
  }

  async function simulatePayment(payment: CheckedPayment): Promise<void> {
    const rejection = await simulate(payment.tx);
    if (rejection) throw chainRejection(rejection.err, rejection.logs, payment.payer);
  }

  /** Every rule, then the chain's view; the payment stays unsent. */
  async function check(request: X402FacilitatorRequest): Promise<CheckedPayment> {
    const payment = await checkTransaction(request.paymentPayload, request.paymentRequirements, policy);
    const settled = await store.get(payment.tx.key);
    // A payment tried before and failed on chain moved nothing: not a duplicate of a settlement (a resource server
    // reads duplicate_settlement as "settled already").
    if (settled?.status === 'failed')
      throw new PaymentRejected(
        'invalid_exact_svm_transaction_failed',
        `this payment was tried (transaction ${settled.transaction}) and failed on chain (${settled.error}); nothing moved`,
        payment.payer,
      );
    if (settled)
      throw new PaymentRejected(
        'duplicate_settlement',
        `this payment was already submitted for settlement (transaction ${settled.transaction})`,
        payment.payer,
      );
    await simulatePayment(payment);
    return payment;
  }

  /** Polls the signature until confirmed, failed or the timeout: 250 ms for 2 s, then every second. */
  async function confirm(
    signature: string,
  ): Promise<{ state: 'confirmed'; slot: number } | { state: 'failed'; err: unknown } | { state: 'unseen' }> {
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      const { value } = await rpc
        .getSignatureStatuses([signature as Signature], { searchTransactionHistory: true })
        .send();
      const status = value[0];
      if (status?.err) return { state: 'failed', err: status.err };
      if (status && (status.confirmationStatus === 'confirmed' || status.confirmationStatus === 'finalized'))
        return { state: 'confirmed', slot: Number(status.slot) };
      const elapsed = Date.now() - started;
      if (elapsed >= confirmTimeoutMs) return { state: 'unseen' };
      await new Promise((resolve) => setTimeout(resolve, elapsed < 2000 ? 250 : 1000));
    }
  }

  /** Watches a sent payment until its fate is known or the timeout, and records it. */
  async function follow(key: string, transaction: string): Promise<SubmitOutcome> {
    let outcome: Awaited<ReturnType<typeof confirm>>;
    try {
      outcome = await confirm(transaction);
    } catch (error) {
      if (!chainDown(error)) throw error;
      // Sent, but the chain stopped answering while we watched: pending, to be reconciled.
      return {
        state: 'pending',
        transaction,
        message: 'the transaction was sent but the chain stopped answering before its confirmation',
      };
    }
    const at = now();
    if (outcome.state === 'confirmed') {
      await store.finish(key, 'settled', at);
      return { state: 'confirmed', transaction, slot: outcome.slot, at };
    }
    if (outcome.state === 'failed') {
      const error = stringify(outcome.err);
      await store.finish(key, 'failed', at, error);
      return { state: 'failed', transaction, error };
    }
    return {
      state: 'pending',
      transaction,
      message: 'the transaction was sent but its confirmation was not seen in time',
    };
  }

  /**
   * Sends a fully signed transaction. sent: the node took it; unreachable: the connection was refused (nothing
   * sent); refused: the node answered with an error (nothing can land); unknown: the request may have reached it.
   */
  async function broadcast(
    wire: Uint8Array,
    transaction: string,
    preflight = false,
  ): Promise<
    { state: 'sent' | 'unreachable' | 'unknown' } | { state: 'refused'; message: string; preflight?: boolean }
  > {
    try {
      await rpc
        .sendTransaction(toBase64(wire) as Base64EncodedWireTransaction, {
          encoding: 'base64',
          skipPreflight: !preflight,
          preflightCommitment: 'confirmed',
        })
        .send();
      return { state: 'sent' };
    } catch (error) {
      if (error instanceof TypeError && NO_CONNECTION.test(String((error as { cause?: unknown }).cause)))
        return { state: 'unreachable' };
      if (isSolanaError(error, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE))
        return { state: 'refused', message: `the transaction fails in simulation: ${error.message}`, preflight: true };
      if (isSolanaError(error) && !chainDown(error))
        return { state: 'refused', message: `the node refused the transaction: ${(error as Error).message}` };
      logger.warn({ err: error, transaction }, 'sendTransaction outcome unknown');
      return { state: 'unknown' };
    }
  }

  /** Co-signs, claims (at most once across replicas), sends and follows a payment that passed its rules. */
  async function submit(s: Submission): Promise<SubmitOutcome> {
    const { wire, signature: transaction } = coSign(s.tx, feePayer);
    const claimed = await store.claim({
      key: s.tx.key,
      kind: s.kind,
      scheme: s.scheme,
      network: s.network,
      payer: s.payer,
      payTo: s.payTo,
      amount: s.amount,
      asset: s.asset,
      resource: s.resource,
      description: s.description,
      transaction,
      blockhash: s.tx.blockhash,
      createdAt: now(),
    });
    if (!claimed) return { state: 'taken' };
    const sent = await broadcast(wire, transaction, s.preflight);
    if (sent.state !== 'sent') {
      // The node refused it or never saw it: nothing can land, so the payment is free to settle later.
      if (sent.state === 'unreachable' || sent.state === 'refused') await store.release(s.tx.key);
      if (sent.state === 'unreachable')
        throw unavailable('chain_unavailable', 'The Solana RPC endpoint does not answer; nothing was broadcast', 5);
      if (sent.state === 'refused') {
        // Refused in preflight (rare: the payer moved the funds since it was checked): simulated again for the error.
        const rejection = sent.preflight ? await simulate(s.tx) : null;
        return { state: 'refused', message: sent.message, ...(rejection ? { rejection } : {}) };
      }
      // The request may have reached the node: keep the claim; reconciliation or a repeated settle resolves it.
      return { state: 'pending', transaction, message: 'the transaction may have been sent' };
    }
    const outcome = await follow(s.tx.key, transaction);
    if (outcome.state === 'confirmed') {
      logger.info(
        { kind: s.kind, transaction, payer: s.payer, payTo: s.payTo, amount: s.amount.toString() },
        'payment settled',
      );
    }
    return outcome;
  }

  const failure = (
    requirements: PaymentRequirements,
    reason: string,
    message: string,
    extra: Partial<X402SettleResponse> = {},
  ): X402SettleResponse => ({
    success: false,
    errorReason: reason,
    errorMessage: message,
    transaction: '',
    network: requirements.network,
    ...extra,
  });

  /** An outcome of the pipeline in the x402 SettleResponse shape. */
  function x402Outcome(
    outcome: SubmitOutcome,
    payer: string,
    amount: bigint,
    requirements: PaymentRequirements,
  ): X402SettleResponse {
    switch (outcome.state) {
      case 'confirmed':
        return {
          success: true,
          transaction: outcome.transaction,
          network: requirements.network,
          payer,
          amount: amount.toString(),
        };
      case 'failed':
        // x402: a failed settlement's transaction is empty; its signature (only the fee was spent) is in the message.
        return failure(
          requirements,
          'invalid_exact_svm_transaction_failed',
          `the transaction ${outcome.transaction} failed on chain: ${outcome.error}`,
          { payer },
        );
      case 'pending':
        return failure(
          requirements,
          'settlement_pending',
          `${outcome.message}; settle the same payment again to reconcile`,
          { transaction: outcome.transaction, payer },
        );
      case 'refused':
        return failure(requirements, 'invalid_exact_svm_transaction_failed', outcome.message, { payer });
      case 'taken':
        return failure(
          requirements,
          'duplicate_settlement',
          'this payment is already being settled by another request',
          { payer },
        );
    }
  }

  return {
    /** The fee payer this facilitator signs with. */
    feePayer: feePayer.address,
    network: policy.network,
    rpc,
    store,
    now,
    confirmTimeoutMs,
    simulate,
    submit,
    follow,
    broadcast,
    confirm,

    supported(): X402SupportedResponse {
      return {
        kinds: [{ x402Version: 2, scheme: 'exact', network: policy.network, extra: { feePayer: feePayer.address } }],
        // x402 discovery (bazaar): GET /discovery/resources and /discovery/search (discovery.ts).
        extensions: ['bazaar'],
        signers: { 'solana:*': [feePayer.address] },
      };
    },

    async verify(request: X402FacilitatorRequest): Promise<X402VerifyResponse> {
      try {
        const payment = await check(request);
        return { isValid: true, payer: payment.payer };
      } catch (error) {
        if (!(error instanceof PaymentRejected)) throw error;
        return {
          isValid: false,
          invalidReason: error.reason,
          invalidMessage: error.message,
          ...(error.payer ? { payer: error.payer } : {}),
        };
      }
    },

    async settle(request: X402FacilitatorRequest): Promise<X402SettleResponse> {
      const requirements = request.paymentRequirements;
      let payment: CheckedPayment;
      try {
        payment = await checkTransaction(request.paymentPayload, requirements, policy);
      } catch (error) {
        if (!(error instanceof PaymentRejected)) throw error;
        return failure(requirements, error.reason, error.message, error.payer ? { payer: error.payer } : {});
      }
      const existing = await store.get(payment.tx.key);
      if (existing?.status === 'pending' && now().getTime() - existing.createdAt.getTime() > confirmTimeoutMs) {
        // Settling a payment left pending reconciles it: its transaction was sent once, we only look for it.
        return x402Outcome(
          await follow(existing.key, existing.transaction),
          existing.payer,
          existing.amount,
          requirements,
        );
      }
      if (existing?.status === 'pending') {
        // Sent (or being sent) moments ago: its outcome is not known yet, so it is pending, not refused.
        return failure(
          requirements,
          'settlement_pending',
          'this payment is being settled by another request; settle it again shortly to learn the outcome',
          {
            transaction: existing.transaction,
            payer: existing.payer,
          },
        );
      }
      if (existing?.status === 'failed') {
        return failure(
          requirements,
          'invalid_exact_svm_transaction_failed',
          `this payment was tried (transaction ${existing.transaction}) and failed on chain (${existing.error}); nothing moved`,
          {
            payer: existing.payer,
          },
        );
      }
      if (existing) {
        return failure(
          requirements,
          'duplicate_settlement',
          `this payment was already settled (transaction ${existing.transaction})`,
          {
            transaction: existing.transaction,
            payer: existing.payer,
          },
        );
      }
      await options.admit?.({ payer: payment.payer, payTo: requirements.payTo });
      // The node's preflight stands in for a simulation of our own: one that would fail is refused unsent, no fee paid.
      const outcome = await submit({
        tx: payment.tx,
        kind: 'x402',
        scheme: requirements.scheme,
        network: requirements.network,
        payer: payment.payer,
        payTo: requirements.payTo,
        amount: payment.amount,
        asset: requirements.asset,
        resource: request.paymentPayload.resource?.url ?? null,
        description: request.paymentPayload.resource?.description ?? null,
        preflight: true,
      });
      if (outcome.state === 'refused' && outcome.rejection) {
        const refusal = chainRejection(outcome.rejection.err, outcome.rejection.logs, payment.payer);
        return failure(requirements, refusal.reason, refusal.message, { payer: payment.payer });
      }
      return x402Outcome(outcome, payment.payer, payment.amount, requirements);
    },

    /**
     * Settles the fate of payments left pending (a confirmation not seen in time, a crash between send and
     * confirm): confirmed ones are recorded, and ones whose blockhash expired unseen are marked failed.
     */
    async reconcile(olderThanMs = 10_000): Promise<number> {
      const pending = await store.pending(new Date(now().getTime() - olderThanMs));
      let resolved = 0;
      for (const row of pending) {
        const { value } = await rpc
          .getSignatureStatuses([row.transaction as Signature], { searchTransactionHistory: true })
          .send();
        const status = value[0];
        if (status?.err) await store.finish(row.key, 'failed', now(), stringify(status.err));
        else if (status && status.confirmationStatus !== 'processed') await store.finish(row.key, 'settled', now());
        else {
          const { value: valid } = await rpc
            .isBlockhashValid(row.blockhash as never, { commitment: 'confirmed' })
            .send();
          if (valid) continue;
          await store.finish(row.key, 'failed', now(), 'blockhash expired before the transaction was seen');
        }
        resolved++;
      }
      return resolved;
    },
  };
}

export type Facilitator = ReturnType<typeof createFacilitator>;
