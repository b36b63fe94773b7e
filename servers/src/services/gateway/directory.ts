import {
  gateway,
  listRoutes,
  priceRange,
  routeMeta,
  type GatewayDirectory,
  type GatewayDirectoryEntry,
  type GatewayPricing,
  type GatewayServiceId,
  type PaymentMeta,
  type ServiceDefinition,
} from '@agent-economy/contracts';
import { buildOpenApiDocument } from '@agent-economy/openapi-generator';
import { CONTRACTS, type ConnectedId } from './upstream';
import { tracedFetch } from '../../http/tracing';

// The endpoint directory: every endpoint of the five services, read from each service's own OpenAPI document
// (GET <url>/openapi.json, which it generates from its contract with this deployment's prices). A document is
// kept for DOCUMENT_TTL_MS; a service that does not answer is listed from its contract until it does.

export const DIRECTORY_ORDER: readonly GatewayServiceId[] = [
  'gateway',
  'knowledge-market',
  'negotiation',
  'reputation',
  'verification',
];
const DOCUMENT_TTL_MS = 5 * 60_000;
const FETCH_TIMEOUT_MS = 2_000;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
type HttpMethod = GatewayDirectoryEntry['method'];

interface OpenApiOperation {
  operationId?: string;
  summary?: string;
  description?: string;
  'x-payment'?: {
    kind?: string;
    usd?: string;
    minUsd?: string;
    maxUsd?: string;
    tiers?: { id: string; usd: string; description: string }[];
  };
  security?: Record<string, unknown>[];
  parameters?: { name: string; in: string; example?: unknown }[];
  requestBody?: { content?: Record<string, { example?: unknown }> };
}
interface OpenApiDocument {
  info?: { title?: string };
  paths?: Record<string, Partial<Record<(typeof METHODS)[number], OpenApiOperation>>>;
}

export interface ServiceDocument {
  id: GatewayServiceId;
  title: string;
  url: string;
  /** 'document': read from the service's /openapi.json; 'contract': the service did not answer. */
  from: 'document' | 'contract';
  entries: GatewayDirectoryEntry[];
}

const camel = (id: string) => id.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

export function pricingOf(payment: OpenApiOperation['x-payment'] | PaymentMeta | undefined): GatewayPricing {
  if (!payment || !payment.kind) return { kind: 'free', minUsd: '0', maxUsd: '0' };
  const kind = payment.kind as GatewayPricing['kind'];
  const range = priceRange(payment as PaymentMeta);
  const tiers = (payment as { tiers?: GatewayPricing['tiers'] }).tiers;
  return {
    kind,
    minUsd: range.minUsd,
    maxUsd: range.maxUsd,
    ...(kind === 'tiered' && tiers
      ? { tiers: tiers.map((t) => ({ id: t.id, usd: t.usd, description: t.description })) }
      : {}),
  };
}

/** `/api/modules/{moduleId}` (OpenAPI) as `/api/modules/:moduleId` (the contracts' form). */
const contractPath = (path: string) => path.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');

function usageOf(
  id: GatewayServiceId,
  key: string,
  method: HttpMethod,
  path: string,
  base: string,
  auth: 'none' | 'siwx',
  example: GatewayDirectoryEntry['usage']['example'],
) {
  const args: Record<string, unknown> = {};
  if (example?.params && Object.keys(example.params).length) args.params = example.params;
  if (example?.query && Object.keys(example.query).length) args.query = example.query;
  if (example?.body !== undefined) args.body = example.body;
  const filled = path.replace(/:([A-Za-z0-9_]+)/g, (whole, name: string) =>
    encodeURIComponent(example?.params?.[name] ?? whole),
  );
  const query = example?.query
    ? new URLSearchParams(Object.entries(example.query).map(([k, v]): [string, string] => [k, String(v)])).toString()
    : '';
  const curl = [
    `curl -X ${method} ${quote(`${base}${filled}${query ? `?${query}` : ''}`)}`,
    ...(auth === 'siwx' ? [`-H 'SIGN-IN-WITH-X: <base64 wallet proof>'`] : []),
    ...(example?.body !== undefined
      ? [`-H 'content-type: application/json'`, `-d ${quote(JSON.stringify(example.body))}`]
      : []),
  ].join(' ');
  return {
    sdk: `await client.${camel(id)}.${key}(${Object.keys(args).length ? JSON.stringify(args) : ''})`,
    curl,
    example,
  };
}

