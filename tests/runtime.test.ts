import { Writable } from 'node:stream';
import { initContract } from '@ts-rest/core';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  SOLANA_DEVNET,
  USDC_DEVNET,
  defineService,
  fixed,
  free,
  standardErrors,
  paymentErrors,
  decodeX402Header,
} from '@agent-economy/contracts';
import { BadRequestError, InternalServerError, PaymentRequiredError, createServiceClient } from '@agent-economy/sdk';
import { createServiceApp } from '../servers/src/runtime/app';
import { startService, type RunningService } from './support/servers';

// A small service made for these tests: one route of each kind the runtime must handle.
const c = initContract();
/** How many times the `shout` route's body schema ran: once a request, the handler given what it made. */
let shoutParses = 0;
const fixture = defineService({
  id: 'fixture',
  title: 'Fixture Service',
  description: 'Exercises the runtime',
  router: c.router({
    echo: {
      method: 'POST',
      path: '/api/echo',
      body: z.object({ name: z.string().min(2), count: z.number().int().max(5) }).strict(),
      responses: { 200: z.object({ greeting: z.string() }), ...standardErrors },
      summary: 'Echoes a name',
      metadata: { payment: free() },
    },
    paid: {
      method: 'POST',
      path: '/api/paid',
      body: z.object({ topic: z.string().min(3) }).strict(),
      responses: { 200: z.object({ topic: z.string() }), ...standardErrors, ...paymentErrors },
      summary: 'A paid operation',
      metadata: { payment: fixed('0.05') },
    },
    boom: {
      method: 'GET',
      path: '/api/boom',
      responses: { 200: z.object({}), ...standardErrors },
      summary: 'Always fails',
      metadata: { payment: free() },
    },
    item: {
      method: 'GET',
      path: '/api/items/:itemId',
      pathParams: z.object({ itemId: z.string().regex(/^itm_[a-z0-9 ]+$/, 'must be an item id') }),
      query: z.object({ limit: z.coerce.number().int().min(1).max(10).default(5) }),
      responses: { 200: z.object({ itemId: z.string(), limit: z.number() }), ...standardErrors },
      summary: 'One item',
      metadata: { payment: free() },
    },
    shout: {
      method: 'POST',
      path: '/api/shout',
      body: z
        .object({ word: z.string().min(1) })
        .strict()
        .transform((b) => {
          shoutParses++;
          return { word: b.word.toUpperCase() };
        }),
      responses: { 200: z.object({ word: z.string() }), ...standardErrors },
      summary: 'Shouts a word',
      metadata: { payment: free() },
    },
  }),
});

let service: RunningService;
let client: ReturnType<typeof createServiceClient<typeof fixture.router>>;
let paidCalls = 0;
const logLines: Record<string, unknown>[] = [];

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _enc, done) {
      logLines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  service = await startService(async (context) =>
    createServiceApp({
      service: fixture,
      handlers: {
        echo: async ({ body }) => ({ status: 200, body: { greeting: `hello ${body.name} x${body.count}` } }),
        paid: async ({ body }) => {
          paidCalls++;
          return { status: 200, body: { topic: body.topic } };
        },
        boom: async () => {
          throw new Error('database exploded at /secret/path');
        },
        item: async ({ params, query }) => ({ status: 200, body: { itemId: params.itemId, limit: query.limit } }),
        shout: async ({ body }) => ({ status: 200, body: { word: body.word } }),
      },
      publicUrl: context.publicUrl,
      db: context.db,
      logger: pino({ level: 'info' }, sink),
      paywall: context.paywall,
    }),
  );
  client = createServiceClient(fixture, service.url, { maxRetries: 0 });
});
afterAll(() => service?.close());

