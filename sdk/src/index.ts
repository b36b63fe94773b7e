export { createClient, createServiceClient, buildUrl } from './client';
export type { AgentEconomyClient, ClientOptions, RouteArgs, RouteMethod, RouteResult, ServiceClient, ServiceKey } from './client';
export type { HttpResponse, RequestOptions } from './http';
export * from './errors';
export { walletFromSecretKey, type Signer } from './wallet';
export { createSiwxHeader, type SiwxOptions } from './auth/siwx';
export {
  atomicToUsd,
  decodeX402Header,
  usdToAtomic,
  type PaymentRequired,
  type PaymentRequirements,
} from '@agent-economy/contracts';
