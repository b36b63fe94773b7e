import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { initContract } from '@ts-rest/core';
import axios from 'axios';
import { afterAll, afterEach, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import {
  SOLANA_DEVNET,
  USDC_DEVNET,
  base58Encode,
  defineService,
  education,
  encodeX402Header,
  free,
  standardErrors,
  type PaymentRequired,
  type Quiz,
  type QuizResult,
} from '@agent-economy/contracts';
import {
  AgentEconomyError,
  ApiError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  ConnectionError,
  ConnectionTimeoutError,
  InternalServerError,
  NotFoundError,
  PayloadTooLargeError,
  PaymentRequiredError,
  PermissionDeniedError,
  RateLimitError,
  UnprocessableEntityError,
  UserAbortError,
  buildUrl,
  createClient,
  createServiceClient,
} from '@agent-economy/sdk';

// The SDK's real transport (axios over node:http) against a real loopback server whose answers each test scripts.

const c = initContract();
const fixture = defineService({
  id: 'sdk-fixture',
  title: 'SDK Fixture',
  description: 'Routes for the SDK transport tests',
  router: c.router({
    thing: {
      method: 'GET',
      path: '/api/thing/:id',
      pathParams: z.object({ id: z.string() }),
      query: z.object({
        tags: z.array(z.string()).optional(),
        filter: z.object({ a: z.string(), b: z.string() }).optional(),
        page: z.number().optional(),
      }),
      responses: { 200: z.object({ id: z.string() }), ...standardErrors },
      summary: 'One thing',
      metadata: { payment: free() },
    },
    act: {
      method: 'POST',
      path: '/api/do',
      body: z.object({ n: z.number() }),
      responses: { 200: z.object({ done: z.boolean() }), ...standardErrors },
      summary: 'Does something',
      metadata: { payment: free() },
    },
    nested: c.router({
      ping: {
        method: 'GET',
        path: '/api/nested/ping',
        responses: { 200: z.object({ pong: z.boolean() }) },
        summary: 'Nested route',
        metadata: { payment: free() },
      },
    }),
  }),
});

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

type Handler = (request: Seen, response: ServerResponse, attempt: number) => void;

let server: Server;
let baseUrl: string;
let handler: Handler;
let seen: Seen[] = [];
let onRequest: ((request: Seen) => void) | undefined;

function json(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(body === undefined ? undefined : JSON.stringify(body));
}

const envelope = (code: string, message: string, details?: unknown, requestId = 'req_body') => ({
  error: { code, message, details },
  requestId,
});

/** Answers attempt n with steps[n] (the last step repeats). */
function script(...steps: [status: number, body: unknown, headers?: Record<string, string>][]): Handler {
  return (_request, response, attempt) => {
    const [status, body, headers] = steps[Math.min(attempt, steps.length - 1)]!;
    json(response, status, body, headers);
  };
}

const ok = { id: 'x' };
const fail = (status: number, headers: Record<string, string> = { 'retry-after': '0' }) =>
  [status, envelope(`e${status}`, `failed with ${status}`), headers] as [number, unknown, Record<string, string>];

/** Never answers: for timeouts and aborts. */
const silent: Handler = () => undefined;

const client = (options: { maxRetries?: number; timeoutMs?: number; headers?: Record<string, string> } = {}) =>
  createServiceClient(fixture, baseUrl, { maxRetries: 2, timeoutMs: 10_000, ...options });

async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail');
}

function nextRequest(): Promise<Seen> {
  return new Promise((resolve) => {
    onRequest = (request) => {
      onRequest = undefined;
      resolve(request);
    };
  });
}

async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      const entry = { method: request.method!, url: request.url!, headers: request.headers, body };
      const attempt = seen.length;
      seen.push(entry);
      onRequest?.(entry);
      handler(entry, response, attempt);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

