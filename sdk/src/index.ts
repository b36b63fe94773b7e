export { createClient, createServiceClient, buildUrl } from './client';
export type {
  AgentEconomyClient,
  ClientOptions,
  RouteArgs,
  RouteMethod,
  RouteResult,
  ServiceClient,
  ServiceKey,
} from './client';
export type { HttpResponse, RequestOptions } from './http';
export type { ClientMetric } from './metrics';
export { setAmbientTraceContext } from './tracing';
export * from './errors';
export {
  generateWallet,
  walletFromEnv,
  walletFromFile,
  walletFromSecretKey,
  walletToFile,
  type GeneratedWallet,
  type Signer,
} from './wallet';
export {
  fetchBalances,
  fundWallet,
  loadDeployment,
  parseDeployment,
  type Balances,
  type Deployment,
  type FaucetGrant,
} from './deployment';
export { createSiwxHeader, type SiwxOptions } from './auth/siwx';
export { createPayments, type PaymentOptions, type Payments } from './payments/spend-log';
export { sessionsOf, type SessionClose, type SessionOptions } from './payments/session';
export type { BudgetLimit, PaymentReceipt, PaymentRefund, SentPayment } from './payments/types';
export type { BudgetCap, PaymentApproval } from './payments/budgets';
export { fileSpendStore, type SpendRecord, type SpendStore } from './payments/spend-store';
export { generatePaymentId, isValidPaymentId } from './payments/payment-id';
export {
  atomicToUsd,
  decodeX402Header,
  usdToAtomic,
  type PaymentRequired,
  type PaymentRequirements,
} from '@agent-economy/contracts';
