import { describe, expect, it } from 'vitest';
import { percentile, summarize } from '../../servers/src/services/gateway/prober';
import { candidateOf, defaultOffer, rankSearch, recommend } from '../../servers/src/services/gateway/domain';

describe('domain', () => {
  it('normalises BM25 per type and weighs partial matches by the share of terms', () => {
    const mk = (type: 'module' | 'agent', id: string, text: string) => ({
      type,
      id,
      text,
      snippetFrom: [text],
      hit: (score: number, snippet: string) => ({ type, id, title: id, snippet, score }) as never,
    });
    const hits = rankSearch('priority fees', [
      mk('module', 'a', 'priority fees explained'),
      mk('module', 'b', 'fees only'),
      mk('agent', 'c', 'priority'),
    ]);
    expect(hits.map((h: { id: string; score: number }) => [h.id, h.score])).toEqual([
      ['a', 1],
      ['c', 0.5],
      ['b', expect.any(Number)],
    ]);
    expect((hits[2] as unknown as { score: number }).score).toBeLessThan(0.5);
  });

  it('scores recommendations and candidates as their formulas say', () => {
    const module = {
      id: 'mod_1',
      title: 't',
      description: 'd',
      tags: ['solana'],
      capabilities: ['fee-estimation', 'x'],
      seller: { wallet: 'S', name: null },
      priceUsd: '0.5',
      negotiation: { mode: 'auto', maxDiscountPercent: 20, floorUsd: '0.4' },
      rating: { average: 4, count: 2 },
    } as never;
    // 0.6 × 1/2 + 0.2 × 1/1 + 0.2 × 4/5 = 0.66
    expect(
      recommend(
        { wallet: 'B', capabilities: ['fee-estimation', 'mev'], interests: ['solana'] },
        [module],
        () => true,
      )[0]!.score,
    ).toBe(0.66);
    // 0.5 × 0.8 + 0.2 × 1 + 0.15 × 0.8 + 0.15 × 0.5 (unknown score) = 0.795
    expect(
      candidateOf({ module, text: 0.8, sellerScore: null, certificate: null }, ['fee-estimation']).matchScore,
    ).toBe(0.795);
    expect(defaultOffer('0.5', '1')).toBe('0.4');
    expect(defaultOffer('0.5', '0.3')).toBe('0.3');
    expect(defaultOffer('0.333333', '1')).toBe('0.266667');
  });

  it('summarises probes: nearest-rank percentiles, availability, status', () => {
    expect(percentile([10, 20, 30, 40], 50)).toBe(20);
    expect(percentile([10, 20, 30, 40], 95)).toBe(40);
    const at = (i: number, ok: boolean, ms: number) => ({
      service: 'reputation',
      checkedAt: new Date(i * 30_000),
      ok,
      responseMs: ok ? ms : null,
      uptimeSeconds: ok ? i : null,
      error: ok ? null : 'down',
    });
    const h = summarize({ id: 'reputation', title: 'R', url: 'u' }, [
      at(1, true, 10),
      at(2, false, 0),
      at(3, true, 30),
    ]);
    expect(h).toMatchObject({
      status: 'degraded',
      availabilityPercent: 66.67,
      checks: 3,
      responseTimeMs: { last: 30, p50: 10, p95: 30 },
      uptimeSeconds: 3,
      lastError: 'down',
    });
    expect(summarize({ id: 'reputation', title: 'R', url: 'u' }, [at(1, true, 10), at(2, false, 0)]).status).toBe(
      'down',
    );
  });
});