// Connections stay open between tests: the client's keep-alive agent reuses them, and closing them under it
// would make the next request fail with "socket hang up". Unanswered requests are closed by the client itself.
afterEach(() => {
  seen = [];
  onRequest = undefined;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('retries', () => {
  it('retries a GET on 503 until it succeeds, honouring retry-after: 0', async () => {
    handler = script(fail(503), fail(503), [200, ok]);
    expect(await client().thing({ params: { id: 'x' } })).toEqual(ok);
    expect(seen).toHaveLength(3);
    expect(seen.every((s) => s.method === 'GET' && s.url === '/api/thing/x')).toBe(true);
  });

  it('honours retry-after-ms, which takes precedence over retry-after', async () => {
    handler = script(fail(503, { 'retry-after-ms': '5' }), [200, ok]);
    expect(await client().thing({ params: { id: 'x' } })).toEqual(ok);
    expect(seen).toHaveLength(2);

    seen = [];
    // retry-after alone (an hour) would not be waited for; retry-after-ms of 1 ms wins
    handler = script(fail(503, { 'retry-after-ms': '1', 'retry-after': '3600' }), [200, ok]);
    expect(await client().thing({ params: { id: 'x' } })).toEqual(ok);
    expect(seen).toHaveLength(2);
  });

  it('honours a Retry-After HTTP date in the past as no wait', async () => {
    handler = script(fail(503, { 'retry-after': new Date(Date.now() - 60_000).toUTCString() }), [200, ok]);
    expect(await client().thing({ params: { id: 'x' } })).toEqual(ok);
    expect(seen).toHaveLength(2);
  });

  it('retries a POST on 429 and on 503, sending the same body each time', async () => {
    handler = script(fail(429), fail(503), [200, { done: true }]);
    expect(await client().act({ body: { n: 7 } })).toEqual({ done: true });
    expect(seen).toHaveLength(3);
    expect(seen.map((s) => s.method)).toEqual(['POST', 'POST', 'POST']);
    expect(seen.map((s) => JSON.parse(s.body))).toEqual([{ n: 7 }, { n: 7 }, { n: 7 }]);
    expect(seen[0]!.headers['content-type']).toBe('application/json');
    expect(seen[0]!.headers.accept).toBe('application/json');
  });

  it.each([500, 502, 504, 408])('does not retry a POST on %i', async (status) => {
    handler = script(fail(status), [200, { done: true }]);
    const error = await rejection(client().act({ body: { n: 1 } }));
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(status);
    expect(seen).toHaveLength(1);
  });

  it.each([500, 502, 504, 408])('retries a GET on %i', async (status) => {
    handler = script(fail(status), [200, ok]);
    expect(await client().thing({ params: { id: 'x' } })).toEqual(ok);
    expect(seen).toHaveLength(2);
  });

  it.each([400, 401, 402, 403, 404, 409, 413, 422])('never retries %i, even for a GET', async (status) => {
    handler = script(fail(status), [200, ok]);
    await expect(client().thing({ params: { id: 'x' } })).rejects.toBeInstanceOf(ApiError);
    expect(seen).toHaveLength(1);
  });

  it('retries a POST with an idempotency key on 500, with the same key on every attempt', async () => {
    handler = script(fail(500), fail(500), [200, { done: true }]);
    expect(await client().act({ body: { n: 2 } }, { idempotencyKey: 'idem-123' })).toEqual({ done: true });
    expect(seen).toHaveLength(3);
    expect(seen.map((s) => s.headers['idempotency-key'])).toEqual(['idem-123', 'idem-123', 'idem-123']);
    expect(seen.map((s) => s.body)).toEqual([seen[0]!.body, seen[0]!.body, seen[0]!.body]);
  });

  it('sends no idempotency-key header without the option', async () => {
    handler = script([200, { done: true }]);
    await client().act({ body: { n: 2 } });
    expect(seen[0]!.headers['idempotency-key']).toBeUndefined();
  });

  it('treats an empty idempotency key as none: not sent, and the POST is not retried', async () => {
    handler = script(fail(500), [200, { done: true }]);
    await expect(client().act({ body: { n: 2 } }, { idempotencyKey: '' })).rejects.toBeInstanceOf(InternalServerError);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.headers['idempotency-key']).toBeUndefined();
  });

  it('never retries a request that carries a payment, even on 503', async () => {
    handler = script(fail(503), [200, { done: true }]);
    const post = await rejection(client().act({ body: { n: 3 } }, { headers: { 'payment-signature': 'sig-abc' } }));
    expect(post).toBeInstanceOf(InternalServerError);
    expect(post.status).toBe(503);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.headers['payment-signature']).toBe('sig-abc');

    // nor a GET, nor with an idempotency key, whatever the header's case
    seen = [];
    const get = await rejection(
      client({ maxRetries: 5 }).thing(
        { params: { id: 'x' } },
        { headers: { 'Payment-Signature': 'sig-def' }, idempotencyKey: 'k' },
      ),
    );
    expect(get).toBeInstanceOf(InternalServerError);
    expect(seen).toHaveLength(1);
  });

  it('never retries when the payment header comes from the client-wide headers', async () => {
    handler = script(fail(503), [200, ok]);
    await expect(
      client({ headers: { 'payment-signature': 'sig' } }).thing({ params: { id: 'x' } }),
    ).rejects.toBeInstanceOf(InternalServerError);
    expect(seen).toHaveLength(1);
  });

  it('carries a payment across a same-origin redirect only: another origin gets the request without it', async () => {
    // Another origin (another port): what reaches it, and with which headers.
    const elsewhere: IncomingHttpHeaders[] = [];
    const other = createServer((request, response) => {
      elsewhere.push(request.headers);
      request.resume();
      request.on('end', () => json(response, 402, envelope('payment_required', 'pay here')));
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    try {
      handler = (request, response) =>
        request.url === '/moved'
          ? json(response, 200, { done: true })
          : json(response, 307, envelope('moved', 'moved'), {
              location: request.headers['x-to'] === 'other' ? `${otherUrl}/api/do` : `${baseUrl}/moved`,
            });
      const paid = { 'payment-signature': 'sig-abc' };
      // Same origin (a moved path, a trailing slash): the payment goes along, as it did to the first URL.
      expect(await client().act({ body: { n: 1 } }, { headers: paid })).toEqual({ done: true });
      expect(seen.map((r) => [r.url, r.headers['payment-signature']])).toEqual([
        ['/api/do', 'sig-abc'],
        ['/moved', 'sig-abc'],
      ]);
      // Another origin: the request arrives there without the payment, which that origin cannot spend.
      const moved = await rejection(client().act({ body: { n: 1 } }, { headers: { ...paid, 'x-to': 'other' } }));
      expect(moved).toBeInstanceOf(PaymentRequiredError);
      expect(elsewhere).toHaveLength(1);
      expect(elsewhere[0]!['x-to']).toBe('other');
      expect(elsewhere[0]!['payment-signature']).toBeUndefined();
      // A call without a payment follows redirects anywhere, as before.
      seen = [];
      elsewhere.length = 0;
      await expect(client().act({ body: { n: 1 } }, { headers: { 'x-to': 'other' } })).rejects.toBeInstanceOf(
        PaymentRequiredError,
      );
      expect(elsewhere).toHaveLength(1);
    } finally {
      other.closeAllConnections();
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });

  it('respects maxRetries and then throws the typed error from the envelope', async () => {
    handler = script([
      503,
      envelope('settlement_unavailable', 'the facilitator is down', { retryable: true }, 'req_503'),
      { 'retry-after': '0' },
    ]);
    const error = await rejection(client({ maxRetries: 1 }).act({ body: { n: 1 } }));
    expect(seen).toHaveLength(2);
    expect(error).toBeInstanceOf(InternalServerError);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toBeInstanceOf(AgentEconomyError);
    expect(error.name).toBe('InternalServerError');
    expect(error.status).toBe(503);
    expect(error.code).toBe('settlement_unavailable');
    expect(error.message).toBe('503 settlement_unavailable: the facilitator is down');
    expect(error.details).toEqual({ retryable: true });
    expect(error.requestId).toBe('req_503');
    expect(error.body).toEqual(
      envelope('settlement_unavailable', 'the facilitator is down', { retryable: true }, 'req_503'),
    );
  });

  it('lets a call override the client maxRetries', async () => {
    handler = script(fail(503));
    await expect(client({ maxRetries: 3 }).thing({ params: { id: 'x' } }, { maxRetries: 0 })).rejects.toBeInstanceOf(
      InternalServerError,
    );
    expect(seen).toHaveLength(1);

    seen = [];
    await expect(client({ maxRetries: 0 }).thing({ params: { id: 'x' } }, { maxRetries: 3 })).rejects.toBeInstanceOf(
      InternalServerError,
    );
    expect(seen).toHaveLength(4);
  });

  it('does not wait for a Retry-After longer than 60 s: fails after one attempt', async () => {
    handler = script([429, envelope('rate_limited', 'slow down'), { 'retry-after': '61' }], [200, ok]);
    const error = await rejection(client({ maxRetries: 3 }).thing({ params: { id: 'x' } }));
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error.code).toBe('rate_limited');
    expect(error.headers['retry-after']).toBe('61');
    expect(seen).toHaveLength(1);

    seen = [];
    handler = script([503, envelope('busy', 'busy'), { 'retry-after-ms': '60001' }], [200, ok]);
    await expect(client({ maxRetries: 3 }).thing({ params: { id: 'x' } })).rejects.toBeInstanceOf(InternalServerError);
    expect(seen).toHaveLength(1);
  });
});

describe('timeouts, aborts and connection failures', () => {
  it('times out a server that never answers with ConnectionTimeoutError', async () => {
    handler = silent;
    const error = await rejection(client({ maxRetries: 0, timeoutMs: 200 }).thing({ params: { id: 'x' } }));
    expect(error).toBeInstanceOf(ConnectionTimeoutError);
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).toBeInstanceOf(AgentEconomyError);
    expect(error.name).toBe('ConnectionTimeoutError');
    expect(error.message).toContain('timed out after 200 ms');
    expect(seen).toHaveLength(1);
  });

  it('applies a per-call timeoutMs', async () => {
    handler = silent;
    await expect(
      client({ maxRetries: 0, timeoutMs: 60_000 }).thing({ params: { id: 'x' } }, { timeoutMs: 100 }),
    ).rejects.toBeInstanceOf(ConnectionTimeoutError);
  });

  it('retries a timed-out GET but not a timed-out POST (it may have reached the service)', async () => {
    handler = silent;
    await expect(client({ maxRetries: 1, timeoutMs: 150 }).thing({ params: { id: 'x' } })).rejects.toBeInstanceOf(
      ConnectionTimeoutError,
    );
    expect(seen).toHaveLength(2);

    seen = [];
    await expect(client({ maxRetries: 1, timeoutMs: 150 }).act({ body: { n: 1 } })).rejects.toBeInstanceOf(
      ConnectionTimeoutError,
    );
    expect(seen).toHaveLength(1);
  });

  it('throws UserAbortError when the signal fires mid-request', async () => {
    handler = silent;
    const controller = new AbortController();
    const arrived = nextRequest();
    const call = rejection(client({ maxRetries: 2 }).thing({ params: { id: 'x' } }, { signal: controller.signal }));
    await arrived;
    controller.abort();
    const error = await call;
    expect(error).toBeInstanceOf(UserAbortError);
    expect(error).not.toBeInstanceOf(ConnectionError);
    expect(error).toBeInstanceOf(AgentEconomyError);
    expect(seen).toHaveLength(1);
  });

  it('throws UserAbortError without sending anything when the signal is already aborted', async () => {
    handler = script([200, ok]);
    const error = await rejection(client().thing({ params: { id: 'x' } }, { signal: AbortSignal.abort() }));
    expect(error).toBeInstanceOf(UserAbortError);
    // the server has had every chance to see a request by now
    handler = script([200, ok]);
    await client().thing({ params: { id: 'y' } });
    expect(seen.map((s) => s.url)).toEqual(['/api/thing/y']);
  });

  it('throws UserAbortError promptly when the signal fires during a retry wait', { timeout: 10_000 }, async () => {
    handler = script([503, envelope('busy', 'busy'), { 'retry-after': '30' }]);
    const controller = new AbortController();
    const answered = new Promise<void>((resolve) =>
      server.once('request', (_request, response: ServerResponse) => response.once('finish', () => resolve())),
    );
    const call = rejection(client({ maxRetries: 2 }).thing({ params: { id: 'x' } }, { signal: controller.signal }));
    await answered;
    setTimeout(() => controller.abort(), 50);
    expect(await call).toBeInstanceOf(UserAbortError);
    expect(seen).toHaveLength(1);
  });

  it('throws ConnectionError for a refused connection', async () => {
    const port = await closedPort();
    const refused = createServiceClient(fixture, `http://127.0.0.1:${port}`, { maxRetries: 0 });
    const error = await rejection(refused.thing({ params: { id: 'x' } }));
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).not.toBeInstanceOf(ConnectionTimeoutError);
    expect(error.message).toContain(`GET http://127.0.0.1:${port}/api/thing/x failed`);
  });

  it('retries a refused POST, since it never reached a service', async () => {
    const port = await closedPort();
    // count attempts at the transport: an axios instance of our own, with an interceptor
    const instance = axios.create();
    const attempts: string[] = [];
    instance.interceptors.request.use((config) => {
      attempts.push(`${config.method} ${config.url}`);
      return config;
    });
    const refused = createServiceClient(fixture, `http://127.0.0.1:${port}`, { maxRetries: 1, axios: instance });
    await expect(refused.act({ body: { n: 1 } })).rejects.toBeInstanceOf(ConnectionError);
    expect(attempts).toEqual([`post http://127.0.0.1:${port}/api/do`, `post http://127.0.0.1:${port}/api/do`]);

    // a paid POST is not retried even when refused
    attempts.length = 0;
    await expect(refused.act({ body: { n: 1 } }, { headers: { 'payment-signature': 'sig' } })).rejects.toBeInstanceOf(
      ConnectionError,
    );
    expect(attempts).toHaveLength(1);
  });
});

