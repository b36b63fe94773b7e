import type { AppRoute } from '@ts-rest/core';
import { isZodType } from '@ts-rest/core';
import type { z } from 'zod';
import { zodToJsonSchema } from 'zod-to-json-schema';
import { listRoutes, priceRange, routeMeta, type PaymentMeta, type Service } from '@agent-economy/contracts';
import { InputError, UsageError } from './failure';

/** A route of a service's contract, with its key ('lesson', or dotted for nested routers). */
export interface RouteEntry {
  service: Service;
  key: string;
  route: AppRoute;
}

export function routesOf(service: Service): RouteEntry[] {
  return listRoutes(service.router).map(({ key, route }) => ({ service, key, route }));
}

/** A route's price as people read it: "free", "0.05", "0.01–0.5 (adaptive)", "0–0.03 (tiered: generate 0.03, …)". */
export function describePrice(payment: PaymentMeta): string {
  switch (payment.kind) {
    case 'free':
      return 'free';
    case 'fixed':
      return payment.usd;
    case 'adaptive':
      return `${payment.minUsd}–${payment.maxUsd} (adaptive)`;
    case 'tiered': {
      const { minUsd, maxUsd } = priceRange(payment);
      return `${minUsd}–${maxUsd} (tiered: ${payment.tiers.map((t) => `${t.id} ${t.usd}`).join(', ')})`;
    }
  }
}

export function priceOf(route: AppRoute): PaymentMeta {
  return routeMeta(route).payment;
}

/** The named part of a route's input as a zod schema, when the contract declares one. */
function schemaOf(route: AppRoute, part: 'params' | 'query' | 'body'): z.ZodTypeAny | undefined {
  const value =
    part === 'params'
      ? route.pathParams
      : part === 'query'
        ? route.query
        : route.method === 'GET'
          ? undefined
          : (route as { body?: unknown }).body;
  return isZodType(value) ? value : undefined;
}

/** Path parameters named in the route's path (`/api/course/:courseId` → courseId), for routes without a schema. */
function pathNames(route: AppRoute): { name: string; optional: boolean }[] {
  return [...route.path.matchAll(/:([A-Za-z0-9_]+)(\?)?/g)].map((m) => ({ name: m[1]!, optional: !!m[2] }));
}

export interface RouteInput {
  params?: Record<string, unknown>;
  query?: Record<string, unknown>;
  body?: unknown;
}

/**
 * Checks the input against the route's contract before anything is sent; throws InputError naming each
 * bad field (`body.courseId`, `params.courseId`, `query.limit`). Returns the parts the route takes.
 */
export function validateInput(route: AppRoute, input: RouteInput): RouteInput {
  const fields: { field: string; message: string }[] = [];
  const out: RouteInput = {};
  for (const part of ['params', 'query', 'body'] as const) {
    const schema = schemaOf(route, part);
    const value = input[part];
    if (!schema) {
      if (part === 'params') {
        const given = (value ?? {}) as Record<string, unknown>;
        for (const { name, optional } of pathNames(route)) {
          if (!optional && (given[name] === undefined || given[name] === ''))
            fields.push({ field: `params.${name}`, message: 'Required' });
        }
        if (value !== undefined) out.params = given;
      } else if (part === 'body' && value !== undefined && route.method === 'GET') {
        fields.push({ field: 'body', message: `${route.method} ${route.path} takes no body` });
      } else if (value !== undefined) {
        out[part] = value as Record<string, unknown>;
      }
      continue;
    }
    // An absent object part is checked as {}, so that its required fields are named rather than the part.
    const parsed = schema.safeParse(
      value === undefined && part !== 'body' ? {} : (value ?? (isObjectSchema(schema) ? {} : undefined)),
    );
    // What the user gave is sent as given (the service parses it again); the parse only checks it.
    if (parsed.success) {
      if (value !== undefined) out[part] = value as Record<string, unknown>;
    } else {
      for (const issue of parsed.error.issues) {
        fields.push({ field: [part, ...issue.path].join('.'), message: issue.message });
      }
    }
  }
  if (fields.length) throw new InputError(fields);
  return out;
}

