import { address } from '@solana/kit';
import { intel, type IntelPeriod, type IntelTarget, type StrategyKind } from '@agent-economy/contracts';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { unprocessable } from '../../runtime/errors';
import { solanaSource } from '../../upstream/solana';
import { readMint, type MintFacts } from '../../upstream/token-chain';
import { MAX_TRANSACTIONS, meanSlotTimeMs, readMintSample } from './chain';
import { MIN_EVENTS, WINDOW_SECONDS, eventsFor, landscape, periodOf, type Landscape } from './domain';
import { intelHandlers } from './handlers';

const READING_TTL_MS = 15_000;
const MAX_KEPT_READINGS = 256;

export interface IntelAppOptions {
  /** The clock that ends every window (tests move it). */
  now?: () => Date;
}

/** What one analysis read from the chain: the mint, its transfers over the window and the window's slot time. */
export interface Reading {
  /** When the chain was read (the answer's source.asOf). */
  readAt: Date;
  facts: MintFacts;
  land: Landscape;
  period: IntelPeriod;
  fromSeconds: number;
  toSeconds: number;
  slotTimeMs: number | null;
  sampledTransactions: number;
  truncated: boolean;
}

/**
 * The competitive-intelligence service: six analyses of the agents trading a token, computed from the token's
 * transfers read from the chain (the local ledger's agent traffic, or a cluster's with SOLANA_RPC_URL).
 */
export async function createIntelApp(context: ServiceContext, options: IntelAppOptions = {}) {
  const chain = solanaSource(context);
  const now = options.now ?? (() => new Date());
  const stablecoin = context.paywall.asset;

  // A reading is kept up to 15 s while the mint's newest signature is unchanged, and concurrent requests share one:
  // the unpaid quote's preflight, the paid retry and anyone repeating a free 402 cost one signature read each
  // instead of making the chain re-read up to 3,000 transactions.
  const kept = new Map<string, { at: number; end: number; newest: string | null; reading: Promise<Reading> }>();
  const read = async (mint: string | undefined, window: string): Promise<Reading> => {
    const target = mint ?? stablecoin;
    const key = `${target}|${window}`;
    const [latest] = await chain.read((rpc) =>
      rpc.getSignaturesForAddress(address(target), { limit: 1, commitment: 'confirmed' }).send(),
    );
    const newest = latest?.signature ?? null;
    const at = Date.now();
    for (const [k, entry] of kept) if (at - entry.at > READING_TTL_MS) kept.delete(k);
    const hit = kept.get(key);
    // A moved clock (tests) ends the window elsewhere: only a reading for about the same end is reused.
    const end = now().getTime();
    if (hit && hit.newest === newest && Math.abs(end - hit.end) <= READING_TTL_MS) return hit.reading;
    if (kept.size >= MAX_KEPT_READINGS) kept.delete(kept.keys().next().value!);
    const reading = readNow(mint, window);
    kept.set(key, { at, end, newest, reading });
    reading.catch(() => kept.delete(key));
    return reading;
  };

  const readNow = async (mint: string | undefined, window: string): Promise<Reading> => {
    const facts = await readMint(chain, mint ?? stablecoin);
    const to = now();
    const period = periodOf(window, to);
    const fromSeconds = Math.floor(Date.parse(period.from) / 1000);
    const sample = await readMintSample(chain, facts.mint, stablecoin, fromSeconds);
    const toSeconds = Math.floor(to.getTime() / 1000);
    const inWindow = {
      events: sample.events.filter((e) => e.blockTime <= toSeconds),
      transactions: sample.transactions.filter((t) => t.blockTime <= toSeconds),
    };
    const slotTimeMs = await meanSlotTimeMs(chain, WINDOW_SECONDS[window]! / 60);
    return {
      readAt: now(),
      facts,
      land: landscape(inWindow, facts.mint),
      period,
      fromSeconds,
      toSeconds,
      slotTimeMs,
      sampledTransactions: inWindow.transactions.length,
      truncated: sample.truncated,
    };
  };

  /** 422 when the target has too few transfers in the window to analyse; refused before payment. */
  const enough = (reading: Reading, strategy: StrategyKind | null) => {
    const n = eventsFor(reading.land, strategy).length;
    if (n < MIN_EVENTS) {
      throw unprocessable(
        'insufficient_activity',
        `${n} transfer${n === 1 ? '' : 's'} of ${reading.facts.mint}${strategy ? ` with a ${strategy} agent` : ''} in the last ${reading.period.window}; at least ${MIN_EVENTS} are needed`,
        { transfers: n, minimum: MIN_EVENTS },
      );
    }
  };

  const target = (reading: Reading, mint: string | undefined, strategy: StrategyKind | undefined): IntelTarget => ({
    mint: mint ?? null,
    symbol: mint ? (reading.facts.metadata?.symbol ?? null) : null,
    strategy: strategy ?? null,
  });

  // Every preflight reads what the analysis needs, so an unknown mint (404), too little activity (422) or a chain
  // that does not answer (502) is refused before anyone is quoted or charged.
  /** The body parts every analysis shares: the token, the window and (for density) a strategy family. */
  type Target = { body: { mint?: string; window: string; strategy?: StrategyKind } };
  const analysed = async ({ body }: Target) => enough(await read(body.mint, body.window), body.strategy ?? null);
  const metaShiftCheck = async ({ body }: Target) => {
    const reading = await read(body.mint, body.window);
    enough(reading, null);
    if (![...reading.land.profiles.values()].some((p) => p.strategy)) {
      throw unprocessable(
        'insufficient_activity',
        `no agent wallet could be classified among the transfers of the last ${body.window}`,
        { agentWallets: 0 },
      );
    }
  };
  // Response time and capital flow have no 422: a quiet window is a 200 with zeros.
  const readable = async ({ body }: Target) => {
    await read(body.mint, body.window);
  };

  return await createServiceApp({
    service: intel,
    handlers: intelHandlers({
      read,
      target,
      tracker: chain.tracker,
      provider: chain.provider,
      stablecoin,
      chain,
      maxTransactions: MAX_TRANSACTIONS,
    }),
    ...fromContext(context),
    preflight: {
      agentDensity: analysed,
      alphaCrowding: analysed,
      // The collision's strategy is the caller's own, not a filter on the market: the whole market must be active.
      strategyCollision: async ({ body }) => enough(await read(body.mint, body.window), null),
      metaShift: metaShiftCheck,
      responseTime: readable,
      capitalFlow: readable,
    },
    upstream: chain.tracker,
  });
}
