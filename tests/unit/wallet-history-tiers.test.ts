import { describe, expect, it } from 'vitest';
import { WALLET_ACTIVITY_TIERS, routeMeta, walletHistory, type WalletActivityTier } from '@agent-economy/contracts';
import {
  analyse,
  chargedTier,
  parseSince,
  tierFor,
  tierPriceUsd,
  type WalletTransaction,
} from '../../servers/src/services/wallet-history/domain';

describe('activity tiers (pure)', () => {
  it('puts 99/100, 999/1000 and 9999/10000 on either side of each boundary', () => {
    const cases: [number, WalletActivityTier][] = [
      [0, 'light'],
      [99, 'light'],
      [100, 'moderate'],
      [999, 'moderate'],
      [1000, 'heavy'],
      [9999, 'heavy'],
      [10000, 'whale'],
      [50000, 'whale'],
    ];
    expect(cases.map(([n]) => [n, tierFor(n)])).toEqual(cases);
    expect(() => tierFor(-1)).toThrow(RangeError);
    expect(() => tierFor(1.5)).toThrow(RangeError);
  });

  it('prices tiers as the contract states, and as a deployment reprices them', () => {
    const contract = routeMeta(walletHistory.router.protocols).payment;
    expect(contract.kind === 'tiered' && contract.tiers.map((t) => [t.id, t.usd])).toEqual(
      WALLET_ACTIVITY_TIERS.map((t) => [t.id, t.usd]),
    );
    expect((['light', 'moderate', 'heavy', 'whale'] as const).map((t) => tierPriceUsd(contract, t))).toEqual([
      '0.02',
      '0.05',
      '0.1',
      '0.15',
    ]);
    expect(tierPriceUsd({ kind: 'free' }, 'whale')).toBe('0');
    expect(tierPriceUsd({ kind: 'fixed', usd: '0.07' }, 'light')).toBe('0.07');
    expect(tierPriceUsd({ kind: 'adaptive', minUsd: '0.03', maxUsd: '0.12' }, 'light')).toBe('0.03');
    expect(tierPriceUsd({ kind: 'adaptive', minUsd: '0.03', maxUsd: '0.12' }, 'whale')).toBe('0.12');
    // a paid amount names its tier; nothing paid keeps the estimate's
    expect(chargedTier(contract, 'light', 50_000n)).toBe('moderate');
    expect(chargedTier(contract, 'heavy', undefined)).toBe('heavy');
  });

  it('accepts only real instants for since', () => {
    expect(parseSince(undefined)).toBeUndefined();
    expect(parseSince('2025-03-01T10:00:00.000Z')).toEqual(new Date(Date.UTC(2025, 2, 1, 10)));
    expect(parseSince('2025-02-30T00:00:00.000Z')).toEqual({ error: 'is not a real date and time' });
    expect(parseSince('2025-01-01T24:30:00.000Z')).toEqual({ error: 'is not a real date and time' });
  });
});

