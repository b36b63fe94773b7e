import { describe, expect, it } from 'vitest';
import type { ZodTypeAny } from 'zod';
import { listRoutes, routeMeta, services } from '@agent-economy/contracts';

// Every contract schema must answer malformed input with issues, never by throwing: zod runs refinements on
// values that already failed their format, and a refinement that converts (BigInt, usdToAtomic) would throw,
// which a server turns into a 500. Each route's example body is taken apart leaf by leaf and each string
// replaced by malformed text, each number by NaN-like extremes.

const MALFORMED_STRINGS = ['not a number', '', '-1', '1e9', '0x10', '١٢٣'];
const MALFORMED_NUMBERS = [-1, 1e308, 0.5, Number.MAX_SAFE_INTEGER + 2];

function* mutations(value: unknown): Generator<unknown> {
  if (typeof value === 'string') for (const s of MALFORMED_STRINGS) yield s;
  else if (typeof value === 'number') for (const n of MALFORMED_NUMBERS) yield n;
  else if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++)
      for (const m of mutations(value[i])) yield value.map((v, j) => (j === i ? m : v));
  } else if (value && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) for (const m of mutations(v)) yield { ...value, [key]: m };
  }
}

describe('contract inputs', () => {
  for (const service of services) {
    it(`${service.id}: every input schema rejects malformed values without throwing`, () => {
      let checked = 0;
      for (const { key, route } of listRoutes(service.router)) {
        const example = routeMeta(route).example as { body?: unknown; query?: unknown; params?: unknown } | undefined;
        const schemas: [string, unknown, ZodTypeAny | undefined][] = [
          ['body', example?.body, (route as { body?: ZodTypeAny }).body],
          ['query', example?.query, (route as { query?: ZodTypeAny }).query],
          ['params', example?.params, (route as { pathParams?: ZodTypeAny }).pathParams],
        ];
        for (const [part, sample, schema] of schemas) {
          if (!schema || typeof (schema as ZodTypeAny).safeParse !== 'function' || sample === undefined) continue;
          for (const mutated of mutations(sample)) {
            expect(
              () => schema.safeParse(mutated),
              `${key} ${part} ${JSON.stringify(mutated).slice(0, 200)}`,
            ).not.toThrow();
            checked++;
          }
        }
      }
      expect(checked).toBeGreaterThan(0);
    });
  }
});
