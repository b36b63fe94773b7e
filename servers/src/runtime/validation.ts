import type { AppRoute } from '@ts-rest/core';
import { isZodType } from '@ts-rest/core';
import type { FieldIssue } from '@agent-economy/contracts';
import type { ZodError, ZodIssue } from 'zod';

export interface RawRequest {
  params: unknown;
  query: unknown;
  body: unknown;
  headers: unknown;
}

export interface ParsedRequest {
  params: any;
  query: any;
  body: any;
  headers: any;
}

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
  const schemas: Record<Part, unknown> = {
    params: route.pathParams,
    query: route.query,
    body: route.method === 'GET' ? undefined : (route as { body?: unknown }).body,
    headers: route.headers,
  };
  // Named, not spread: an Express request's headers live on a prototype getter, which a spread would drop.
  const parsed: ParsedRequest = { params: raw.params, query: raw.query, body: raw.body, headers: raw.headers };
  const issues: FieldIssue[] = [];
  for (const part of Object.keys(schemas) as Part[]) {
    const schema = schemas[part];
    if (!isZodType(schema)) continue;
    const result = schema.safeParse(raw[part]);
    if (result.success) parsed[part] = result.data;
    else issues.push(...issuesOf(part, result.error));
  }
  return issues.length ? { ok: false, issues } : { ok: true, parsed };
}

export function summarizeIssues(issues: FieldIssue[]): string {
  const shown = issues.slice(0, 3).map((i) => `${i.field} ${i.message}`);
  const more = issues.length > 3 ? ` (and ${issues.length - 3} more)` : '';
  return `Invalid request: ${shown.join('; ')}${more}`;
}
