import { facilitator } from '@agent-economy/contracts';
import { createSolanaRpc, type Signature } from '@solana/kit';
import { migrate } from '../../db';
import type {
  MppVoucherRequest,
  X402FacilitatorRequest,
  X402SettleResponse,
  X402VerifyResponse,
} from '@agent-economy/contracts';
import { createServiceApp, type ErrorReply } from '../../runtime/app';
import { offerInProcess } from '../../http/in-process';
import { inProcessRoute } from '../../runtime/in-process-route';
import { address } from '@solana/kit';
import { tracedSolanaRpc } from '../../runtime/traced-rpc';
import { facilitatorMetrics } from './metrics';
import type { ServiceContext } from '../../runtime/context';
import { callerOf } from '../../runtime/app';
import { HttpError, badGateway, envelope } from '../../runtime/errors';
import { RESOURCE_SERVER_HEADER, verifyResourceRequest } from '../../runtime/resource-auth';
import type { TransactionMeta } from '../../solana/token-balances';
import { createChargeDesk } from './charge';
import { DEFAULT_SETTLE_CAPS, payeeGate, settleCaps, type SettleCaps } from './sellers';
import { splDelegation, type DelegationBackend } from './delegation';
import { createOnboardingDesk, DEFAULT_ONBOARDING_LIMITS, type OnboardingLimits } from './onboarding';
import { sessionDelegate } from './session-domain';
import { sessionMigrations, sessionStore } from './session-store';
import { createSessionDesk } from './sessions';
import { discoveryDesk, discoveryMigrations } from './discovery';
import { createFacilitator } from './settlement';
import { settlementStore, migrations } from './store';
import { DEFAULT_VERIFY_POLICY } from './verify';
import { SPONSORED_EXTENSION, sponsoredAccess, sponsoredMigrations } from './sponsored';

export interface FacilitatorAppOptions {
  /** Backpressure of /settle and /mpp/settle, each counted apart; default DEFAULT_SETTLE_CAPS. */
  settleCaps?: Partial<SettleCaps>;
  /**
   * payTo wallets whose payments the fee payer settles (sellers.ts); `npm start` registers its services and
   * FACILITATOR_SELLERS. A live set: its owner may add sellers while the app runs. Default: none.
   */
  sellers?: ReadonlySet<string>;
  /** Resource servers whose signed calls (x-resource-server) are settled for any payTo; default none. */
  resourceServers?: ReadonlySet<string>;
  /** Highest priority fee the fee payer pays, microlamports per compute unit; default DEFAULT_VERIFY_POLICY's. */
  maxComputeUnitPriceMicroLamports?: bigint;
  /** Onboarding calls per wallet and hour, and wallets created per hour in all; default DEFAULT_ONBOARDING_LIMITS. */
  onboardingLimits?: Partial<OnboardingLimits>;
  /**
   * The ad network asked for a sponsored recommendation after every settlement (sponsored.ts): its address (a function
   * when known only later, as in tests; default context.serviceUrl('ads')) and time limit; false: none.
   */
  ads?: { url?: string | (() => string); timeoutMs?: number } | false;
  /** The clock sessions and roles are judged by (tests move it to see expiry); default the system clock. */
  now?: () => Date;
  /**
   * How long a buyer's session close waits for the seller to forward the vouchers it holds, seconds; default 15 (three
   * of a paywall's default 5 s sweeps).
   */
  sessionCloseGraceSeconds?: number;
}

/** The x402 wire error for a route: VerifyResponse or SettleResponse shaped, never the envelope. */
function x402Error(key: string, error: ErrorReply, body: unknown): unknown {
  const issues = (error.details as { fields?: { field: string }[] } | undefined)?.fields;
  // A body that is not JSON, too large or in another encoding is, to x402, an invalid payload.
  const unreadable = ['invalid_json', 'payload_too_large', 'unsupported_media_type'].includes(error.code);
  let reason = error.status >= 500 ? `unexpected_${key}_error` : unreadable ? 'invalid_payload' : error.code;
  if (issues) {
    const fields = issues.map((i) => i.field);
    if (fields.some((f) => f === 'body.x402Version' || f === 'body.paymentPayload.x402Version'))
      reason = 'invalid_x402_version';
    else if (fields.every((f) => f.startsWith('body.paymentRequirements'))) reason = 'invalid_payment_requirements';
    else reason = 'invalid_payload';
  }
  if (key === 'verify') return { isValid: false, invalidReason: reason, invalidMessage: error.message };
  const network = (body as { paymentRequirements?: { network?: unknown } } | undefined)?.paymentRequirements?.network;
  return {
    success: false,
    errorReason: reason,
    errorMessage: error.message,
    transaction: '',
    network: typeof network === 'string' ? network : '',
  };
}