/** The directory entries of one service's OpenAPI document, in its contract's listing order. */
export function entriesOf(
  id: GatewayServiceId,
  base: string,
  document: OpenApiDocument,
  contract: ServiceDefinition,
): GatewayDirectoryEntry[] {
  const order = new Map(listRoutes(contract.router).map(({ key }, i) => [key, i]));
  const entries: GatewayDirectoryEntry[] = [];
  for (const [rawPath, item] of Object.entries(document.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item?.[method];
      if (!operation) continue;
      const key = operation.operationId?.startsWith(`${id}.`)
        ? operation.operationId.slice(id.length + 1)
        : `${method}${rawPath}`;
      const path = contractPath(rawPath);
      const auth = operation.security?.some((s) => 'siwx' in s) ? 'siwx' : 'none';
      const params: Record<string, string> = {};
      const query: Record<string, unknown> = {};
      for (const p of operation.parameters ?? []) {
        if (p.example === undefined) continue;
        if (p.in === 'path') params[p.name] = String(p.example);
        if (p.in === 'query') query[p.name] = p.example;
      }
      const body = operation.requestBody?.content?.['application/json']?.example;
      const example =
        Object.keys(params).length || Object.keys(query).length || body !== undefined
          ? {
              ...(Object.keys(params).length ? { params } : {}),
              ...(Object.keys(query).length ? { query } : {}),
              ...(body !== undefined ? { body } : {}),
            }
          : null;
      const upper = method.toUpperCase() as HttpMethod;
      entries.push({
        service: id,
        key,
        method: upper,
        path,
        url: `${base}${path}`,
        summary: operation.summary ?? '',
        description: operation.description ?? '',
        pricing: pricingOf(operation['x-payment']),
        auth,
        usage: usageOf(id, key, upper, path, base, auth, example),
      });
    }
  }
  return entries.sort((a, b) => (order.get(a.key) ?? order.size) - (order.get(b.key) ?? order.size));
}

export interface DirectorySource {
  /** Every service's entries, in directory order; documents are read over HTTP and cached. */
  documents(): Promise<ServiceDocument[]>;
  directory(filter?: { service?: GatewayServiceId; paid?: boolean; q?: string }): Promise<GatewayDirectory>;
  /** The entry of a route, e.g. ('knowledge-market', 'purchase'); undefined when the route is unknown. */
  entry(service: GatewayServiceId, key: string): Promise<GatewayDirectoryEntry | undefined>;
}

export function directorySource(options: {
  /** The gateway's own contract as this deployment prices it, and its public address. */
  self: { service: ServiceDefinition; url: string };
  url(id: ConnectedId): string;
  now: () => Date;
}): DirectorySource {
  const cache = new Map<ConnectedId, { at: number; url: string; document: ServiceDocument }>();
  const own = (() => {
    const document = buildOpenApiDocument(options.self.service, { serverUrl: options.self.url }) as OpenApiDocument;
    return {
      id: 'gateway',
      title: gateway.title,
      url: options.self.url,
      from: 'document',
      entries: entriesOf('gateway', options.self.url, document, gateway),
    } satisfies ServiceDocument;
  })();

  async function documentOf(id: ConnectedId): Promise<ServiceDocument> {
    const url = options.url(id);
    const cached = cache.get(id);
    const at = Date.now();
    if (cached && cached.url === url && cached.document.from === 'document' && at - cached.at < DOCUMENT_TTL_MS)
      return cached.document;
    const contract = CONTRACTS[id] as ServiceDefinition;
    try {
      const response = await tracedFetch(`GET ${id} /openapi.json`, `${url}/openapi.json`, {
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const document = (await response.json()) as OpenApiDocument;
      const entries = entriesOf(id, url, document, contract);
      if (!entries.length) throw new Error('the document lists no operation');
      const read: ServiceDocument = {
        id,
        title: document.info?.title ?? contract.title,
        url,
        from: 'document',
        entries,
      };
      cache.set(id, { at, url, document: read });
      return read;
    } catch {
      // Not answering: the last document read, else the contract (the same source, without this deployment's prices).
      if (cached && cached.url === url) return cached.document;
      const document = buildOpenApiDocument(contract, { serverUrl: url }) as OpenApiDocument;
      return { id, title: contract.title, url, from: 'contract', entries: entriesOf(id, url, document, contract) };
    }
  }

  async function documents(): Promise<ServiceDocument[]> {
    const connected = await Promise.all(
      (['knowledge-market', 'negotiation', 'reputation', 'verification'] as const).map(documentOf),
    );
    return [own, ...connected];
  }

  return {
    documents,
    async directory(filter = {}) {
      const docs = await documents();
      const words = (filter.q ?? '').toLowerCase().split(/\s+/).filter(Boolean);
      const endpoints = docs
        .flatMap((d) => d.entries)
        .filter((e) => !filter.service || e.service === filter.service)
        .filter((e) => filter.paid === undefined || (e.pricing.maxUsd !== '0') === filter.paid)
        .filter((e) => {
          const text = `${e.path} ${e.summary} ${e.description}`.toLowerCase();
          return words.every((w) => text.includes(w));
        });
      return {
        services: docs
          .filter((d) => !filter.service || d.id === filter.service)
          .map((d) => ({
            id: d.id,
            title: d.title,
            url: d.url,
            agentCardUrl: `${d.url}/.well-known/agent-card.json`,
            openApiUrl: `${d.url}/openapi.json`,
            endpoints: d.entries.length,
          })),
        endpoints,
        total: endpoints.length,
        generatedAt: options.now().toISOString(),
      };
    },
    async entry(service, key) {
      const docs = await documents();
      return docs.find((d) => d.id === service)?.entries.find((e) => e.key === key);
    },
  };
}

/** The pricing of a route from its contract (for a route the directory could not read). */
export function contractPricing(service: ServiceDefinition, key: string): GatewayPricing {
  const route = listRoutes(service.router).find((r) => r.key === key)?.route;
  return pricingOf(route ? routeMeta(route).payment : undefined);
}
