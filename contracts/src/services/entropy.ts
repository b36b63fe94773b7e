import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { fixed, type RouteMeta } from '../core/payment';
import { Caip2Network, SolanaAddress, SolanaSignature, Timestamp } from '../core/chain';
import { DataSource } from './shared';

const c = initContract();

// Interfaces first, then schemas annotated with them: keeps the emitted declarations small.
//
// The algorithm (version "ae-entropy-v1"), so that a client can verify every output:
// 1. Harvest five on-chain sources at one confirmed slot; each becomes a byte string ("material", given in hex).
// 2. Cascade: k0 = UTF-8("ae-entropy-v1|" + proofId + "|" + (clientSeed ?? "")); for i = 1..5 in the fixed order
//    blockhash, slotLeaders, transactionSignatures, blockTiming, blockDetails: k_i = HMAC-SHA512(key = k_{i-1},
//    message = material_i). The seed is k5 (64 bytes).
// 3. Stream: block_j = HMAC-SHA512(key = seed, message = ASCII(label) ‖ uint32_be(j)), j = 0, 1, 2, …; bytes are taken
//    in order, words are consecutive big-endian uint32 of the stream.
// 4. uniform(n): limit = floor(2^32 / n) × n; draw words until one is below limit, answer word mod n (rejection
// sampling).

export type EntropySourceName = 'blockhash' | 'slotLeaders' | 'transactionSignatures' | 'blockTiming' | 'blockDetails';
export type DrawLabel = 'bytes' | 'int' | 'shuffle' | 'coin' | 'dice' | 'proof';

export interface BlockhashSource {
  slot: number;
  blockhash: string;
  materialHex: string;
}
export interface SlotLeadersSource {
  startSlot: number;
  leaders: string[];
  materialHex: string;
}
export interface SignaturesSource {
  slot: number;
  signatures: string[];
  materialHex: string;
}
export interface BlockTimingSource {
  samples: { slot: number; blockTime: number }[];
  materialHex: string;
}
export interface BlockDetailsSource {
  slot: number;
  parentSlot: number;
  blockHeight: number;
  previousBlockhash: string;
  transactionCount: number;
  materialHex: string;
}
export interface HarvestedSources {
  blockhash: BlockhashSource;
  slotLeaders: SlotLeadersSource;
  transactionSignatures: SignaturesSource;
  blockTiming: BlockTimingSource;
  blockDetails: BlockDetailsSource;
}
export interface CascadeStep {
  step: number;
  source: EntropySourceName;
  keyHex: string;
  outputHex: string;
}
export interface EntropyProof {
  proofId: string;
  version: 'ae-entropy-v1';
  network: string;
  slot: number;
  harvestedAt: string;
  clientSeed: string | null;
  initialKeyHex: string;
  sources: HarvestedSources;
  cascade: CascadeStep[];
  seedHex: string;
}
export interface DrawDerivation {
  label: DrawLabel;
  blocksUsed: number;
  wordsDrawn: number;
  rejections: number;
  rawWords: number[];
}
export interface EntropyDraw {
  derivation: DrawDerivation;
  proof: EntropyProof;
  source: DataSource;
}
export interface RandomBytes extends EntropyDraw {
  length: number;
  hex: string;
  base64: string;
}
export interface RandomInt extends EntropyDraw {
  min: number;
  max: number;
  value: number;
}
export type ShuffleItem = string | number;
export interface ShuffleResult extends EntropyDraw {
  shuffled: ShuffleItem[];
  /** permutation[k] = the original index of the item now at position k. */
  permutation: number[];
}
export type CoinSide = 'heads' | 'tails';
export interface CoinFlip extends EntropyDraw {
  outcome: CoinSide;
  outcomes: CoinSide[];
  heads: number;
  tails: number;
}
export interface DiceRoll extends EntropyDraw {
  sides: number;
  count: number;
  rolls: number[];
  total: number;
}
export interface EntropyRpcCall {
  method: string;
  params: unknown[];
}
export interface EntropyProofReport {
  proof: EntropyProof;
  derivation: DrawDerivation;
  sampleHex: string;
  verification: { algorithm: string; steps: string[]; rpcCalls: EntropyRpcCall[] };
  quality: { sourcesHarvested: number; materialBytes: number; distinctLeaders: number; signaturesHarvested: number };
  source: DataSource;
}

