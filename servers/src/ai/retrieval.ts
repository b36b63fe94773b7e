// Lexical retrieval for grounding AI outputs in source material: BM25 over small document sets.

const STOPWORDS = new Set(
  (
    'a an and are as at be but by can do does for from how i if in into is it its me my no not of on or our should so ' +
    'than that the their them then there these they this to was we what when where which while who why will with you your ' +
    'about after all also any because been before being both did each few further had has have having he her here hers him ' +
    'his more most much must nor now off once only other out over own same she some such through too under until up very ' +
    'were would yours'
  ).split(' '),
);

/**
 * Light suffix stripping so "agents", "stopping" and "finishes" meet "agent", "stop", "finish"; not a full Porter
 * stemmer.
 */
function stem(word: string): string {
  // "stopping" -> "stopp" -> "stop"; keeps "ll", "ss" and "zz", which English doubles in the base word too.
  const undouble = (w: string) => (/([^aeioulsz])\1$/.test(w) ? w.slice(0, -1) : w);
  if (word.length > 4 && word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.length > 5 && word.endsWith('ing')) return undouble(word.slice(0, -3));
  if (word.length > 4 && word.endsWith('ed')) return undouble(word.slice(0, -2));
  if (word.length > 4 && /(sh|ch|x|ss|z)es$/.test(word)) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

export function tokenize(text: string): string[] {
  return (text.toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((w) => !STOPWORDS.has(w)).map(stem);
}

export interface Hit<D> {
  doc: D;
  score: number;
  /** Distinct query terms found in the document. */
  matched: string[];
}

/** Okapi BM25 (k1 = 1.2, b = 0.75 by default) with the non-negative idf ln(1 + (N - n + 0.5) / (n + 0.5)). */
export class Bm25Index<D> {
  private readonly docs: { doc: D; tf: Map<string, number>; length: number }[];
  private readonly df = new Map<string, number>();
  private readonly avgLength: number;

  constructor(
    entries: { doc: D; text: string }[],
    private readonly k1 = 1.2,
    private readonly b = 0.75,
    /**
     * How texts and queries become terms (default `tokenize`); a caller may normalize further, the same way for both.
     */
    private readonly terms: (text: string) => string[] = tokenize,
  ) {
    this.docs = entries.map(({ doc, text }) => {
      const tokens = this.terms(text);
      const tf = new Map<string, number>();
      for (const t of tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
      for (const t of tf.keys()) this.df.set(t, (this.df.get(t) ?? 0) + 1);
      return { doc, tf, length: tokens.length };
    });
    this.avgLength = this.docs.reduce((sum, d) => sum + d.length, 0) / Math.max(1, this.docs.length);
  }

  idf(term: string): number {
    const n = this.df.get(term) ?? 0;
    return Math.log(1 + (this.docs.length - n + 0.5) / (n + 0.5));
  }

  /** Query terms (distinct, stemmed) that occur somewhere in the index. */
  knownTerms(query: string): string[] {
    return [...new Set(this.terms(query))].filter((t) => this.df.has(t));
  }

  search(query: string, limit = 10, filter?: (doc: D) => boolean): Hit<D>[] {
    const terms = [...new Set(this.terms(query))];
    const hits: Hit<D>[] = [];
    for (const entry of this.docs) {
      if (filter && !filter(entry.doc)) continue;
      let score = 0;
      const matched: string[] = [];
      for (const term of terms) {
        const f = entry.tf.get(term);
        if (!f) continue;
        matched.push(term);
        const norm = this.k1 * (1 - this.b + (this.b * entry.length) / this.avgLength);
        score += this.idf(term) * ((f * (this.k1 + 1)) / (f + norm));
      }
      if (score > 0) hits.push({ doc: entry.doc, score, matched });
    }
    return hits.sort((a, b) => b.score - a.score).slice(0, limit);
  }
}

/** Splits prose into sentences, keeping code-free text only. */
export function sentences(text: string): string[] {
  return text
    .split(/\n\s*\n/)
    .flatMap((paragraph) =>
      paragraph
        .replace(/\s+/g, ' ')
        .trim()
        .split(/(?<=[.!?])\s+(?=[A-Z0-9"'(`])/),
    )
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}
