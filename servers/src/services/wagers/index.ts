import { usdToAtomic, wagers } from '@agent-economy/contracts';
import { migrate } from '../../db';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { createVault } from '../../runtime/vault';
import { splitPot, type WagerLimitsAtomic } from './domain';
import { MAX_FLIP_FEE_USD, entropyFlipper, stakeChain, wagerEngine } from './engine';
import { wagerHandlers } from './handlers';
import { migrations, wagerStore } from './store';

export interface WagerSettings {
  /** MIN_WAGER_USD, default "1". */
  minWagerUsd?: string;
  /** MAX_WAGER_USD, default "25". */
  maxWagerUsd?: string;
  /** HOUSE_CUT_PERCENT in basis points (5 % = 500), default 500. */
  houseCutBps?: number;
  /** WAGER_CHALLENGE_TTL_SECONDS, default 600. */
  challengeTtlSeconds?: number;
  /**
   * WAGER_VOID_HOURS, default 24: a wager still without its flip this long after acceptance (the entropy service gone)
   * is void, each stake refunded in full.
   */
  voidAfterHours?: number;
}

export interface WagersOptions extends WagerSettings {
  /**
   * Base address of the entropy service that flips the coin (a function when known only later). Default: the
   * deployment's.
   */
  entropyUrl?: string | (() => string);
  /** The clock (tests move it past a challenge's expiry). */
  now?: () => Date;
  /**
   * How often this replica sweeps (expiries, refunds owed, unfinished wagers); 0: only when callers look. Default 15 s.
   */
  sweepEveryMs?: number;
}

export const WAGER_DEFAULTS = {
  minWagerUsd: '1',
  maxWagerUsd: '25',
  houseCutBps: 500,
  challengeTtlSeconds: 600,
  voidAfterHours: 24,
} as const;

/**
 * The chat wager service: chat users connect wallets, challenge each other to a coin flip for a stake held in the
 * service's vault on chain, and the winner is paid the pot less the house cut.
 */
export async function createWagersApp(context: ServiceContext, options: WagersOptions = {}) {
  await migrate(context.db, 'wagers', migrations);
  const limits: WagerLimitsAtomic = {
    min: usdToAtomic(options.minWagerUsd ?? WAGER_DEFAULTS.minWagerUsd),
    max: usdToAtomic(options.maxWagerUsd ?? WAGER_DEFAULTS.maxWagerUsd),
    houseCutBps: options.houseCutBps ?? WAGER_DEFAULTS.houseCutBps,
    challengeTtlSeconds: options.challengeTtlSeconds ?? WAGER_DEFAULTS.challengeTtlSeconds,
  };
  // A pot must leave the winner something, and the range must hold at least one amount.
  if (limits.min <= 0n || limits.min > limits.max)
    throw new Error(`wager limits: MIN_WAGER_USD must be above 0 and at most MAX_WAGER_USD`);
  if (!Number.isInteger(limits.houseCutBps) || limits.houseCutBps < 0 || limits.houseCutBps >= 10_000)
    throw new Error('wager limits: HOUSE_CUT_PERCENT must be at least 0 and below 100');
  // The vault pays each flip's entropy fee out of the house cut: a cut smaller than the fee would pay it with stakes
  // the
  // vault holds for other players.
  if (splitPot(limits.min, limits.houseCutBps).houseCut < usdToAtomic(MAX_FLIP_FEE_USD)) {
    throw new Error(
      `wager limits: HOUSE_CUT_PERCENT of the smallest pot (twice MIN_WAGER_USD) must cover the flip fee of up to ${MAX_FLIP_FEE_USD} USD`,
    );
  }
  const voidAfterHours = options.voidAfterHours ?? WAGER_DEFAULTS.voidAfterHours;
  if (!Number.isFinite(voidAfterHours) || voidAfterHours <= 0)
    throw new Error('wager limits: WAGER_VOID_HOURS must be above 0');
  const configured = options.entropyUrl ?? (() => context.serviceUrl('entropy'));
  const entropyUrl = typeof configured === 'function' ? configured : () => configured;
  const now = options.now ?? (() => new Date());
  const store = wagerStore(context.db);
  const vault = await createVault(context);
  const engine = wagerEngine({
    store,
    vault,
    flip: entropyFlipper(context, entropyUrl),
    now,
    logger: context.logger,
    voidAfterMs: voidAfterHours * 3_600_000,
  });
  const app = await createServiceApp({
    service: wagers,
    handlers: wagerHandlers({
      store,
      vault,
      chain: stakeChain(context, vault.address, now),
      engine,
      limits,
      network: context.paywall.network,
      asset: context.paywall.asset,
      now,
      logger: context.logger,
    }),
    ...fromContext(context),
  });
  const every = options.sweepEveryMs ?? 15_000;
  if (every > 0) {
    const timer = setInterval(
      () => void engine.sweep().catch((error) => context.logger.warn({ err: error }, 'wager sweep failed')),
      every,
    );
    timer.unref();
  }
  return app;
}
