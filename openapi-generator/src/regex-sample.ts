/**
 * One string a regular expression matches, for documentation examples of pattern-checked strings. Covers
 * what the contracts write: anchors, literals, escapes (\d \w \s \. …), classes with ranges, groups,
 * alternation and quantifiers; it picks the first alternative and the smallest repetition (at least one
 * where that is allowed, so that `\d*` still shows a digit). Undefined for anything else (lookarounds,
 * back-references), and callers fall back to other means.
 */
export function sampleRegex(source: string, variant = 0): string | undefined {
  let at = 0;
  // `variant` n picks the n-th character of the pattern's first class, so that samples can differ.
  let varied = false;
  const failed = Symbol('failed');

  function alternation(): string | typeof failed {
    const first = sequence();
    // Later alternatives are parsed (to move past them) but not used.
    while (source[at] === '|') {
      at++;
      if (sequence() === failed) return failed;
    }
    return first;
  }

  function sequence(): string | typeof failed {
    let out = '';
    while (at < source.length && source[at] !== '|' && source[at] !== ')') {
      const piece = atom();
      if (piece === failed) return failed;
      const [min, max] = quantifier();
      const times = Math.max(min, Math.min(1, max));
      out += piece.repeat(times);
    }
    return out;
  }

  function quantifier(): [number, number] {
    const ch = source[at];
    let range: [number, number] = [1, 1];
    if (ch === '*') range = [0, Infinity];
    else if (ch === '+') range = [1, Infinity];
    else if (ch === '?') range = [0, 1];
    else if (ch === '{') {
      const match = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(at));
      if (!match) return range;
      at += match[0].length;
      const min = Number(match[1]);
      const max = match[2] === undefined ? min : match[3] === '' ? Infinity : Number(match[3]);
      if (source[at] === '?') at++;
      return [min, max];
    } else return range;
    at++;
    if (source[at] === '?') at++;
    return range;
  }

  function atom(): string | typeof failed {
    const ch = source[at]!;
    if (ch === '^' || ch === '$') {
      at++;
      return '';
    }
    if (ch === '(') {
      at++;
      if (source.startsWith('?:', at)) at += 2;
      else if (source[at] === '?') return failed;
      const inner = alternation();
      if (source[at] !== ')') return failed;
      at++;
      return inner;
    }
    if (ch === '[') return charClass();
    if (ch === '.') {
      at++;
      return 'a';
    }
    if (ch === '\\') return escape();
    at++;
    return ch;
  }

  function escape(): string | typeof failed {
    const ch = source[at + 1];
    at += 2;
    switch (ch) {
      case 'd':
        return vary('123456789'.split('').concat('0'));
      case 'w':
        return 'a';
      case 's':
        return ' ';
      case undefined:
        return failed;
      default:
        return /[A-Za-z0-9]/.test(ch) ? failed : ch;
    }
  }

  function charClass(): string | typeof failed {
    at++;
    if (source[at] === '^') return failed;
    const chars: string[] = [];
    while (at < source.length && source[at] !== ']') {
      let ch = source[at]!;
      if (ch === '\\') {
        if (source[at + 1] === 'd') {
          at += 2;
          chars.push(...'0123456789');
          continue;
        }
        const escaped = escape();
        if (escaped === failed) return failed;
        ch = escaped;
      } else at++;
      if (source[at] === '-' && source[at + 1] !== ']' && source[at + 1] !== undefined) {
        const end = source[at + 1]!;
        at += 2;
        for (let code = ch.charCodeAt(0); code <= end.charCodeAt(0); code++) chars.push(String.fromCharCode(code));
      } else chars.push(ch);
    }
    at++;
    // Letters and digits read better than a leading '-' or '_'.
    const alphanumeric = chars.filter((c) => /[A-Za-z0-9]/.test(c));
    return chars.length ? vary(alphanumeric.length ? alphanumeric : chars) : failed;
  }

  function vary(chars: string[]): string {
    if (varied) return chars[0]!;
    varied = true;
    return chars[variant % chars.length]!;
  }

  const result = alternation();
  if (result === failed || at !== source.length) return undefined;
  return new RegExp(source).test(result) ? result : undefined;
}
