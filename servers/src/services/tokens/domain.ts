import type {
  ComparedToken,
  TokenComparison,
  TokenHolder,
  TokenHolders,
  TokenRankCriterion,
  TokenRiskLevel,
  TokenWarning,
  TokenWarningCode,
} from '@agent-economy/contracts';
import { percentOf, round, toScaled, uiAmount } from '../../upstream/decimal';
import { gini, hhi } from '../../upstream/measures';
import type { HolderAccount } from '../../upstream/token-chain';

// Token analysis as plain functions: the holder distribution, the risk score and comparison rankings.

// ---------------------------------------------------------------------------------------------------
// Concentration

/** The holder section of a token: the largest accounts ranked, the excluded ones apart, and concentration figures. */
export function holderDistribution(
  accounts: readonly HolderAccount[],
  supply: bigint,
  decimals: number,
  whaleThresholdPercent: number,
): Pick<TokenHolders, 'topHolders' | 'excluded' | 'concentration' | 'whales'> {
  const sorted = [...accounts].sort((a, b) =>
    b.amount > a.amount ? 1 : b.amount < a.amount ? -1 : a.tokenAccount.localeCompare(b.tokenAccount),
  );
  const excluded = sorted
    .filter((a) => a.excluded && a.amount > 0n)
    .map((a) => ({
      tokenAccount: a.tokenAccount,
      owner: a.owner,
      reason: a.excluded!,
      percent: percentOf(a.amount, supply),
    }));
  const held = sorted.filter((a) => !a.excluded && a.amount > 0n).slice(0, 20);
  const topHolders: TokenHolder[] = held.map((a, i) => {
    const percent = percentOf(a.amount, supply);
    return {
      rank: i + 1,
      owner: a.owner,
      tokenAccount: a.tokenAccount,
      amount: a.amount.toString(),
      uiAmount: uiAmount(a.amount, decimals),
      percent,
      whale: percent >= whaleThresholdPercent,
    };
  });
  const topShare = (k: number) =>
    percentOf(
      held.slice(0, k).reduce((s, a) => s + a.amount, 0n),
      supply,
    );
  const whales = topHolders.filter((h) => h.whale);
  return {
    topHolders,
    excluded,
    concentration: {
      top1Percent: topShare(1),
      top10Percent: topShare(10),
      top20Percent: topShare(20),
      gini: gini(held.map((a) => Number(a.amount))),
      hhi: hhi(held.map((a) => (supply > 0n ? Number((a.amount * 1_000_000_000n) / supply) / 1e9 : 0))),
    },
    whales: {
      count: whales.length,
      totalPercent: percentOf(
        held.filter((_, i) => topHolders[i]!.whale).reduce((s, a) => s + a.amount, 0n),
        supply,
      ),
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// Risk

/** What the risk score is computed from: the mint's on-chain state, its holders and (when known) its market. */
export interface RiskFacts {
  mintAuthority: string | null;
  freezeAuthority: string | null;
  /** Null when the mint has no metadata at all. */
  metadataMutable: boolean | null;
  permanentDelegate: string | null;
  transferHookProgram: string | null;
  transferFeePercent: number | null;
  top1Percent: number;
  top10Percent: number;
  /** Null when no market provider was read: market warnings are then not raised, rather than guessed. */
  market: { liquidityUsd: string; pairCount: number; createdAt: string | null } | null;
  now: Date;
}

/** Points each finding adds to the risk score (0 to 100, higher is riskier); the README and the contract state them. */
export const RISK_RULES: Record<TokenWarningCode, { level: TokenWarning['level']; points: number; title: string }> = {
  mint_authority_enabled: { level: 'danger', points: 30, title: 'Mint authority still enabled' },
  freeze_authority_enabled: { level: 'danger', points: 20, title: 'Freeze authority still enabled' },
  permanent_delegate: { level: 'danger', points: 25, title: 'Permanent delegate can move any holder’s tokens' },
  single_holder_concentration: { level: 'danger', points: 20, title: 'One holder owns a large share' },
  transfer_hook: { level: 'warn', points: 10, title: 'Transfers run a custom program' },
  transfer_fee: { level: 'warn', points: 10, title: 'Transfers pay a fee' },
  top10_concentration: { level: 'warn', points: 15, title: 'Top 10 holders own most of the supply' },
  low_liquidity: { level: 'warn', points: 10, title: 'Low liquidity' },
  no_market: { level: 'warn', points: 10, title: 'No trading pair found' },
  mutable_metadata: { level: 'info', points: 5, title: 'Metadata can be changed' },
  new_token: { level: 'info', points: 5, title: 'New token' },
  lp_unlocked: { level: 'danger', points: 20, title: 'Liquidity is not locked' },
  few_lp_providers: { level: 'warn', points: 10, title: 'Few liquidity providers' },
};

export const SINGLE_HOLDER_PERCENT = 20;
export const TOP10_PERCENT = 50;
export const LOW_LIQUIDITY_USD = '10000';
export const NEW_TOKEN_DAYS = 7;

const LEVEL_ORDER = { danger: 0, warn: 1, info: 2 } as const;

export function riskWarnings(facts: RiskFacts): TokenWarning[] {
  const found: [TokenWarningCode, string][] = [];
  if (facts.mintAuthority)
    found.push([
      'mint_authority_enabled',
      `${facts.mintAuthority} can mint more tokens at any time, diluting every holder.`,
    ]);
  if (facts.freezeAuthority)
    found.push(['freeze_authority_enabled', `${facts.freezeAuthority} can freeze any holder’s token account.`]);
  if (facts.permanentDelegate)
    found.push([
      'permanent_delegate',
      `${facts.permanentDelegate} may transfer or burn tokens from any account (Token-2022 permanent delegate).`,
    ]);
  if (facts.top1Percent >= SINGLE_HOLDER_PERCENT)
    found.push([
      'single_holder_concentration',
      `The largest holder owns ${facts.top1Percent}% of the supply (threshold ${SINGLE_HOLDER_PERCENT}%).`,
    ]);
  if (facts.transferHookProgram)
    found.push([
      'transfer_hook',
      `Every transfer calls program ${facts.transferHookProgram}, which can refuse or tax it.`,
    ]);
  if (facts.transferFeePercent)
    found.push(['transfer_fee', `Each transfer withholds ${facts.transferFeePercent}% (Token-2022 transfer fee).`]);
  if (facts.top10Percent >= TOP10_PERCENT)
    found.push([
      'top10_concentration',
      `The 10 largest holders own ${facts.top10Percent}% of the supply (threshold ${TOP10_PERCENT}%).`,
    ]);
  if (facts.market) {
    if (facts.market.pairCount === 0)
      found.push(['no_market', 'The market provider lists no trading pair for this token.']);
    else if ((toScaled(facts.market.liquidityUsd) ?? 0n) < toScaled(LOW_LIQUIDITY_USD)!) {
      found.push([
        'low_liquidity',
        `Pooled liquidity is ${facts.market.liquidityUsd} USD, under ${LOW_LIQUIDITY_USD} USD: a small trade moves the price.`,
      ]);
    }
    if (
      facts.market.createdAt &&
      facts.now.getTime() - Date.parse(facts.market.createdAt) < NEW_TOKEN_DAYS * 86_400_000
    ) {
      found.push([
        'new_token',
        `Its oldest trading pair was created ${facts.market.createdAt}, less than ${NEW_TOKEN_DAYS} days ago.`,
      ]);
    }
  }
  if (facts.metadataMutable)
    found.push(['mutable_metadata', 'The update authority can still change the name, symbol and image.']);
  return found
    .map(([code, description]) => ({
      code,
      level: RISK_RULES[code].level,
      title: RISK_RULES[code].title,
      description,
      scoreImpact: RISK_RULES[code].points,
    }))
    .sort((a, b) => LEVEL_ORDER[a.level] - LEVEL_ORDER[b.level] || b.scoreImpact - a.scoreImpact);
}

export function riskScore(warnings: readonly TokenWarning[]): { riskScore: number; riskLevel: TokenRiskLevel } {
  const score = Math.min(
    100,
    warnings.reduce((sum, w) => sum + w.scoreImpact, 0),
  );
  const riskLevel: TokenRiskLevel = score < 25 ? 'low' : score < 50 ? 'medium' : score < 75 ? 'high' : 'critical';
  return { riskScore: score, riskLevel };
}

// ---------------------------------------------------------------------------------------------------
// Comparison

export const COMPARE_WEIGHTS: Record<TokenRankCriterion, number> = {
  safety: 0.3,
  liquidity: 0.25,
  volume: 0.15,
  distribution: 0.15,
  marketCap: 0.1,
  momentum: 0.05,
};

export type CompareInput = Omit<ComparedToken, 'ranks' | 'compositeScore' | 'overallRank'>;

/**
 * Competition ranks (1 = best; ties share the better rank) of `values`, higher better unless `lowerIsBetter`.
 * A null value (not known) ranks after every known one.
 */
export function competitionRanks(values: readonly (number | null)[], lowerIsBetter = false): number[] {
  const better = (a: number | null, b: number | null) => {
    if (a === null) return false;
    if (b === null) return true;
    return lowerIsBetter ? a < b : a > b;
  };
  return values.map((v) => 1 + values.filter((other) => better(other, v)).length);
}

const decimalNumber = (v: string | null) => (v === null ? null : Number(v));

/**
 * Ranks 2 to 5 tokens on six criteria; rank r of n earns (n − r)/(n − 1) × 100 points, weighted into compositeScore.
 */
export function compareTokens(tokens: readonly CompareInput[]): Omit<TokenComparison, 'source'> {
  const n = tokens.length;
  const criteria: Record<TokenRankCriterion, number[]> = {
    liquidity: competitionRanks(tokens.map((t) => decimalNumber(t.liquidityUsd))),
    volume: competitionRanks(tokens.map((t) => decimalNumber(t.volume24hUsd))),
    marketCap: competitionRanks(tokens.map((t) => decimalNumber(t.marketCapUsd))),
    momentum: competitionRanks(tokens.map((t) => t.priceChange24hPercent)),
    safety: competitionRanks(
      tokens.map((t) => t.riskScore),
      true,
    ),
    distribution: competitionRanks(
      tokens.map((t) => t.top10HolderPercent),
      true,
    ),
  };
  const keys = Object.keys(COMPARE_WEIGHTS) as TokenRankCriterion[];
  const scored = tokens.map((t, i) => {
    const ranks = Object.fromEntries(keys.map((k) => [k, criteria[k][i]!])) as Record<TokenRankCriterion, number>;
    const compositeScore = round(
      keys.reduce((sum, k) => sum + COMPARE_WEIGHTS[k] * (((n - ranks[k]) / (n - 1)) * 100), 0),
      2,
    );
    return { ...t, ranks, compositeScore };
  });
  const overall = competitionRanks(scored.map((t) => t.compositeScore));
  const ranked = scored
    .map((t, i) => ({ ...t, overallRank: overall[i]! }))
    .sort((a, b) => a.overallRank - b.overallRank || a.mint.localeCompare(b.mint));
  const leaders = Object.fromEntries(
    keys.map((k) => [k, tokens[criteria[k].indexOf(Math.min(...criteria[k]))]!.mint]),
  ) as Record<TokenRankCriterion, string>;
  return { tokens: ranked, leaders, weights: { ...COMPARE_WEIGHTS } };
}
