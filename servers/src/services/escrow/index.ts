import {
  ESCROW_DEFAULT_REVIEW_HOURS,
  ESCROW_DEFAULT_TIMEOUT_HOURS,
  atomicToUsd,
  escrow,
  escrowFee,
  reputation,
  verification,
  type EscrowReputationSnapshot,
} from '@agent-economy/contracts';
import { ApiError, createServiceClient, walletFromSecretKey } from '@agent-economy/sdk';
import type { Express } from 'express';
import { migrate } from '../../db';
import { createServiceApp, fromContext, vaultOf } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { HttpError, notFound, unprocessable } from '../../runtime/errors';
import { escrowEngine, type EscrowEngine } from './engine';
import {
  checkCreate,
  checkStorable,
  escrowHandlers,
  preflightConfirm,
  preflightDeliver,
  preflightDispute,
  preflightResolve,
  type EscrowDeps,
} from './handlers';
import type { Readers } from './mediator';
import type { PendingOp } from './domain';
import { escrowScheduler, type EscrowScheduler } from './scheduler';
import { escrowStore, migrations } from './store';

export interface EscrowOptions {
  /**
   * The reputation service (reports, and reads in disputes); a function when known only later. Default: the
   * deployment's.
   */
  reputationUrl?: string | (() => string);
  /** The verification service (scans of delivered content in disputes). Default: the deployment's. */
  verificationUrl?: string | (() => string);
  /** Review period and delivery timeout when the create body leaves them out (defaults 72 h and 336 h). */
  reviewSeconds?: number;
  timeoutSeconds?: number;
  /** How often the scheduler fires due timers; false: never on its own (tests call `scheduler.tick()`). Default 5 s. */
  tickMs?: number | false;
  /** The clock (tests move it past review periods and timeouts). */
  now?: () => Date;
  /** Test hook: runs after an operation's transfers and before its commit; a throw simulates a crash there. */
  beforeCommit?: (op: PendingOp) => void | Promise<void>;
}

export interface EscrowService {
  app: Express;
  scheduler: EscrowScheduler;
  engine: EscrowEngine;
  /** Atomic units the vault paid other services (reputation, verification), from the books. */
  expenses(): Promise<bigint>;
}

const urlOf = (configured: string | (() => string) | undefined, fallback: () => string) => {
  const value = configured ?? fallback;
  return typeof value === 'function' ? value : () => value;
};
const unreachable = (service: string, error: unknown) =>
  new HttpError(
    502,
    `${service}_unavailable`,
    `The ${service} service did not answer: ${error instanceof Error ? error.message : String(error)}`,
    undefined,
    { 'retry-after': '5' },
  );

