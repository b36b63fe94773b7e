import { z } from 'zod';
import type { Logger } from 'pino';
import type { CatalogResource, CatalogService } from './domain';
import { tracedFetch } from '../../http/tracing';

// The resource catalog: every paid route of every running service, read over HTTP from its descriptor
// (/.well-known/agent-card.json: name, description, public address) and its OpenAPI document (/openapi.json: each
// operation's summary, description, tag and `x-payment`: price and, as the runtime serves it, this deployment's
// payee). A service that does not answer, or answers something else, is left out. Kept for a short TTL.

const Card = z.object({ name: z.string().min(1).max(200), description: z.string().max(5000), url: z.string().url() });
const Operation = z.object({
  summary: z.string().max(500).optional(),
  description: z.string().max(20_000).optional(),
  tags: z.array(z.string()).optional(),
  'x-payment': z
    .object({
      kind: z.string(),
      usd: z.string().optional(),
      minUsd: z.string().optional(),
      payTo: z.string().optional(),
    })
    .passthrough()
    .optional(),
});
const Document = z.object({ paths: z.record(z.record(z.unknown())) });
const METHODS = new Set(['get', 'post', 'put', 'patch', 'delete']);
const USD = /^\d{1,12}(\.\d{1,6})?$/;

export interface CatalogOptions {
  /** Base addresses of the services to read, by id (the deployment's, or a test's). */
  serviceUrls: () => Record<string, string>;
  now: () => Date;
  ttlMs: number;
  timeoutMs: number;
  logger: Logger;
}

async function getJson(url: string, timeoutMs: number): Promise<unknown> {
  const response = await tracedFetch(`GET ${new URL(url).pathname}`, url, {
    signal: AbortSignal.timeout(timeoutMs),
    headers: { accept: 'application/json' },
  });
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return await response.json();
}

/**
 * The price per call shown: a fixed route's price; an adaptive route's lowest; a tiered route's lowest paid tier (a
 * free
 * tier is not a pay-per-call price).
 */
function priceOf(payment: { kind: string; usd?: string; minUsd?: string; tiers?: unknown }): string | undefined {
  if (payment.kind === 'fixed') return payment.usd;
  if (payment.kind === 'tiered' && Array.isArray(payment.tiers)) {
    const paid = payment.tiers
      .map((t) => (t as { usd?: unknown }).usd)
      .filter((usd): usd is string => typeof usd === 'string' && USD.test(usd) && Number(usd) > 0)
      .sort((a, b) => Number(a) - Number(b));
    return paid[0];
  }
  return payment.minUsd;
}

/** A first paragraph, without the generated price sentence (the price is a field of its own). */
function summaryOf(description: string | undefined): string {
  const first = (description ?? '').split(/\n\s*\n/)[0] ?? '';
  return first.replace(/\s+/g, ' ').trim();
}

/** One service's paid routes, from its two documents. */
export function readService(id: string, cardJson: unknown, documentJson: unknown): CatalogService | undefined {
  const card = Card.safeParse(cardJson);
  const document = Document.safeParse(documentJson);
  if (!card.success || !document.success) return undefined;
  const base = card.data.url.replace(/\/+$/, '');
  const resources: CatalogResource[] = [];
  for (const [path, operations] of Object.entries(document.data.paths)) {
    for (const [method, raw] of Object.entries(operations)) {
      if (!METHODS.has(method)) continue;
      const operation = Operation.safeParse(raw);
      const payment = operation.success ? operation.data['x-payment'] : undefined;
      if (!operation.success || !payment || payment.kind === 'free' || !payment.payTo) continue;
      const price = priceOf(payment);
      if (!price || !USD.test(price)) continue;
      resources.push({
        // OpenAPI writes path parameters {name}; routes (and x402's route templates) write :name.
        resourceUrl: base + path.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, ':$1'),
        displayName: operation.data.summary ?? `${method.toUpperCase()} ${path}`,
        description: summaryOf(operation.data.description),
        category: operation.data.tags?.[0] ?? id,
        priceUsd: price,
        payTo: payment.payTo,
        serviceId: id,
      });
    }
  }
  return {
    id,
    name: card.data.name,
    description: card.data.description,
    url: base,
    agentCardUrl: `${base}/.well-known/agent-card.json`,
    resources,
  };
}

export function catalogReader(options: CatalogOptions) {
  let cached: { at: number; services: CatalogService[] } | undefined;
  let loading: Promise<CatalogService[]> | undefined;

  async function load(): Promise<CatalogService[]> {
    const entries = Object.entries(options.serviceUrls());
    const read = await Promise.all(
      entries.map(async ([id, url]) => {
        const base = url.replace(/\/+$/, '');
        try {
          const [card, document] = await Promise.all([
            getJson(`${base}/.well-known/agent-card.json`, options.timeoutMs),
            getJson(`${base}/openapi.json`, options.timeoutMs),
          ]);
          return readService(id, card, document);
        } catch (error) {
          options.logger.debug({ err: error, service: id }, 'marketplace: service not answering; left out');
          return undefined;
        }
      }),
    );
    return read.filter((s): s is CatalogService => s !== undefined);
  }

  return {
    async services(): Promise<CatalogService[]> {
      const now = options.now().getTime();
      if (cached && now - cached.at < options.ttlMs) return cached.services;
      loading ??= load()
        .then((services) => {
          cached = { at: options.now().getTime(), services };
          return services;
        })
        .finally(() => {
          loading = undefined;
        });
      return await loading;
    },
    async resources(): Promise<CatalogResource[]> {
      return (await this.services()).flatMap((s) => s.resources);
    },
  };
}

export type CatalogReader = ReturnType<typeof catalogReader>;
