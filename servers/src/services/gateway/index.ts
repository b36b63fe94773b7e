import {
  atomicToUsd,
  gateway,
  withPrices,
  type GatewayOnboardBodyOut,
  type GatewayTradeExecuteBodyOut,
  type GatewayTradeStartBodyOut,
} from '@agent-economy/contracts';
import { migrate } from '../../db';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { HttpError } from '../../runtime/errors';
import { facilitatorClient } from '../../runtime/facilitator-client';
import type { ParsedRequest } from '../../runtime/validation';
import { assistIndex } from './assist';
import { directorySource } from './directory';
import { gatewayHandlers, pricingFrom } from './handlers';
import { createProber, type Prober } from './prober';
import { gatewayStore, migrations } from './store';
import { assertStorable, tradeLogic, type Discovery, type PreparedExecution } from './trade';
import { CONNECTED, CONTRACTS, createUpstream, type ConnectedId, type UrlOption } from './upstream';

export interface GatewayOptions {
  /**
   * Base addresses of the connected services (a function when known only later, as in tests). Default: the
   * deployment's (<ID>_PUBLIC_URL, else each service's default port).
   */
  urls?: Partial<Record<ConnectedId, UrlOption>>;
  /** The clock of plans, probes and caches (tests move it). */
  now?: () => Date;
  /** Probe the services every 30 seconds on a timer (default true); tests call `prober.tick()` instead. */
  probe?: boolean;
  /** Hands the prober out (tests tick it). */
  onProber?: (prober: Prober) => void;
}

/** Memoises one decision per parsed request: the preflight, the price and the handler see the same request object. */
function perRequest<T>(decide: (request: ParsedRequest, caller: string) => Promise<T>) {
  const decided = new WeakMap<object, Promise<T>>();
  return (request: ParsedRequest, caller: string): Promise<T> => {
    let found = decided.get(request);
    if (!found) {
      found = decide(request, caller);
      decided.set(request, found);
    }
    return found;
  };
}

export async function createGatewayApp(context: ServiceContext, options: GatewayOptions = {}) {
  await migrate(context.db, 'gateway', migrations);
  const now = options.now ?? (() => new Date());
  const startedAt = now();
  const store = gatewayStore(context.db);
  const upstream = await createUpstream(context, options.urls ?? {});
  const service = withPrices(gateway, context.prices ?? {});
  const directory = directorySource({
    self: { service, url: context.publicUrl.replace(/\/+$/, '') },
    url: upstream.url,
    now,
  });
  // The deployment's facilitator, signed as the gateway (a resource server there): how a market payment ended.
  const facilitator = context.paywall.facilitatorUrl
    ? facilitatorClient(context.paywall.facilitatorUrl, { sign: context.wallet })
    : undefined;
  const trade = tradeLogic({
    store,
    upstream,
    pricing: () => pricingFrom(directory),
    logger: context.logger,
    now,
    ...(facilitator ? { facilitator } : {}),
  });
  const prober = createProber({
    store,
    services: CONNECTED.map((id) => ({ id, title: CONTRACTS[id].title, url: () => upstream.url(id) })),
    now,
    logger: context.logger,
    // Queued trade reports are retried with every probe round.
    afterTick: () =>
      trade.retryReports().catch((error: unknown) => context.logger.warn({ err: error }, 'report retry failed')),
  });
  options.onProber?.(prober);
  if (options.probe ?? true) prober.start();

  const discovered = perRequest<Discovery>((request, caller) =>
    trade.discover(request.body as GatewayTradeStartBodyOut, caller),
  );
  const prepared = perRequest<PreparedExecution>((request, caller) =>
    trade.prepare(request.body as GatewayTradeExecuteBodyOut, caller, request.headers),
  );
  const assistModule = perRequest(async (request) => {
    const moduleId = (request.body as { moduleId?: string }).moduleId;
    return moduleId ? trade.moduleById(moduleId) : null;
  });

  return await createServiceApp({
    service: gateway,
    handlers: gatewayHandlers({
      store,
      upstream,
      directory,
      prober,
      trade,
      reasoner: context.reasoner,
      startedAt,
      now,
      prepared,
      discovered,
      assistModule: (request) => assistModule(request, ''),
    }),
    ...fromContext(context),
    // The trade's price is the module's (agreed, standing or list) plus the fee, decided by the preflight.
    pricing: {
      executeTrade: async (request) => ({ usd: atomicToUsd(trade.chargeOf(await prepared(request, ''))) }),
    },
    // Every refusal the contract names is decided here, before the 402: none is charged.
    preflight: {
      onboard: ({ body }, caller) => {
        assertStorable({
          'body.name': (body as GatewayOnboardBodyOut).name,
          'body.description': (body as GatewayOnboardBodyOut).description,
        });
        if ((body as GatewayOnboardBodyOut).wallet !== caller) {
          throw new HttpError(
            403,
            'wallet_mismatch',
            'The wallet to onboard must be the signed-in wallet (SIGN-IN-WITH-X)',
            { wallet: (body as GatewayOnboardBodyOut).wallet, signedIn: caller },
          );
        }
      },
      startTrade: async (request, caller) => void (await discovered(request, caller!)),
      executeTrade: async (request, caller) => void (await prepared(request, caller!)),
      assist: async (request) => {
        await assistModule(request, '');
        assistIndex((await directory.documents()).flatMap((d) => d.entries)).assertInScope(
          (request.body as { question: string }).question,
        );
      },
    },
  });
}
