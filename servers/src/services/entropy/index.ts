import { entropy } from '@agent-economy/contracts';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { solanaSource } from '../../upstream/solana';
import { entropyHandlers } from './handlers';
import { chainHarvester } from './harvest';

/** The entropy oracle: verifiable randomness from five sources harvested from the chain at request time. */
export async function createEntropyApp(context: ServiceContext) {
  const chain = solanaSource(context);
  const harvester = chainHarvester(chain);
  // Nothing is stored: each draw is computed from the chain at request time and carries its whole proof.
  // A chain that does not answer fails before the 402, so nobody signs a payment for a draw that cannot happen.
  const chainAnswers = () => harvester.ping();
  return await createServiceApp({
    service: entropy,
    handlers: entropyHandlers({ harvester, tracker: chain.tracker, provider: chain.provider }),
    ...fromContext(context),
    upstream: chain.tracker,
    preflight: {
      bytes: chainAnswers,
      int: chainAnswers,
      shuffle: chainAnswers,
      coin: chainAnswers,
      dice: chainAnswers,
      proof: chainAnswers,
    },
  });
}
