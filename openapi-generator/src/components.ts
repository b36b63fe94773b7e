import { generateSchema } from '@anatine/zod-openapi';
import { listRoutes, namedSchemaOf, namedSchemas } from '@agent-economy/contracts';
import { isZodType, type AppRouter } from '@ts-rest/core';
import type { ZodTypeAny } from 'zod';
import type { PathItemObject, SchemaObject } from 'openapi3-ts/oas31';

type Json = Record<string, unknown>;
const PREFIX = '#/components/schemas/';

/**
 * Repairs two things the zod converter writes that OpenAPI 3.0 readers reject: `nullable` on an untyped
 * schema (z.unknown(), which admits null anyway) and a discriminator over inline oneOf members (a
 * discriminator can only select $ref schemas; the members' own enums still tell them apart).
 */
export function tidySchemas(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(tidySchemas);
  if (!node || typeof node !== 'object') return;
  const schema = node as Json;
  if (schema.nullable && !('type' in schema) && !schema.$ref && !schema.allOf && !schema.oneOf && !schema.anyOf)
    delete schema.nullable;
  if (schema.discriminator && Array.isArray(schema.oneOf) && schema.oneOf.some((m) => !(m as { $ref?: string }).$ref))
    delete schema.discriminator;
  Object.values(schema).forEach(tidySchemas);
}

/** Worth a name in a document: structured schemas. A bare string (an address, an amount) stays inline. */
function hoistable(schema: Json): boolean {
  return !!(
    schema.properties ||
    schema.enum ||
    schema.oneOf ||
    schema.anyOf ||
    schema.allOf ||
    schema.additionalProperties
  );
}

/**
 * Key of a schema without its description and nullability: a use site may describe a named schema in its own words, or
 * admit null.
 */
function keyOf(schema: Json): string {
  const { description: _, nullable: __, ...rest } = schema;
  return JSON.stringify(rest);
}

/**
 * The zod converter writes OpenAPI 3.0 schemas; the documents are 3.1 (JSON Schema 2020-12), where null is
 * a type: `nullable: true` becomes `type: [t, "null"]` (and null joins an enum).
 */
export function toJsonSchema2020(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(toJsonSchema2020);
  if (!node || typeof node !== 'object') return;
  const schema = node as Json;
  if (schema.nullable === true && typeof schema.type === 'string') {
    schema.type = [schema.type, 'null'];
    if (Array.isArray(schema.enum) && !schema.enum.includes(null)) schema.enum = [...schema.enum, null];
  }
  delete schema.nullable;
  mapChildren(schema, (child) => {
    toJsonSchema2020(child);
    return child;
  });
}

/**
 * `fn` applied to every child of a document node that may hold schemas: not to examples or extensions
 * (data), and to each property of a `properties` map whatever its name (a property may be called `example`).
 */
function mapChildren(node: Json, fn: (child: unknown) => unknown): Json {
  return Object.fromEntries(
    Object.entries(node).map(([key, value]) => {
      if (key === 'example' || key === 'examples' || key.startsWith('x-')) return [key, value];
      if (key === 'properties' && value && typeof value === 'object' && !Array.isArray(value)) {
        return [key, Object.fromEntries(Object.entries(value).map(([name, property]) => [name, fn(property)]))];
      }
      return [key, fn(value)];
    }),
  );
}

interface Named {
  name: string;
  json: Json;
}

const jsonOf = new Map<string, Named>();

/** The JSON schema of a named contract schema (contracts' `named()`), as the operations write it. */
function namedJson(name: string): Named {
  let entry = jsonOf.get(name);
  if (!entry) {
    const found = namedSchemas().find((n) => n.name === name);
    if (!found) throw new Error(`no contract schema is named ${name}`);
    const json = generateSchema(found.schema as never) as Json;
    tidySchemas(json);
    jsonOf.set(name, (entry = { name, json }));
  }
  return entry;
}

/** The child schemas of a zod schema, whatever its kind. */
function childrenOf(schema: ZodTypeAny): ZodTypeAny[] {
  // zod's _def differs by schema kind and is not typed as a union: each field is probed below.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const def = schema._def as Record<string, any>;
  const out: unknown[] = [
    def.innerType,
    def.schema,
    def.type,
    def.in,
    def.out,
    def.left,
    def.right,
    def.keyType,
    def.valueType,
    def.rest,
  ];
  if (def.typeName === 'ZodObject') out.push(...Object.values(def.shape()));
  if (def.typeName === 'ZodLazy') out.push(def.getter());
  if (Array.isArray(def.items)) out.push(...def.items);
  if (def.options) out.push(...(Array.isArray(def.options) ? def.options : [...def.options.values()]));
  return out.filter((child): child is ZodTypeAny => isZodType(child));
}

