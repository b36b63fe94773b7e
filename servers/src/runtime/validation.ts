import type { AppRoute, ServerInferRequest } from '@ts-rest/core';
import { isZodType } from '@ts-rest/core';
import type { FieldIssue } from '@agent-economy/contracts';
import type { ZodError, ZodIssue } from 'zod';

export interface RawRequest {
  params: unknown;
  query: unknown;
  body: unknown;
  headers: unknown;
}

/**
 * A request whose parts passed their schemas: unknown until a route says what they are (RouteRequest). A route's
 * request has only the parts its contract declares, so each is optional here.
 */
export interface ParsedRequest {
  params?: unknown;
  query?: unknown;
  body?: unknown;
  headers?: unknown;
}

/**
 * The parsed parts of a request to route R, typed from its contract: what preflight checks and price resolvers read.
 */
export type RouteRequest<R> = R extends AppRoute
  ? Pick<ServerInferRequest<R>, Extract<keyof ServerInferRequest<R>, keyof ParsedRequest>>
  : ParsedRequest;

type Part = keyof RawRequest;

function describe(part: Part, issue: ZodIssue): FieldIssue[] {
  const at = (path: (string | number)[]) => [part, ...path].join('.');
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => ({ field: at([...issue.path, key]), message: 'is not a known field' }));
  }
  if (issue.code === 'invalid_union_discriminator') {
    const options = issue.options.map((o) => JSON.stringify(o)).join(', ');
    return [{ field: at(issue.path), message: `must be one of ${options}` }];
  }
  const message = issue.message === 'Required' ? 'is required' : issue.message;
  return [{ field: at(issue.path), message }];
}

function issuesOf(part: Part, error: ZodError): FieldIssue[] {
  return error.issues.flatMap((issue) => describe(part, issue));
}

/**
 * Validates every part of a request against its route's schemas, before payment or any handler work.
 * Returns the parsed values (defaults and coercions applied) or every problem found, by field.
 */
export function validateRequest(
  route: AppRoute,
  raw: RawRequest,
): { ok: true; parsed: ParsedRequest } | { ok: false; issues: FieldIssue[] } {
  // Named, not spread: an Express request's headers live on a prototype getter, which a spread would drop.
  const parsed: ParsedRequest = { params: raw.params, query: raw.query, body: raw.body, headers: raw.headers };
  let issues: FieldIssue[] | undefined;
  for (const [part, schema] of schemasOf(route)) {
    const result = schema.safeParse(raw[part]);
    if (result.success) parsed[part] = result.data;
    else (issues ??= []).push(...issuesOf(part, result.error));
  }
  return issues ? { ok: false, issues } : { ok: true, parsed };
}

type Schema = { safeParse(value: unknown): { success: true; data: unknown } | { success: false; error: ZodError } };
const schemas = new WeakMap<AppRoute, [Part, Schema][]>();
/** The parts a route declares a schema for, found once per route (most free GETs declare none). */
function schemasOf(route: AppRoute): [Part, Schema][] {
  let found = schemas.get(route);
  if (!found) {
    const declared: Record<Part, unknown> = {
      params: route.pathParams,
      query: route.query,
      body: route.method === 'GET' ? undefined : (route as { body?: unknown }).body,
      headers: route.headers,
    };
    found = (Object.keys(declared) as Part[]).flatMap((part): [Part, Schema][] =>
      isZodType(declared[part]) ? [[part, declared[part] as unknown as Schema]] : [],
    );
    schemas.set(route, found);
  }
  return found;
}

export function summarizeIssues(issues: FieldIssue[]): string {
  const shown = issues.slice(0, 3).map((i) => `${i.field} ${i.message}`);
  const more = issues.length > 3 ? ` (and ${issues.length - 3} more)` : '';
  return `Invalid request: ${shown.join('; ')}${more}`;
}