const Hex = z.string().regex(/^(?:[0-9a-f]{2})*$/, 'must be lowercase hex');
const Hex64 = z.string().regex(/^[0-9a-f]{128}$/, 'must be 64 bytes of lowercase hex');
const Slot = z.number().int().min(0);
const Count = z.number().int().min(0);
const Word = z.number().int().min(0).max(4294967295);
const SourceNameSchema = named(
  'SourceName',
  z.enum(['blockhash', 'slotLeaders', 'transactionSignatures', 'blockTiming', 'blockDetails']),
);
const LabelSchema = named('Label', z.enum(['bytes', 'int', 'shuffle', 'coin', 'dice', 'proof']));

const HarvestedSourcesSchema: z.ZodType<HarvestedSources> = named(
  'HarvestedSources',
  z.object({
    blockhash: z.object({
      slot: Slot,
      blockhash: SolanaAddress.describe('base58, 32 bytes'),
      materialHex: Hex.describe('the 32 bytes of the base58-decoded blockhash'),
    }),
    slotLeaders: z.object({
      startSlot: Slot,
      leaders: z
        .array(SolanaAddress)
        .describe('getSlotLeaders(startSlot, 16): the leaders of the 16 slots ending at the harvest slot'),
      materialHex: Hex.describe('the leaders’ 32-byte public keys, concatenated in order'),
    }),
    transactionSignatures: z.object({
      slot: Slot.describe(
        'the harvest slot, or when its block has no transactions the newest block within the 150 slots before it that has some',
      ),
      signatures: z
        .array(SolanaSignature)
        .describe(
          'the first 16 transaction signatures of that block (fewer if it has fewer; none if no block in the window has any)',
        ),
      materialHex: Hex.describe('the 64-byte signatures, concatenated in order'),
    }),
    blockTiming: z.object({
      samples: z
        .array(z.object({ slot: Slot, blockTime: z.number().int().describe('Unix seconds, as getBlockTime returns') }))
        .describe(
          'the 8 latest confirmed blocks up to the harvest slot, oldest first (fewer on a chain younger than 8 blocks)',
        ),
      materialHex: Hex.describe('per sample: slot as u64 big-endian ‖ blockTime as i64 big-endian'),
    }),
    blockDetails: z.object({
      slot: Slot,
      parentSlot: Slot,
      blockHeight: Count,
      previousBlockhash: SolanaAddress,
      transactionCount: Count,
      materialHex: Hex.describe(
        'slot u64 BE ‖ parentSlot u64 BE ‖ blockHeight u64 BE ‖ the 32 bytes of previousBlockhash ‖ transactionCount u32 BE',
      ),
    }),
  }),
);
export const EntropyProofSchema: z.ZodType<EntropyProof> = named(
  'EntropyProof',
  z
    .object({
      proofId: z.string().regex(/^ent_[A-Za-z0-9]{16,40}$/),
      version: z.literal('ae-entropy-v1'),
      network: Caip2Network,
      slot: Slot.describe('the confirmed slot harvested'),
      harvestedAt: Timestamp,
      clientSeed: z.string().nullable(),
      initialKeyHex: Hex.describe('k0 = UTF-8 of "ae-entropy-v1|" + proofId + "|" + (clientSeed or "")'),
      sources: HarvestedSourcesSchema,
      cascade: z
        .array(
          z.object({
            step: z.number().int().min(1).max(5),
            source: SourceNameSchema,
            keyHex: Hex.describe('k_{i−1}: the key of this step'),
            outputHex: Hex64.describe('k_i = HMAC-SHA512(k_{i−1}, material of the source)'),
          }),
        )
        .describe(
          'five steps in the fixed order blockhash, slotLeaders, transactionSignatures, blockTiming, blockDetails',
        ),
      seedHex: Hex64.describe('k5, the output of the last step: the key of the output stream'),
    })
    .describe('everything needed to recompute the seed and the output'),
);
export const DerivationSchema: z.ZodType<DrawDerivation> = named(
  'DrawDerivation',
  z
    .object({
      label: LabelSchema.describe('the stream label'),
      blocksUsed: Count.describe('HMAC-SHA512 stream blocks consumed'),
      wordsDrawn: Count.describe('uint32 words consumed (0 for raw bytes)'),
      rejections: Count.describe('words rejected by rejection sampling'),
      rawWords: z.array(Word).describe('every word consumed, in order'),
    })
    .describe('how the output was drawn from the seed'),
);
const drawFields = { derivation: DerivationSchema, proof: EntropyProofSchema, source: DataSource };

