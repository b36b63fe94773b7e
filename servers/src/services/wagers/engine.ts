import { address, type Signature } from '@solana/kit';
import { entropy } from '@agent-economy/contracts';
import { ApiError, createServiceClient, walletFromSecretKey, type Signer } from '@agent-economy/sdk';
import type { Logger } from 'pino';
import {
  TOKEN_2022_PROGRAM,
  TOKEN_PROGRAM,
  associatedTokenAddress,
  decodeTokenAccount,
  isTokenProgram,
} from '../../solana/programs';
import type { ServiceContext } from '../../runtime/context';
import { tracedSolanaRpc } from '../../runtime/traced-rpc';
import { HttpError, unavailable, unprocessable } from '../../runtime/errors';
import type { Vault } from '../../runtime/vault';
import {
  clientSeedOf,
  stakeProblem,
  voidDue,
  type ParsedTransactionView,
  type StoredChallenge,
  type StoredFlip,
  type StoredWager,
} from './domain';
import type { WagerStore } from './store';

// What the wager service does on the chain and with the entropy service: checks stakes, refunds, flips and pays.

const chainDown = () =>
  unavailable('chain_unavailable', 'The Solana RPC endpoint does not answer; try again shortly', 5);

/** The chain as the wager service reads it: stake transfers and stablecoin balances. */
export interface StakeChain {
  /**
   * A confirmed stake transfer of exactly `amount` from `player` to the vault: its block time, or 422 STAKE_INVALID.
   */
  verifyStake(signature: string, player: string, amount: bigint): Promise<{ confirmedAt: Date }>;
  /**
   * A wallet's stablecoin balance (0 without a token account); 503 chain_unavailable when the chain does not answer.
   */
  balance(owner: string): Promise<bigint>;
}

export function stakeChain(
  context: Pick<ServiceContext, 'rpcUrl' | 'paywall'>,
  vault: string,
  /** The service's clock: a stake's time when the chain gives no block time. */
  now: () => Date,
): StakeChain {
  // Reads made for a request carry its trace to the chain.
  const rpc = tracedSolanaRpc(context.rpcUrl);
  const mint = context.paywall.asset;
  const accountsOf = (owner: string) =>
    new Set([TOKEN_PROGRAM, TOKEN_2022_PROGRAM].map((program) => associatedTokenAddress(owner, mint, program)));
  const vaultAccounts = accountsOf(vault);
  let tokenProgram: string | undefined;

  async function call<T>(request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch {
      // Every input reaching the chain was validated first: a failing read means the endpoint is not answering.
      throw chainDown();
    }
  }

  return {
    async verifyStake(signature, player, amount) {
      const tx = (await call(() =>
        rpc
          .getTransaction(signature as Signature, {
            encoding: 'jsonParsed',
            commitment: 'confirmed',
            maxSupportedTransactionVersion: 0,
          })
          .send(),
      )) as unknown as ParsedTransactionView | null;
      const problem = stakeProblem(tx, { player, sourceAccounts: accountsOf(player), vaultAccounts, mint, amount });
      if (problem)
        throw unprocessable('STAKE_INVALID', `The stake transfer ${signature} does not count: ${problem}`, {
          stakeTxSignature: signature,
          reason: problem,
        });
      const blockTime = tx?.blockTime;
      return { confirmedAt: blockTime ? new Date(Number(blockTime) * 1000) : now() };
    },

    async balance(owner) {
      if (!tokenProgram) {
        const { value } = await call(() =>
          rpc.getAccountInfo(address(mint), { encoding: 'base64', commitment: 'confirmed' }).send(),
        );
        if (!value || !isTokenProgram(value.owner))
          throw unavailable(
            'chain_unavailable',
            `The stablecoin mint ${mint} is not on the chain this service reads`,
            30,
          );
        tokenProgram = value.owner;
      }
      const ata = associatedTokenAddress(owner, mint, tokenProgram);
      const { value } = await call(() =>
        rpc.getAccountInfo(address(ata), { encoding: 'base64', commitment: 'confirmed' }).send(),
      );
      return value ? (decodeTokenAccount(value.owner, Buffer.from(value.data[0], 'base64'))?.amount ?? 0n) : 0n;
    },
  };
}

/** The coin flip: the entropy service over HTTP, paid by the vault wallet (the fee comes out of the house cut). */
export type Flipper = (clientSeed: string) => Promise<StoredFlip>;

/** Most the vault pays the entropy service for one flip (the contract prices it at 0.001). */
export const MAX_FLIP_FEE_USD = '0.01';

export function entropyFlipper(context: ServiceContext, entropyUrl: () => string): Flipper {
  let signer: Promise<Signer> | undefined;
  return async (clientSeed) => {
    signer ??= walletFromSecretKey(context.wallet.secretKey);
    const client = createServiceClient(entropy, entropyUrl(), {
      wallet: await signer,
      network: context.paywall.network,
      payments: {
        maxPerCallUsd: MAX_FLIP_FEE_USD,
        rpcUrl: context.rpcUrl,
        allowedNetworks: [context.paywall.network],
        allowedAssets: [context.paywall.asset],
      },
      maxRetries: 1,
      timeoutMs: 30_000,
    });
    try {
      // One x402 payment identifier per wager's flip (derived from its clientSeed, signed by the vault, so it survives
      // a restart): when an answer is lost after the fee settled, the retry is answered from that first payment, never
      // charged again, and the fee recorded is the one paid.
      const { data, payment } = await client.coin.withResponse(
        { body: { count: 1, clientSeed } },
        { idempotencyKey: `wagers-flip:${clientSeed}` },
      );
      return {
        clientSeed,
        outcome: data.outcome,
        derivation: data.derivation,
        proof: data.proof,
        fee: payment ? BigInt(payment.amount) : 0n,
        feeTx: payment?.transaction ?? null,
      };
    } catch (error) {
      const reason =
        error instanceof ApiError
          ? `${error.status} ${error.code}`
          : error instanceof Error
            ? error.message
            : String(error);
      throw new HttpError(
        502,
        'entropy_unavailable',
        `The entropy service did not flip the coin: ${reason}`,
        undefined,
        { 'retry-after': '5' },
      );
    }
  };
}

