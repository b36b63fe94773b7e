import { createHmac } from 'node:crypto';
import {
  base58Decode,
  type CascadeStep,
  type CoinSide,
  type DrawDerivation,
  type DrawLabel,
  type EntropyProof,
  type EntropyRpcCall,
  type EntropySourceName,
  type HarvestedSources,
  type ShuffleItem,
} from '@agent-economy/contracts';

// The entropy oracle's algorithm "ae-entropy-v1", as the contract states it: plain functions over plain data,
// so that everything here can be checked against known vectors and recomputed by any client.

export const VERSION = 'ae-entropy-v1';
export const SOURCE_ORDER: readonly EntropySourceName[] = [
  'blockhash',
  'slotLeaders',
  'transactionSignatures',
  'blockTiming',
  'blockDetails',
];
/** Sizes of the harvest, as the contract's schemas describe them. */
export const LEADER_SLOTS = 16;
export const MAX_SIGNATURES = 16;
export const TIMING_SAMPLES = 8;
const TWO_32 = 2 ** 32;

const hmac = (key: Uint8Array, message: Uint8Array): Buffer => createHmac('sha512', key).update(message).digest();

// ---------------------------------------------------------------------------------------------------
// Material: how each source's raw values become bytes

/** A harvested value that is not what its source should hold (the chain answered with something unusable). */
export class MaterialError extends Error {
  constructor(
    readonly source: EntropySourceName,
    message: string,
  ) {
    super(message);
    this.name = 'MaterialError';
  }
}

/** The bytes of a base58 value of a known length. */
export function base58Bytes(text: string, length: number, source: EntropySourceName, what: string): Buffer {
  const bytes = base58Decode(text);
  if (!bytes || bytes.length !== length)
    throw new MaterialError(source, `${what} "${text}" is not ${length} bytes of base58`);
  return Buffer.from(bytes);
}

export function u64be(value: number | bigint): Buffer {
  const out = Buffer.alloc(8);
  out.writeBigUInt64BE(BigInt(value));
  return out;
}

export function i64be(value: number | bigint): Buffer {
  const out = Buffer.alloc(8);
  out.writeBigInt64BE(BigInt(value));
  return out;
}

export function u32be(value: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(value);
  return out;
}

/** The raw values harvested from the chain, before they become material. */
export interface RawHarvest {
  slot: number;
  blockhash: string;
  leaderStartSlot: number;
  leaders: string[];
  signatureSlot: number;
  signatures: string[];
  timing: { slot: number; blockTime: number }[];
  parentSlot: number;
  blockHeight: number;
  previousBlockhash: string;
  transactionCount: number;
}