describe('error mapping', () => {
  const cases = [
    [400, BadRequestError],
    [401, AuthenticationError],
    [402, PaymentRequiredError],
    [403, PermissionDeniedError],
    [404, NotFoundError],
    [409, ConflictError],
    [413, PayloadTooLargeError],
    [422, UnprocessableEntityError],
    [429, RateLimitError],
    [500, InternalServerError],
  ] as const;

  it.each(cases)('maps %i to its error class with the envelope fields', async (status, ErrorClass) => {
    const details = { fields: [{ field: 'body.n', message: 'too big' }], status };
    handler = script([
      status,
      envelope(`code_${status}`, `message ${status}`, details, 'req_from_body'),
      { 'x-request-id': `req_${status}` },
    ]);
    const error = await rejection(client({ maxRetries: 0 }).act({ body: { n: 1 } }));
    expect(error).toBeInstanceOf(ErrorClass);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toBeInstanceOf(AgentEconomyError);
    expect(error.name).toBe(ErrorClass.name);
    expect(error.status).toBe(status);
    expect(error.code).toBe(`code_${status}`);
    expect(error.message).toBe(`${status} code_${status}: message ${status}`);
    expect(error.details).toEqual(details);
    expect(error.requestId).toBe(`req_${status}`);
    expect(error.headers['x-request-id']).toBe(`req_${status}`);
  });

  it('maps other 5xx statuses to InternalServerError and unlisted 4xx to ApiError', async () => {
    handler = script(fail(504));
    const e504 = await rejection(client({ maxRetries: 0 }).thing({ params: { id: 'x' } }));
    expect(e504).toBeInstanceOf(InternalServerError);
    expect(e504.status).toBe(504);

    handler = script([418, envelope('teapot', 'short and stout')]);
    const e418 = await rejection(client({ maxRetries: 0 }).thing({ params: { id: 'x' } }));
    expect(e418.constructor).toBe(ApiError);
    expect(e418.status).toBe(418);
    expect(e418.code).toBe('teapot');
  });

  it('takes the request id from the body when the header is absent', async () => {
    handler = script([404, envelope('not_found', 'nothing here', undefined, 'req_in_body')]);
    const error = await rejection(client().thing({ params: { id: 'x' } }));
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error.requestId).toBe('req_in_body');
    expect(error.details).toBeUndefined();
  });

  it('falls back to http_<status> for a body that is not an envelope', async () => {
    handler = (_request, response) => {
      response.writeHead(404, { 'content-type': 'text/plain' });
      response.end('Cannot GET');
    };
    const error = await rejection(client().thing({ params: { id: 'x' } }));
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error.code).toBe('http_404');
    expect(error.message).toBe('404 http_404: HTTP 404');
    expect(error.body).toBe('Cannot GET');
    expect(error.requestId).toBeUndefined();
  });

  it('exposes the invalid fields of a 400', async () => {
    handler = script([
      400,
      envelope('invalid_request', 'bad', { fields: [{ field: 'body.n', message: 'Expected number' }] }),
    ]);
    const error = await rejection(client().act({ body: { n: 1 } }));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.fields).toEqual([{ field: 'body.n', message: 'Expected number' }]);

    handler = script([400, envelope('invalid_json', 'bad json')]);
    expect((await rejection(client().act({ body: { n: 1 } }))).fields).toEqual([]);
  });

  describe('PaymentRequiredError.quote', () => {
    const quote: PaymentRequired = {
      x402Version: 2,
      resource: { url: 'http://127.0.0.1/api/do' },
      accepts: [
        {
          scheme: 'exact',
          network: SOLANA_DEVNET,
          amount: '50000',
          asset: USDC_DEVNET,
          payTo: base58Encode(new Uint8Array(32).fill(7)),
          maxTimeoutSeconds: 60,
          extra: {},
        },
      ],
    };

    it('decodes the base64 JSON payment-required header', async () => {
      expect(SOLANA_DEVNET).toBe('solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1');
      expect(USDC_DEVNET).toBe('4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU');
      handler = script([
        402,
        envelope('payment_required', 'pay first'),
        { 'payment-required': encodeX402Header(quote) },
      ]);
      const error = await rejection(client().act({ body: { n: 1 } }));
      expect(error).toBeInstanceOf(PaymentRequiredError);
      expect(error.quote).toEqual(quote);
      expect(error.quote.accepts[0].amount).toBe('50000');
    });

    it('is undefined for a garbage header', async () => {
      for (const garbage of [
        'not base64 !!',
        encodeX402Header({ hello: 'world' }),
        Buffer.from('{not json').toString('base64'),
      ]) {
        handler = script([402, envelope('payment_required', 'pay first', quote), { 'payment-required': garbage }]);
        const error = await rejection(client().act({ body: { n: 1 } }));
        expect(error).toBeInstanceOf(PaymentRequiredError);
        expect(error.quote, garbage).toBeUndefined();
      }
    });

    it('falls back to the envelope details without a header, and is undefined without either', async () => {
      handler = script([402, envelope('payment_required', 'pay first', quote)]);
      expect((await rejection(client().act({ body: { n: 1 } }))).quote).toEqual(quote);
      handler = script([402, envelope('payment_required', 'pay first')]);
      expect((await rejection(client().act({ body: { n: 1 } }))).quote).toBeUndefined();
    });
  });
});

