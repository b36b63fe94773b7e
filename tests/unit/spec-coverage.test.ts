import { describe, expect, it } from 'vitest';
import { listRoutes, services } from '@agent-economy/contracts';
import { COMPANION_SERVICES, X402_FACILITATOR_ENDPOINTS, specEndpoints } from '../support/spec';

// The registry against the specification's endpoint tables: nothing missing, nothing invented.
const spec = specEndpoints();
const registered = new Map(
  services.map((s) => [s.id as string, listRoutes(s.router).map(({ route }) => `${route.method} ${route.path}`)]),
);

describe('specification coverage', () => {
  it('the inventory holds the 137 endpoints of the three endpoint tables', () => {
    expect([...spec.values()].reduce((n, e) => n + e.length, 0)).toBe(137);
  });

  for (const [id, endpoints] of spec) {
    it(`${id}: every endpoint of the spec, in the spec's order, and no other`, () => {
      const expected = id === 'facilitator' ? [...endpoints, ...X402_FACILITATOR_ENDPOINTS] : endpoints;
      expect(registered.get(id), `service ${id} is not registered`).toBeDefined();
      expect(registered.get(id)).toEqual(expected);
    });
  }

  it('registers only spec services and the gateway’s four companions', () => {
    const allowed = new Set([...spec.keys(), ...COMPANION_SERVICES]);
    expect([...registered.keys()].filter((id) => !allowed.has(id))).toEqual([]);
    for (const id of COMPANION_SERVICES) expect(registered.get(id)?.length ?? 0, id).toBeGreaterThan(0);
  });
});
