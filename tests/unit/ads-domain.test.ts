import { describe, expect, it } from 'vitest';
import { SOLANA_DEVNET } from '@agent-economy/contracts';
import { globMatches, pickCampaign, type StoredCampaign } from '../../servers/src/services/ads/domain';

describe('domain', () => {
  it('matches globs over addresses', () => {
    expect(globMatches('https://*.example.com/api/*', 'https://data.example.com/api/v1/x')).toBe(true);
    expect(globMatches('https://*.example.com/api/*', 'https://example.org/api/x')).toBe(false);
    expect(globMatches('http://a.b/c?d', 'http://a.b/c?d')).toBe(true);
    expect(globMatches('http://a.b/c', 'http://aXb/c')).toBe(false);
  });

  it('ranks by bid per delivery (cpa at a 1 % rate), then the campaign served least recently', () => {
    const now = new Date('2026-03-02T12:00:00.000Z');
    const base = {
      advertiserId: 'adv_x',
      advertiser: { id: 'adv_x', name: 'x', wallet: 'w', network: SOLANA_DEVNET },
      name: 'c',
      status: 'active',
      budgetTotal: 10_000_000n,
      budgetDaily: 10_000_000n,
      scheduleStart: new Date('2026-01-01T00:00:00.000Z'),
      scheduleEnd: null,
      targetCategories: [],
      targetNetworks: [],
      targetTransports: [],
      targetUrlPatterns: [],
      recResourceUrl: 'http://rec.example/x',
      recDescription: 'd',
      recSponsorName: 's',
      recCatalogId: null,
      spentTotal: 0n,
      spentToday: 0n,
      spentDay: '2026-03-02',
      funded: 10_000_000n,
      refunded: 0n,
      lastRefundTransaction: null,
      matches: 0,
      settlements: 0,
      impressions: 0,
      conversions: 0,
      createdAt: now,
      updatedAt: now,
      activatedAt: now,
    } satisfies Omit<StoredCampaign, 'id' | 'seq' | 'maxBid' | 'bidStrategy' | 'lastMatchedAt'>;
    const cpm = {
      ...base,
      id: 'cmp_cpm',
      seq: 1,
      maxBid: 2_000_000n,
      bidStrategy: 'cpm' as const,
      lastMatchedAt: null,
    };
    const cpa = { ...base, id: 'cmp_cpa', seq: 2, maxBid: 300_000n, bidStrategy: 'cpa' as const, lastMatchedAt: null };
    const settled = { resourceUrl: 'http://seller.example/api', network: SOLANA_DEVNET };
    const facts = { category: null, transport: 'http' as const };
    // cpm 2.00 per 1000 = 2000 per delivery; cpa 0.30 at 1 % = 3000 per delivery
    expect(pickCampaign([cpm, cpa], settled, facts, now)?.id).toBe('cmp_cpa');
    const tie = {
      ...cpm,
      id: 'cmp_tie',
      seq: 3,
      maxBid: 3_000_000n,
      lastMatchedAt: new Date('2026-03-02T11:00:00.000Z'),
    };
    const served = { ...cpa, lastMatchedAt: new Date('2026-03-02T11:30:00.000Z') };
    expect(pickCampaign([served, tie], settled, facts, now)?.id).toBe('cmp_tie');
    // unfunded, over today's budget, or its own resource: not eligible
    expect(pickCampaign([{ ...cpa, funded: 0n }], settled, facts, now)).toBeUndefined();
    expect(pickCampaign([{ ...cpa, spentToday: 10_000_000n }], settled, facts, now)).toBeUndefined();
    expect(pickCampaign([cpa], { ...settled, resourceUrl: 'http://rec.example/x' }, facts, now)).toBeUndefined();
  });
});