describe('request handling', () => {
  it('serves a valid request and applies query defaults and coercion', async () => {
    expect(await client.echo({ body: { name: 'ada', count: 3 } })).toEqual({ greeting: 'hello ada x3' });
    expect(await client.item({ params: { itemId: 'itm_1' } })).toEqual({ itemId: 'itm_1', limit: 5 });
    expect(await client.item({ params: { itemId: 'itm_a b' }, query: { limit: 7 } })).toEqual({
      itemId: 'itm_a b',
      limit: 7,
    });
  });

  it('parses a request once: the handler gets what the schemas made of it', async () => {
    const before = shoutParses;
    expect(await client.shout({ body: { word: 'quiet' } })).toEqual({ word: 'QUIET' });
    expect(shoutParses - before).toBe(1);
  });

  it('answers invalid input with 400 naming every bad field', async () => {
    const error = await client.echo({ body: { name: 'a', count: 9, extra: true } as never }).catch((e) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.status).toBe(400);
    expect(error.code).toBe('invalid_request');
    expect(error.fields.map((f: { field: string }) => f.field).sort()).toEqual([
      'body.count',
      'body.extra',
      'body.name',
    ]);
    expect(error.fields.find((f: { field: string }) => f.field === 'body.extra').message).toBe('is not a known field');
    expect(error.requestId).toMatch(/^req_[0-9a-f]{24}$/);
  });

  it('tags GET answers for revalidation and leaves POST answers untagged', async () => {
    const got = await fetch(`${service.url}/api/items/itm_1?limit=2`);
    const etag = got.headers.get('etag');
    expect(etag).toMatch(/^W\/"[^"]+"$/);
    expect(await got.json()).toEqual({ itemId: 'itm_1', limit: 2 });
    // (fetch adds Cache-Control: no-cache to a conditional request unless it names its own.)
    const again = await fetch(`${service.url}/api/items/itm_1?limit=2`, {
      headers: { 'if-none-match': etag!, 'cache-control': 'max-age=0' },
    });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');

    const body = JSON.stringify({ name: 'ada', count: 2 });
    const posted = await fetch(`${service.url}/api/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'if-none-match': '*', 'cache-control': 'max-age=0' },
      body,
    });
    expect(posted.status).toBe(200);
    expect(posted.headers.get('etag')).toBeNull();
    expect(posted.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const text = await posted.text();
    expect(text).toBe('{"greeting":"hello ada x2"}');
    expect(posted.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
    // An error answer to a POST is the envelope as before, untagged too.
    const refused = await fetch(`${service.url}/api/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'a', count: 2 }),
    });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('etag')).toBeNull();
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
  });

  it('validates path parameters and query values', async () => {
    const bad = await client.item({ params: { itemId: 'nope' }, query: { limit: 50 } }).catch((e) => e);
    expect(bad).toBeInstanceOf(BadRequestError);
    expect(bad.fields).toEqual([
      { field: 'params.itemId', message: 'must be an item id' },
      { field: 'query.limit', message: 'Number must be less than or equal to 10' },
    ]);
  });

  it('answers malformed JSON with 400 invalid_json and an oversize body with 413', async () => {
    const malformed = await fetch(`${service.url}/api/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"name":',
    });
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as any).error.code).toBe('invalid_json');
    const huge = await fetch(`${service.url}/api/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x'.repeat(300_000), count: 1 }),
    });
    expect(huge.status).toBe(413);
    expect(((await huge.json()) as any).error.code).toBe('payload_too_large');
  });

  it('answers an unknown route with 404 in the envelope', async () => {
    const response = await fetch(`${service.url}/api/nothing-here`);
    expect(response.status).toBe(404);
    const body = (await response.json()) as any;
    expect(body.error.code).toBe('route_not_found');
    expect(body.requestId).toBe(response.headers.get('x-request-id'));
  });

  it('turns an unexpected exception into a 500 envelope without internals, logged with the request id', async () => {
    const error = await client.boom().catch((e) => e);
    expect(error).toBeInstanceOf(InternalServerError);
    expect(error.code).toBe('internal_error');
    expect(JSON.stringify(error.body)).not.toMatch(/exploded|secret|at .*\.ts/);
    const logged = logLines.find((l) => l.requestId === error.requestId && l.msg === 'unhandled error');
    expect(logged).toBeDefined();
    expect(JSON.stringify(logged)).toContain('database exploded');
  });

  it('keeps a well-formed incoming request id and replaces a malformed one', async () => {
    const kept = await fetch(`${service.url}/api/boom`, { headers: { 'x-request-id': 'trace-123' } });
    expect(kept.headers.get('x-request-id')).toBe('trace-123');
    const replaced = await fetch(`${service.url}/api/boom`, { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(replaced.headers.get('x-request-id')).toMatch(/^req_/);
  });
});