describe('buildUrl', () => {
  const { thing, act } = fixture.router;

  it('URL-encodes path parameters', () => {
    expect(buildUrl('http://h', thing, { params: { id: 'a b/c?' } })).toBe('http://h/api/thing/a%20b%2Fc%3F');
    expect(buildUrl('http://h', thing, { params: { id: 'é#%' } })).toBe('http://h/api/thing/%C3%A9%23%25');
    expect(buildUrl('http://h', thing, { params: { id: 42 } })).toBe('http://h/api/thing/42');
  });

  it('refuses an empty or missing path parameter', () => {
    expect(() => buildUrl('http://h', thing, { params: { id: '' } })).toThrow(AgentEconomyError);
    expect(() => buildUrl('http://h', thing, { params: {} })).toThrow(
      'path parameter "id" of GET /api/thing/:id is missing or empty',
    );
    expect(() => buildUrl('http://h', thing, {})).toThrow(AgentEconomyError);
    expect(() => buildUrl('http://h', thing, { params: { id: null } })).toThrow(AgentEconomyError);
  });

  it('drops an optional path parameter that is missing', () => {
    const route = { ...thing, path: '/api/thing/:id?' };
    expect(buildUrl('http://h', route, {})).toBe('http://h/api/thing');
    expect(buildUrl('http://h', route, { params: { id: 'z' } })).toBe('http://h/api/thing/z');
  });

  it('serializes query values, arrays and objects', () => {
    expect(buildUrl('http://h', act, {})).toBe('http://h/api/do');
    expect(buildUrl('http://h', act, { query: {} })).toBe('http://h/api/do');
    expect(
      buildUrl('http://h', act, { query: { tags: ['a', 'b c'], page: 2, skip: undefined, none: null, yes: true } }),
    ).toBe('http://h/api/do?tags=a&tags=b%20c&page=2&yes=true');
    expect(buildUrl('http://h', act, { query: { filter: { a: 'x', b: 'y&z' } } })).toBe(
      'http://h/api/do?filter%5Ba%5D=x&filter%5Bb%5D=y%26z',
    );
    expect(buildUrl('http://h', act, { query: { at: new Date('2026-01-02T03:04:05.006Z') } })).toBe(
      'http://h/api/do?at=2026-01-02T03%3A04%3A05.006Z',
    );
  });

  it('handles trailing slashes on the base URL', () => {
    expect(buildUrl('http://h/', act, {})).toBe('http://h/api/do');
    expect(buildUrl('http://h///', act, {})).toBe('http://h/api/do');
    expect(buildUrl('http://h/prefix/', act, {})).toBe('http://h/prefix/api/do');
  });

  it('sends encoded paths and queries over the wire', async () => {
    handler = script([200, ok]);
    await client().thing({
      params: { id: 'a b/c?' },
      query: { tags: ['t1', 't2'], filter: { a: '1', b: '2' }, page: 3 },
    });
    expect(seen[0]!.url).toBe('/api/thing/a%20b%2Fc%3F?tags=t1&tags=t2&filter%5Ba%5D=1&filter%5Bb%5D=2&page=3');
    seen = [];
    await createServiceClient(fixture, `${baseUrl}/`, { maxRetries: 0 }).thing({ params: { id: 'y' } });
    expect(seen[0]!.url).toBe('/api/thing/y');
  });

  it('rejects, without sending, a call with an empty path parameter', async () => {
    handler = script([200, ok]);
    await expect(client().thing({ params: { id: '' } })).rejects.toBeInstanceOf(AgentEconomyError);
    await expect(client().thing.withResponse({ params: { id: '' } })).rejects.toBeInstanceOf(AgentEconomyError);
    expect(seen).toHaveLength(0);
  });
});

