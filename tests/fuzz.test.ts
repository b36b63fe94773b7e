import { listRoutes, routeMeta, type ServiceDefinition } from '@agent-economy/contracts';
import type { AppRoute } from '@ts-rest/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployments, serviceApps, type DeploymentId } from '../servers/src/services';
import { startEconomy, type Economy } from './support/economy';
import { startService, type RunningService } from './support/servers';
import { mulberry32 } from '../servers/src/upstream/market/random';

// Contract-driven fuzzing: every route of every service `npm start` mounts (whatever serviceApps holds
// now), on one economy, gets malformed bodies, wrong types, missing fields, junk headers, odd path
// parameters and oversized values. No answer may be a 500; every refusal is in the error envelope (the
// x402 shape on the facilitator's x402 routes); and nothing is charged or settled. Cases are sampled with
// a fixed seed, a few per route, so the run stays short and the same every time.

const SEED = 0x5eed;
const CASES_PER_ROUTE = 8;

interface Case {
  name: string;
  path: string;
  query?: string;
  headers?: Record<string, string>;
  body?: string;
}

const ODD_SEGMENTS = [
  '%',
  '%ZZ',
  '%E2%82',
  '..',
  '%00',
  'x'.repeat(3000),
  '%F0%9F%92%A9',
  '-1',
  '0',
  'null',
  '[]',
  '%20',
  'a%2Fb',
];
const WRONG_VALUES: unknown[] = [
  null,
  12345678901234567890,
  -1,
  1.5,
  true,
  'x'.repeat(20_000),
  [],
  {},
  ['a'],
  { $gt: '' },
  '',
  '\u0000',
  'NaN',
];
const JUNK_HEADERS: Record<string, string>[] = [
  { 'payment-signature': 'not-base64!!' },
  { 'payment-signature': Buffer.from('{"x402Version":2}').toString('base64') },
  { 'sign-in-with-x': 'garbage' },
  { 'sign-in-with-x': Buffer.from('{"domain":"evil"}').toString('base64') },
  { 'x-request-id': '../../etc/passwd\u00ff' },
  { 'content-type': 'application/json; charset=utf-99' },
  { 'idempotency-key': 'k'.repeat(5000) },
];

const fill = (path: string, params: Record<string, string>) =>
  path.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => encodeURIComponent(params[name] ?? 'x'));

