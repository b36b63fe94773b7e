import { isZodType } from '@ts-rest/core';
import { describe, expect, it } from 'vitest';
import { buildAgentCard, isPaid, listRoutes, routeMeta, services } from '@agent-economy/contracts';
import { createClient } from '@agent-economy/sdk';

describe('contracts', () => {
  for (const service of services) {
    it(`${service.id}: every route has a summary, a description, payment metadata and typed errors`, () => {
      const routes = listRoutes(service.router);
      expect(routes.length).toBeGreaterThan(0);
      for (const { key, route } of routes) {
        expect(route.summary, key).toBeTruthy();
        expect(route.description, key).toBeTruthy();
        const { payment } = routeMeta(route);
        expect(['free', 'fixed', 'adaptive', 'tiered']).toContain(payment.kind);
        expect(Object.keys(route.responses)).toEqual(expect.arrayContaining(['400', '500']));
        if (isPaid(payment)) expect(Object.keys(route.responses)).toEqual(expect.arrayContaining(['402', '503']));
      }
    });

    it(`${service.id}: each route's example request passes the route's own schemas`, () => {
      for (const { key, route } of listRoutes(service.router)) {
        const example = routeMeta(route).example;
        const takesInput = (route.method !== 'GET' && 'body' in route) || route.path.includes(':');
        if (takesInput) expect(example, `${key} has no example request`).toBeDefined();
        const parts = { params: route.pathParams, query: route.query, body: 'body' in route ? route.body : undefined };
        for (const [part, schema] of Object.entries(parts)) {
          const value = example?.[part as keyof typeof example];
          if (value === undefined || !isZodType(schema)) continue;
          const result = schema.safeParse(value);
          expect(result.success, `${key}.${part}: ${JSON.stringify(!result.success && result.error.issues)}`).toBe(
            true,
          );
        }
      }
    });
  }

  it('derive a descriptor and an SDK sub-client for every service', () => {
    const client = createClient() as unknown as Record<string, Record<string, unknown>>;
    for (const service of services) {
      const routes = listRoutes(service.router);
      const card = buildAgentCard(service, { url: 'https://example.test/svc' });
      expect(card.skills.map((s) => s.id)).toEqual(routes.map((_, n) => `endpoint-${n}`));
      expect(card.skills.map((s) => s.name)).toEqual(routes.map(({ route }) => `${route.method} ${route.path}`));
      for (const skill of card.skills) expect(skill.tags).toContain('x402');
      const sub = client[service.id.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())]!;
      for (const { key } of routes) {
        const method = key.split('.').reduce<any>((node, part) => node?.[part], sub);
        expect(typeof method, `${service.id}.${key}`).toBe('function');
        expect(typeof method.withResponse).toBe('function');
      }
    }
  });

  it('education charges the spec prices', () => {
    const prices = Object.fromEntries(
      listRoutes(services.find((s) => s.id === 'education')!.router).map(({ key, route }) => [
        key,
        routeMeta(route).payment,
      ]),
    );
    expect(prices).toEqual({
      catalog: { kind: 'free' },
      course: { kind: 'free' },
      lesson: { kind: 'fixed', usd: '0.05' },
      quiz: {
        kind: 'tiered',
        tiers: [
          { id: 'generate', usd: '0.03', description: 'generate a quiz for a lesson' },
          { id: 'grade', usd: '0', description: 'grade answers to a quiz you generated' },
        ],
      },
      exercise: { kind: 'fixed', usd: '0.05' },
      tutor: { kind: 'fixed', usd: '0.03' },
    });
  });
});
