// JSON that keeps u64 values exact. Solana nodes write lamports, amounts and rentEpoch as plain JSON
// numbers up to 2^64-1, which JSON.stringify/JSON.parse would round through a double: bigints are
// written as digits, and integer literals beyond Number.MAX_SAFE_INTEGER are read back as bigints.

/** Serializes like JSON.stringify, except that bigints become exact JSON integers and undefined members are dropped. */
export function stringifyJson(value: unknown): string {
  const out: string[] = [];
  write(value, out);
  return out.join('');
}

function write(value: unknown, out: string[]): void {
  switch (typeof value) {
    case 'bigint':
      out.push(value.toString());
      return;
    case 'number':
      out.push(Number.isFinite(value) ? JSON.stringify(value) : 'null');
      return;
    case 'string':
      out.push(JSON.stringify(value));
      return;
    case 'boolean':
      out.push(value ? 'true' : 'false');
      return;
    case 'object':
      if (value === null) {
        out.push('null');
      } else if (Array.isArray(value)) {
        out.push('[');
        value.forEach((item, i) => {
          if (i > 0) out.push(',');
          write(item === undefined ? null : item, out);
        });
        out.push(']');
      } else {
        out.push('{');
        let first = true;
        for (const [key, item] of Object.entries(value)) {
          if (item === undefined) continue;
          if (!first) out.push(',');
          first = false;
          out.push(JSON.stringify(key), ':');
          write(item, out);
        }
        out.push('}');
      }
      return;
    default:
      out.push('null');
  }
}

export class JsonSyntaxError extends Error {}

const MAX_DEPTH = 128; // as serde_json: deeper input is refused rather than overflowing the stack
const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
const WHITESPACE = /[ \t\n\r]*/y;

/** Parses JSON text; integers outside the safe range come back as bigint. Throws JsonSyntaxError on bad input. */
export function parseJson(text: string): unknown {
  const parser = new Parser(text);
  parser.skipWhitespace();
  const value = parser.value(0);
  parser.skipWhitespace();
  if (parser.pos !== text.length) parser.fail('trailing characters');
  return value;
}

class Parser {
  pos = 0;
  constructor(private readonly text: string) {}

  fail(what: string): never {
    throw new JsonSyntaxError(`${what} at position ${this.pos}`);
  }

  skipWhitespace(): void {
    WHITESPACE.lastIndex = this.pos;
    WHITESPACE.exec(this.text);
    this.pos = WHITESPACE.lastIndex;
  }

  value(depth: number): unknown {
    if (depth > MAX_DEPTH) this.fail('nesting too deep');
    const ch = this.text[this.pos];
    switch (ch) {
      case '{':
        return this.object(depth);
      case '[':
        return this.array(depth);
      case '"':
        return this.string();
      case 't':
        return this.literal('true', true);
      case 'f':
        return this.literal('false', false);
      case 'n':
        return this.literal('null', null);
      default:
        return this.number();
    }
  }

  literal<T>(word: string, value: T): T {
    if (!this.text.startsWith(word, this.pos)) this.fail('unexpected token');
    this.pos += word.length;
    return value;
  }

  number(): number | bigint {
    NUMBER.lastIndex = this.pos;
    const match = NUMBER.exec(this.text);
    if (!match) this.fail('unexpected token');
    this.pos = NUMBER.lastIndex;
    const literal = match[0];
    if (match[1] === undefined && match[2] === undefined) {
      const n = Number(literal);
      return Number.isSafeInteger(n) ? n : BigInt(literal);
    }
    return Number(literal);
  }

  string(): string {
    const start = this.pos;
    let i = start + 1;
    for (;;) {
      const code = this.text.charCodeAt(i);
      if (Number.isNaN(code)) {
        this.pos = i;
        this.fail('unterminated string');
      }
      if (code === 0x22) break;
      if (code === 0x5c) i++;
      else if (code < 0x20) {
        this.pos = i;
        this.fail('control character in string');
      }
      i++;
    }
    this.pos = i + 1;
    try {
      return JSON.parse(this.text.slice(start, i + 1)) as string;
    } catch {
      this.pos = start;
      return this.fail('invalid string escape');
    }
  }

  array(depth: number): unknown[] {
    this.pos++;
    const items: unknown[] = [];
    this.skipWhitespace();
    if (this.text[this.pos] === ']') {
      this.pos++;
      return items;
    }
    for (;;) {
      this.skipWhitespace();
      items.push(this.value(depth + 1));
      this.skipWhitespace();
      const ch = this.text[this.pos++];
      if (ch === ']') return items;
      if (ch !== ',') {
        this.pos--;
        this.fail("expected ',' or ']'");
      }
    }
  }

  object(depth: number): Record<string, unknown> {
    this.pos++;
    const result: Record<string, unknown> = {};
    this.skipWhitespace();
    if (this.text[this.pos] === '}') {
      this.pos++;
      return result;
    }
    for (;;) {
      this.skipWhitespace();
      if (this.text[this.pos] !== '"') this.fail('expected a string key');
      const key = this.string();
      this.skipWhitespace();
      if (this.text[this.pos++] !== ':') {
        this.pos--;
        this.fail("expected ':'");
      }
      this.skipWhitespace();
      // defineProperty so a "__proto__" key is plain data, never a prototype change
      Object.defineProperty(result, key, {
        value: this.value(depth + 1),
        enumerable: true,
        writable: true,
        configurable: true,
      });
      this.skipWhitespace();
      const ch = this.text[this.pos++];
      if (ch === '}') return result;
      if (ch !== ',') {
        this.pos--;
        this.fail("expected ',' or '}'");
      }
    }
  }
}