function isObjectSchema(schema: z.ZodTypeAny): boolean {
  let def = schema._def as { typeName?: string; schema?: z.ZodTypeAny; innerType?: z.ZodTypeAny };
  // Unwrap refinements and defaults to see whether an object lies underneath.
  for (let i = 0; i < 8 && def; i++) {
    if (def.typeName === 'ZodObject') return true;
    const inner = def.schema ?? def.innerType;
    if (!inner) return false;
    def = inner._def;
  }
  return false;
}

type JsonSchema = Record<string, unknown>;

function toJsonSchema(schema: z.ZodTypeAny): JsonSchema {
  // Inline everything: MCP clients and models read one self-contained schema per tool.
  const json = zodToJsonSchema(schema, { $refStrategy: 'none', target: 'jsonSchema7' }) as JsonSchema;
  delete json.$schema;
  return json;
}

/**
 * The JSON schema of a route's whole input, in the SDK's call shape: `{ params?, query?, body? }`, each
 * present when the route takes it and required when the contract requires it.
 */
export function inputJsonSchema(route: AppRoute): {
  type: 'object';
  properties: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties: false;
} {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  const params = schemaOf(route, 'params');
  const names = pathNames(route);
  if (params) {
    properties.params = { ...toJsonSchema(params), description: 'path parameters' };
    required.push('params');
  } else if (names.length) {
    properties.params = {
      type: 'object',
      description: 'path parameters',
      properties: Object.fromEntries(names.map(({ name }) => [name, { type: 'string' }])),
      required: names.filter((n) => !n.optional).map((n) => n.name),
      additionalProperties: false,
    };
    if (names.some((n) => !n.optional)) required.push('params');
  }
  const query = schemaOf(route, 'query');
  if (query) {
    properties.query = { ...toJsonSchema(query), description: 'query parameters' };
    if (!query.isOptional() && !query.safeParse({}).success) required.push('query');
  }
  const body = schemaOf(route, 'body');
  if (body) {
    properties.body = { ...toJsonSchema(body), description: 'JSON request body' };
    if (!body.isOptional()) required.push('body');
  }
  return { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false };
}

/** Parses `<service>.<route>` (the route key may itself be dotted) against the contracts of the given services. */
export function findRoute(target: string, available: readonly Service[]): RouteEntry {
  const dot = target.indexOf('.');
  if (dot <= 0 || dot === target.length - 1)
    throw new UsageError(`name a route as <service>.<route>, e.g. education.lesson (got "${target}")`);
  const serviceId = target.slice(0, dot);
  const key = target.slice(dot + 1);
  const service = available.find((s) => s.id === serviceId);
  if (!service)
    throw new UsageError(
      `no service "${serviceId}" in the deployment; it has: ${available.map((s) => s.id).join(', ')}`,
    );
  const entry = routesOf(service).find((r) => r.key === key);
  if (!entry)
    throw new UsageError(
      `service ${serviceId} has no route "${key}"; it has: ${routesOf(service)
        .map((r) => r.key)
        .join(', ')}`,
    );
  return entry;
}

/**
 * A JSON object from a flag: JSON (`'{"courseId":"rag"}'`) or, for params and query, `a=1&b=2` pairs.
 * `@file` reads the JSON from a file.
 */
export function parseJsonFlag(
  flag: string,
  text: string | undefined,
  options: { pairs?: boolean; readFile?: (path: string) => string } = {},
): unknown {
  if (text === undefined) return undefined;
  let source = text;
  if (source.startsWith('@') && options.readFile) source = options.readFile(source.slice(1));
  const trimmed = source.trim();
  if (options.pairs && trimmed && !/^[[{"]/.test(trimmed)) return Object.fromEntries(new URLSearchParams(trimmed));
  try {
    return JSON.parse(trimmed);
  } catch (error) {
    throw new InputError([{ field: flag.replace(/^--/, ''), message: `not JSON: ${(error as Error).message}` }]);
  }
}