describe('responses', () => {
  it('withResponse returns status, headers, requestId and data', async () => {
    handler = script([200, { done: true }, { 'x-request-id': 'req_with', 'x-custom': 'yes' }]);
    const response = await client().act.withResponse({ body: { n: 5 } });
    expect(response.status).toBe(200);
    expect(response.data).toEqual({ done: true });
    expect(response.requestId).toBe('req_with');
    expect(response.headers['x-custom']).toBe('yes');
    expect(response.headers['content-type']).toBe('application/json');
  });

  it('accepts any 2xx, with an empty body as undefined and a non-JSON body as text', async () => {
    handler = (_request, response) => {
      response.writeHead(204);
      response.end();
    };
    const empty = await client().act.withResponse({ body: { n: 1 } });
    expect(empty.status).toBe(204);
    expect(empty.data).toBeUndefined();
    expect(empty.requestId).toBeUndefined();

    handler = (_request, response) => {
      response.writeHead(201, { 'content-type': 'text/plain' });
      response.end('created');
    };
    expect(await client().act.withResponse({ body: { n: 1 } })).toMatchObject({ status: 201, data: 'created' });
  });

  it('sends a GET without a body and a POST with an empty object body when none is given', async () => {
    handler = script([200, ok]);
    await client().thing({ params: { id: 'x' } });
    expect(seen[0]!.body).toBe('');
    expect(seen[0]!.headers['content-type']).toBeUndefined();
    await client().act(undefined as never);
    expect(seen[1]!.body).toBe('{}');
  });

  it('sends client-wide headers, which per-call headers override', async () => {
    handler = script([200, ok]);
    const withHeaders = client({ headers: { 'x-agent': 'client', 'x-other': 'kept' } });
    await withHeaders.thing({ params: { id: 'x' } });
    await withHeaders.thing({ params: { id: 'x' } }, { headers: { 'x-agent': 'call' } });
    expect(seen.map((s) => [s.headers['x-agent'], s.headers['x-other']])).toEqual([
      ['client', 'kept'],
      ['call', 'kept'],
    ]);
  });

  it('builds nested routers into nested methods', async () => {
    handler = script([200, { pong: true }]);
    expect(await client().nested.ping()).toEqual({ pong: true });
    expect(seen[0]!.url).toBe('/api/nested/ping');
  });
});