const namesOfRouter = new WeakMap<AppRouter, string[]>();

/** The named schemas a contract uses, found by identity in its routes' schemas (in order of first use). */
function namesUsedBy(router: AppRouter): string[] {
  let cached = namesOfRouter.get(router);
  if (!cached) {
    const roots: ZodTypeAny[] = [];
    for (const { route } of listRoutes(router)) {
      const parts = [
        route.pathParams,
        route.query,
        'body' in route ? route.body : undefined,
        ...Object.values(route.responses),
      ];
      for (const part of parts) if (isZodType(part)) roots.push(part);
    }
    namesOfRouter.set(router, (cached = namesWithin(roots)));
  }
  return cached;
}

/** The named schemas within some zod schemas, themselves included. */
function namesWithin(roots: ZodTypeAny[]): string[] {
  const names = new Set<string>();
  const seen = new Set<ZodTypeAny>();
  const visit = (schema: ZodTypeAny) => {
    if (seen.has(schema)) return;
    seen.add(schema);
    const named = namedSchemaOf(schema);
    if (named) names.add(named.name);
    childrenOf(schema).forEach(visit);
  };
  roots.forEach(visit);
  return [...names];
}

/**
 * The named schemas of one contract that can stand as components, keyed by JSON without the description.
 * Two names for the same structured schema in one contract are refused: a document could not say which
 * type a field is.
 */
function catalogOf(router: AppRouter, always: readonly string[]) {
  const byKey = new Map<string, Named>();
  const byName = new Map<string, Named>();
  const own = namesWithin(
    always.map((name) => namedSchemas().find((n) => n.name === name)?.schema).filter((s): s is ZodTypeAny => !!s),
  );
  for (const name of new Set([...own, ...namesUsedBy(router)])) {
    const entry = namedJson(name);
    byName.set(name, entry);
    if (!hoistable(entry.json)) continue;
    const key = keyOf(entry.json);
    const other = byKey.get(key);
    if (other && !own.includes(other.name))
      throw new Error(`contract schemas ${other.name} and ${name} are the same schema: name one of them`);
    if (!other) byKey.set(key, entry);
  }
  return { byKey, byName };
}

/**
 * Moves every named schema out of the operations into `components.schemas` and refers to it by `$ref`,
 * wherever its JSON schema appears (nested named schemas too, inside components). A use site that
 * describes it in other words keeps its description beside the reference (3.1 allows siblings of `$ref`).
 * `always` names components the document refers to itself (error envelopes, decoded x402 headers).
 * Returns the paths and the components, both as OpenAPI 3.1 (JSON Schema 2020-12) schemas.
 */
export function hoistNamedSchemas(router: AppRouter, paths: Record<string, PathItemObject>, always: readonly string[]) {
  const { byKey, byName } = catalogOf(router, always);
  const used = new Set<string>();

  function replace(node: unknown, root: boolean): unknown {
    if (Array.isArray(node)) return node.map((item) => replace(item, false));
    if (!node || typeof node !== 'object') return node;
    const schema = node as Json;
    if (typeof schema.$ref === 'string' && schema.$ref.startsWith(PREFIX)) used.add(schema.$ref.slice(PREFIX.length));
    if (!root && hoistable(schema)) {
      const named = byKey.get(keyOf(schema));
      if (named) {
        used.add(named.name);
        // 3.1 lets a reference carry its own description; null is a second type beside it.
        const description =
          schema.description === undefined || schema.description === named.json.description
            ? {}
            : { description: schema.description };
        const reference = { $ref: PREFIX + named.name };
        return schema.nullable
          ? { ...description, anyOf: [reference, { type: 'null' }] }
          : { ...reference, ...description };
      }
    }
    return mapChildren(schema, (child) => replace(child, false));
  }

  const out = replace(paths, true) as Record<string, PathItemObject>;
  toJsonSchema2020(out);
  for (const name of always) used.add(name);
  // Components refer to further named schemas: hoist inside them until nothing new is used.
  const schemas: Record<string, SchemaObject> = {};
  let pending = [...used];
  while (pending.length) {
    for (const name of pending) {
      const schema = replace((byName.get(name) ?? namedJson(name)).json, true);
      toJsonSchema2020(schema);
      schemas[name] = schema as SchemaObject;
    }
    pending = [...used].filter((name) => !(name in schemas));
  }
  const sorted = Object.fromEntries(
    Object.keys(schemas)
      .sort()
      .map((name) => [name, schemas[name]!]),
  );
  return { paths: out, schemas: sorted };
}