export interface Engine {
  /** Refunds a challenge's stake from the vault (idempotent: keyed by the challenge) and records it. */
  refund(challenge: StoredChallenge): Promise<StoredChallenge>;
  /**
   * Draws the flip (once) and pays the winner (once); leaves the wager active when either cannot finish now. A wager
   * still without a flip longer than the void limit after acceptance is voided instead, both stakes refunded.
   */
  finish(wagerId: string): Promise<StoredWager>;
  /**
   * Expires due challenges, retries refunds owed (challenges and void wagers), finishes or voids active wagers; safe to
   * run on every replica at once.
   */
  sweep(): Promise<void>;
}

const LEASE_MS = 120_000;

export function wagerEngine(deps: {
  store: WagerStore;
  vault: Vault;
  flip: Flipper;
  now: () => Date;
  logger: Logger;
  /** WAGER_VOID_HOURS in ms: a wager with no flip for longer than this after acceptance is voided. */
  voidAfterMs: number;
}): Engine {
  const { store, vault, flip, now, logger, voidAfterMs } = deps;

  async function refund(challenge: StoredChallenge): Promise<StoredChallenge> {
    if (challenge.refundTx) return challenge;
    const { transaction } = await vault.transfer({
      to: challenge.challenger,
      amount: challenge.amount,
      key: `wagers:${challenge.id}:refund`,
      memo: `wager challenge ${challenge.id} ${challenge.status}: stake refunded`,
    });
    return store.refunded(challenge, transaction, vault.address, now());
  }

  /**
   * Refunds each player's stake of a void wager not refunded yet, in full (keyed per player, so never twice); a refund
   * the vault cannot send now (chain down, the player's token account closed) is left owed for a later sweep.
   */
  async function refundVoid(wager: StoredWager): Promise<StoredWager> {
    for (const side of ['challenger', 'opponent'] as const) {
      if (wager[side === 'challenger' ? 'challengerRefundTx' : 'opponentRefundTx']) continue;
      try {
        const { transaction } = await vault.transfer({
          to: wager[side],
          amount: wager.amount,
          key: `wagers:${wager.id}:void:${side}`,
          memo: `wager ${wager.id} void: ${side} stake refunded`,
        });
        wager = await store.voidRefunded(wager, side, transaction, vault.address, now());
      } catch (error) {
        logger.warn({ err: error, wagerId: wager.id, side }, 'void refund not sent yet; a later sweep retries');
      }
    }
    return wager;
  }

  async function finish(wagerId: string): Promise<StoredWager> {
    const started = now();
    if (!(await store.lease(wagerId, started, new Date(started.getTime() + LEASE_MS))))
      return (await store.wager(wagerId))!;
    let wager = (await store.wager(wagerId))!;
    try {
      // Under the lease: a wager that has waited too long for its flip is voided, never flipped afterwards. The void
      // is conditional on the row having no flip, and storing a flip on it being active: if a finisher whose lease
      // lapsed stores its flip first, this one pays that winner instead; if the void is stored first, that flip decides
      // nothing.
      if (voidDue(wager, started, voidAfterMs)) wager = await store.voidWager(wager.id, started);
      if (wager.status === 'void') return await refundVoid(wager);
      if (!wager.flip) {
        const clientSeed = clientSeedOf(wager.seed, wager.challengeId, wager.challengerStakeTx, wager.opponentStakeTx);
        wager = await store.setFlip(wager.id, await flip(clientSeed));
        // Voided by a sweep while this flip was on its way (this lease had lapsed): nothing is paid out.
        if (wager.status !== 'active' || !wager.flip) return wager;
      }
      const winner = wager.flip!.outcome === 'heads' ? wager.challenger : wager.opponent;
      const { transaction } = await vault.transfer({
        to: winner,
        amount: wager.payout,
        key: `wagers:${wager.id}:payout`,
        memo: `wager ${wager.id} payout`,
      });
      wager = await store.settle(wager, winner, transaction, vault.address, now());
    } catch (error) {
      // The wager stays active with its stakes in the vault; the next sweep (any replica) finishes it.
      logger.warn({ err: error, wagerId }, 'wager not finished yet; a later sweep retries');
      await store.release(wagerId);
      wager = (await store.wager(wagerId))!;
    }
    return wager;
  }

  let running: Promise<void> | undefined;
  async function sweepOnce(): Promise<void> {
    await store.expireDue(now());
    for (const challenge of await store.refundsDue()) {
      try {
        await refund(challenge);
      } catch (error) {
        logger.warn({ err: error, challengeId: challenge.id }, 'refund not sent yet; a later sweep retries');
      }
    }
    for (const wager of await store.voidRefundsDue()) await refundVoid(wager);
    for (const id of await store.unfinished(now())) await finish(id);
  }

  return {
    refund,
    finish,
    // One sweep at a time in this process; other replicas are kept apart by the database (conditional updates,
    // leases, the vault's transfer keys).
    sweep() {
      running ??= sweepOnce().finally(() => {
        running = undefined;
      });
      return running;
    },
  };
}
