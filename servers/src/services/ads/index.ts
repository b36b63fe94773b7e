import { ads, atomicToUsd, services as registry } from '@agent-economy/contracts';
import type { Response } from 'express';
import { migrate } from '../../db';
import { createServiceApp, fromContext, vaultOf } from '../../runtime/app';
import { settlementOf } from '../../runtime/paywall';
import type { ServiceContext } from '../../runtime/context';
import type { ParsedRequest } from '../../runtime/validation';
import { resourceCatalog } from './catalog';
import { adsHandlers, matchSettlement, planActivation, type ActivationPayment, type AdsDeps } from './handlers';
import type { ServerInferRequest } from '@ts-rest/core';
import { offerInProcess } from '../../http/in-process';
import { inProcessRoute } from '../../runtime/in-process-route';
import { envelope } from '../../runtime/errors';
import { adsStore, migrations } from './store';

export interface AdsOptions {
  /**
   * Wallets of the facilitators trusted to call /v1/match and report settlements; default the deployment's
   * facilitator (its fee payer, context.paywall.feePayer).
   */
  facilitators?: string[];
  /**
   * Base addresses of the services whose descriptors make up the resource catalog (a function when they are known
   * only later, as in tests); default every other service of the deployment (context.serviceUrl).
   */
  catalog?: string[] | (() => string[]);
  /** The clock (tests move it past schedules and UTC days). */
  now?: () => Date;
}

/** The settled activation payment of a settle-first request (none when the campaign already held enough: free). */
function activationPayment(res: unknown): ActivationPayment | undefined {
  if (!(res as Response).locals?.settlement) return undefined;
  const settled = settlementOf(res as Response);
  return { key: settled.key, transaction: settled.transaction, payer: settled.payer, amount: BigInt(settled.amount) };
}

export async function createAdsApp(context: ServiceContext, options: AdsOptions = {}) {
  await migrate(context.db, 'ads', migrations);
  const logger = context.logger.child({ service: 'ads' });
  const configured =
    options.catalog ?? (() => registry.filter((s) => s.id !== 'ads').map((s) => context.serviceUrl(s.id)));
  const sources = typeof configured === 'function' ? configured : () => configured;
  const deps: AdsDeps = {
    store: adsStore(context.db),
    catalog: resourceCatalog(sources, logger),
    vault: vaultOf(context),
    facilitators: new Set(options.facilitators ?? (context.paywall.feePayer ? [context.paywall.feePayer] : [])),
    network: context.paywall.network,
    publicUrl: context.publicUrl.replace(/\/+$/, ''),
    activationPayment,
    logger,
    now: options.now ?? (() => new Date()),
  };
  const app = await createServiceApp({
    service: ads,
    handlers: adsHandlers(deps),
    ...fromContext(context),
    // An activation pays what the campaign lacks to cover its remaining budget (nothing when it holds enough).
    pricing: {
      'campaigns.activate': async (request: ParsedRequest) => ({
        usd: atomicToUsd((await planActivation(deps, (request.params as { id: string }).id, undefined)).price),
      }),
    } as never,
    // Unknown campaigns, other advertisers' campaigns and ended campaigns are refused before anyone is quoted.
    preflight: {
      'campaigns.activate': async (request: ParsedRequest, caller?: string) =>
        void (await planActivation(deps, (request.params as { id: string }).id, caller)),
    } as never,
  });
  // A facilitator in this process asks for its match directly (facilitator/sponsored.ts): its wallet is its proof.
  offerInProcess(app, {
    match: inProcessRoute<ServerInferRequest<typeof ads.router.match>['body']>({
      route: ads.router.match,
      logger,
      render: (error, _body, requestId) => envelope(requestId, error.code, error.message, error.details),
      answer: (body, caller) => matchSettlement(deps, body, caller!),
    }),
  });
  return app;
}
