import type { Express } from 'express';
import type { ServiceId } from '@agent-economy/contracts';
import type { ServiceContext } from '../runtime/context';
import { createCognitionApp } from './cognition';
import { createEducationApp } from './education';
import { createEntropyApp } from './entropy';
import { createFacilitatorApp } from './facilitator';
import { createGasApp } from './gas';
import { createIdentityApp } from './identity';
import { createReputationApp } from './reputation';
import { createVerificationApp } from './verification';
import { createWalletHistoryApp } from './wallet-history';

/** Services with real handlers, by id. `npm start` mounts exactly these. */
export const serviceApps: Partial<Record<ServiceId, (context: ServiceContext) => Promise<Express>>> = {
  facilitator: createFacilitatorApp,
  cognition: createCognitionApp,
  identity: createIdentityApp,
  education: createEducationApp,
  gas: createGasApp,
  entropy: createEntropyApp,
  'wallet-history': createWalletHistoryApp,
  reputation: createReputationApp,
  verification: createVerificationApp,
};
