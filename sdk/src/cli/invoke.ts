import { routeMeta, type ServiceDefinition } from '@agent-economy/contracts';
import {
  createPayments,
  createServiceClient,
  type HttpResponse,
  type PaymentOptions,
  type Payments,
  type Signer,
} from '../index';
import type { DeployedService, Deployment } from './deployment';
import { UsageError } from './failure';
import type { RouteEntry, RouteInput } from './routes';

/** One spend log and set of budgets for every call the command makes, in the deployment's stablecoin and network. */
export function deploymentPayments(
  deployment: Deployment,
  options: Omit<PaymentOptions, 'allowedNetworks' | 'allowedAssets' | 'rpcUrl'>,
): Payments {
  return createPayments({
    ...options,
    allowedNetworks: [deployment.chain.network],
    allowedAssets: [deployment.chain.stablecoin],
    rpcUrl: deployment.chain.rpcUrl,
  });
}

/** Whether calling the route may need the wallet: it is priced, or it asks the caller to prove a wallet. */
export function needsWallet(entry: RouteEntry): boolean {
  const meta = routeMeta(entry.route);
  return meta.payment.kind !== 'free' || meta.auth === 'siwx';
}

/**
 * Calls one route of a deployed service through the SDK: it signs in and pays (within `payments`'
 * budgets) with `wallet` when given. Input must have been validated already.
 */
export async function invokeRoute(
  deployment: Deployment,
  deployed: DeployedService,
  entry: RouteEntry,
  input: RouteInput,
  options: { wallet?: Signer; payments: Payments; timeoutMs?: number; signal?: AbortSignal },
): Promise<HttpResponse> {
  // The union of every service's router is too wide for the generic signature; the route is looked up by key below.
  const client = createServiceClient(entry.service as ServiceDefinition, deployed.url, {
    network: deployment.chain.network,
    ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
    ...(options.wallet ? { wallet: options.wallet } : {}),
    payments: options.wallet ? options.payments : false,
  }) as Record<string, unknown>;
  let method: unknown = client;
  for (const part of entry.key.split('.')) method = (method as Record<string, unknown> | undefined)?.[part];
  const call = (
    method as
      | { withResponse?: (args: RouteInput, requestOptions: { signal?: AbortSignal }) => Promise<HttpResponse> }
      | undefined
  )?.withResponse;
  if (!call) throw new UsageError(`the SDK has no method for ${entry.service.id}.${entry.key}`);
  return call(input, options.signal ? { signal: options.signal } : {});
}
