import { defineService, facilitator } from '@agent-economy/contracts';
import { createSolanaRpc } from '@solana/kit';
import { migrate } from '../../db';
import { createServiceApp, type WireError } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { callerOf } from '../../runtime/app';
import { createChargeDesk, DEFAULT_SETTLE_CAPS, type SettleCaps } from './charge';
import { splDelegation, type DelegationBackend } from './delegation';
import { createOnboardingDesk, DEFAULT_ONBOARDING_LIMITS, type OnboardingLimits } from './onboarding';
import { sessionDelegate } from './session-domain';
import { sessionMigrations, sessionStore } from './session-store';
import { createSessionDesk } from './sessions';
import { createFacilitator } from './settlement';
import { settlementStore, migrations } from './store';
import { DEFAULT_VERIFY_POLICY } from './verify';

// Every route of the contract: the charge routes, payment sessions, onboarding and the x402 routes.
// (Spelled out, router and handlers alike: a generic route picker costs the type checker minutes.)
const { prepare, settleCharge, stats, openSession, signVoucher, closeSession, onboard, confirmOnboarding, onboardingStatus, supported, verify, settle } =
  facilitator.router;
export const facilitatorRoutes = defineService({
  ...facilitator,
  router: { prepare, settleCharge, stats, openSession, signVoucher, closeSession, onboard, confirmOnboarding, onboardingStatus, supported, verify, settle },
});

export interface FacilitatorAppOptions {
  /** Backpressure of /mpp/settle; default DEFAULT_SETTLE_CAPS. */
  settleCaps?: Partial<SettleCaps>;
  /** Onboarding calls per wallet and hour; default DEFAULT_ONBOARDING_LIMITS. */
  onboardingLimits?: Partial<OnboardingLimits>;
  /** The clock sessions and roles are judged by (tests move it to see expiry); default the system clock. */
  now?: () => Date;
}

/** The x402 wire error for a route: VerifyResponse or SettleResponse shaped, never the envelope. */
function x402Error(key: string, error: WireError, body: unknown): unknown {
  const issues = (error.details as { fields?: { field: string }[] } | undefined)?.fields;
  let reason = error.status >= 500 ? `unexpected_${key}_error` : error.code;
  if (issues) {
    const fields = issues.map((i) => i.field);
    if (fields.some((f) => f === 'body.x402Version' || f === 'body.paymentPayload.x402Version')) reason = 'invalid_x402_version';
    else if (fields.every((f) => f.startsWith('body.paymentRequirements'))) reason = 'invalid_payment_requirements';
    else reason = 'invalid_payload';
  }
  if (key === 'verify') return { isValid: false, invalidReason: reason, invalidMessage: error.message };
  const network = (body as { paymentRequirements?: { network?: unknown } } | undefined)?.paymentRequirements?.network;
  return { success: false, errorReason: reason, errorMessage: error.message, transaction: '', network: typeof network === 'string' ? network : '' };
}

export async function createFacilitatorApp(context: ServiceContext, options: FacilitatorAppOptions = {}) {
  await migrate(context.db, 'facilitator', { ...migrations, ...sessionMigrations });
  const store = settlementStore(context.db);
  const sessionsStore = sessionStore(context.db);
  const logger = context.logger.child({ service: 'facilitator' });
  const rpc = createSolanaRpc(context.rpcUrl);
  const service = createFacilitator({
    rpc,
    store,
    feePayer: context.wallet,
    policy: { ...DEFAULT_VERIFY_POLICY, network: context.paywall.network, feePayers: new Set([context.wallet.address]) },
    logger,
    ...(options.now ? { now: options.now } : {}),
  });
  const delegate = sessionDelegate(context.wallet);
  const asset = context.paywall.asset;
  let sessions: ReturnType<typeof createSessionDesk> | undefined;
  const charges = createChargeDesk({
    facilitator: service,
    policy: { ...DEFAULT_VERIFY_POLICY, feePayer: context.wallet.address, asset },
    caps: { ...DEFAULT_SETTLE_CAPS, ...options.settleCaps },
    logger,
    sessionCounts: (today) => sessions!.counts(today),
  });
  // SPL Token delegation is the role backend here (delegation.ts says why not Swig); built once the
  // stablecoin's token program and decimals have been read from the chain.
  let delegation: DelegationBackend | undefined;
  const backend = async () =>
    (delegation ??= splDelegation({ rpc, mint: asset, ...(await charges.stablecoin()), feePayer: context.wallet.address, delegate: delegate.address }));
  sessions = createSessionDesk({ facilitator: service, store: sessionsStore, backend, feePayer: context.wallet, delegate, asset, logger });
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

  return await createServiceApp({
    service: facilitatorRoutes,
    handlers: {
      prepare: async ({ body }) => ({ status: 200 as const, body: await charges.prepare(body) }),
      settleCharge: async ({ body }) => ({ status: 200 as const, body: await charges.settle(body) }),
      stats: async () => ({ status: 200 as const, body: await charges.stats() }),
      openSession: async ({ body, res }) => ({ status: 200 as const, body: await sessions!.open(body, callerOf(res)) }),
      signVoucher: async ({ body }) => ({ status: 200 as const, body: await sessions!.voucher(body) }),
      closeSession: async ({ body, res }) => ({ status: 200 as const, body: await sessions!.close(body.channelId, callerOf(res)) }),
      onboard: async ({ body, res }) => ({ status: 200 as const, body: await onboarding.onboard(body, callerOf(res)) }),
      confirmOnboarding: async ({ body, res }) => ({ status: 200 as const, body: await onboarding.confirm(body, callerOf(res)) }),
      onboardingStatus: async ({ query, res }) => ({ status: 200 as const, body: await onboarding.status(query, callerOf(res)) }),
      supported: async () => ({ status: 200 as const, body: service.supported() }),
      verify: async ({ body }) => {
        const verdict = await service.verify(body);
        await charges.record('x402_verify', verdict.isValid ? 'valid' : 'invalid');
        return { status: 200 as const, body: verdict };
      },
      settle: async ({ body }) => {
        let result: Awaited<ReturnType<typeof service.settle>> | undefined;
        try {
          result = await service.settle(body);
          return { status: 200 as const, body: result };
        } finally {
          await charges.record('x402_settle', result?.success ? 'success' : result?.errorReason === 'settlement_pending' ? 'pending' : 'fail');
        }
      },
    },
    publicUrl: context.publicUrl,
    db: context.db,
    logger: context.logger,
    paywall: context.paywall,
    wireErrors: { verify: (e, body) => x402Error('verify', e, body), settle: (e, body) => x402Error('settle', e, body) },
  });
}
