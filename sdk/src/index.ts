export { createClient, createServiceClient, buildUrl } from './client';
export type { AgentEconomyClient, ClientOptions, RouteArgs, RouteMethod, RouteResult, ServiceClient, ServiceKey } from './client';
export type { HttpResponse, RequestOptions } from './http';
export * from './errors';
export { walletFromEnv, walletFromFile, walletFromSecretKey, type Signer } from './wallet';
export { createSiwxHeader, type SiwxOptions } from './auth/siwx';
export { createPayments, type PaymentOptions, type Payments } from './payments/ledger';
export type { BudgetLimit, PaymentReceipt, PaymentRefund, SentPayment } from './payments/types';
export {
  atomicToUsd,
  decodeX402Header,
  usdToAtomic,
  type PaymentRequired,
  type PaymentRequirements,
} from '@agent-economy/contracts';
