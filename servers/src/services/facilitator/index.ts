import { defineService, facilitator } from '@agent-economy/contracts';
import { createSolanaRpc } from '@solana/kit';
import { migrate } from '../../db';
import { createServiceApp, type WireError } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { createChargeDesk, DEFAULT_SETTLE_CAPS, type SettleCaps } from './charge';
import { createFacilitator } from './settlement';
import { settlementStore, migrations } from './store';
import { DEFAULT_VERIFY_POLICY } from './verify';

// This deployment serves the charge routes (/mpp/prepare, /mpp/settle, /mpp/stats) and the x402 routes;
// sessions and onboarding come with their own issue and are not mounted (their paths answer 404), so the
// descriptor and documents list exactly what it answers. (Spelled out: a generic route picker costs the
// type checker minutes.)
const { prepare, settleCharge, stats, supported, verify, settle } = facilitator.router;
export const facilitatorRoutes = defineService({ ...facilitator, router: { prepare, settleCharge, stats, supported, verify, settle } });

export interface FacilitatorAppOptions {
  /** Backpressure of /mpp/settle; default DEFAULT_SETTLE_CAPS. */
  settleCaps?: Partial<SettleCaps>;
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
  await migrate(context.db, 'facilitator', migrations);
  const store = settlementStore(context.db);
  const logger = context.logger.child({ service: 'facilitator' });
  const service = createFacilitator({
    rpc: createSolanaRpc(context.rpcUrl),
    store,
    feePayer: context.wallet,
    policy: { ...DEFAULT_VERIFY_POLICY, network: context.paywall.network, feePayers: new Set([context.wallet.address]) },
    logger,
  });
  const charges = createChargeDesk({
    facilitator: service,
    policy: { ...DEFAULT_VERIFY_POLICY, feePayer: context.wallet.address, asset: context.paywall.asset },
    caps: { ...DEFAULT_SETTLE_CAPS, ...options.settleCaps },
    logger,
  });
  // Payments left pending (a confirmation not seen in time, a crash) are looked up again until settled or expired.
  const timer = setInterval(() => {
    service.reconcile().catch((error: unknown) => context.logger.debug({ err: error }, 'reconciliation skipped'));
  }, 15_000);
  timer.unref();

  return await createServiceApp({
    service: facilitatorRoutes,
    handlers: {
      prepare: async ({ body }) => ({ status: 200 as const, body: await charges.prepare(body) }),
      settleCharge: async ({ body }) => ({ status: 200 as const, body: await charges.settle(body) }),
      stats: async () => ({ status: 200 as const, body: await charges.stats() }),
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