describe('results that follow the request', () => {
  const graded: QuizResult = {
    action: 'grade',
    quizId: 'quiz_0123456789abcdef',
    courseId: 'rag',
    lessonId: 'chunking',
    attempt: 1,
    score: 1,
    total: 1,
    percent: 100,
    passed: true,
    results: [{ questionId: 'q1', chosen: 0, correctChoice: 0, correct: true, explanation: 'Because.' }],
    gradedAt: '2026-01-01T00:00:00.000Z',
  };

  it('types the quiz result by the action sent, and the answer carries that action', async () => {
    handler = script([200, graded]);
    const quiz = createServiceClient(education, baseUrl, { maxRetries: 0 }).quiz;
    const result = await quiz({
      body: { action: 'grade', quizId: graded.quizId, answers: [{ questionId: 'q1', choice: 0 }] },
    });
    expectTypeOf(result).toEqualTypeOf<QuizResult>();
    expect(result.action).toBe('grade');
    expect(result.percent).toBe(100);
    const response = await quiz.withResponse({
      body: { action: 'grade', quizId: graded.quizId, answers: [{ questionId: 'q1', choice: 0 }] },
    });
    expectTypeOf(response.data).toEqualTypeOf<QuizResult>();

    // Checked by the typechecker only: never called.
    const typed = () => {
      expectTypeOf(
        quiz({ body: { action: 'generate', courseId: 'rag', lessonId: 'chunking' } }),
      ).resolves.toEqualTypeOf<Quiz>();
      // An action only known as the union gives the union, which narrows on `action`.
      const body = { action: 'generate', courseId: 'rag', lessonId: 'chunking' } as Parameters<typeof quiz>[0]['body'];
      const either = quiz({ body });
      expectTypeOf(either).resolves.toEqualTypeOf<Quiz | QuizResult>();
      // @ts-expect-error a grade body does not take generate's fields
      void quiz({ body: { action: 'grade', courseId: 'rag', lessonId: 'chunking' } });
    };
    expect(typeof typed).toBe('function');
  });
});