/** Every malformed request this route can get, before sampling. */
function casesFor(route: AppRoute): Case[] {
  const example = routeMeta(route).example ?? {};
  const params = (example.params ?? {}) as Record<string, string>;
  const base = fill(route.path, params);
  const names = [...route.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
  const cases: Case[] = [];
  const exampleBody =
    example.body && typeof example.body === 'object' && !Array.isArray(example.body)
      ? (example.body as Record<string, unknown>)
      : {};
  const json = (value: unknown) => JSON.stringify(value);

  for (const name of names) {
    for (const odd of ODD_SEGMENTS) {
      cases.push({
        name: `path ${name}=${odd.slice(0, 20)}`,
        path: route.path.replace(/:([A-Za-z0-9_]+)/g, (_m, n: string) =>
          n === name ? odd : encodeURIComponent(params[n] ?? 'x'),
        ),
      });
    }
  }
  for (const junk of JUNK_HEADERS)
    cases.push({
      name: `header ${Object.keys(junk)[0]}`,
      path: base,
      headers: junk,
      ...(route.method !== 'GET' ? { body: json(exampleBody) } : {}),
    });
  cases.push({ name: 'query junk', path: base, query: 'limit=-1&offset=abc&cursor=%ZZ&x[$gt]=1&' + 'q='.repeat(200) });
  for (const key of Object.keys((example.query ?? {}) as object)) {
    for (const value of ['', '-1', 'x'.repeat(5000), '1e400', '[object Object]'])
      cases.push({
        name: `query ${key}=${value.slice(0, 10)}`,
        path: base,
        query: `${key}=${encodeURIComponent(value)}`,
      });
  }
  if (route.method !== 'GET') {
    for (const body of [
      '{',
      'null',
      '[]',
      '"text"',
      '42',
      '{"a":',
      json({ __proto__: { admin: true } }),
      json({ constructor: { prototype: {} } }),
      '{}',
    ]) {
      cases.push({ name: `body ${body.slice(0, 12)}`, path: base, body });
    }
    cases.push({ name: 'body oversized', path: base, body: json({ ...exampleBody, pad: 'x'.repeat(600_000) }) });
    for (const key of Object.keys(exampleBody)) {
      const { [key]: _dropped, ...rest } = exampleBody;
      cases.push({ name: `body without ${key}`, path: base, body: json(rest) });
      for (const value of WRONG_VALUES)
        cases.push({
          name: `body ${key}=${json(value)?.slice(0, 12)}`,
          path: base,
          body: json({ ...exampleBody, [key]: value }),
        });
    }
    cases.push({ name: 'body unknown field', path: base, body: json({ ...exampleBody, unexpected: 1 }) });
  }
  return cases;
}

function sample<T>(items: T[], count: number, random: () => number): T[] {
  const pool = [...items];
  const chosen: T[] = [];
  while (pool.length > 0 && chosen.length < count) chosen.push(pool.splice(Math.floor(random() * pool.length), 1)[0]!);
  return chosen;
}

let economy: Economy;
const running = new Map<string, RunningService>();

beforeAll(async () => {
  economy = await startEconomy();
  // As `npm start`: one database for every service, each paid through the facilitator, its wallet registered.
  const database = economy.facilitator.database;
  for (const [id, factory] of Object.entries(serviceApps)) {
    if (id === 'facilitator') running.set(id, economy.facilitator);
    else if (id === 'education') running.set(id, economy.education);
    else {
      const service = await startService(factory!, {
        id,
        database,
        rpcUrl: economy.rpcUrl,
        paywall: { feePayer: economy.feePayer.address, facilitatorUrl: economy.facilitator.url },
      });
      economy.sellers.add(service.context.wallet.address);
      await economy.ledger.openTokenAccount(service.context.wallet.address);
      running.set(id, service);
    }
  }
}, 180_000);
afterAll(async () => {
  await Promise.all(
    [...running].filter(([id]) => id !== 'facilitator' && id !== 'education').map(([, s]) => s.stopServer()),
  );
  await economy?.close();
});

const served = deployments.filter((d) => serviceApps[d.id as DeploymentId]);

describe.each(served.map((d) => [d.id, d] as const))('%s', (id: string, service: ServiceDefinition) => {
  it('answers malformed requests with a 4xx in its error shape, and charges nothing', async () => {
    const target = running.get(id)!;
    const random = mulberry32(SEED ^ [...id].reduce((h, c) => Math.imul(h, 31) + c.charCodeAt(0), 7));
    const buyerBefore = economy.ledger.tokenBalance(economy.buyer.address);
    const feesBefore = economy.ledger.lamports(economy.feePayer.address);
    const settledBefore = await economy.facilitator.database.db
      .selectFrom('facilitator_settlements')
      .select((eb) => eb.fn.countAll<bigint>().as('n'))
      .executeTakeFirstOrThrow();
    const failures: string[] = [];

    for (const { route } of listRoutes(service.router)) {
      const x402 = routeMeta(route).wire === 'x402';
      for (const c of sample(casesFor(route), CASES_PER_ROUTE, random)) {
        const url = `${target.url}${c.path}${c.query ? `?${c.query}` : ''}`;
        const label = `${route.method} ${route.path} [${c.name}]`;
        let response: Response;
        try {
          response = await fetch(url, {
            method: route.method,
            headers: { ...(c.body !== undefined ? { 'content-type': 'application/json' } : {}), ...c.headers },
            ...(c.body !== undefined ? { body: c.body } : {}),
          });
        } catch (error) {
          failures.push(`${label}: ${(error as Error).message}`);
          continue;
        }
        const text = await response.text();
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        const status = response.status;
        // A dependency this in-process deployment does not run (another service, a live provider) may be
        // unreachable: 502/503 with Retry-After is the honest answer then; a 500 never is.
        const dependencyDown = (status === 502 || status === 503) && response.headers.get('retry-after') !== null;
        if (status >= 500 && !dependencyDown) failures.push(`${label}: ${status} ${text.slice(0, 200)}`);
        if (status >= 400 && status !== 402) {
          const shaped = x402
            ? typeof (body as { isValid?: unknown })?.isValid === 'boolean' ||
              typeof (body as { success?: unknown })?.success === 'boolean'
            : typeof (body as { error?: { code?: unknown; message?: unknown } })?.error?.code === 'string' &&
              typeof (body as { error: { message?: unknown } }).error.message === 'string' &&
              typeof (body as { requestId?: unknown }).requestId === 'string';
          if (!shaped)
            failures.push(
              `${label}: ${status} not in the ${x402 ? 'x402 shape' : 'error envelope'}: ${text.slice(0, 200)}`,
            );
        }
        if (status === 402 && !response.headers.get('payment-required'))
          failures.push(`${label}: 402 without PAYMENT-REQUIRED`);
      }
    }

    expect(failures).toEqual([]);
    // Nothing was charged or settled: the buyer's balance, the fee payer's lamports and the settlements are as they
    // were.
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(buyerBefore);
    expect(economy.ledger.lamports(economy.feePayer.address)).toBe(feesBefore);
    const settledAfter = await economy.facilitator.database.db
      .selectFrom('facilitator_settlements')
      .select((eb) => eb.fn.countAll<bigint>().as('n'))
      .executeTakeFirstOrThrow();
    expect(settledAfter.n).toBe(settledBefore.n);
  });
});
