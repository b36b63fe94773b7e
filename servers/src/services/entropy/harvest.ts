import type { EntropySourceName } from '@agent-economy/contracts';
import { HttpError } from '../../runtime/errors';
import type { SolanaSource } from '../../upstream/solana';
import {
  LEADER_SLOTS,
  MaterialError,
  MAX_SIGNATURES,
  TIMING_SAMPLES,
  toSources,
  type Harvest,
  type RawHarvest,
} from './domain';

// Reads the five sources from the chain at one confirmed slot. Every read goes through the source's tracker:
// a chain that does not answer is 502 upstream_unavailable; a chain that answers without a source's data
// (no blocks, a block without height or time) is 502 entropy_source_unavailable. Neither is charged.

/** Slots searched back from the tip for the 8 latest blocks (a real cluster skips some slots). */
const BLOCK_WINDOW = 64n;
/**
 * Slots searched back for a block that carries transactions, when the harvest block has none (on the local
 * ledger most slots are empty; on a real cluster every block has transactions and the search never runs).
 */
const SIGNATURE_WINDOW = 150n;
const PARALLEL_READS = 10;

const BLOCK_CONFIG = {
  commitment: 'confirmed',
  encoding: 'json',
  transactionDetails: 'signatures',
  rewards: false,
  maxSupportedTransactionVersion: 0,
} as const;

export function sourceUnavailable(source: EntropySourceName, message: string): HttpError {
  return new HttpError(
    502,
    'entropy_source_unavailable',
    `The ${source} source cannot be harvested: ${message}`,
    { source },
    { 'retry-after': '5' },
  );
}

interface SignedBlock {
  slot: bigint;
  blockhash: string;
  parentSlot: bigint;
  blockHeight: bigint | null;
  previousBlockhash: string;
  signatures: readonly string[];
}

export function chainHarvester(chain: SolanaSource) {
  let network: string | undefined;

  const block = async (slot: bigint): Promise<SignedBlock> => {
    const found = await chain.read((rpc) => rpc.getBlock(slot, BLOCK_CONFIG).send());
    if (!found) throw sourceUnavailable('blockDetails', `the chain has no block at slot ${slot}`);
    return { slot, ...found };
  };

  /** The CAIP-2 id of the chain, from its genesis hash (it never changes, so it is read once). */
  const networkOf = async (): Promise<string> => {
    network ??= await chain.read(async (rpc) => `solana:${(await rpc.getGenesisHash().send()).slice(0, 32)}`);
    return network;
  };

  /** The newest block before `slot`, within the window, that has transactions; undefined when all are empty. */
  const latestWithSignatures = async (slot: bigint): Promise<SignedBlock | undefined> => {
    if (slot === 0n) return undefined;
    const from = slot > SIGNATURE_WINDOW ? slot - SIGNATURE_WINDOW : 0n;
    const slots = (
      await chain.read((rpc) => rpc.getBlocks(from, slot - 1n, { commitment: 'confirmed' }).send())
    ).reverse();
    for (let i = 0; i < slots.length; i += PARALLEL_READS) {
      const blocks = await Promise.all(slots.slice(i, i + PARALLEL_READS).map(block));
      const found = blocks.find((b) => b.signatures.length > 0);
      if (found) return found;
    }
    return undefined;
  };

  return {
    /** A cheap read that fails fast when the chain does not answer (the preflight before a 402). */
    async ping(): Promise<void> {
      await chain.read((rpc) => rpc.getSlot({ commitment: 'confirmed' }).send());
    },

    async harvest(): Promise<Harvest> {
      // The newest confirmed block before the tip: a node may still be filling the tip's block (the local
      // ledger does), and a verifier must find the same transactions there when it reads the block again.
      const tip = await chain.read((rpc) => rpc.getSlot({ commitment: 'confirmed' }).send());
      const last = tip > 0n ? tip - 1n : 0n;
      const from = last >= BLOCK_WINDOW - 1n ? last - BLOCK_WINDOW + 1n : 0n;
      const recent = await chain.read((rpc) => rpc.getBlocks(from, last, { commitment: 'confirmed' }).send());
      const slot = recent[recent.length - 1];
      if (slot === undefined) throw sourceUnavailable('blockhash', `no confirmed block in slots ${from} to ${last}`);
      const timingSlots = recent.slice(-TIMING_SAMPLES);
      const leaderStart = slot >= BigInt(LEADER_SLOTS - 1) ? slot - BigInt(LEADER_SLOTS - 1) : 0n;
      const harvestedAt = new Date();

      const [network, head, leaders, times] = await Promise.all([
        networkOf(),
        block(slot),
        chain.read((rpc) => rpc.getSlotLeaders(leaderStart, Number(slot - leaderStart) + 1).send()),
        Promise.all(timingSlots.map((s) => chain.read((rpc) => rpc.getBlockTime(s).send()))),
      ]);
      if (head.blockHeight === null)
        throw sourceUnavailable('blockDetails', `the block at slot ${slot} has no block height`);
      const timing = timingSlots.map((s, i) => {
        const time = times[i];
        if (time === null || time === undefined)
          throw sourceUnavailable('blockTiming', `the block at slot ${s} has no block time`);
        return { slot: Number(s), blockTime: Number(time) };
      });
      const signed = head.signatures.length > 0 ? head : ((await latestWithSignatures(slot)) ?? head);

      const raw: RawHarvest = {
        slot: Number(slot),
        blockhash: head.blockhash,
        leaderStartSlot: Number(leaderStart),
        leaders: [...leaders],
        signatureSlot: Number(signed.slot),
        signatures: signed.signatures.slice(0, MAX_SIGNATURES),
        timing,
        parentSlot: Number(head.parentSlot),
        blockHeight: Number(head.blockHeight),
        previousBlockhash: head.previousBlockhash,
        transactionCount: head.signatures.length,
      };
      let sources;
      try {
        sources = toSources(raw);
      } catch (error) {
        // A value that is not the base58 it should be: the chain's answer is unusable for that source.
        if (error instanceof MaterialError) throw sourceUnavailable(error.source, error.message);
        throw error;
      }
      return { network, slot: Number(slot), harvestedAt, sources };
    },
  };
}

export type ChainHarvester = ReturnType<typeof chainHarvester>;