describe('createClient', () => {
  it('exposes the education service with its methods', () => {
    const all = createClient();
    for (const method of ['catalog', 'course', 'lesson', 'quiz', 'exercise', 'tutor'] as const) {
      expect(typeof all.education[method]).toBe('function');
      expect(typeof all.education[method].withResponse).toBe('function');
    }
  });

  it('uses a baseUrls override', async () => {
    handler = script([200, { courses: [] }]);
    const all = createClient({ baseUrls: { education: `${baseUrl}/` }, maxRetries: 0 });
    expect(await all.education.catalog()).toEqual({ courses: [] });
    await all.education.course({ params: { courseId: 'intro-course' } }).catch(() => undefined);
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(['GET /api/catalog', 'GET /api/course/intro-course']);
  });

  it('picks baseUrls, then AGENT_ECONOMY_<ID>_URL (empty means unset), then host with the default port', async () => {
    const saved = process.env.AGENT_ECONOMY_EDUCATION_URL;
    delete process.env.AGENT_ECONOMY_EDUCATION_URL;
    // observe the URL the transport is asked for, and stop there
    const instance = axios.create();
    const urls: string[] = [];
    instance.interceptors.request.use((config) => {
      urls.push(config.url!);
      throw new Error('stop');
    });
    try {
      await expect(
        createClient({ host: 'http://example.test/', axios: instance, maxRetries: 0 }).education.catalog(),
      ).rejects.toBeInstanceOf(ConnectionError);
      await expect(createClient({ axios: instance, maxRetries: 0 }).education.catalog()).rejects.toBeInstanceOf(
        ConnectionError,
      );
      // an empty variable means unset
      process.env.AGENT_ECONOMY_EDUCATION_URL = '';
      await expect(
        createClient({ host: 'http://example.test', axios: instance, maxRetries: 0 }).education.catalog(),
      ).rejects.toBeInstanceOf(ConnectionError);
      process.env.AGENT_ECONOMY_EDUCATION_URL = 'http://from-env.test:1234';
      await expect(
        createClient({ host: 'http://example.test', axios: instance, maxRetries: 0 }).education.catalog(),
      ).rejects.toBeInstanceOf(ConnectionError);
      await expect(
        createClient({
          baseUrls: { education: 'http://override.test' },
          axios: instance,
          maxRetries: 0,
        }).education.catalog(),
      ).rejects.toBeInstanceOf(ConnectionError);
    } finally {
      if (saved === undefined) delete process.env.AGENT_ECONOMY_EDUCATION_URL;
      else process.env.AGENT_ECONOMY_EDUCATION_URL = saved;
    }
    expect(urls).toEqual([
      'http://example.test:4105/api/catalog',
      'http://127.0.0.1:4105/api/catalog',
      'http://example.test:4105/api/catalog',
      'http://from-env.test:1234/api/catalog',
      'http://override.test/api/catalog',
    ]);
  });
});