const RandomBytesSchema: z.ZodType<RandomBytes> = named(
  'RandomBytes',
  z.object({
    length: z.number().int().min(1).max(64),
    hex: Hex.describe('the bytes, lowercase hex'),
    base64: z.string().describe('the same bytes, standard base64'),
    ...drawFields,
  }),
);
const RandomIntSchema: z.ZodType<RandomInt> = named(
  'RandomInt',
  z.object({
    min: z.number().int(),
    max: z.number().int(),
    value: z.number().int().describe('min + uniform(max − min + 1)'),
    ...drawFields,
  }),
);
const ShuffleItemSchema = named('ShuffleItem', z.union([z.string().max(256), z.number()]));
const ShuffleSchema: z.ZodType<ShuffleResult> = named(
  'ShuffleResult',
  z.object({
    shuffled: z.array(ShuffleItemSchema),
    permutation: z.array(Count).describe('permutation[k] = the original index of the item now at position k'),
    ...drawFields,
  }),
);
const CoinSideSchema = named('CoinSide', z.enum(['heads', 'tails']));
const CoinFlipSchema: z.ZodType<CoinFlip> = named(
  'CoinFlip',
  z.object({
    outcome: CoinSideSchema.describe('the first flip'),
    outcomes: z.array(CoinSideSchema).describe('every flip: uniform(2), 0 = heads, 1 = tails'),
    heads: Count,
    tails: Count,
    ...drawFields,
  }),
);
const DiceRollSchema: z.ZodType<DiceRoll> = named(
  'DiceRoll',
  z.object({
    sides: z.number().int().min(2).max(1000),
    count: z.number().int().min(1).max(100),
    rolls: z.array(z.number().int().min(1)).describe('each uniform(sides) + 1'),
    total: z.number().int(),
    ...drawFields,
  }),
);
const EntropyProofReportSchema: z.ZodType<EntropyProofReport> = named(
  'EntropyProofReport',
  z.object({
    proof: EntropyProofSchema,
    derivation: DerivationSchema,
    sampleHex: Hex.describe('the first 64 bytes of the stream labelled "proof": a known output to check against'),
    verification: z.object({
      algorithm: z.string(),
      steps: z.array(z.string()).describe('how to recompute the seed and the sample, step by step'),
      rpcCalls: z
        .array(z.object({ method: z.string(), params: z.array(z.unknown()) }))
        .describe('Solana JSON-RPC calls that fetch the harvested values again, to check them against the chain'),
    }),
    quality: z.object({
      sourcesHarvested: Count,
      materialBytes: Count.describe('bytes of material mixed in, over the five sources'),
      distinctLeaders: Count,
      signaturesHarvested: Count,
    }),
    source: DataSource,
  }),
);

const ClientSeed = z
  .string()
  .min(1)
  .max(128)
  .optional()
  .describe('your own seed (1 to 128 characters), mixed into the first cascade key; echoed in the proof');

const drawErrors = { 502: ErrorEnvelope, ...standardErrors, ...paymentErrors } as const;
const CHAIN_ERROR =
  ' Design: 502 upstream_unavailable when the chain does not answer (checked before the 402), 502 ' +
  'entropy_source_unavailable when it answers without a source’s data (no recent block, a block without height or time); ' +
  'neither is charged. Each call harvests afresh, at the newest confirmed block before the tip, and carries its full proof.';
const RANGE = 2 ** 32;

