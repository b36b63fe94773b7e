export * from './core/index';
export * from './services/shared';
export * from './services/facilitator';
export * from './services/ads';
export * from './services/cognition';
export * from './services/escrow';
export * from './services/gateway';
export * from './services/identity';
export * from './services/education';
export * from './services/pricing';
export * from './services/intel';
export * from './services/conviction';
export * from './services/gas';
export * from './services/entropy';
export * from './services/tokens';
export * from './services/funding';
export * from './services/btc-metrics';
export * from './services/exchange-flows';
export * from './services/wallet-history';
export * from './services/marketplace';
export * from './services/wagers';
export * from './services/knowledge-market';
export * from './services/negotiation';
export * from './services/reputation';
export * from './services/verification';
import { ads } from './services/ads';
import { btcMetrics } from './services/btc-metrics';
import { cognition } from './services/cognition';
import { conviction } from './services/conviction';
import { education } from './services/education';
import { entropy } from './services/entropy';
import { escrow } from './services/escrow';
import { exchangeFlows } from './services/exchange-flows';
import { facilitator } from './services/facilitator';
import { funding } from './services/funding';
import { gas } from './services/gas';
import { gateway } from './services/gateway';
import { identity } from './services/identity';
import { intel } from './services/intel';
import { knowledgeMarket } from './services/knowledge-market';
import { marketplace } from './services/marketplace';
import { negotiation } from './services/negotiation';
import { pricing } from './services/pricing';
import { reputation } from './services/reputation';
import { tokens } from './services/tokens';
import { verification } from './services/verification';
import { wagers } from './services/wagers';
import { walletHistory } from './services/wallet-history';

/** Every service of the economy, in the order of their default ports. */
export const services = [
  facilitator,
  ads,
  cognition,
  escrow,
  gateway,
  identity,
  education,
  pricing,
  intel,
  conviction,
  gas,
  entropy,
  tokens,
  funding,
  btcMetrics,
  exchangeFlows,
  walletHistory,
  marketplace,
  wagers,
  knowledgeMarket,
  negotiation,
  reputation,
  verification,
] as const;

export type Service = (typeof services)[number];
export type ServiceId = Service['id'];