export async function createEscrowService(
  context: ServiceContext,
  options: EscrowOptions = {},
): Promise<EscrowService> {
  await migrate(context.db, 'escrow', migrations);
  const now = options.now ?? (() => new Date());
  const store = escrowStore(context.db);
  const vault = await vaultOf(context)();
  const reputationUrl = urlOf(options.reputationUrl, () => context.serviceUrl('reputation'));
  const verificationUrl = urlOf(options.verificationUrl, () => context.serviceUrl('verification'));

  // The escrow calls other services as itself: its vault wallet signs in (the reputation service trusts it as a
  // reporter) and pays their fees, each payment recorded in the books.
  const signer = await walletFromSecretKey(context.wallet.secretKey);
  const payments = {
    maxPerCallUsd: '0.05',
    allowedNetworks: [context.paywall.network],
    allowedAssets: [context.paywall.asset],
    rpcUrl: context.rpcUrl,
    onPayment: (receipt: { transaction: string; route: string; amount: string }) =>
      void store
        .recordExpense(receipt.transaction, receipt.route, BigInt(receipt.amount), now())
        .catch((error: unknown) => context.logger.error({ err: error }, 'escrow expense not recorded')),
  };
  const clientOptions = {
    wallet: signer,
    network: context.paywall.network,
    payments,
    maxRetries: 1,
    timeoutMs: 15_000,
  };
  const verificationClient = () => createServiceClient(verification, verificationUrl(), clientOptions);
  const reputationClient = () => createServiceClient(reputation, reputationUrl(), clientOptions);

  const readers: Readers = {
    async scan(doc, milestoneId, knownScanId) {
      if (knownScanId) return verificationClient().getScan({ params: { scanId: knownScanId } });
      // No moduleId: the delivered content is judged as it is, not against a market listing it may not match.
      const { content } = doc.milestones.find((m) => m.id === milestoneId)!.delivery!;
      return verificationClient().scan({
        body: {
          content: {
            title: content.title,
            format: content.format,
            ...(content.language ? { language: content.language } : {}),
            body: content.body,
          },
          holder: doc.seller,
        },
      });
    },
    async reputation(agent): Promise<EscrowReputationSnapshot> {
      const profile = await reputationClient().get({ params: { agentId: agent }, query: { limit: 1 } });
      const disputes = profile.asBuyer.disputes + profile.asSeller.disputes;
      return {
        agentId: profile.agentId,
        score: profile.score,
        tier: profile.tier,
        confidence: profile.confidence,
        tradeCount: profile.tradeCount,
        disputeRate: profile.tradeCount ? Math.round((disputes / profile.tradeCount) * 10_000) / 10_000 : null,
      };
    },
  };

  const engine = escrowEngine({
    store,
    vault,
    reasoner: context.reasoner,
    readers,
    now,
    logger: context.logger,
    ...(options.beforeCommit ? { beforeCommit: options.beforeCommit } : {}),
    // Reports name the transfer that settled the trade (the reputation service counts one report per reporter and
    // escrow, and an escrow may settle in several steps: each settlement is its own report).
    async report(draft) {
      const created = await reputationClient().report({
        body: {
          subject: draft.subject,
          subjectRole: draft.subjectRole,
          outcome: draft.outcome,
          ...(draft.rating ? { rating: draft.rating } : {}),
          ...(draft.comment ? { comment: draft.comment } : {}),
          amount: draft.amount,
          ...(draft.moduleId ? { moduleId: draft.moduleId } : {}),
          signature: draft.signature,
          ratedBy: draft.ratedBy,
        },
      });
      return created.id;
    },
  });

  const deps: EscrowDeps = {
    store,
    engine,
    readers,
    async readScan(scanId) {
      try {
        return await verificationClient().getScan({ params: { scanId } });
      } catch (error) {
        if (error instanceof ApiError && error.status === 404)
          throw notFound('scan_not_found', `The verification service has no scan ${scanId}`, { scanId });
        throw unreachable('verification', error);
      }
    },
    generator: context.reasoner.generator,
    chain: { network: context.paywall.network, asset: context.paywall.asset, vault: vault.address },
    reviewSeconds: options.reviewSeconds ?? ESCROW_DEFAULT_REVIEW_HOURS * 3600,
    timeoutSeconds: options.timeoutSeconds ?? ESCROW_DEFAULT_TIMEOUT_HOURS * 3600,
    now,
  };

  const app = await createServiceApp({
    service: escrow,
    handlers: escrowHandlers(deps),
    ...fromContext(context),
    // The create call's price is the escrowed amount plus the fee: the buyer's payment is the funding.
    pricing: { create: ({ body }) => ({ usd: atomicToUsd(BigInt(body.amount) + escrowFee(BigInt(body.amount))) }) },
    // Every refusal that does not depend on the payment itself comes before the quote: nobody pays to be refused.
    preflight: {
      create: async ({ body }, caller) => {
        checkStorable(body);
        checkCreate(body, caller!, vault.address);
        // The vault pays only an open stablecoin account (vault.ts): a seller without one could never be released to.
        if (!(await vault.accountOpen(body.seller)))
          throw unprocessable(
            'seller_account_missing',
            'The seller has no stablecoin account, so no release could reach it: it opens one (its associated token account) first; nothing was charged',
            { seller: body.seller },
          );
      },
      deliver: ({ body }, caller) => (checkStorable(body), preflightDeliver(deps, body, caller!)),
      confirm: ({ body }, caller) => (checkStorable(body), preflightConfirm(deps, body, caller!)),
      dispute: ({ body }, caller) => (checkStorable(body), preflightDispute(deps, body, caller!)),
      resolve: ({ body }, caller) => (checkStorable(body), preflightResolve(deps, body, caller!)),
    },
  });
  const scheduler = escrowScheduler({ store, engine, now, logger: context.logger });
  const tickMs = options.tickMs ?? 5_000;
  if (tickMs !== false) scheduler.start(tickMs);
  return { app, scheduler, engine, expenses: () => store.expenses() };
}

export async function createEscrowApp(context: ServiceContext, options: EscrowOptions = {}): Promise<Express> {
  return (await createEscrowService(context, options)).app;
}
