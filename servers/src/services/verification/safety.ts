import { createHash } from 'node:crypto';
import { base58Decode } from '@agent-economy/contracts';
import type { ScanFindingSeverity } from '@agent-economy/contracts';
import { walletFromSecretKey } from '../../solana/keys';
import { BIP39_ENGLISH } from './bip39-english';

// The safety rules: secrets, prompt injections, dangerous commands and personal data, each a pattern plus,
// where a pattern alone would cry wolf, a check of what it matched (entropy, a checksum, a key pair that
// really pairs). Every rule scans the whole body, so a match may span lines; findings point at its first line.

export type SafetyKind = 'secrets' | 'promptInjections' | 'dangerousCommands' | 'personalData';

export interface SafetyHit {
  kind: SafetyKind;
  code: string;
  severity: ScanFindingSeverity;
  message: string;
  index: number;
  length: number;
  excerpt: string;
}

interface Rule {
  kind: SafetyKind;
  code: string;
  severity: ScanFindingSeverity;
  message: string;
  pattern: RegExp;
  /** Decides whether a match is real (default: every match is). */
  accept?: (match: RegExpExecArray) => boolean;
  /** Secrets and personal data are masked in the excerpt. */
  mask?: boolean;
  /** The excerpt, where the matched text itself would not show what was found. */
  excerpt?: (text: string) => string;
}

/** Shannon entropy of a string, in bits per character. */
export function shannonEntropy(text: string): number {
  if (!text) return 0;
  const counts = new Map<string, number>();
  for (const ch of text) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  const n = [...text].length;
  let bits = 0;
  for (const c of counts.values()) bits -= (c / n) * Math.log2(c / n);
  return bits;
}

/** Luhn checksum of a digit string (payment card numbers). */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return digits.length > 0 && sum % 10 === 0;
}

const BIP39_INDEX = new Map(BIP39_ENGLISH.map((word, i) => [word, i]));

/**
 * Whether `words` form a valid BIP-39 mnemonic: 12 to 24 words (a multiple of 3) from the English list whose
 * trailing bits are the first bits of the SHA-256 of the entropy they encode.
 */
export function validMnemonic(words: readonly string[]): boolean {
  if (words.length < 12 || words.length > 24 || words.length % 3 !== 0) return false;
  let bits = '';
  for (const word of words) {
    const index = BIP39_INDEX.get(word);
    if (index === undefined) return false;
    bits += index.toString(2).padStart(11, '0');
  }
  const checksumBits = words.length / 3;
  const entropyBits = bits.length - checksumBits;
  const entropy = Buffer.alloc(entropyBits / 8);
  for (let i = 0; i < entropy.length; i++) entropy[i] = parseInt(bits.slice(i * 8, i * 8 + 8), 2);
  const hash = createHash('sha256').update(entropy).digest();
  const expected = [...hash]
    .map((b) => b.toString(2).padStart(8, '0'))
    .join('')
    .slice(0, checksumBits);
  return expected === bits.slice(entropyBits);
}

/** Whether 64 bytes are a Solana key pair: a seed followed by the public key that seed derives. */
function isKeypair(bytes: Uint8Array | undefined): boolean {
  if (!bytes || bytes.length !== 64) return false;
  try {
    walletFromSecretKey(bytes);
    return true;
  } catch {
    return false;
  }
}

const PLACEHOLDER =
  /^(?:<[^>]*>|\$\{[^}]*\}|\$[A-Z_][A-Z0-9_]*|\{\{[^}]*\}\})$|your|example|sample|placeholder|changeme|redacted|dummy|xxxx|test[-_]|0123456|abcdef|\*\*\*\*|\.\.\.|process\.env|os\.environ|getenv/i;

/** A value assigned to a key-like name that looks like a real credential: long, mixed, random enough. */
function credentialLike(value: string): boolean {
  return (
    value.length >= 12 &&
    /[A-Za-z]/.test(value) &&
    /\d/.test(value) &&
    !/[()]/.test(value) &&
    !PLACEHOLDER.test(value) &&
    shannonEntropy(value) >= 3.5
  );
}

