import type { Express } from 'express';
import { btcMetrics, services as registry, type ServiceDefinition, type ServiceId } from '@agent-economy/contracts';
import type { ServiceContext } from '../runtime/context';
import { createAdsApp } from './ads';
import { createBtcMetricsApp } from './btc-metrics';
import { createCognitionApp } from './cognition';
import { createConvictionApp } from './conviction';
import { createEducationApp } from './education';
import { createEntropyApp } from './entropy';
import { createEscrowApp } from './escrow';
import { createExchangeFlowsApp } from './exchange-flows';
import { createFacilitatorApp } from './facilitator';
import { createFundingApp } from './funding';
import { createGasApp } from './gas';
import { createGatewayApp } from './gateway';
import { createIdentityApp } from './identity';
import { createIntelApp } from './intel';
import { createKnowledgeMarketApp } from './knowledge-market';
import { createMarketplaceApp } from './marketplace';
import { createNegotiationApp } from './negotiation';
import { createPricingApp } from './pricing';
import { createReputationApp } from './reputation';
import { createTokensApp } from './tokens';
import { createVerificationApp } from './verification';
import { createWagersApp } from './wagers';
import { createWalletHistoryApp } from './wallet-history';

/** What `npm start` can run: every service of the registry, and the bitcoin metrics service's second deployment. */
export type DeploymentId = ServiceId | 'btc-metrics-2';
export const deployments: readonly ServiceDefinition[] = [
  ...registry,
  { ...btcMetrics, id: 'btc-metrics-2', title: `${btcMetrics.title} (second deployment)` },
];

/** Deployments with real handlers, by id. `npm start` mounts exactly these. */
export const serviceApps: Partial<Record<DeploymentId, (context: ServiceContext) => Promise<Express>>> = {
  facilitator: createFacilitatorApp,
  ads: createAdsApp,
  cognition: createCognitionApp,
  escrow: createEscrowApp,
  gateway: createGatewayApp,
  identity: createIdentityApp,
  education: createEducationApp,
  gas: createGasApp,
  entropy: createEntropyApp,
  'wallet-history': createWalletHistoryApp,
  tokens: createTokensApp,
  pricing: createPricingApp,
  funding: createFundingApp,
  'exchange-flows': createExchangeFlowsApp,
  conviction: createConvictionApp,
  'btc-metrics': (context) => createBtcMetricsApp(context, { deployment: 'first' }),
  'btc-metrics-2': (context) => createBtcMetricsApp(context, { deployment: 'second' }),
  'knowledge-market': createKnowledgeMarketApp,
  marketplace: createMarketplaceApp,
  negotiation: createNegotiationApp,
  reputation: createReputationApp,
  verification: createVerificationApp,
  wagers: createWagersApp,
  intel: (context) => createIntelApp(context),
};