/** Each source with its raw values and material, as the proof publishes them. */
export function toSources(raw: RawHarvest): HarvestedSources {
  const hex = (parts: Buffer[]) => Buffer.concat(parts).toString('hex');
  return {
    blockhash: {
      slot: raw.slot,
      blockhash: raw.blockhash,
      materialHex: hex([base58Bytes(raw.blockhash, 32, 'blockhash', 'blockhash')]),
    },
    slotLeaders: {
      startSlot: raw.leaderStartSlot,
      leaders: raw.leaders,
      materialHex: hex(raw.leaders.map((leader) => base58Bytes(leader, 32, 'slotLeaders', 'slot leader'))),
    },
    transactionSignatures: {
      slot: raw.signatureSlot,
      signatures: raw.signatures,
      materialHex: hex(
        raw.signatures.map((signature) => base58Bytes(signature, 64, 'transactionSignatures', 'signature')),
      ),
    },
    blockTiming: {
      samples: raw.timing,
      materialHex: hex(raw.timing.flatMap((s) => [u64be(s.slot), i64be(s.blockTime)])),
    },
    blockDetails: {
      slot: raw.slot,
      parentSlot: raw.parentSlot,
      blockHeight: raw.blockHeight,
      previousBlockhash: raw.previousBlockhash,
      transactionCount: raw.transactionCount,
      materialHex: hex([
        u64be(raw.slot),
        u64be(raw.parentSlot),
        u64be(raw.blockHeight),
        base58Bytes(raw.previousBlockhash, 32, 'blockDetails', 'previous blockhash'),
        u32be(raw.transactionCount),
      ]),
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// The cascade

/** k0 = UTF-8("ae-entropy-v1|" + proofId + "|" + (clientSeed ?? "")). */
export function initialKey(proofId: string, clientSeed: string | null): Buffer {
  return Buffer.from(`${VERSION}|${proofId}|${clientSeed ?? ''}`, 'utf8');
}

/** k_i = HMAC-SHA512(k_{i-1}, material_i) over the five sources in their fixed order; the seed is k5. */
export function cascade(k0: Buffer, sources: HarvestedSources): { steps: CascadeStep[]; seed: Buffer } {
  let key = k0;
  const steps = SOURCE_ORDER.map((source, i) => {
    const output = hmac(key, Buffer.from(sources[source].materialHex, 'hex'));
    const step = { step: i + 1, source, keyHex: key.toString('hex'), outputHex: output.toString('hex') };
    key = output;
    return step;
  });
  return { steps, seed: key };
}

export interface Harvest {
  network: string;
  slot: number;
  harvestedAt: Date;
  sources: HarvestedSources;
}

export function buildProof(
  proofId: string,
  clientSeed: string | null,
  harvest: Harvest,
): { proof: EntropyProof; seed: Buffer } {
  const k0 = initialKey(proofId, clientSeed);
  const { steps, seed } = cascade(k0, harvest.sources);
  return {
    seed,
    proof: {
      proofId,
      version: VERSION,
      network: harvest.network,
      slot: harvest.slot,
      harvestedAt: harvest.harvestedAt.toISOString(),
      clientSeed,
      initialKeyHex: k0.toString('hex'),
      sources: harvest.sources,
      cascade: steps,
      seedHex: seed.toString('hex'),
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// The output stream and the draws

/**
 * block_j = HMAC-SHA512(seed, ASCII(label) ‖ uint32_be(j)), consumed in order: raw bytes, or big-endian
 * uint32 words. It records what it consumed, which is the derivation the response publishes.
 */
export class EntropyStream {
  private buffer = Buffer.alloc(0);
  private offset = 0;
  private blocks = 0;
  private readonly words: number[] = [];
  private rejected = 0;

  constructor(
    private readonly seed: Uint8Array,
    readonly label: string,
  ) {}

  private ensure(n: number): void {
    while (this.buffer.length - this.offset < n) {
      const block = hmac(this.seed, Buffer.concat([Buffer.from(this.label, 'ascii'), u32be(this.blocks)]));
      this.buffer = Buffer.concat([this.buffer.subarray(this.offset), block]);
      this.offset = 0;
      this.blocks++;
    }
  }

  bytes(n: number): Buffer {
    this.ensure(n);
    const out = Buffer.from(this.buffer.subarray(this.offset, this.offset + n));
    this.offset += n;
    return out;
  }

  word(): number {
    const word = this.bytes(4).readUInt32BE(0);
    this.words.push(word);
    return word;
  }

  /**
   * Uniform in [0, n) for 1 ≤ n ≤ 2^32: words at or above floor(2^32 / n) × n are rejected, so no value is favoured.
   */
  uniform(n: number): number {
    if (!Number.isInteger(n) || n < 1 || n > TWO_32)
      throw new RangeError(`uniform(n) needs an integer n in [1, 2^32], not ${n}`);
    const limit = Math.floor(TWO_32 / n) * n;
    for (;;) {
      const word = this.word();
      if (word < limit) return word % n;
      this.rejected++;
    }
  }

  derivation(): DrawDerivation {
    return {
      label: this.label as DrawLabel,
      blocksUsed: this.blocks,
      wordsDrawn: this.words.length,
      rejections: this.rejected,
      rawWords: [...this.words],
    };
  }
}

export function drawBytes(seed: Uint8Array, length: number): { bytes: Buffer; derivation: DrawDerivation } {
  const stream = new EntropyStream(seed, 'bytes');
  const bytes = stream.bytes(length);
  return { bytes, derivation: stream.derivation() };
}

/** min + uniform(max − min + 1); the range holds at most 2^32 values (the contract checks it). */
export function drawInt(seed: Uint8Array, min: number, max: number): { value: number; derivation: DrawDerivation } {
  const stream = new EntropyStream(seed, 'int');
  const value = min + stream.uniform(max - min + 1);
  return { value, derivation: stream.derivation() };
}

/** Fisher-Yates (Durstenfeld): for i from length − 1 down to 1, j = uniform(i + 1), swap i and j. */
export function drawShuffle<T extends ShuffleItem>(
  seed: Uint8Array,
  items: readonly T[],
): { shuffled: T[]; permutation: number[]; derivation: DrawDerivation } {
  const stream = new EntropyStream(seed, 'shuffle');
  const permutation = items.map((_, i) => i);
  for (let i = permutation.length - 1; i >= 1; i--) {
    const j = stream.uniform(i + 1);
    [permutation[i], permutation[j]] = [permutation[j]!, permutation[i]!];
  }
  return { shuffled: permutation.map((i) => items[i]!), permutation, derivation: stream.derivation() };
}

/** Each flip is uniform(2): 0 = heads, 1 = tails. */
export function drawCoins(seed: Uint8Array, count: number): { outcomes: CoinSide[]; derivation: DrawDerivation } {
  const stream = new EntropyStream(seed, 'coin');
  const outcomes = Array.from({ length: count }, (): CoinSide => (stream.uniform(2) === 0 ? 'heads' : 'tails'));
  return { outcomes, derivation: stream.derivation() };
}

/** Each roll is uniform(sides) + 1. */
export function drawDice(
  seed: Uint8Array,
  sides: number,
  count: number,
): { rolls: number[]; derivation: DrawDerivation } {
  const stream = new EntropyStream(seed, 'dice');
  const rolls = Array.from({ length: count }, () => stream.uniform(sides) + 1);
  return { rolls, derivation: stream.derivation() };
}

/** The first 64 bytes of the stream labelled "proof": a known output to check a recomputed seed against. */
export function proofSample(seed: Uint8Array): { bytes: Buffer; derivation: DrawDerivation } {
  const stream = new EntropyStream(seed, 'proof');
  const bytes = stream.bytes(64);
  return { bytes, derivation: stream.derivation() };
}

// ---------------------------------------------------------------------------------------------------
// The proof report

export const VERIFICATION_STEPS: readonly string[] = [
  'Fetch the harvested values again with the listed Solana JSON-RPC calls and check they match the proof’s sources.',
  'Rebuild each source’s material: blockhash = its 32 base58-decoded bytes; slotLeaders = the leaders’ 32-byte public keys concatenated; ' +
    'transactionSignatures = the 64-byte signatures concatenated; blockTiming = per sample slot u64 BE ‖ blockTime i64 BE; ' +
    'blockDetails = slot u64 BE ‖ parentSlot u64 BE ‖ blockHeight u64 BE ‖ previousBlockhash 32 bytes ‖ transactionCount u32 BE.',
  'k0 = UTF-8 bytes of "ae-entropy-v1|" + proofId + "|" + (clientSeed or ""); it must equal initialKeyHex.',
  'For i = 1..5 over blockhash, slotLeaders, transactionSignatures, blockTiming, blockDetails: k_i = HMAC-SHA512(key = k_{i-1}, message = material_i); each must equal cascade[i-1].outputHex.',
  'The seed is k5; it must equal seedHex.',
  'Stream: block_j = HMAC-SHA512(key = seed, message = ASCII(label) ‖ uint32_be(j)) for j = 0, 1, 2, …; bytes are taken in order, words are consecutive big-endian uint32.',
  'sampleHex must equal the first 64 bytes of the stream labelled "proof".',
  'uniform(n): limit = floor(2^32 / n) × n; draw words until one is below limit and answer word mod n. Integers are min + uniform(max − min + 1), ' +
    'coins uniform(2) (0 = heads), dice uniform(sides) + 1, shuffles Fisher-Yates with j = uniform(i + 1) for i from length − 1 down to 1.',
];

const BLOCK_CONFIG = {
  commitment: 'confirmed',
  encoding: 'json',
  transactionDetails: 'signatures',
  rewards: false,
  maxSupportedTransactionVersion: 0,
};

/** The JSON-RPC calls that fetch every harvested value again. */
export function rpcCallsOf(proof: EntropyProof): EntropyRpcCall[] {
  const { sources } = proof;
  const calls: EntropyRpcCall[] = [
    { method: 'getBlock', params: [proof.slot, BLOCK_CONFIG] },
    { method: 'getSlotLeaders', params: [sources.slotLeaders.startSlot, sources.slotLeaders.leaders.length] },
  ];
  if (sources.transactionSignatures.slot !== proof.slot)
    calls.push({ method: 'getBlock', params: [sources.transactionSignatures.slot, BLOCK_CONFIG] });
  for (const sample of sources.blockTiming.samples) calls.push({ method: 'getBlockTime', params: [sample.slot] });
  return calls;
}

export function qualityOf(sources: HarvestedSources) {
  const materials = SOURCE_ORDER.map((name) => sources[name].materialHex.length / 2);
  return {
    sourcesHarvested: materials.filter((bytes) => bytes > 0).length,
    materialBytes: materials.reduce((sum, bytes) => sum + bytes, 0),
    distinctLeaders: new Set(sources.slotLeaders.leaders).size,
    signaturesHarvested: sources.transactionSignatures.signatures.length,
  };
}