describe('paywall', () => {
  it('validates before asking for payment: invalid input to a paid route is a 400, not a 402', async () => {
    const error = await client.paid({ body: { topic: 'x' } }).catch((e) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(paidCalls).toBe(0);
  });

  it('quotes a paid route with an x402 v2 PAYMENT-REQUIRED header and never serves it unpaid', async () => {
    const error = await client.paid({ body: { topic: 'agents' } }).catch((e) => e);
    expect(error).toBeInstanceOf(PaymentRequiredError);
    expect(error.code).toBe('payment_required');
    expect(error.headers['cache-control']).toBe('no-store');
    const quote = error.quote;
    expect(quote).toMatchObject({
      x402Version: 2,
      resource: { url: `${service.url}/api/paid`, description: 'A paid operation', mimeType: 'application/json' },
    });
    expect(quote.accepts).toEqual([
      {
        scheme: 'exact',
        network: SOLANA_DEVNET,
        amount: '50000',
        asset: USDC_DEVNET,
        payTo: service.context.paywall.payTo,
        maxTimeoutSeconds: 60,
        extra: {},
      },
    ]);
    expect(decodeX402Header(error.headers['payment-required'])).toEqual(quote);
    expect(paidCalls).toBe(0);
  });

  it('refuses a payment it cannot verify, still without serving', async () => {
    const error = await client
      .paid({ body: { topic: 'agents' } }, { headers: { 'payment-signature': 'eyJ4NDAyVmVyc2lvbiI6Mn0=' } })
      .catch((e) => e);
    expect(error).toBeInstanceOf(PaymentRequiredError);
    expect(error.code).toBe('payment_unverifiable');
    expect(paidCalls).toBe(0);
  });
});

describe('service surface', () => {
  it('publishes the descriptor at both well-known paths, derived from the contract', async () => {
    const [a, b] = await Promise.all(
      ['/.well-known/agent-card.json', '/.well-known/agent.json'].map((p) =>
        fetch(service.url + p).then((r) => r.json() as Promise<any>),
      ),
    );
    expect(a).toEqual(b);
    expect(a).toEqual({
      name: 'Fixture Service',
      description: 'Exercises the runtime',
      url: service.url,
      provider: { organization: 'Agent Economy', url: service.url },
      version: '1.0.0',
      documentationUrl: service.url,
      capabilities: { streaming: false, pushNotifications: false, stateTransitionHistory: false },
      defaultInputModes: ['application/json', 'text/plain'],
      defaultOutputModes: ['application/json', 'text/plain'],
      skills: [
        { id: 'endpoint-0', name: 'POST /api/echo', description: 'Echoes a name', tags: ['x402', 'fixture', 'free'] },
        {
          id: 'endpoint-1',
          name: 'POST /api/paid',
          description: 'A paid operation',
          tags: ['x402', 'fixture', 'paid'],
        },
        { id: 'endpoint-2', name: 'GET /api/boom', description: 'Always fails', tags: ['x402', 'fixture', 'free'] },
        {
          id: 'endpoint-3',
          name: 'GET /api/items/:itemId',
          description: 'One item',
          tags: ['x402', 'fixture', 'free'],
        },
        { id: 'endpoint-4', name: 'POST /api/shout', description: 'Shouts a word', tags: ['x402', 'fixture', 'free'] },
      ],
    });
  });

  it('serves its OpenAPI document and a local API reference page', async () => {
    const document = (await fetch(`${service.url}/openapi.json`).then((r) => r.json())) as any;
    expect(Object.keys(document.paths)).toEqual([
      '/api/echo',
      '/api/paid',
      '/api/boom',
      '/api/items/{itemId}',
      '/api/shout',
    ]);
    expect(document.servers).toEqual([{ url: service.url, description: 'this deployment' }]);
    const page = await fetch(`${service.url}/docs`);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const html = await page.text();
    expect(html).toContain("url: 'openapi.json'");
    expect(html).not.toMatch(/https?:\/\//);
    const slash = await fetch(`${service.url}/docs/`, { redirect: 'manual' });
    expect(slash.status).toBe(301);
    expect(new URL(slash.headers.get('location')!, `${service.url}/docs/`).href).toBe(`${service.url}/docs`);
    const bundle = await fetch(`${service.url}/docs/assets/swagger-ui-bundle.js`);
    expect(bundle.status).toBe(200);
    expect((await bundle.text()).length).toBeGreaterThan(100_000);
  });

  it('reports health and Prometheus metrics labelled by route template', async () => {
    const health = (await fetch(`${service.url}/health`).then((r) => r.json())) as any;
    expect(health).toMatchObject({ status: 'ok', service: 'fixture', version: '1.0.0', database: 'ok' });
    await client.item({ params: { itemId: 'itm_42' } });
    const metrics = await fetch(`${service.url}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(
      /http_requests_total\{route="\/api\/items\/:itemId",method="GET",status="200",service="fixture"\} [1-9]/,
    );
    expect(metrics).toMatch(/payment_quotes_total\{route="\/api\/paid",service="fixture"\} [1-9]/);
    expect(metrics).not.toContain('itm_42');
  });
});