const router = c.router({
  bytes: {
    method: 'POST',
    path: '/api/random',
    body: z
      .object({
        length: z.number().int().min(1).max(64).default(32).describe('how many random bytes, 1 to 64'),
        clientSeed: ClientSeed,
      })
      .strict(),
    summary: 'Random bytes, 1 to 64',
    description:
      '1 to 64 random bytes, in hex and base64: the first `length` bytes of the stream labelled "bytes", keyed by the seed ' +
      'that the HMAC-SHA512 cascade over five harvested on-chain sources produced.' +
      CHAIN_ERROR,
    responses: { 200: RandomBytesSchema, ...drawErrors },
    metadata: { payment: fixed('0.001'), example: { body: { length: 32 } } } satisfies RouteMeta,
  },
  int: {
    method: 'POST',
    path: '/api/random/int',
    body: z
      .object({
        min: z.number().int().safe().describe('lowest value, inclusive'),
        max: z.number().int().safe().describe('highest value, inclusive'),
        clientSeed: ClientSeed,
      })
      .strict()
      .refine((b) => b.min <= b.max, { message: 'must not be below min', path: ['max'] })
      .refine((b) => b.max - b.min + 1 <= RANGE, { message: 'max − min + 1 must be at most 2^32', path: ['max'] }),
    summary: 'Unbiased integer in a range, by rejection sampling',
    description:
      'An integer in [min, max], both inclusive: min + uniform(max − min + 1), where uniform(n) draws big-endian uint32 words ' +
      'from the stream labelled "int" and rejects every word at or above floor(2^32 / n) × n, so no value is favoured (no ' +
      'modulo bias, no floats). The range holds at most 2^32 values.' +
      CHAIN_ERROR,
    responses: { 200: RandomIntSchema, ...drawErrors },
    metadata: { payment: fixed('0.001'), example: { body: { min: 1, max: 100 } } } satisfies RouteMeta,
  },
  shuffle: {
    method: 'POST',
    path: '/api/random/shuffle',
    body: z
      .object({
        items: z
          .array(ShuffleItemSchema)
          .min(1)
          .max(1000)
          .describe('the list to shuffle: 1 to 1,000 strings (up to 256 characters) or numbers'),
        clientSeed: ClientSeed,
      })
      .strict(),
    summary: 'Fisher-Yates shuffle driven by on-chain entropy',
    description:
      'The list in a uniformly random order: Fisher-Yates (Durstenfeld) over the stream labelled "shuffle", for i from ' +
      'length − 1 down to 1, j = uniform(i + 1), swap items i and j. `permutation` maps each new position to its original ' +
      'index.' +
      CHAIN_ERROR,
    responses: { 200: ShuffleSchema, ...drawErrors },
    metadata: {
      payment: fixed('0.002'),
      example: { body: { items: ['alice', 'bob', 'carol', 'dave'], clientSeed: 'round-7' } },
    } satisfies RouteMeta,
  },
  coin: {
    method: 'POST',
    path: '/api/random/coin',
    body: z
      .object({
        count: z.number().int().min(1).max(100).default(1).describe('how many flips, 1 to 100'),
        clientSeed: ClientSeed,
      })
      .strict(),
    summary: 'Coin flip with entropy proof',
    description:
      'One or more fair coin flips, each uniform(2) from the stream labelled "coin" (0 = heads, 1 = tails), with the ' +
      'entropy proof. Send `{}` for one flip.' +
      CHAIN_ERROR,
    responses: { 200: CoinFlipSchema, ...drawErrors },
    metadata: { payment: fixed('0.001'), example: { body: {} } } satisfies RouteMeta,
  },
  dice: {
    method: 'POST',
    path: '/api/random/dice',
    body: z
      .object({
        sides: z.number().int().min(2).max(1000).default(6).describe('faces per die, 2 to 1,000'),
        count: z.number().int().min(1).max(100).default(1).describe('how many dice, 1 to 100'),
        clientSeed: ClientSeed,
      })
      .strict(),
    summary: 'Dice roll with entropy proof',
    description:
      'Rolls `count` dice of `sides` faces: each roll is uniform(sides) + 1 from the stream labelled "dice", with the total ' +
      'and the entropy proof.' +
      CHAIN_ERROR,
    responses: { 200: DiceRollSchema, ...drawErrors },
    metadata: { payment: fixed('0.001'), example: { body: { sides: 20, count: 2 } } } satisfies RouteMeta,
  },
  proof: {
    method: 'POST',
    path: '/api/entropy/proof',
    body: z.object({ clientSeed: ClientSeed }).strict(),
    summary: 'Full harvest with detailed cryptographic proof',
    description:
      'A full harvest of the five sources (block hash, slot leaders, transaction signatures, block timing, block details) ' +
      'with each source’s raw values and byte material, every HMAC-SHA512 cascade step (key and output), the seed, a 64-byte ' +
      'sample of the stream labelled "proof", the verification steps and the Solana RPC calls that fetch the harvested ' +
      'values again. Send `{}` without a client seed.' +
      CHAIN_ERROR,
    responses: { 200: EntropyProofReportSchema, ...drawErrors },
    metadata: { payment: fixed('0.003'), example: { body: { clientSeed: 'audit-2025-01' } } } satisfies RouteMeta,
  },
});

export const entropy = defineService({
  id: 'entropy',
  title: 'Entropy Oracle',
  description:
    'Verifiable randomness: harvests five independent on-chain sources (block hash, slot leaders, transaction signatures, ' +
    'block timing, block details) and mixes them with a cascade of HMAC-SHA512; random bytes, unbiased integers, shuffles, ' +
    'coin flips and dice rolls, each with the proof to recompute it.',
  router,
  dataModes: {
    chain: "the deployment's Solana RPC: the local ledger, or a cluster with SOLANA_RPC_URL",
  },
});
