import { SolanaAddress, atomicToUsd, usdToAtomic, wagers } from '@agent-economy/contracts';
import type { Logger } from 'pino';
import type { RouterImplementation } from '../../runtime/app';
import { callerOf } from '../../runtime/app';
import { HttpError, conflict, notFound, unprocessable } from '../../runtime/errors';
import type { Vault } from '../../runtime/vault';
import {
  bpsToPercent,
  newChallengeId,
  newSeed,
  newWagerId,
  splitPot,
  toChallenge,
  toConnectedWallet,
  toWager,
  type StoredUser,
  type StoredWager,
  type WagerLimitsAtomic,
} from './domain';
import type { Engine, StakeChain } from './engine';
import { wagerInProgress, type WagerStore } from './store';

export interface WagerDeps {
  store: WagerStore;
  vault: Vault;
  chain: StakeChain;
  engine: Engine;
  limits: WagerLimitsAtomic;
  network: string;
  asset: string;
  now: () => Date;
  logger: Logger;
}

const VERSION = '1.0.0';

// Handlers translate between the contract and the domain; the store decides races, the engine moves money.
export function wagerHandlers(deps: WagerDeps): RouterImplementation<typeof wagers.router> {
  const { store, vault, chain, engine, limits, now } = deps;
  const onChain = { network: deps.network, vault: vault.address };

  /** The caller's chat identity, online: 409 WALLET_NOT_CONNECTED otherwise. */
  async function connected(caller: string): Promise<StoredUser> {
    const user = await store.user(caller);
    if (!user?.connected)
      throw conflict('WALLET_NOT_CONNECTED', 'Connect a wallet first: POST /api/v1/wallet/connect', {
        address: caller,
      });
    return user;
  }

  const view = async (wager: StoredWager) => toWager(wager, await store.transfers(wager.challengeId), onChain);

  /** A chain read for display: null when the chain does not answer. */
  const balanceOrNull = (owner: string) => chain.balance(owner).catch(() => null);

  /**
   * Expired challenges and unfinished wagers are handled before the caller looks; a failing sweep never fails a read.
   */
  const sweepQuietly = () => engine.sweep().catch((error) => deps.logger.warn({ err: error }, 'wager sweep failed'));

  const wallet = async (user: StoredUser) =>
    toConnectedWallet(user, deps.network, await balanceOrNull(user.address), await store.record(user.address));

  return {
    health: async () => {
      // The vault's balance is the chain read that stakes, refunds and payouts depend on.
      await vault.balance();
      return {
        status: 200,
        body: {
          status: 'ok' as const,
          service: 'wagers',
          version: VERSION,
          network: deps.network,
          vaultAddress: vault.address,
          asset: deps.asset,
          limits: {
            minWagerUsd: atomicToUsd(limits.min),
            maxWagerUsd: atomicToUsd(limits.max),
            houseCutPercent: bpsToPercent(limits.houseCutBps),
            challengeTtlSeconds: limits.challengeTtlSeconds,
          },
        },
      };
    },

    ping: async () => ({ status: 200, body: { pong: true as const, time: now().toISOString() } }),

    connect: async ({ body, res }) => {
      const caller = callerOf(res);
      if (!SolanaAddress.safeParse(body.address).success) {
        throw new HttpError(
          400,
          'INVALID_ADDRESS',
          `"${body.address.slice(0, 100)}" is not a Solana address (base58, 32 bytes)`,
          {
            fields: [{ field: 'body.address', message: 'must be a base58 Solana address (32 bytes)' }],
          },
        );
      }
      if (body.address !== caller) {
        throw new HttpError(
          403,
          'ADDRESS_MISMATCH',
          'The address is not the wallet that signed SIGN-IN-WITH-X: connect the wallet you prove',
          { address: body.address, signer: caller },
        );
      }
      const user = await store.connect(caller, body.username, now());
      return { status: 200, body: await wallet(user) };
    },

    wallet: async ({ res }) => {
      const user = await connected(callerOf(res));
      return { status: 200, body: await wallet(user) };
    },

    disconnect: async ({ res }) => {
      const user = await connected(callerOf(res));
      const at = now();
      const { cancelled, declined } = await store.disconnect(user.address, at);
      for (const challenge of [...cancelled, ...declined]) {
        // A refund the chain does not take now is owed, and retried by the sweep: the disconnection stands.
        await engine
          .refund(challenge)
          .catch((error) =>
            deps.logger.warn({ err: error, challengeId: challenge.id }, 'refund on disconnect deferred'),
          );
      }
      return {
        status: 200,
        body: {
          username: user.username,
          address: user.address,
          disconnectedAt: at.toISOString(),
          cancelledChallenges: cancelled.map((c) => c.id),
          declinedChallenges: declined.map((c) => c.id),
        },
      };
    },

    challenge: async ({ body, res }) => {
      // PostgreSQL text cannot hold NUL: a 400 naming the field, not a 500 from the insert (the stake stays unused).
      if (body.message?.includes('\u0000')) {
        const message = 'must be text without NUL characters';
        throw new HttpError(400, 'invalid_request', `Invalid request: body.message ${message}`, {
          fields: [{ field: 'body.message', message }],
        });
      }
      const me = await connected(callerOf(res));
      if (body.opponent.toLowerCase() === me.username.toLowerCase())
        throw unprocessable('SELF_WAGER', 'You cannot wager against yourself', { opponent: body.opponent });
      const opponent = await store.userByName(body.opponent);
      if (!opponent?.connected)
        throw notFound('USER_NOT_FOUND', `No connected chat user ${body.opponent}: not found or offline`, {
          opponent: body.opponent,
        });
      if (opponent.address === me.address)
        throw unprocessable('SELF_WAGER', 'You cannot wager against yourself', { opponent: body.opponent });
      const amount = usdToAtomic(body.amountUsd);
      if (amount < limits.min || amount > limits.max) {
        throw unprocessable(
          'AMOUNT_OUT_OF_RANGE',
          `A wager is between ${atomicToUsd(limits.min)} and ${atomicToUsd(limits.max)} USD, not ${body.amountUsd}`,
          {
            amountUsd: body.amountUsd,
            minWagerUsd: atomicToUsd(limits.min),
            maxWagerUsd: atomicToUsd(limits.max),
          },
        );
      }
      for (const player of [me, opponent])
        if (await store.hasActiveWager(player.address)) throw wagerInProgress(player.address);
      const at = now();
      const existing = await store.pendingBetween(me.address, opponent.address, at);
      if (existing)
        throw conflict('CHALLENGE_EXISTS', 'A pending challenge between you two already exists', {
          challengeId: existing.id,
        });
      if (await store.transferUsed(body.stakeTxSignature)) {
        throw conflict('STAKE_ALREADY_USED', `The transfer ${body.stakeTxSignature} already funded a stake`, {
          stakeTxSignature: body.stakeTxSignature,
        });
      }
      const stake = await chain.verifyStake(body.stakeTxSignature, me.address, amount);
      const { seed, seedHash } = newSeed();
      const challenge = await store.insertChallenge({
        id: newChallengeId(),
        challenger: me.address,
        challengerName: me.username,
        opponent: opponent.address,
        opponentName: opponent.username,
        amount,
        message: body.message ?? null,
        seed,
        seedHash,
        stakeTx: body.stakeTxSignature,
        stakeConfirmedAt: stake.confirmedAt,
        vault: vault.address,
        createdAt: at,
        expiresAt: new Date(at.getTime() + limits.challengeTtlSeconds * 1000),
      });
      return { status: 201, body: toChallenge(challenge) };
    },

    accept: async ({ body, res }) => {
      const me = await connected(callerOf(res));
      const at = now();
      const challenge = await store.challenge(body.challengeId);
      // A challenge to someone else is, to the caller, no challenge at all.
      if (!challenge || challenge.opponent !== me.address)
        throw notFound('CHALLENGE_NOT_FOUND', `No challenge ${body.challengeId} to you`, {
          challengeId: body.challengeId,
        });
      if (challenge.status !== 'pending' || challenge.expiresAt <= at) {
        const status = challenge.status === 'pending' ? 'expired' : challenge.status;
        throw conflict('CHALLENGE_NOT_PENDING', `Challenge ${challenge.id} is ${status}, no longer pending`, {
          challengeId: challenge.id,
          status,
        });
      }
      for (const player of [challenge.challenger, challenge.opponent])
        if (await store.hasActiveWager(player)) throw wagerInProgress(player);
      if (await store.transferUsed(body.stakeTxSignature)) {
        throw conflict('STAKE_ALREADY_USED', `The transfer ${body.stakeTxSignature} already funded a stake`, {
          stakeTxSignature: body.stakeTxSignature,
        });
      }
      const stake = await chain.verifyStake(body.stakeTxSignature, me.address, challenge.amount);
      const { houseCut, payout } = splitPot(challenge.amount, limits.houseCutBps);
      const wager = await store.accept({
        challengeId: challenge.id,
        opponent: me.address,
        stakeTx: body.stakeTxSignature,
        stakeConfirmedAt: stake.confirmedAt,
        vault: vault.address,
        wagerId: newWagerId(),
        houseCutBps: limits.houseCutBps,
        houseCut,
        payout,
        now: at,
      });
      return { status: 200, body: await view(await engine.finish(wager.id)) };
    },

    decline: async ({ body, res }) => {
      const me = await connected(callerOf(res));
      const declined = await store.decline(me.address, body.challengeId, now());
      // The decline stands even when the refund cannot be sent now (the error says so; the sweep retries).
      return { status: 200, body: toChallenge(await engine.refund(declined)) };
    },

    challenges: async ({ res }) => {
      const me = await connected(callerOf(res));
      await sweepQuietly();
      const { incoming, outgoing } = await store.pending(me.address, now());
      return { status: 200, body: { incoming: incoming.map(toChallenge), outgoing: outgoing.map(toChallenge) } };
    },

    active: async ({ res }) => {
      const me = await connected(callerOf(res));
      await sweepQuietly();
      const wager = await store.activeWagerOf(me.address);
      if (!wager) throw notFound('NO_ACTIVE_WAGER', 'You have no active wager', { address: me.address });
      return { status: 200, body: await view(wager) };
    },

    get: async ({ params, res }) => {
      const caller = callerOf(res);
      const wager = await store.wager(params.wagerId);
      if (!wager) throw notFound('WAGER_NOT_FOUND', `No wager ${params.wagerId}`, { wagerId: params.wagerId });
      if (caller !== wager.challenger && caller !== wager.opponent)
        throw new HttpError(403, 'NOT_A_PLAYER', 'Only the two players of a wager may read it', { wagerId: wager.id });
      // An unfinished wager is finished before it is shown, when nobody else is at it.
      return { status: 200, body: await view(wager.status === 'active' ? await engine.finish(wager.id) : wager) };
    },
  };
}
