import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSolanaRpc } from '@solana/kit';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { extractDiscoveryInfo, validateDiscoveryExtension, withBazaar } from '@x402/extensions/bazaar';
import {
  PAYMENT_REQUIRED_HEADER,
  SOLANA_DEVNET,
  decodeX402Header,
  facilitator as facilitatorContract,
  isPaid,
  listRoutes,
  routeMeta,
  services,
  type PaymentRequired,
} from '@agent-economy/contracts';
import { BadRequestError, createClient, createServiceClient, walletFromSecretKey } from '@agent-economy/sdk';
import { bazaarDeclaration } from '../servers/src/runtime/bazaar';
import { canonicalResource } from '../servers/src/services/facilitator/discovery';
import { buildPaymentTransaction } from './support/payments';
import { startEconomy, type Economy } from './support/economy';

// x402's discovery extension (bazaar): our resource servers declare each paid route in their 402 quote, the
// facilitator catalogs what it settled, and the official @x402/extensions client finds it.

let economy: Economy;
const bazaar = () => withBazaar(new HTTPFacilitatorClient({ url: economy.facilitator.url })).extensions.bazaar;
const lessonUrl = () => `${economy.education.url}/api/lesson`;

async function quoteOf(path: string, body: unknown): Promise<PaymentRequired> {
  const response = await fetch(`${economy.education.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(402);
  return decodeX402Header(response.headers.get(PAYMENT_REQUIRED_HEADER)!) as PaymentRequired;
}

beforeAll(async () => {
  economy = await startEconomy();
}, 60_000);
afterAll(async () => {
  await economy?.close();
});

describe('resource servers declare their routes', () => {
  it('every paid route of every contract has a declaration the official validator accepts', () => {
    let checked = 0;
    for (const service of services) {
      for (const { route } of listRoutes(service.router)) {
        if (!isPaid(routeMeta(route).payment)) continue;
        const declaration = bazaarDeclaration(route) as never;
        const result = validateDiscoveryExtension(declaration);
        expect(result.errors, `${service.id} ${route.method} ${route.path}`).toBeUndefined();
        expect(result.valid).toBe(true);
        // Quotes travel in headers: each declaration stays small.
        expect(JSON.stringify(declaration).length, `${service.id} ${route.path}`).toBeLessThan(6_000);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(50);
  });

  it('the 402 quote carries extensions.bazaar, which the official facilitator helper extracts', async () => {
    const quote = await quoteOf('/api/lesson', { courseId: 'rag', lessonId: 'chunking' });
    const declaration = quote.extensions!.bazaar as { info: { input: Record<string, unknown> } };
    expect(declaration.info.input).toEqual({
      type: 'http',
      method: 'POST',
      bodyType: 'json',
      body: { courseId: 'tool-use', lessonId: 'function-calling' },
    });
    expect(validateDiscoveryExtension(declaration as never)).toEqual({ valid: true });
    const payload = {
      x402Version: 2,
      resource: quote.resource,
      accepted: quote.accepts[0]!,
      payload: {},
      extensions: quote.extensions,
    };
    const discovered = extractDiscoveryInfo(payload as never, quote.accepts[0] as never);
    expect(discovered).toMatchObject({ resourceUrl: lessonUrl(), method: 'POST', x402Version: 2 });
    // Our catalog key for the same payment is the official one.
    expect(canonicalResource(quote.resource.url)).toBe(discovered!.resourceUrl);
  });

  it('a route with path parameters declares its route template', () => {
    const route = listRoutes(services.find((s) => s.id === 'education')!.router).find(
      ({ route: r }) => r.path === '/api/course/:courseId',
    )!.route;
    // Free routes are never quoted; the builder still follows the reference enrichment for templated paths.
    expect(bazaarDeclaration(route)).toMatchObject({
      routeTemplate: '/api/course/:courseId',
      info: { input: { pathParams: { courseId: 'tool-use' } } },
    });
  });
});

describe('the facilitator’s catalog, read with the official client', () => {
  beforeAll(async () => {
    const wallet = await walletFromSecretKey(economy.buyer.secretKey);
    const client = createClient({
      baseUrls: { education: economy.education.url },
      wallet,
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    await client.education.lesson({ body: { courseId: 'tool-use', lessonId: 'function-calling' } });
    await client.education.lesson({ body: { courseId: 'rag', lessonId: 'chunking' } });
    await client.education.tutor({ body: { question: 'How large should chunks be?' } });
  }, 60_000);

  it('/supported names the bazaar extension', async () => {
    const supported = await new HTTPFacilitatorClient({ url: economy.facilitator.url }).getSupported();
    expect(supported.extensions).toContain('bazaar');
  });

  it('listResources finds the lesson route: one entry however many times it sold, with what was paid', async () => {
    const list = await bazaar().listResources({ type: 'http' });
    expect(list.x402Version).toBe(2);
    const lessons = list.items.filter((item) => item.resource === lessonUrl());
    expect(lessons).toHaveLength(1);
    const lesson = lessons[0]!;
    expect(lesson).toMatchObject({
      type: 'http',
      x402Version: 2,
      description: 'Full AI-generated lesson',
      mimeType: 'application/json',
    });
    expect(lesson.accepts).toEqual([
      expect.objectContaining({
        scheme: 'exact',
        network: SOLANA_DEVNET,
        amount: '50000',
        payTo: economy.education.context.wallet.address,
      }),
    ]);
    expect(validateDiscoveryExtension(lesson.extensions!.bazaar as never)).toEqual({ valid: true });
    // Never the buyer's own request: the declared example is the contract's.
    expect(JSON.stringify(lesson.extensions)).not.toContain('chunks be');
    expect(Date.parse(lesson.lastUpdated)).not.toBeNaN();
    expect(list.pagination).toEqual({ limit: 20, offset: 0, total: list.items.length });
  });

  it('counts every settlement of a resource once, however many settle together', async () => {
    const settlementsOf = async () =>
      (
        await economy.facilitator.database.db
          .selectFrom('facilitator_bazaar')
          .select('settlements')
          .where('resource', '=', lessonUrl())
          .executeTakeFirstOrThrow()
      ).settlements as bigint;
    const before = await settlementsOf();
    const wallet = await walletFromSecretKey(economy.buyer.secretKey);
    const client = createClient({
      baseUrls: { education: economy.education.url },
      wallet,
      payments: { rpcUrl: economy.rpcUrl, sessions: false },
      maxRetries: 0,
    });
    const lessons = [
      ['tool-use', 'function-calling'],
      ['rag', 'chunking'],
    ] as const;
    // Six payments at once: their catalog updates are written together.
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        client.education.lesson({ body: { courseId: lessons[i % 2]![0], lessonId: lessons[i % 2]![1] } }),
      ),
    );
    expect(await settlementsOf()).toBe(before + 6n);
  });

  it('filters by payTo, scheme, network and extension, and pages by offset', async () => {
    const seller = economy.education.context.wallet.address;
    expect((await bazaar().listResources({ payTo: seller })).items.every((i) => i.accepts[0]!.payTo === seller)).toBe(
      true,
    );
    expect((await bazaar().listResources({ payTo: economy.buyer.address })).items).toEqual([]);
    expect((await bazaar().listResources({ network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp' })).items).toEqual([]);
    expect(
      (await bazaar().listResources({ scheme: 'exact', network: SOLANA_DEVNET, extensions: 'bazaar' })).items.length,
    ).toBeGreaterThan(0);
    expect((await bazaar().listResources({ extensions: 'sign-in-with-x' })).items).toEqual([]);
    const all = await bazaar().listResources({});
    const paged = await bazaar().listResources({ limit: 1, offset: all.items.length - 1 });
    expect(paged.items).toEqual([all.items.at(-1)]);
    expect(paged.pagination).toEqual({ limit: 1, offset: all.items.length - 1, total: all.items.length });
  });

  it('search ranks by the query words and leaves out what does not match', async () => {
    const found = await bazaar().search({ query: 'lesson' });
    expect(found.x402Version).toBe(2);
    expect(found.resources[0]!.resource).toBe(lessonUrl());
    expect(found.partialResults).toBe(false);
    expect((await bazaar().search({ query: 'weather forecast' })).resources).toEqual([]);
    // Pages follow pagination.cursor.
    const all = await bazaar().search({ query: 'lesson tutor' });
    expect(all.resources.length).toBeGreaterThanOrEqual(2);
    const first = await bazaar().search({ query: 'lesson tutor', limit: 1 });
    expect(first.pagination).toEqual({ limit: 1, cursor: '1' });
    const second = await bazaar().search({ query: 'lesson tutor', limit: 1, cursor: first.pagination!.cursor! });
    expect([...first.resources, ...second.resources]).toEqual(all.resources.slice(0, 2));
    expect((await bazaar().search({ query: 'lesson', payTo: economy.buyer.address })).resources).toEqual([]);
  });

  it('bad discovery queries are 400 naming the field', async () => {
    const client = createServiceClient(facilitatorContract, economy.facilitator.url, {
      payments: false,
      maxRetries: 0,
    });
    for (const [call, field] of [
      [() => client.resources({ query: { limit: 0 } as never }), 'query.limit'],
      [() => client.resources({ query: { offset: -1 } as never }), 'query.offset'],
      [() => client.search({ query: { query: '' } as never }), 'query.query'],
      [() => client.search({ query: { query: 'x', cursor: 'abc' } as never }), 'query.cursor'],
    ] as const) {
      const error = await call().catch((e: unknown) => e);
      expect(error, field).toBeInstanceOf(BadRequestError);
      expect(
        ((error as BadRequestError).details as { fields: { field: string }[] }).fields.map((f) => f.field),
      ).toContain(field);
    }
    await expect(bazaar().search({ query: '' })).rejects.toThrow(/400/);
  });
});

describe('catalog poisoning', () => {
  it('a payment settled directly with a forged route template teaches the catalog nothing', async () => {
    const quote = await quoteOf('/api/lesson', { courseId: 'rag', lessonId: 'chunking' });
    const requirements = quote.accepts[0]!;
    const { value: blockhash } = await createSolanaRpc(economy.rpcUrl).getLatestBlockhash().send();
    const transaction = await buildPaymentTransaction({ payer: economy.buyer, requirements, blockhash });
    const forged = { ...(quote.extensions!.bazaar as object), routeTemplate: '/../admin' };
    const before = await bazaar().listResources({ limit: 100 });
    const response = await fetch(`${economy.facilitator.url}/settle`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        x402Version: 2,
        paymentPayload: {
          x402Version: 2,
          resource: { url: 'https://victim.example/anything' },
          accepted: requirements,
          payload: { transaction },
          extensions: { bazaar: forged },
        },
        paymentRequirements: requirements,
      }),
    });
    expect(((await response.json()) as { success: boolean }).success).toBe(true);
    const after = await bazaar().listResources({ limit: 100 });
    expect(after.items.map((i) => i.resource).sort()).toEqual(before.items.map((i) => i.resource).sort());
  });

  it('a buyer settling a payment itself (unsigned, for a valid declaration) cannot rewrite the seller’s entry', async () => {
    const quote = await quoteOf('/api/lesson', { courseId: 'rag', lessonId: 'chunking' });
    const requirements = quote.accepts[0]!;
    const { value: blockhash } = await createSolanaRpc(economy.rpcUrl).getLatestBlockhash().send();
    const transaction = await buildPaymentTransaction({ payer: economy.buyer, requirements, blockhash });
    const before = await bazaar().listResources({ limit: 100 });
    const rewritten = { ...(quote.extensions!.bazaar as object) };
    const response = await fetch(`${economy.facilitator.url}/settle`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        x402Version: 2,
        paymentPayload: {
          x402Version: 2,
          resource: { url: lessonUrl(), description: 'FREE LESSONS AT evil.example' },
          accepted: requirements,
          payload: { transaction },
          extensions: { bazaar: rewritten },
        },
        paymentRequirements: requirements,
      }),
    });
    // The seller is registered, so the payment settles; the catalog learns only from signed resource servers.
    expect(((await response.json()) as { success: boolean }).success).toBe(true);
    const after = await bazaar().listResources({ limit: 100 });
    expect(after).toEqual(before);
    expect(JSON.stringify(after)).not.toContain('evil.example');
  });
});
