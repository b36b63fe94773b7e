import { generateSchema } from '@anatine/zod-openapi';
import type { AppRoute } from '@ts-rest/core';
import { routeMeta } from '@agent-economy/contracts';

// x402's discovery extension (bazaar) as a resource server declares it in its 402 quote (`extensions.bazaar`), in the
// shape of @x402/extensions' declareDiscoveryExtension() after its server enrichment: `info` (how to call the route:
// type "http", method, an example of its query or JSON body and path parameters; the output's type) and `schema` (a
// JSON schema `info` satisfies, with the route's input and 200 response schemas from the contract), plus
// `routeTemplate` for routes with path parameters. Clients echo it in their payment; the facilitator catalogs it.
// Examples come from the contract (metadata.example), never from the request being paid, so a buyer's input never
// reaches the public catalog.

const QUERY_METHODS = new Set(['GET', 'HEAD', 'DELETE']);
const cache = new WeakMap<AppRoute, Record<string, unknown>>();

type JsonSchema = Record<string, unknown>;

/** Beyond this many bytes of JSON, nested schemas are cut to their types: quotes travel in headers. */
const MAX_DECLARATION_BYTES = 6_000;

const jsonSchema = (schema: unknown): JsonSchema | undefined => {
  if (!schema || typeof schema !== 'object' || !('_def' in schema)) return undefined;
  return strip(generateSchema(schema as never)) as JsonSchema;
};

/** A schema without its prose (descriptions, titles; /openapi.json has them); `depth` levels down, only its type. */
function strip(schema: unknown, depth = Infinity): unknown {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return schema;
  const node = schema as Record<string, unknown>;
  if (depth <= 0)
    return Object.fromEntries(
      Object.entries(node).filter(([key]) => key === 'type' || key === 'nullable' || key === 'enum'),
    );
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'description' || key === 'title' || key === 'example') continue;
    if (key === 'properties' && value && typeof value === 'object') {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, field]) => [name, strip(field, depth - 1)]));
    } else if (
      (key === 'items' || key === 'additionalProperties' || key === 'not') &&
      value &&
      typeof value === 'object'
    ) {
      out[key] = strip(value, depth - 1);
    } else if ((key === 'anyOf' || key === 'oneOf' || key === 'allOf') && Array.isArray(value)) {
      out[key] = value.map((v) => strip(v, depth));
    } else {
      out[key] = value;
    }
  }
  return out;
}

/**
 * An object schema for `info.input.<part>`: the contract's properties, and its required list only when an example shows
 * them.
 */
function partSchema(schema: JsonSchema | undefined, example: Record<string, unknown> | undefined): JsonSchema {
  const properties = (schema?.properties as JsonSchema | undefined) ?? {};
  const required = ((schema?.required as string[] | undefined) ?? []).filter((field) => example && field in example);
  return { type: 'object', properties, ...(required.length ? { required } : {}) };
}

export function bazaarDeclaration(route: AppRoute): Record<string, unknown> {
  const cached = cache.get(route);
  if (cached) return cached;
  const example = routeMeta(route).example ?? {};
  const method = route.method;
  const hasPathParams = route.path.includes(':');
  const pathParams = hasPathParams ? (example.params ?? {}) : undefined;
  const pathSchema = hasPathParams
    ? partSchema(jsonSchema((route as { pathParams?: unknown }).pathParams), example.params)
    : undefined;

  let input: Record<string, unknown>;
  let inputSchema: Record<string, unknown>;
  if (QUERY_METHODS.has(method)) {
    const query = (example.query ?? {}) as Record<string, unknown>;
    input = { type: 'http', method, queryParams: query, ...(pathParams ? { pathParams } : {}) };
    inputSchema = {
      type: { type: 'string', const: 'http' },
      method: { type: 'string', enum: [method] },
      queryParams: partSchema(jsonSchema((route as { query?: unknown }).query), query),
      ...(pathSchema ? { pathParams: pathSchema } : {}),
    };
  } else {
    const body = (example.body ?? {}) as Record<string, unknown>;
    const bodySchema = jsonSchema((route as { body?: unknown }).body);
    input = { type: 'http', method, bodyType: 'json', body, ...(pathParams ? { pathParams } : {}) };
    inputSchema = {
      type: { type: 'string', const: 'http' },
      method: { type: 'string', enum: [method] },
      bodyType: { type: 'string', enum: ['json', 'form-data', 'text'] },
      body: example.body ? (bodySchema ?? { type: 'object' }) : partSchema(bodySchema, undefined),
      ...(pathSchema ? { pathParams: pathSchema } : {}),
    };
  }
  const declaration = {
    info: { input, output: { type: 'json' } },
    schema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {
        input: {
          type: 'object',
          properties: inputSchema,
          required: QUERY_METHODS.has(method) ? ['type', 'method'] : ['type', 'method', 'bodyType', 'body'],
          additionalProperties: false,
        },
        // The response's full schema is in /openapi.json: quotes travel in headers, which must stay small.
        output: { type: 'object', properties: { type: { type: 'string' } }, required: ['type'] },
      },
      required: ['input'],
    },
    ...(hasPathParams ? { routeTemplate: route.path } : {}),
  };
  // A large contract keeps its top-level fields and their types; the example stays whole, so it must still satisfy it.
  const fitted =
    JSON.stringify(declaration).length > MAX_DECLARATION_BYTES
      ? {
          ...declaration,
          schema: {
            ...declaration.schema,
            properties: { ...declaration.schema.properties, input: strip(declaration.schema.properties.input, 3) },
          },
        }
      : declaration;
  cache.set(route, fitted);
  return fitted;
}