describe('protocol breakdown (pure)', () => {
  const JUPITER = 'JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4';
  const WHIRLPOOL = 'whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc';
  const RAYDIUM_CPMM = 'CPMMoo8L3F4NbTegBCKVNunggL7H1ZpdTHKxQB5qKP1C';
  const MARINADE = 'MarBmsSgKXdrN1egZf5sqe1TMai9K1rChYNDJgjq7aD';
  const PUMP = '6EF8rrecthR5Dkzon8Nwu78hRvfCKubJ14M5uBEwF6P';
  const TOKEN = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
  const BUDGET = 'ComputeBudget111111111111111111111111111111';
  const MYSTERY = 'Myst3ry1111111111111111111111111111111111111';
  const day = (d: number, h = 0) => Date.UTC(2025, 5, d, h) / 1000;
  const tx = (over: Partial<WalletTransaction> & { programs: string[]; blockTime: number }): WalletTransaction => ({
    signature: `sig${over.blockTime}`,
    failed: false,
    feePaid: 5000n,
    lamportChange: 0n,
    tokenChanges: [],
    ...over,
  });
  const history = [
    // a Jupiter swap routed through Whirlpools and Raydium: 20 USDC out, SOL in
    tx({
      blockTime: day(1, 9),
      programs: [BUDGET, JUPITER, WHIRLPOOL, RAYDIUM_CPMM, TOKEN],
      lamportChange: 150_000_000n,
      tokenChanges: [{ mint: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', decimals: 6, change: -20_000_000n }],
    }),
    // a second swap the same day, USDT in
    tx({
      blockTime: day(1, 18),
      programs: [JUPITER, WHIRLPOOL, TOKEN],
      tokenChanges: [{ mint: 'Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB', decimals: 6, change: 2_500_000n }],
    }),
    // staking SOL for mSOL: nothing that can be priced
    tx({
      blockTime: day(3),
      programs: [MARINADE, TOKEN],
      lamportChange: -1_000_000_000n,
      tokenChanges: [{ mint: 'mSoLzYCxHdYgdzU16g5QSh3i5K3z3KZK7ytfqcJm7So', decimals: 9, change: 990_000_000n }],
    }),
    // a failed pump.fun buy paid by someone else, and a program nobody labels
    tx({ blockTime: day(4), programs: [PUMP, MYSTERY], failed: true, feePaid: 0n }),
  ];

  it('counts each protocol once per transaction, with its programs, days, share and priced volume', () => {
    const result = analyse(history);
    expect(result).toMatchObject({
      transactionCount: 4,
      failedTransactionCount: 1,
      firstActivityAt: '2025-06-01T09:00:00.000Z',
      lastActivityAt: '2025-06-04T00:00:00.000Z',
      activeDays: 3,
      feesPaidLamports: '15000',
      unknownPrograms: [{ programId: MYSTERY, transactionCount: 1 }],
    });
    const byId = Object.fromEntries(result.protocols.map((p) => [p.protocol, p]));
    expect(result.protocols.map((p) => [p.protocol, p.transactionCount])).toEqual([
      ['spl-token', 3],
      ['jupiter', 2],
      ['orca', 2],
      ['compute-budget', 1],
      ['marinade', 1],
      ['pump-fun', 1],
      ['raydium', 1],
    ]);
    expect(byId.jupiter).toEqual({
      protocol: 'jupiter',
      name: 'Jupiter',
      category: 'aggregator',
      programIds: [JUPITER],
      transactionCount: 2,
      sharePercent: 50,
      firstInteractionAt: '2025-06-01T09:00:00.000Z',
      lastInteractionAt: '2025-06-01T18:00:00.000Z',
      activeDays: 1,
      // 20 USDC out plus 2.5 USDT in; the SOL leg has no price here
      volumeUsd: '22.5',
    });
    expect([byId.orca!.category, byId.raydium!.category, byId['pump-fun']!.category, byId.marinade!.category]).toEqual([
      'dex',
      'dex',
      'launchpad',
      'liquid_staking',
    ]);
    expect([
      byId.marinade!.volumeUsd,
      byId['pump-fun']!.volumeUsd,
      byId['compute-budget']!.volumeUsd,
      byId['spl-token']!.volumeUsd,
    ]).toEqual([null, '0', null, '22.5']);
    expect(byId['spl-token']!.sharePercent).toBe(75);
    expect(result.categories).toEqual(
      [
        { category: 'payments', transactionCount: 3, sharePercent: 75 },
        { category: 'dex', transactionCount: 2, sharePercent: 50 },
        { category: 'aggregator', transactionCount: 2, sharePercent: 50 },
        { category: 'launchpad', transactionCount: 1, sharePercent: 25 },
        { category: 'liquid_staking', transactionCount: 1, sharePercent: 25 },
        { category: 'system', transactionCount: 1, sharePercent: 25 },
      ].sort((a, b) => b.transactionCount - a.transactionCount || a.category.localeCompare(b.category)),
    );
  });

  it('describes an empty history', () => {
    expect(analyse([])).toEqual({
      transactionCount: 0,
      failedTransactionCount: 0,
      firstActivityAt: null,
      lastActivityAt: null,
      activeDays: 0,
      feesPaidLamports: '0',
      protocols: [],
      categories: [],
      unknownPrograms: [],
    });
  });
});
