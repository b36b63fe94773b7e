import type { ZodTypeAny } from 'zod';
import { namedSchemaOf } from '@agent-economy/contracts';
import { sampleRegex } from './regex-sample';

/**
 * An example value of a response schema, built from the contract's zod schema: a named schema's own
 * example where the contracts give one, else a value from the schema's shape and checks (enums take their
 * first value, numbers the middle of their bounds, strings their pattern, format or field name).
 * `undefined` when no value passes the schema; the caller then shows none and a test names the route.
 */
export function exampleOf(schema: ZodTypeAny, request: Record<string, unknown> = {}): unknown {
  hints = request;
  try {
    const value = sample(schema, '', 0);
    return schema.safeParse(value).success ? value : undefined;
  } finally {
    hints = {};
  }
}

/**
 * The route's example request by field name (its path, query and body fields): an answer about the lesson
 * `chunking` names that lesson, so a response field of the same name takes the request's value when valid.
 */
let hints: Record<string, unknown> = {};

const MAX_DEPTH = 12;

/**
 * `variant` tells apart the items of a sampled array (item n is variant n), so that items a contract
 * requires to differ (unique ids) do.
 */
function sample(schema: ZodTypeAny, key: string, depth: number, variant = 0): unknown {
  const named = namedSchemaOf(schema);
  if (named && 'example' in named) return named.example;
  // zod's _def differs by schema kind and is not typed as a union: each field is probed below.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const def = schema._def as Record<string, any>;
  switch (def.typeName as string) {
    case 'ZodString':
      return stringSample(schema, def.checks ?? [], key, variant);
    case 'ZodNumber':
      return numberSample(def.checks ?? []);
    case 'ZodBigInt':
      return 1n;
    case 'ZodBoolean':
      return true;
    case 'ZodLiteral':
      return def.value;
    case 'ZodEnum':
      return def.values[0];
    case 'ZodNativeEnum':
      return Object.values(def.values)[0];
    case 'ZodNull':
      return null;
    case 'ZodUnknown':
    case 'ZodAny':
      return {};
    case 'ZodOptional':
    case 'ZodNullable':
    case 'ZodReadonly':
    case 'ZodCatch':
    case 'ZodBranded':
      return sample(def.innerType ?? def.type, key, depth, variant);
    case 'ZodDefault':
      return def.defaultValue();
    case 'ZodEffects':
      return sample(def.schema, key, depth, variant);
    case 'ZodPipeline':
      return sample(def.in, key, depth, variant);
    case 'ZodLazy':
      return depth > MAX_DEPTH ? undefined : sample(def.getter(), key, depth + 1, variant);
    case 'ZodArray': {
      if (depth > MAX_DEPTH) return [];
      const count = Math.max(1, def.minLength?.value ?? def.exactLength?.value ?? 0);
      return Array.from({ length: count }, (_, n) => sample(def.type, singular(key), depth + 1, n));
    }
    case 'ZodTuple':
      return (def.items as ZodTypeAny[]).map((item) => sample(item, key, depth + 1));
    case 'ZodObject': {
      const shape = def.shape() as Record<string, ZodTypeAny>;
      const out: Record<string, unknown> = {};
      for (const [name, field] of Object.entries(shape)) {
        const hint = hints[name];
        const value =
          variant === 0 && hint !== undefined && field.safeParse(hint).success
            ? hint
            : sample(field, name, depth + 1, variant);
        if (value !== undefined) out[name] = value;
      }
      return out;
    }
    case 'ZodRecord': {
      const name = sample(def.keyType, 'key', depth + 1);
      return { [typeof name === 'string' ? name : 'key']: sample(def.valueType, key, depth + 1) };
    }
    case 'ZodUnion':
    case 'ZodDiscriminatedUnion': {
      const options: ZodTypeAny[] = def.typeName === 'ZodUnion' ? def.options : [...def.options.values()];
      // The first member that a sample of it satisfies.
      for (const option of options) {
        const value = sample(option, key, depth + 1);
        if (option.safeParse(value).success) return value;
      }
      return sample(options[0]!, key, depth + 1);
    }
    case 'ZodIntersection': {
      const left = sample(def.left, key, depth + 1);
      const right = sample(def.right, key, depth + 1);
      return isRecord(left) && isRecord(right) ? { ...left, ...right } : left;
    }
    default:
      return undefined;
  }
}

/** The first of a few candidates (its format's, its pattern's, one from the field's name) the schema accepts. */
function stringSample(
  schema: ZodTypeAny,
  checks: { kind: string; value?: unknown; regex?: RegExp }[],
  key: string,
  variant: number,
): string {
  const check = (kind: string) => checks.find((c) => c.kind === kind);
  const candidates: (string | undefined)[] = [];
  if (check('datetime')) candidates.push('2026-01-15T12:00:00.000Z');
  if (check('url')) candidates.push(`https://example.com/${variant ? variant + 1 : ''}`);
  if (check('email')) candidates.push(`agent${variant || ''}@example.com`);
  if (check('uuid')) candidates.push('0b6c8a3e-6f5e-4d2a-9c41-2f6a1d3b7e9' + (variant % 10));
  const regex = check('regex')?.regex;
  if (regex) candidates.push(sampleRegex(regex.source, variant));
  candidates.push(fromName(checks, key, variant));
  const ok = candidates.find((c): c is string => c !== undefined && schema.safeParse(c).success);
  return ok ?? candidates.find((c): c is string => c !== undefined)!;
}

function fromName(checks: { kind: string; value?: unknown }[], key: string, variant: number): string {
  const check = (kind: string) => checks.find((c) => c.kind === kind);
  let text =
    (key ? key.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase() : 'text') + (variant ? ` ${variant + 1}` : '');
  const includes = check('includes')?.value;
  if (typeof includes === 'string' && !text.includes(includes)) text += includes;
  const starts = check('startsWith')?.value;
  if (typeof starts === 'string') text = starts + text;
  const ends = check('endsWith')?.value;
  if (typeof ends === 'string') text += ends;
  const min = Number(check('min')?.value ?? check('length')?.value ?? 0);
  const max = Number(check('max')?.value ?? check('length')?.value ?? Infinity);
  while (text.length < min) text += ` ${text}`;
  return text.slice(0, Math.max(min, Math.min(max, text.length)));
}

function numberSample(checks: { kind: string; value?: number; inclusive?: boolean }[]): number {
  const integer = checks.some((c) => c.kind === 'int');
  const min = checks.find((c) => c.kind === 'min');
  const max = checks.find((c) => c.kind === 'max');
  const step = checks.find((c) => c.kind === 'multipleOf')?.value;
  let value: number;
  if (min && max) value = (min.value! + max.value!) / 2;
  else if (min) value = min.inclusive ? min.value! : min.value! + 1;
  else if (max) value = Math.min(0, max.inclusive ? max.value! : max.value! - 1);
  else value = integer ? 1 : 0.5;
  if (integer)
    value = min && !min.inclusive && Math.floor(value) <= min.value! ? Math.floor(value) + 1 : Math.floor(value);
  if (step) value = Math.ceil(value / step) * step;
  return value;
}

function singular(key: string): string {
  return key.endsWith('ies') ? `${key.slice(0, -3)}y` : key.endsWith('s') ? key.slice(0, -1) : key;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value);
}