export async function createFacilitatorApp(context: ServiceContext, options: FacilitatorAppOptions = {}) {
  await migrate(context.db, 'facilitator', { ...migrations, ...sessionMigrations });
  await migrate(context.db, 'facilitator-discovery', discoveryMigrations);
  const store = settlementStore(context.db);
  const sessionsStore = sessionStore(context.db);
  const logger = context.logger.child({ service: 'facilitator' });
  const discovery = discoveryDesk(context.db, logger);
  await migrate(context.db, 'facilitator-sponsored', sponsoredMigrations);
  const adsUrl =
    options.ads === false
      ? () => undefined
      : typeof options.ads?.url === 'function'
        ? options.ads.url
        : () => (options.ads && typeof options.ads.url === 'string' ? options.ads.url : context.serviceUrl('ads'));
  const sponsored = sponsoredAccess({
    adsUrl,
    wallet: context.wallet,
    network: context.paywall.network,
    db: context.db,
    logger,
    now: options.now ?? (() => new Date()),
    ...(options.ads && options.ads.timeoutMs ? { timeoutMs: options.ads.timeoutMs } : {}),
  });
  const rpc = tracedSolanaRpc(context.rpcUrl);
  const caps = { ...DEFAULT_SETTLE_CAPS, ...options.settleCaps };
  // Settlements, revenue by seller, settle latency, the fee payer's SOL and open sessions at /metrics (metrics.ts).
  const settleMetrics = facilitatorMetrics({
    db: context.db,
    logger,
    feePayerLamports: async () => (await rpc.getBalance(address(context.wallet.address)).send()).value,
  });
  const feePolicy = {
    ...DEFAULT_VERIFY_POLICY,
    ...(options.maxComputeUnitPriceMicroLamports !== undefined
      ? { maxComputeUnitPriceMicroLamports: options.maxComputeUnitPriceMicroLamports }
      : {}),
  };
  const payees = payeeGate(
    { sellers: options.sellers ?? new Set(), resourceServers: options.resourceServers ?? new Set() },
    options.now,
  );
  const x402Caps = settleCaps(store, caps, options.now ?? (() => new Date()));
  const service = createFacilitator({
    rpc,
    store,
    feePayer: context.wallet,
    policy: { ...feePolicy, network: context.paywall.network, feePayers: new Set([context.wallet.address]) },
    logger,
    admit: ({ payer, payTo }) => x402Caps.check('x402', payer, payTo),
    ...(options.now ? { now: options.now } : {}),
  });
  const delegate = sessionDelegate(context.wallet);
  const asset = context.paywall.asset;
  let sessions: ReturnType<typeof createSessionDesk> | undefined;
  const charges = createChargeDesk({
    facilitator: service,
    policy: { ...feePolicy, feePayer: context.wallet.address, asset },
    caps,
    payees,
    logger,
    sessionCounts: (today) => sessions!.counts(today),
  });
  // SPL Token delegation is the role backend here (delegation.ts says why not Swig); built once the
  // stablecoin's token program and decimals have been read from the chain.
  let delegation: DelegationBackend | undefined;
  const backend = async () =>
    (delegation ??= splDelegation({
      rpc,
      mint: asset,
      ...(await charges.stablecoin()),
      feePayer: context.wallet.address,
      delegate: delegate.address,
    }));
  sessions = createSessionDesk({
    facilitator: service,
    store: sessionsStore,
    backend,
    feePayer: context.wallet,
    delegate,
    asset,
    logger,
    closeGraceMs: (options.sessionCloseGraceSeconds ?? 15) * 1000,
  });
  const onboarding = createOnboardingDesk({
    facilitator: service,
    store: sessionsStore,
    backend,
    feePayer: context.wallet,
    delegate,
    asset,
    limits: { ...DEFAULT_ONBOARDING_LIMITS, ...options.onboardingLimits },
    logger,
  });
  // Payments left pending (a confirmation not seen in time, a crash) are looked up again until settled or
  // expired; then sessions left closing are finished and idle ones closed.
  const timer = setInterval(() => {
    service
      .reconcile()
      .then(() => sessions!.reconcile())
      .catch((error: unknown) => context.logger.debug({ err: error }, 'reconciliation skipped'));
  }, 15_000);
  timer.unref();

  // The x402 routes, for a caller that is `signedBy()` (a registered resource server; undefined: unsigned), whether
  // the call came over HTTP or from a paywall in this process (inProcess below).
  const x402 = {
    async verify(body: X402FacilitatorRequest, signedBy: () => string | undefined): Promise<X402VerifyResponse> {
      payees.admit(body.paymentRequirements.payTo, signedBy());
      const verdict = await service.verify(body);
      await charges.record('x402_verify', verdict.isValid ? 'valid' : 'invalid');
      return verdict;
    },
    async settle(body: X402FacilitatorRequest, signedBy: () => string | undefined): Promise<X402SettleResponse> {
      let result: X402SettleResponse | undefined;
      try {
        const signer = signedBy();
        const { payTo, asset, amount } = body.paymentRequirements;
        result = await settleMetrics.observe(
          'x402',
          async () => {
            payees.admit(payTo, signer);
            return service.settle(body);
          },
          (r) =>
            r.success
              ? { settled: true, payTo, asset, amount: r.amount ?? amount }
              : { settled: false, reason: r.errorReason ?? 'unexpected_settle_error' },
        );
        // x402 bazaar: a settled payment teaches the catalog its resource (discovery.ts), but only when a registered
        // resource server asked: a buyer's own /settle with a 1-unit payment must not rewrite a seller's entry.
        if (result.success && signer) await discovery.catalog(body, (options.now ?? (() => new Date()))());
        // Recorded: now the ad network may add a recommendation (bounded, never failing the settlement).
        const recommendation = result.success
          ? await sponsored.afterSettlement({
              transaction: result.transaction,
              network: result.network,
              payer: result.payer ?? '',
              amount: result.amount ?? body.paymentRequirements.amount,
              resource: body.paymentPayload.resource,
            })
          : undefined;
        if (recommendation)
          result = { ...result, extensions: { ...result.extensions, [SPONSORED_EXTENSION]: recommendation } };
        return result;
      } finally {
        await charges.record(
          'x402_settle',
          result?.success ? 'success' : result?.errorReason === 'settlement_pending' ? 'pending' : 'fail',
        );
      }
    },
  };

  // /verify and /settle for a paywall in this process (runtime/facilitator-client.ts): the caller is the resource
  // server it signs as over HTTP, checked against the registered ones as a signature's wallet is.
  const signedIn = (caller: string | undefined) => () => (caller === undefined ? undefined : payees.registered(caller));
  const inProcess = {
    verify: inProcessRoute<X402FacilitatorRequest>({
      route: facilitator.router.verify,
      logger,
      render: (error, body) => x402Error('verify', error, body),
      answer: (body, caller) => x402.verify(body, signedIn(caller)),
    }),
    settle: inProcessRoute<X402FacilitatorRequest>({
      route: facilitator.router.settle,
      logger,
      render: (error, body) => x402Error('settle', error, body),
      answer: (body, caller) => x402.settle(body, signedIn(caller)),
    }),
    // A session paywall in this process forwards its buyers' vouchers here (runtime/paywall-session.ts checkpoints).
    // The route proves no caller over HTTP either: the session key's signature in the body is the proof.
    signVoucher: inProcessRoute<MppVoucherRequest>({
      route: facilitator.router.signVoucher,
      logger,
      render: (error, _body, requestId) => envelope(requestId, error.code, error.message, error.details),
      answer: (body) => sessions!.voucher(body),
    }),
  };

  const app = await createServiceApp({
    service: facilitator,
    handlers: {
      prepare: async ({ body }) => ({ status: 200 as const, body: await charges.prepare(body) }),
      settleCharge: async ({ body, req }) => {
        const settled = await settleMetrics.observe(
          'charge',
          () => charges.settle(body, payees.resourceServer(req, '/mpp/settle')),
          (s) => ({ settled: true, payTo: s.recipient, asset: s.asset, amount: s.amount }),
        );
        const sponsoredAccess = await sponsored.afterSettlement({
          transaction: settled.signature,
          network: settled.network,
          payer: settled.payer,
          amount: settled.amount,
          resource: body.resource,
        });
        return { status: 200 as const, body: sponsoredAccess ? { ...settled, sponsoredAccess } : settled };
      },
      stats: async () => ({ status: 200 as const, body: await charges.stats() }),
      openSession: async ({ body, res }) => {
        // The fee payer settles the session's close: only to a seller it serves.
        payees.admit(body.sellerWallet, undefined);
        return { status: 200 as const, body: await sessions!.open(body, callerOf(res)) };
      },
      getSession: async ({ params, res }) => ({
        status: 200 as const,
        body: await sessions!.get(params.channelId, callerOf(res)),
      }),
      signVoucher: async ({ body }) => ({ status: 200 as const, body: await sessions!.voucher(body) }),
      closeSession: async ({ body, res }) => ({
        status: 200 as const,
        body: await sessions!.close(body.channelId, callerOf(res)),
      }),
      onboard: async ({ body, res }) => ({ status: 200 as const, body: await onboarding.onboard(body, callerOf(res)) }),
      confirmOnboarding: async ({ body, res }) => ({
        status: 200 as const,
        body: await onboarding.confirm(body, callerOf(res)),
      }),
      onboardingStatus: async ({ query, res }) => ({
        status: 200 as const,
        body: await onboarding.status(query, callerOf(res)),
      }),
      supported: async () => ({ status: 200 as const, body: service.supported() }),
      settlements: async ({ query }) => ({
        status: 200 as const,
        body: await discovery.settlements(BigInt(query.after ?? '0'), query.limit),
      }),
      refunds: async ({ body, req }) => {
        // Only the seller may say its sale was refunded: the call is signed by the settlement's payTo
        // (resource-auth.ts).
        const header = req.header(RESOURCE_SERVER_HEADER);
        if (!header)
          throw new HttpError(
            401,
            'signature_required',
            `sign the call with the ${RESOURCE_SERVER_HEADER} header by the wallet the settlement paid`,
          );
        const signed = verifyResourceRequest(
          header,
          req.method,
          '/discovery/refunds',
          (req as { rawBody?: Buffer }).rawBody ?? Buffer.alloc(0),
          (options.now ?? (() => new Date()))().getTime(),
        );
        if ('error' in signed) throw new HttpError(401, 'signature_invalid', signed.error);
        const read = async (signature: string) => {
          try {
            const tx = await rpc
              .getTransaction(signature as Signature, {
                encoding: 'json',
                maxSupportedTransactionVersion: 0,
                commitment: 'confirmed',
              })
              .send();
            return tx ? { slot: BigInt(tx.slot), meta: tx.meta as unknown as TransactionMeta | null } : null;
          } catch (error) {
            throw badGateway(
              'upstream_unavailable',
              `the chain did not answer getTransaction (${(error as Error).message})`,
            );
          }
        };
        return {
          status: 200 as const,
          body: await discovery.recordRefund(body.settlement, body.refund, signed.address, read),
        };
      },
      resources: async ({ query: { limit, offset, ...filter } }) => ({
        status: 200 as const,
        body: await discovery.list(filter, limit, offset),
      }),
      search: async ({ query: { query, limit, cursor, ...filter } }) => ({
        status: 200 as const,
        body: await discovery.search(query, filter, limit, Number(cursor ?? '0')),
      }),
      verify: async ({ body, req }) => ({
        status: 200 as const,
        body: await x402.verify(body, () => payees.resourceServer(req, '/verify')),
      }),
      settle: async ({ body, req }) => ({
        status: 200 as const,
        body: await x402.settle(body, () => payees.resourceServer(req, '/settle')),
      }),
    },
    publicUrl: context.publicUrl,
    db: context.db,
    logger: context.logger,
    paywall: context.paywall,
    registry: settleMetrics.registry,
    wireErrors: {
      verify: (e, body) => x402Error('verify', e, body),
      settle: (e, body) => x402Error('settle', e, body),
    },
    // /health says whether the chain it settles on answers.
    dependencies: { chain: async () => void (await rpc.getHealth().send({ abortSignal: AbortSignal.timeout(3_000) })) },
  });
  offerInProcess(app, inProcess);
  return app;
}
