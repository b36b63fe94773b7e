import { createHash } from 'node:crypto';
import type {
  ScanCheck,
  ScanFinding,
  ScanFindingSeverity,
  ScanPlagiarismCheck,
  ScanQualityCheck,
  ScanResult,
  ScanSafetyCheck,
  ScanVerdict,
  ScannableContentInput,
  VerificationCertificateStatus,
} from '@agent-economy/contracts';
import { excerptOf, findSafetyHits, type SafetyKind } from './safety';

// The scan as plain functions over the content. Formulas (the contract fixes the weights and the verdict):
//   quality    = length 30 × min(1, words / 150) + sections 15 × min(1, sections / 3) + examples 5
//                + readability 25 × clamp(Flesch / 60, 0, 1) (10 without prose) + repetition 25 × (1 − min(1, 2 ×
// duplicate ratio))
//   safety     = 100 − Σ severity penalty (critical 50, high 25, medium 10, low 3), at least 0
//   plagiarism = 100 × (1 − highest Jaccard similarity of 5-word shingles to an earlier scan)
//   score      = (40 × quality + 35 × safety + 25 × plagiarism) / (sum of the weights of the checks run)
//   verdict    = pass at 70+ without high/critical findings, warn at 50+ without critical ones, else fail

export const CHECK_WEIGHTS: Record<ScanCheck, number> = { quality: 40, safety: 35, plagiarism: 25 };
export const SEVERITY_PENALTY: Record<ScanFindingSeverity, number> = {
  critical: 50,
  high: 25,
  medium: 10,
  low: 3,
  info: 0,
};
export const QUALITY_PASS = 60;
export const SAFETY_PASS = 70;
export const SHINGLE_WORDS = 5;
export const MATCH_THRESHOLD = 0.2;
const LARGE_CONTENT_BYTES = 50_000;

export const round = (value: number, places = 2) => {
  const f = 10 ** places;
  return Math.round(value * f) / f;
};

