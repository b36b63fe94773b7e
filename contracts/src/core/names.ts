import type { ZodTypeAny, input } from 'zod';

/**
 * A schema the OpenAPI documents name: wherever its JSON schema appears in a document it becomes
 * `#/components/schemas/<name>` (so generated clients get a named type), and `example`, when given, is the
 * value documents show for it (needed where a refinement, e.g. base58, cannot be sampled from the shape).
 */
export interface NamedSchema {
  name: string;
  schema: ZodTypeAny;
  example?: unknown;
}

const registry = new Map<string, NamedSchema>();
const byInstance = new WeakMap<ZodTypeAny, NamedSchema>();
/** Named schemas by zod kind, and lookups already answered (forgotten whenever a schema is named). */
const byKind = new Map<unknown, NamedSchema[]>();
let answered = new WeakMap<ZodTypeAny, NamedSchema | null>();

/** Names `schema` for the documents and returns it unchanged (types and parsing are not affected). */
export function named<T extends ZodTypeAny>(name: string, schema: T, options: { example?: input<T> } = {}): T {
  if (!/^[A-Z][A-Za-z0-9]*$/.test(name)) throw new Error(`schema name ${name} must be PascalCase`);
  const existing = registry.get(name);
  if (existing && existing.schema !== schema) throw new Error(`two schemas are named ${name}`);
  const entry: NamedSchema = { name, schema, ...(options.example !== undefined ? { example: options.example } : {}) };
  registry.set(name, entry);
  byInstance.set(schema, entry);
  byKind.set(schema.constructor, [...(byKind.get(schema.constructor) ?? []).filter((e) => e.name !== name), entry]);
  answered = new WeakMap();
  return schema;
}

/** Every named schema, in the order the contracts named them. */
export function namedSchemas(): readonly NamedSchema[] {
  return [...registry.values()];
}

/**
 * The named schema `schema` is, or is a copy of: zod's `.describe()` copies a schema with a new description
 * and otherwise the same definition, which still is the same schema.
 */
export function namedSchemaOf(schema: ZodTypeAny): NamedSchema | undefined {
  const direct = byInstance.get(schema);
  if (direct) return direct;
  const known = answered.get(schema);
  if (known !== undefined) return known ?? undefined;
  const found = (byKind.get(schema.constructor) ?? []).find((entry) => sameDefinition(entry.schema, schema));
  answered.set(schema, found ?? null);
  return found;
}

function sameDefinition(named: ZodTypeAny, schema: ZodTypeAny): boolean {
  const a = named._def as Record<string, unknown>;
  const b = schema._def as Record<string, unknown>;
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  keys.delete('description');
  return [...keys].every((key) => a[key] === b[key]);
}
