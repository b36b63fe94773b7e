import { describe, expect, it } from 'vitest';
import { ruleMediator, weigh } from '../../servers/src/services/escrow/mediator';

describe('rule engine', () => {
  const investigation = (over: Record<string, unknown> = {}) => ({
    status: 'complete' as const,
    scans: [],
    reputation: { buyer: null, seller: null },
    milestonesDelivered: 1,
    milestonesDisputed: 1,
    deliveredBeforeTimeout: true,
    observations: [],
    leaning: 'neutral' as const,
    unavailable: [],
    generator: { engine: 'builtin' as const, model: 'builtin-rules-v1' },
    updatedAt: new Date().toISOString(),
    ...over,
  });
  it('refunds what was never delivered', () => {
    const out = ruleMediator({
      terms: null,
      termWords: [],
      milestones: [{ id: 'm1', amount: '1', delivered: false, wordCount: 0, contentWords: [] }],
      statements: [],
      investigation: investigation({ milestonesDelivered: 0, deliveredBeforeTimeout: null }),
    });
    expect(out.sellerPercent).toBe(0);
  });
  it('splits in proportion when the facts disagree', () => {
    const input = {
      terms: 'chunking embedding retrieval evaluation',
      termWords: ['chunking', 'embedding', 'retrieval', 'evaluation'],
      milestones: [{ id: 'm1', amount: '1', delivered: true, wordCount: 500, contentWords: ['chunking', 'embedding'] }],
      statements: [],
      investigation: investigation({
        scans: [
          {
            scanId: 'scn_x',
            milestoneId: 'm1',
            score: 40,
            verdict: 'fail',
            findingCount: 3,
            highestSeverity: 'medium',
            plagiarismSimilarity: 0,
            certificateId: null,
          },
        ],
      }),
    };
    // delivery +0.2, terms 50 % covered +0.5, quality fail −0.6, on time +0.1: (0.2 + 0.5 − 0.6 + 0.1) / 1.4.
    expect(weigh(input).score).toBeCloseTo(0.2 / 1.4, 6);
    expect(ruleMediator(input).sellerPercent).toBe(57);
  });
});
