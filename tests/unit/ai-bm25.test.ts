import { describe, expect, it } from 'vitest';
import { Bm25Index, sentences, tokenize } from '../../servers/src/ai';

describe('BM25', () => {
  const index = new Bm25Index([
    { doc: 'd0', text: 'cat sat mat' },
    { doc: 'd1', text: 'dog sat log' },
    { doc: 'd2', text: 'cat cat dog' },
  ]);

  it('scores by the Okapi formula (k1 1.2, b 0.75)', () => {
    // idf(cat) = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln 1.6; all lengths equal the average, so the norm is k1.
    const idf = Math.log(1.6);
    const hits = index.search('cat');
    expect(hits.map((h) => h.doc)).toEqual(['d2', 'd0']);
    expect(hits[0]!.score).toBeCloseTo(idf * ((2 * 2.2) / (2 + 1.2)), 10);
    expect(hits[1]!.score).toBeCloseTo(idf * ((1 * 2.2) / (1 + 1.2)), 10);
    expect(index.search('cat dog')[0]).toMatchObject({ doc: 'd2', matched: ['cat', 'dog'] });
    expect(index.search('unicorn')).toEqual([]);
  });

  it('tokenizes with stopwords removed and light stemming', () => {
    expect(tokenize('The agents are stopping; finishes loops, queries and retries!')).toEqual([
      'agent',
      'stop',
      'finish',
      'loop',
      'query',
      'retry',
    ]);
    expect(sentences('One two. Three four?\n\nFive six.')).toEqual(['One two.', 'Three four?', 'Five six.']);
  });
});
