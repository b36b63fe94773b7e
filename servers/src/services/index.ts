import type { Express } from 'express';
import { btcMetrics, services as registry, type ServiceDefinition, type ServiceId } from '@agent-economy/contracts';
import type { ServiceContext } from '../runtime/context';
import { createBtcMetricsApp } from './btc-metrics';
import { createCognitionApp } from './cognition';
import { createEducationApp } from './education';
import { createEntropyApp } from './entropy';
import { createFacilitatorApp } from './facilitator';
import { createFundingApp } from './funding';
import { createGasApp } from './gas';
import { createIdentityApp } from './identity';
import { createKnowledgeMarketApp } from './knowledge-market';
import { createNegotiationApp } from './negotiation';
import { createReputationApp } from './reputation';
import { createVerificationApp } from './verification';
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
  cognition: createCognitionApp,
  identity: createIdentityApp,
  education: createEducationApp,
  gas: createGasApp,
  entropy: createEntropyApp,
  'wallet-history': createWalletHistoryApp,
  funding: createFundingApp,
  'btc-metrics': (context) => createBtcMetricsApp(context, { deployment: 'first' }),
  'btc-metrics-2': (context) => createBtcMetricsApp(context, { deployment: 'second' }),
  'knowledge-market': createKnowledgeMarketApp,
  negotiation: createNegotiationApp,
  reputation: createReputationApp,
  verification: createVerificationApp,
};
