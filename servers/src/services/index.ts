import type { Express } from 'express';
import { btcMetrics, services as registry, type ServiceDefinition, type ServiceId } from '@agent-economy/contracts';
import type { ServiceContext } from '../runtime/context';

/** What `npm start` can run: every service of the registry, and the bitcoin metrics service's second deployment. */
export type DeploymentId = ServiceId | 'btc-metrics-2';
export const deployments: readonly ServiceDefinition[] = [
  ...registry,
  { ...btcMetrics, id: 'btc-metrics-2', title: `${btcMetrics.title} (second deployment)` },
];

/**
 * Deployments with real handlers, by id. `npm start` mounts exactly these. Each imports its module when called, so a
 * process that runs a few services (SERVICES=...) never loads the others' code and dependencies (memory).
 */
export const serviceApps: Partial<Record<DeploymentId, (context: ServiceContext) => Promise<Express>>> = {
  facilitator: async (context) => (await import('./facilitator')).createFacilitatorApp(context),
  ads: async (context) => (await import('./ads')).createAdsApp(context),
  cognition: async (context) => (await import('./cognition')).createCognitionApp(context),
  escrow: async (context) => (await import('./escrow')).createEscrowApp(context),
  gateway: async (context) => (await import('./gateway')).createGatewayApp(context),
  identity: async (context) => (await import('./identity')).createIdentityApp(context),
  education: async (context) => (await import('./education')).createEducationApp(context),
  gas: async (context) => (await import('./gas')).createGasApp(context),
  entropy: async (context) => (await import('./entropy')).createEntropyApp(context),
  'wallet-history': async (context) => (await import('./wallet-history')).createWalletHistoryApp(context),
  tokens: async (context) => (await import('./tokens')).createTokensApp(context),
  pricing: async (context) => (await import('./pricing')).createPricingApp(context),
  funding: async (context) => (await import('./funding')).createFundingApp(context),
  'exchange-flows': async (context) => (await import('./exchange-flows')).createExchangeFlowsApp(context),
  conviction: async (context) => (await import('./conviction')).createConvictionApp(context),
  'btc-metrics': async (context) =>
    (await import('./btc-metrics')).createBtcMetricsApp(context, { deployment: 'first' }),
  'btc-metrics-2': async (context) =>
    (await import('./btc-metrics')).createBtcMetricsApp(context, { deployment: 'second' }),
  'knowledge-market': async (context) => (await import('./knowledge-market')).createKnowledgeMarketApp(context),
  marketplace: async (context) => (await import('./marketplace')).createMarketplaceApp(context),
  negotiation: async (context) => (await import('./negotiation')).createNegotiationApp(context),
  reputation: async (context) => (await import('./reputation')).createReputationApp(context),
  verification: async (context) => (await import('./verification')).createVerificationApp(context),
  wagers: async (context) => (await import('./wagers')).createWagersApp(context),
  intel: async (context) => (await import('./intel')).createIntelApp(context),
};