const RESERVED_MAIL_DOMAIN = /(?:^|\.)(?:example\.(?:com|net|org)|example|test|invalid|localhost)$/i;

const rules: Rule[] = [
  // Secrets
  {
    kind: 'secrets',
    code: 'secret_private_key',
    severity: 'critical',
    message: 'A PEM private key block',
    pattern: /-----BEGIN (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----/g,
    mask: true,
  },
  {
    kind: 'secrets',
    code: 'secret_aws_access_key',
    severity: 'critical',
    message: 'An AWS access key id',
    pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
    mask: true,
  },
  {
    kind: 'secrets',
    code: 'secret_github_token',
    severity: 'critical',
    message: 'A GitHub token',
    pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})\b/g,
    mask: true,
  },
  {
    kind: 'secrets',
    code: 'secret_slack_token',
    severity: 'critical',
    message: 'A Slack token',
    pattern: /\bxox[baprs]-[A-Za-z0-9-]{10,250}/g,
    mask: true,
  },
  {
    kind: 'secrets',
    code: 'secret_stripe_key',
    severity: 'critical',
    message: 'A live Stripe secret key',
    pattern: /\b[sr]k_live_[A-Za-z0-9]{20,250}/g,
    mask: true,
  },
  {
    kind: 'secrets',
    code: 'secret_google_api_key',
    severity: 'critical',
    message: 'A Google API key',
    pattern: /\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])/g,
    mask: true,
  },
  {
    kind: 'secrets',
    code: 'secret_api_key',
    severity: 'critical',
    message: 'An LLM provider API key (sk-…)',
    pattern: /\bsk-(?:proj-|ant-(?:api\d{2}-)?)?[A-Za-z0-9_-]{20,250}/g,
    accept: (m) => !PLACEHOLDER.test(m[0]) && shannonEntropy(m[0]) >= 3.5,
    mask: true,
  },
  {
    kind: 'secrets',
    code: 'secret_jwt',
    severity: 'high',
    message: 'A JSON Web Token',
    pattern: /\beyJ[A-Za-z0-9_-]{8,1000}\.eyJ[A-Za-z0-9_-]{8,2000}\.[A-Za-z0-9_-]{16,1000}/g,
    accept: (m) => {
      try {
        return (
          typeof (JSON.parse(Buffer.from(m[0].split('.')[0]!, 'base64url').toString('utf8')) as { alg?: unknown })
            .alg === 'string'
        );
      } catch {
        return false;
      }
    },
    mask: true,
  },
  {
    kind: 'secrets',
    code: 'secret_solana_keypair',
    severity: 'critical',
    message: 'A Solana secret key (64-byte key pair as a JSON array)',
    pattern: /\[\s{0,4}(?:\d{1,3}\s{0,4},\s{0,4}){63}\d{1,3}\s{0,4}\]/g,
    accept: (m) => {
      const numbers = m[0]
        .slice(1, -1)
        .split(',')
        .map((s) => Number(s.trim()));
      return numbers.every((n) => n <= 255) && isKeypair(Uint8Array.from(numbers));
    },
    mask: true,
  },
  {
    kind: 'secrets',
    code: 'secret_solana_keypair',
    severity: 'critical',
    message: 'A Solana secret key (64-byte key pair in base58)',
    pattern: /(?<![1-9A-HJ-NP-Za-km-z])[1-9A-HJ-NP-Za-km-z]{86,90}(?![1-9A-HJ-NP-Za-km-z])/g,
    // Transaction signatures are 64 bytes of base58 too; only a seed that derives the public key after it is a key.
    accept: (m) => isKeypair(base58Decode(m[0])),
    mask: true,
  },
  {
    kind: 'secrets',
    code: 'secret_generic',
    severity: 'high',
    message: 'A credential assigned to a key-like name (high-entropy value)',
    pattern:
      /(?:api[_-]?key|apikey|secret|token|passw(?:or)?d|pwd|private[_-]?key|access[_-]?key|auth[_-]?key)[A-Za-z0-9_.-]{0,40}["']?\s{0,5}[:=]\s{0,5}["'`]?([^\s"'`,;]{8,200})/gi,
    accept: (m) => credentialLike(m[1]!),
    mask: true,
  },

  // Prompt injections: instructions aimed at the agent that reads the module.
  {
    kind: 'promptInjections',
    code: 'prompt_injection',
    severity: 'high',
    message: 'Tells the reading agent to ignore its instructions',
    pattern:
      /\b(?:ignore|disregard|forget|override)\s+(?:(?:all|any|the|your|of|these|every)\s+){0,3}(?:previous|prior|above|earlier|preceding|system|original)\s+(?:instructions?|prompts?|rules|directives|guidelines|messages?)/gi,
  },
  {
    kind: 'promptInjections',
    code: 'prompt_injection_role',
    severity: 'high',
    message: 'Tries to switch the reading agent into an unrestricted role',
    pattern:
      /\byou\s+are\s+now\s+(?:in\s+)?(?:dan\b|developer\s+mode|jailbroken|unrestricted|an?\s+unfiltered)|\b(?:enter|enable|activate)\s+(?:developer|god|jailbreak|dan)\s+mode\b/gi,
  },
  {
    kind: 'promptInjections',
    code: 'prompt_injection_reveal',
    severity: 'high',
    message: 'Asks the reading agent to reveal its system prompt',
    pattern:
      /\b(?:reveal|print|show|repeat|output|leak|disclose)\s+(?:me\s+)?(?:your|the)\s+(?:full\s+|hidden\s+|secret\s+|original\s+)?(?:system\s+prompt|initial\s+prompt|hidden\s+prompt|system\s+instructions)/gi,
  },
  {
    kind: 'promptInjections',
    code: 'prompt_injection_exfiltration',
    severity: 'critical',
    message: 'Asks the reading agent to hand over keys, credentials or funds',
    pattern:
      /\b(?:send|transfer|post|upload|email|forward|share|paste)\s+(?:me\s+|us\s+)?(?:your|the\s+user'?s|all(?:\s+of)?\s+(?:your|the))\s+(?:private\s+keys?|secret\s+keys?|seed\s+phrases?|mnemonic|recovery\s+phrase|wallet\s+(?:keys?|funds|balance)|funds|api\s+keys?|credentials|passwords?)/gi,
  },
  {
    kind: 'promptInjections',
    code: 'prompt_injection_markup',
    severity: 'high',
    message: 'Chat-template control tokens that forge a system or instruction turn',
    pattern: /<\|im_start\|>|<\|im_end\|>|<\|system\|>|\[\/?INST\]|<<\/?SYS>>|<\/?system>/gi,
  },
  {
    kind: 'promptInjections',
    code: 'prompt_injection_concealment',
    severity: 'medium',
    message: 'Tells the reading agent to hide something from its user',
    pattern:
      /\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|alert|mention\s+(?:this\s+)?to)\s+the\s+(?:user|human|operator)\b/gi,
  },
  {
    kind: 'promptInjections',
    code: 'hidden_characters',
    severity: 'medium',
    message: 'Invisible or bidirectional-override characters that can hide text from a human reviewer',
    pattern: /[\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069]+|(?<!^)\uFEFF/g,
    excerpt: (text) =>
      [...text].map((ch) => `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`).join(' '),
  },

  // Dangerous commands
  {
    kind: 'dangerousCommands',
    code: 'dangerous_rm_rf',
    severity: 'critical',
    message: 'Recursive deletion of the root, home or working directory',
    pattern:
      /\brm\s{1,5}((?:-{1,2}[A-Za-z][A-Za-z-]{0,30}\s{1,5}){1,6})(\/\*?|~\/?\*?|\$HOME\/?\*?|\*|\.\/?\*?)(?=[\s;&|)"'`]|$)/g,
    accept: (m) => /(?:^|\s)-[A-Za-z]*[rR]|--recursive/.test(m[1]!),
  },
  {
    kind: 'dangerousCommands',
    code: 'dangerous_fork_bomb',
    severity: 'critical',
    message: 'A shell fork bomb',
    pattern: /:\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:/g,
  },
  {
    kind: 'dangerousCommands',
    code: 'dangerous_disk_wipe',
    severity: 'critical',
    message: 'Overwrites or formats a disk device',
    pattern:
      /\bmkfs(?:\.\w+)?\s+\/dev\/\w+|\bdd\s[^\n]{0,300}\bof=\/dev\/(?:sd|hd|nvme|disk|xvd|vd)\w*|>\s*\/dev\/(?:sd[a-z]|nvme\d|hd[a-z])\b/g,
  },
  {
    kind: 'dangerousCommands',
    code: 'dangerous_pipe_to_shell',
    severity: 'high',
    message: 'Remote code piped into a shell',
    pattern:
      /\b(?:curl|wget)\b[^\n|]{0,500}\|\s*(?:sudo\s+)?(?:ba|z|k|da)?sh\b|\b(?:ba|z)?sh\s+<\(\s*(?:curl|wget)\b|\beval\s+["']?\$\(\s*(?:curl|wget)\b|\b(?:iex|Invoke-Expression)\b[^\n]{0,500}\b(?:DownloadString|Invoke-WebRequest|iwr|irm)\b|\b(?:DownloadString|iwr|irm)\b[^\n]{0,500}\|\s*(?:iex|Invoke-Expression)\b/gi,
  },
  {
    kind: 'dangerousCommands',
    code: 'dangerous_eval_remote',
    severity: 'high',
    message: 'Evaluates code fetched from the network',
    pattern:
      /\beval\s*\(\s*(?:\(?\s*)?(?:await\s+)?(?:fetch|axios|got|request|https?\.get)\b|\bnew\s+Function\s*\([^)]{0,500}\b(?:fetch|await)\b|\bexec\s*\(\s*(?:requests|urllib)\b/g,
  },
  {
    kind: 'dangerousCommands',
    code: 'dangerous_chmod_root',
    severity: 'high',
    message: 'Makes the whole file system world-writable',
    pattern: /\bchmod\s+(?:-R\s+)?0?777\s+\/(?=[\s;&|]|$)/g,
  },
  {
    kind: 'dangerousCommands',
    code: 'code_eval',
    severity: 'medium',
    message: 'Dynamic code evaluation (eval or new Function)',
    pattern: /(?<![.\w])eval\s*\(|\bnew\s+Function\s*\(/g,
  },
  {
    kind: 'dangerousCommands',
    code: 'code_child_process',
    severity: 'medium',
    message: 'Spawns shell commands (child_process, os.system, subprocess with shell=True)',
    pattern:
      /\brequire\(\s*['"](?:node:)?child_process['"]\s*\)|\bfrom\s+['"](?:node:)?child_process['"]|\bimport\(\s*['"](?:node:)?child_process['"]\s*\)|\bos\.system\s*\(|\bsubprocess\.\w+\([^)\n]{0,500}shell\s*=\s*True/g,
  },

  // Personal data
  {
    kind: 'personalData',
    code: 'personal_email',
    severity: 'low',
    message: 'An e-mail address',
    pattern:
      /(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@([A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,6}\.[A-Za-z]{2,24})\b(?!:)/g,
    accept: (m) => !RESERVED_MAIL_DOMAIN.test(m[1]!) && !/^git@/i.test(m[0]),
    mask: true,
  },
  {
    kind: 'personalData',
    code: 'personal_phone',
    severity: 'low',
    message: 'A phone number',
    pattern:
      /(?<![\w+])\+\d{1,3}[ .-]?\(?\d{1,4}\)?(?:[ .-]?\d{2,4}){2,4}(?![\w])|(?<![\w(])\(\d{3}\)\s?\d{3}-\d{4}\b/g,
    accept: (m) => {
      const digits = m[0].replace(/\D/g, '').length;
      return digits >= 8 && digits <= 15;
    },
    mask: true,
  },
  {
    kind: 'personalData',
    code: 'personal_card_number',
    severity: 'medium',
    message: 'A payment card number (passes the Luhn check)',
    pattern: /(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])/g,
    accept: (m) => {
      const digits = m[0].replace(/\D/g, '');
      return (
        /^(?:4|5[1-5]|2[2-7]|3[47]|6(?:011|5))/.test(digits) &&
        digits.length >= 13 &&
        digits.length <= 19 &&
        luhnValid(digits)
      );
    },
    mask: true,
  },
];

// NUL has no place in stored JSON; excerpts show U+FFFD instead.
const clean = (text: string) => text.replace(/\u0000/g, '\uFFFD');

// Excerpts are cut by code points, so a cut never leaves half a surrogate pair (which JSON storage refuses).
function maskText(text: string): string {
  const flat = clean(text).replace(/\s+/g, ' ');
  const shown = Math.min(4, Math.floor(flat.length / 4));
  return `${Array.from(flat).slice(0, shown).join('')}…[${flat.length} characters masked]`;
}

export function excerptOf(text: string): string {
  const flat = Array.from(clean(text).replace(/\s+/g, ' ').trim());
  return flat.length > 120 ? `${flat.slice(0, 117).join('')}...` : flat.join('');
}

/** Word runs of the body with their offsets (lowercase), for seed-phrase detection. */
function seedPhrases(body: string): SafetyHit[] {
  const hits: SafetyHit[] = [];
  const words = [...body.matchAll(/[A-Za-z]+/g)].map((m) => ({
    word: m[0].toLowerCase(),
    index: m.index!,
    end: m.index! + m[0].length,
  }));
  let i = 0;
  while (i < words.length) {
    // A run: consecutive list words separated by whitespace only (a phrase, not a sentence with punctuation).
    let j = i;
    while (
      j < words.length &&
      BIP39_INDEX.has(words[j]!.word) &&
      (j === i || /^\s+$/.test(body.slice(words[j - 1]!.end, words[j]!.index)))
    )
      j++;
    if (j - i >= 12) {
      let k = i;
      while (k + 12 <= j) {
        const length = [24, 21, 18, 15, 12].find(
          (n) => k + n <= j && validMnemonic(words.slice(k, k + n).map((w) => w.word)),
        );
        if (!length) {
          k++;
          continue;
        }
        const start = words[k]!.index;
        const text = body.slice(start, words[k + length - 1]!.end);
        hits.push({
          kind: 'secrets',
          code: 'secret_seed_phrase',
          severity: 'critical',
          message: `A ${length}-word BIP-39 seed phrase (valid checksum)`,
          index: start,
          length: text.length,
          excerpt: maskText(text),
        });
        k += length;
      }
    }
    i = Math.max(j, i + 1);
  }
  return hits;
}

/**
 * Every safety hit in the body; a match already claimed by an earlier (more specific) secret rule is not counted twice.
 */
export function findSafetyHits(body: string): SafetyHit[] {
  const hits: SafetyHit[] = seedPhrases(body);
  const claimed: [number, number][] = hits.map((h) => [h.index, h.index + h.length]);
  const overlaps = (a: number, b: number) => claimed.some(([s, e]) => a < e && s < b);
  for (const rule of rules) {
    for (const m of body.matchAll(rule.pattern)) {
      const start = m.index!;
      const end = start + m[0].length;
      if (rule.accept && !rule.accept(m as RegExpExecArray)) continue;
      // The generic rules yield to a specific one that matched the same text (eval of fetched code, a named key).
      if ((rule.kind === 'secrets' || rule.code === 'code_eval') && overlaps(start, end)) continue;
      claimed.push([start, end]);
      hits.push({
        kind: rule.kind,
        code: rule.code,
        severity: rule.severity,
        message: rule.message,
        index: start,
        length: m[0].length,
        excerpt: rule.excerpt ? rule.excerpt(m[0]) : rule.mask ? maskText(m[0]) : excerptOf(m[0]),
      });
    }
  }
  return hits.sort((a, b) => a.index - b.index);
}
