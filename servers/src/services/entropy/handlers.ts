import { randomBytes } from 'node:crypto';
import { entropy, type DataSource } from '@agent-economy/contracts';
import type { RouterImplementation } from '../../runtime/app';
import type { UpstreamTracker } from '../../upstream/tracker';
import {
  buildProof,
  drawBytes,
  drawCoins,
  drawDice,
  drawInt,
  drawShuffle,
  proofSample,
  qualityOf,
  rpcCallsOf,
  VERIFICATION_STEPS,
} from './domain';
import type { ChainHarvester } from './harvest';

export interface EntropyDeps {
  harvester: ChainHarvester;
  tracker: UpstreamTracker;
  provider: string;
}

const ALGORITHM =
  'ae-entropy-v1: HMAC-SHA512 cascade over five on-chain sources (blockhash, slotLeaders, transactionSignatures, blockTiming, blockDetails); ' +
  'output stream HMAC-SHA512(seed, label ‖ uint32_be(j)); uniform(n) by rejection sampling of big-endian uint32 words';

/** A fresh proof id: 24 hex characters from the system's CSPRNG, chosen before the chain is read. */
const newProofId = () => `ent_${randomBytes(12).toString('hex')}`;

// Handlers only translate between the contract and the domain: every draw harvests afresh and carries its proof.
export function entropyHandlers({
  harvester,
  tracker,
  provider,
}: EntropyDeps): RouterImplementation<typeof entropy.router> {
  const seeded = async (clientSeed: string | undefined) => {
    const proofId = newProofId();
    const harvest = await harvester.harvest();
    const { proof, seed } = buildProof(proofId, clientSeed ?? null, harvest);
    const source: DataSource = tracker.source([provider], harvest.harvestedAt);
    return { proof, seed, source };
  };

  return {
    bytes: async ({ body }) => {
      const { proof, seed, source } = await seeded(body.clientSeed);
      const { bytes, derivation } = drawBytes(seed, body.length);
      return {
        status: 200,
        body: {
          length: body.length,
          hex: bytes.toString('hex'),
          base64: bytes.toString('base64'),
          derivation,
          proof,
          source,
        },
      };
    },

    int: async ({ body }) => {
      const { proof, seed, source } = await seeded(body.clientSeed);
      const { value, derivation } = drawInt(seed, body.min, body.max);
      return { status: 200, body: { min: body.min, max: body.max, value, derivation, proof, source } };
    },

    shuffle: async ({ body }) => {
      const { proof, seed, source } = await seeded(body.clientSeed);
      const { shuffled, permutation, derivation } = drawShuffle(seed, body.items);
      return { status: 200, body: { shuffled, permutation, derivation, proof, source } };
    },

    coin: async ({ body }) => {
      const { proof, seed, source } = await seeded(body.clientSeed);
      const { outcomes, derivation } = drawCoins(seed, body.count);
      const heads = outcomes.filter((o) => o === 'heads').length;
      return {
        status: 200,
        body: { outcome: outcomes[0]!, outcomes, heads, tails: outcomes.length - heads, derivation, proof, source },
      };
    },

    dice: async ({ body }) => {
      const { proof, seed, source } = await seeded(body.clientSeed);
      const { rolls, derivation } = drawDice(seed, body.sides, body.count);
      return {
        status: 200,
        body: {
          sides: body.sides,
          count: body.count,
          rolls,
          total: rolls.reduce((a, b) => a + b, 0),
          derivation,
          proof,
          source,
        },
      };
    },

    proof: async ({ body }) => {
      const { proof, seed, source } = await seeded(body.clientSeed);
      const { bytes, derivation } = proofSample(seed);
      return {
        status: 200,
        body: {
          proof,
          derivation,
          sampleHex: bytes.toString('hex'),
          verification: { algorithm: ALGORITHM, steps: [...VERIFICATION_STEPS], rpcCalls: rpcCallsOf(proof) },
          quality: qualityOf(proof.sources),
          source,
        },
      };
    },
  };
}