const WORD = /[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*/gu;
export const wordsOf = (text: string): string[] => text.match(WORD) ?? [];

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The JSON body's parse error, or undefined when it parses (only for format "json"). */
export function jsonProblem(content: Pick<ScannableContentInput, 'format' | 'body'>): string | undefined {
  if (content.format !== 'json') return undefined;
  try {
    JSON.parse(content.body);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * Syllables of an English word: groups of vowels (y counts), less a silent final "e" (not "-le"), at least one.
 * Words without Latin letters (numbers) count one.
 */
export function syllables(word: string): number {
  const w = word.toLowerCase().replace(/[^a-z]/g, '');
  if (!w) return 1;
  let count = (w.match(/[aeiouy]+/g) ?? []).length;
  if (count > 1 && w.endsWith('e') && !w.endsWith('le') && !/[aeiouy]e$/.test(w)) count -= 1;
  return Math.max(1, count);
}

/** Flesch reading ease: 206.835 − 1.015 × words per sentence − 84.6 × syllables per word. */
export function fleschReadingEase(words: number, sentences: number, syllableCount: number): number {
  return 206.835 - 1.015 * (words / sentences) - 84.6 * (syllableCount / words);
}

interface Structure {
  lines: string[];
  /** Per line: inside a fenced code block (fence lines included). */
  inCode: boolean[];
  sectionCount: number;
  codeBlockCount: number;
  /** Prose units (paragraphs, list items, JSON strings, comment blocks) whose sentences are measured. */
  prose: string[];
  unclosedFenceLine: number | null;
}

const FENCE = /^\s{0,3}(`{3,}|~{3,})/;
const HEADING = /^\s{0,3}#{1,6}\s+\S/;
const LIST_ITEM = /^\s*(?:[-*+]|\d+[.)])\s+/;
const DECLARATION =
  /^(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:function|class|interface|type|enum|const|let|var|def|fn|func|struct|impl|trait|module|package|pub\s+fn)\b/;
const COMMENT = /^\s*(?:\/\/+|#+(?!!)|\/\*+|\*+\/?|--|""")\s?/;

/** Markdown inline markup removed, so prose measures the words a reader reads. */
function plainInline(line: string): string {
  return line
    .replace(/!\[[^\]]{0,300}\]\([^)]{0,500}\)/g, ' ')
    .replace(/\[([^\]]{0,300})\]\([^)]{0,500}\)/g, '$1')
    .replace(/`[^`]*`/g, ' ')
    .replace(/https?:\/\/\S{1,2000}/g, ' ')
    .replace(/[*_~]+/g, '')
    .replace(/^\s*>\s?/, '')
    .replace(LIST_ITEM, '');
}

/** String values of at least three words, in document order (iterative: nesting depth is the sender's choice). */
function collectJsonStrings(root: unknown, out: string[]): void {
  const stack: unknown[] = [root];
  while (stack.length) {
    const value = stack.pop();
    if (typeof value === 'string') {
      if (wordsOf(value).length >= 3) out.push(value);
    } else if (value && typeof value === 'object') {
      const items = Array.isArray(value) ? value : Object.values(value);
      for (let i = items.length - 1; i >= 0; i--) stack.push(items[i]);
    }
  }
}

export function analyzeStructure(content: Pick<ScannableContentInput, 'format' | 'body'>): Structure {
  const lines = content.body.split(/\r?\n/);
  const inCode = lines.map(() => false);
  const prose: string[] = [];
  let sectionCount = 0;
  let codeBlockCount = 0;
  let unclosedFenceLine: number | null = null;
  // A paragraph of consecutive prose lines; a blank line, a heading, code or a new list item ends it.
  let paragraph: string[] = [];
  const flush = () => {
    if (paragraph.length) prose.push(paragraph.join(' '));
    paragraph = [];
  };

  if (content.format === 'markdown') {
    let fence: string | null = null;
    lines.forEach((line, i) => {
      const f = FENCE.exec(line);
      if (fence) {
        inCode[i] = true;
        if (f && f[1]![0] === fence[0] && f[1]!.length >= fence.length && line.trim() === f[1]) fence = null;
        return;
      }
      if (f) {
        flush();
        fence = f[1]!;
        inCode[i] = true;
        codeBlockCount += 1;
        unclosedFenceLine = i + 1;
        return;
      }
      if (!line.trim() || /^\s*\|?\s*:?-{3,}/.test(line)) return flush();
      if (HEADING.test(line)) {
        flush();
        sectionCount += 1;
        return;
      }
      if (LIST_ITEM.test(line)) flush();
      const text = plainInline(line).trim();
      if (wordsOf(text).length) paragraph.push(text);
    });
    flush();
    if (!fence) unclosedFenceLine = null;
  } else if (content.format === 'text') {
    for (const line of lines) {
      if (!line.trim()) flush();
      else paragraph.push(line.trim());
    }
    flush();
    sectionCount = prose.length;
  } else if (content.format === 'json') {
    const value = JSON.parse(content.body) as unknown;
    sectionCount = Array.isArray(value)
      ? value.length
      : value && typeof value === 'object'
        ? Object.keys(value).length
        : 0;
    collectJsonStrings(value, prose);
  } else {
    codeBlockCount = 1;
    for (const line of lines) {
      if (DECLARATION.test(line)) sectionCount += 1;
      if (COMMENT.test(line)) {
        const text = line
          .replace(COMMENT, '')
          .replace(/\*\/\s*$/, '')
          .trim();
        if (wordsOf(text).length) paragraph.push(text);
        else flush();
      } else flush();
    }
    flush();
    inCode.fill(true);
  }
  return { lines, inCode, sectionCount, codeBlockCount, prose, unclosedFenceLine };
}

/** Sentences of the prose units: split after . ! or ? followed by a space; a unit without one is one sentence. */
export function sentencesOf(prose: readonly string[]): string[][] {
  const sentences: string[][] = [];
  for (const unit of prose) {
    for (const piece of unit.split(/(?<=[.!?])\s+/)) {
      const words = wordsOf(piece);
      if (words.length) sentences.push(words);
    }
  }
  return sentences;
}

/** Share of meaningful lines (3 words or more) that repeat an earlier line, after trimming. */
export function duplicateLineRatio(lines: readonly string[]): number {
  const meaningful = lines.map((l) => l.trim()).filter((l) => wordsOf(l).length >= 3);
  if (!meaningful.length) return 0;
  return (meaningful.length - new Set(meaningful).size) / meaningful.length;
}

export interface DraftFinding {
  check: ScanCheck;
  severity: ScanFindingSeverity;
  code: string;
  message: string;
  line: number | null;
  excerpt: string | null;
}

export function qualityCheck(
  content: ScannableContentInput,
  sizeBytes: number,
): { check: ScanQualityCheck; findings: DraftFinding[] } {
  const s = analyzeStructure(content);
  const wordCount = wordsOf(content.body).length;
  const sentences = sentencesOf(s.prose);
  const proseWords = sentences.reduce((n, words) => n + words.length, 0);
  const syllableCount = sentences.reduce((n, words) => n + words.reduce((m, w) => m + syllables(w), 0), 0);
  const readability = proseWords ? round(fleschReadingEase(proseWords, sentences.length, syllableCount)) : null;
  const averageSentenceWords = sentences.length ? round(proseWords / sentences.length) : 0;
  const duplicates = round(duplicateLineRatio(s.lines), 4);
  const hasExamples = s.codeBlockCount > 0 || content.format === 'json';

  const score = round(
    30 * Math.min(1, wordCount / 150) +
      15 * Math.min(1, s.sectionCount / 3) +
      (hasExamples ? 5 : 0) +
      (readability === null ? 10 : 25 * Math.min(1, Math.max(0, readability / 60))) +
      25 * (1 - Math.min(1, 2 * duplicates)),
  );

  const findings: DraftFinding[] = [];
  const add = (
    severity: ScanFindingSeverity,
    code: string,
    message: string,
    line: number | null = null,
    excerpt: string | null = null,
  ) => findings.push({ check: 'quality', severity, code, message, line, excerpt });
  if (wordCount < 50)
    add('medium', 'too_short', `Only ${wordCount} words: a module needs at least 50 to teach anything`);
  if (s.unclosedFenceLine !== null)
    add(
      'medium',
      'unclosed_code_fence',
      'A code block is opened and never closed',
      s.unclosedFenceLine,
      excerptOf(s.lines[s.unclosedFenceLine - 1]!),
    );
  if (content.format === 'markdown' && s.sectionCount === 0)
    add('low', 'no_sections', 'No headings: the module has no sections to navigate');
  if (readability !== null && readability < 30)
    add('low', 'hard_to_read', `Flesch reading ease ${readability}: very hard to read`);
  if (averageSentenceWords > 30) add('low', 'long_sentences', `Sentences average ${averageSentenceWords} words`);
  if (duplicates > 0.2)
    add('medium', 'repeated_lines', `${Math.round(duplicates * 100)}% of the lines repeat earlier ones`);
  if (sizeBytes > LARGE_CONTENT_BYTES)
    add('info', 'large_content', `${sizeBytes} bytes: large modules cost readers context`);

  return {
    check: {
      score,
      passed: score >= QUALITY_PASS,
      wordCount,
      sectionCount: s.sectionCount,
      codeBlockCount: s.codeBlockCount,
      averageSentenceWords,
      readability,
      duplicateLineRatio: duplicates,
    },
    findings,
  };
}

const SAFETY_COUNTERS: Record<
  SafetyKind,
  keyof Pick<ScanSafetyCheck, 'secrets' | 'promptInjections' | 'dangerousCommands' | 'personalData'>
> = {
  secrets: 'secrets',
  promptInjections: 'promptInjections',
  dangerousCommands: 'dangerousCommands',
  personalData: 'personalData',
};

export function safetyCheck(body: string): { check: ScanSafetyCheck; findings: DraftFinding[] } {
  const hits = findSafetyHits(body);
  // 1-based line of an offset: count the newlines before it.
  const lineStarts = [0];
  for (let i = 0; i < body.length; i++) if (body[i] === '\n') lineStarts.push(i + 1);
  const lineOf = (index: number) => {
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid]! <= index) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
  const counts = { secrets: 0, promptInjections: 0, dangerousCommands: 0, personalData: 0 };
  for (const hit of hits) counts[SAFETY_COUNTERS[hit.kind]] += 1;
  const findings = hits.map((hit) => ({
    check: 'safety' as const,
    severity: hit.severity,
    code: hit.code,
    message: hit.message,
    line: lineOf(hit.index),
    excerpt: hit.excerpt,
  }));
  const score = Math.max(0, 100 - findings.reduce((sum, f) => sum + SEVERITY_PENALTY[f.severity], 0));
  const blocking = findings.some((f) => f.severity === 'high' || f.severity === 'critical');
  return { check: { score, passed: score >= SAFETY_PASS && !blocking, ...counts }, findings };
}

/**
 * The content's 5-word shingles (lowercased words), each as 48 bits of its SHA-256 in hex; content under five
 * words is one shingle of all of them. Hashing keeps the stored sets small; collisions are negligible at this size.
 */
export function shingles(body: string): string[] {
  const words = wordsOf(body.toLowerCase());
  if (!words.length) return [];
  const set = new Set<string>();
  const n = Math.min(SHINGLE_WORDS, words.length);
  for (let i = 0; i + n <= words.length; i++)
    set.add(
      createHash('sha256')
        .update(words.slice(i, i + n).join(' '))
        .digest('hex')
        .slice(0, 12),
    );
  return [...set];
}

export function jaccard(a: ReadonlySet<string>, b: readonly string[]): number {
  if (!a.size && !b.length) return 0;
  let common = 0;
  for (const s of b) if (a.has(s)) common += 1;
  return common / (a.size + b.length - common);
}

/** An earlier scan as the plagiarism check sees it. */
export interface EarlierScan extends Pick<ScanResult, 'moduleId' | 'title' | 'contentHash' | 'holder'> {
  scanId: string;
  certificateId: string | null;
  shingles: string[];
  scannedAt: Date;
  /** The market's publication time of the module the scan was bound to, else null. */
  publishedAt: Date | null;
}

/** One work as the plagiarism check dates it: its module (if bound), its content and its holder. */
interface Work {
  moduleId: string | null;
  contentHash: string;
  holder: string | null;
}

/** The same work: the same module, or the same content under the same holder (a seller rescanning what it scanned). */
const sameWork = (a: Work, b: Work) =>
  (!!a.moduleId && a.moduleId === b.moduleId) || (a.contentHash === b.contentHash && a.holder === b.holder);

/**
 * When each work was first published: the market's publication time of its module, or its earliest scan, whichever is
 * earlier (`at` for a work never seen before). One pass over the scans, then a lookup per work.
 */
export function publicationDates(
  scans: readonly EarlierScan[],
  at: Date,
): (work: Work & { publishedAt?: Date | null }) => number {
  const byModule = new Map<string, number>();
  const byContent = new Map<string, number>();
  const keep = (map: Map<string, number>, key: string, t: number) =>
    map.set(key, Math.min(map.get(key) ?? Infinity, t));
  for (const e of scans) {
    const t = Math.min(e.scannedAt.getTime(), e.publishedAt?.getTime() ?? Infinity);
    if (e.moduleId) keep(byModule, e.moduleId, t);
    keep(byContent, `${e.contentHash}:${e.holder ?? ''}`, t);
  }
  return (work) =>
    Math.min(
      at.getTime(),
      work.publishedAt?.getTime() ?? Infinity,
      (work.moduleId && byModule.get(work.moduleId)) || Infinity,
      byContent.get(`${work.contentHash}:${work.holder ?? ''}`) ?? Infinity,
    );
}

/**
 * Similarity to the earlier scans of other works that were published no later than this one: plagiarism is judged by
 * first publication (the market's publication time, else the earliest scan of the work), not by scan order, so an
 * author scanning after a copier is not flagged for the copier's scan. Scans of the same work are never compared.
 */
export function plagiarismCheck(
  own: {
    shingles: string[];
    moduleId: string | null;
    contentHash: string;
    holder: string | null;
    publishedAt?: Date | null;
  },
  earlier: readonly EarlierScan[],
  at: Date,
): { check: ScanPlagiarismCheck; findings: DraftFinding[] } {
  const mine = new Set(own.shingles);
  const firstPublished = publicationDates(earlier, at);
  const ownFirst = firstPublished(own);
  const compared = earlier.filter((e) => !sameWork(own, e) && e.shingles.length && firstPublished(e) <= ownFirst);
  const scored = compared
    .map((e) => ({
      scanId: e.scanId,
      certificateId: e.certificateId,
      moduleId: e.moduleId,
      title: e.title,
      similarity: round(jaccard(mine, e.shingles), 4),
    }))
    .sort((a, b) => b.similarity - a.similarity || (a.scanId < b.scanId ? -1 : 1));
  const maxSimilarity = scored[0]?.similarity ?? 0;
  const matches = scored.filter((m) => m.similarity >= MATCH_THRESHOLD).slice(0, 5);
  const findings: DraftFinding[] = [];
  const top = matches[0];
  if (top) {
    const [severity, code] =
      top.similarity >= 0.8
        ? (['high', 'near_duplicate'] as const)
        : top.similarity >= 0.5
          ? (['medium', 'substantial_overlap'] as const)
          : (['low', 'partial_overlap'] as const);
    findings.push({
      check: 'plagiarism',
      severity,
      code,
      message: `${Math.round(top.similarity * 100)}% of the 5-word shingles are shared with "${top.title}" (scan ${top.scanId})`,
      line: null,
      excerpt: null,
    });
  }
  const score = round(100 * (1 - maxSimilarity));
  return {
    check: { score, passed: maxSimilarity < 0.5, maxSimilarity, comparedAgainst: compared.length, matches },
    findings,
  };
}

export function overallScore(scores: Partial<Record<ScanCheck, number>>): number {
  let weight = 0;
  let sum = 0;
  for (const check of Object.keys(CHECK_WEIGHTS) as ScanCheck[]) {
    const score = scores[check];
    if (score === undefined) continue;
    weight += CHECK_WEIGHTS[check];
    sum += CHECK_WEIGHTS[check] * score;
  }
  return weight ? round(sum / weight) : 0;
}

export function verdictOf(score: number, findings: readonly Pick<ScanFinding, 'severity'>[]): ScanVerdict {
  const critical = findings.some((f) => f.severity === 'critical');
  const high = findings.some((f) => f.severity === 'high');
  if (score >= 70 && !critical && !high) return 'pass';
  if (score >= 50 && !critical) return 'warn';
  return 'fail';
}

/** Why a certificate was or was not issued; `issue` says whether to issue one. */
export function certificationDecision(
  checks: readonly ScanCheck[],
  verdict: ScanVerdict,
  certify: boolean,
  score: number,
): { issue: boolean; reason: string } {
  if (!certify) return { issue: false, reason: 'Not requested (certify: false)' };
  const missing = (Object.keys(CHECK_WEIGHTS) as ScanCheck[]).filter((c) => !checks.includes(c));
  if (missing.length)
    return { issue: false, reason: `A certificate needs all three checks; ${missing.join(' and ')} did not run` };
  if (verdict !== 'pass')
    return { issue: false, reason: `The verdict is ${verdict} (score ${score}); only a pass is certified` };
  return { issue: true, reason: `All three checks ran and the content passed with score ${score}` };
}

/** The scan of one content against the earlier scans, without its id or certificate. */
export function scanContent(
  input: {
    content: ScannableContentInput;
    moduleId: string | null;
    holder: string | null;
    checks: readonly ScanCheck[];
    publishedAt?: Date | null;
  },
  earlier: readonly EarlierScan[],
  at: Date,
) {
  const { content } = input;
  const sizeBytes = Buffer.byteLength(content.body, 'utf8');
  const contentHash = sha256Hex(content.body);
  const ownShingles = shingles(content.body);
  const ran = (Object.keys(CHECK_WEIGHTS) as ScanCheck[]).filter((c) => input.checks.includes(c));
  const quality = ran.includes('quality') ? qualityCheck(content, sizeBytes) : null;
  const safety = ran.includes('safety') ? safetyCheck(content.body) : null;
  const plagiarism = ran.includes('plagiarism')
    ? plagiarismCheck(
        {
          shingles: ownShingles,
          moduleId: input.moduleId,
          contentHash,
          holder: input.holder,
          publishedAt: input.publishedAt ?? null,
        },
        earlier,
        at,
      )
    : null;
  const drafts = [...(quality?.findings ?? []), ...(safety?.findings ?? []), ...(plagiarism?.findings ?? [])];
  const findings: ScanFinding[] = drafts.map((f, i) => ({ id: `f${i + 1}`, ...f }));
  const score = overallScore({
    quality: quality?.check.score,
    safety: safety?.check.score,
    plagiarism: plagiarism?.check.score,
  });
  return {
    contentHash,
    sizeBytes,
    shingles: ownShingles,
    checks: ran,
    quality: quality?.check ?? null,
    safety: safety?.check ?? null,
    plagiarism: plagiarism?.check ?? null,
    findings,
    score,
    verdict: verdictOf(score, findings),
  };
}

/** The exact text a certificate's proof signs: its fields as JSON with sorted keys and no spaces. */
export function canonicalPayload(fields: {
  id: string;
  scanId: string;
  contentHash: string;
  score: number;
  holder: string | null;
  issuedAt: string;
  expiresAt: string;
}): string {
  const sorted = Object.fromEntries(Object.entries(fields).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return JSON.stringify(sorted);
}

export function certificateStatus(
  c: { revokedAt: Date | null; expiresAt: Date },
  now: Date,
): VerificationCertificateStatus {
  if (c.revokedAt) return 'revoked';
  return c.expiresAt.getTime() <= now.getTime() ? 'expired' : 'valid';
}

/** One year after `issuedAt` (the same date and time next year; 29 February falls to 1 March). */
export function oneYearAfter(issuedAt: Date): Date {
  const d = new Date(issuedAt.getTime());
  d.setUTCFullYear(d.getUTCFullYear() + 1);
  return d;
}
