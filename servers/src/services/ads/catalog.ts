import type { ResourceTransport } from '@agent-economy/contracts';
import type { Logger } from 'pino';
import type { ResourceFacts } from './domain';
import { tracedFetch } from '../../http/tracing';

// The resource catalog the matcher reads categories and transports from: the paid routes the deployment's services
// list in their descriptors (GET /.well-known/agent-card.json, the x402 discovery data every service publishes).
// A resource's category is the service that serves it, as its skills' tags say ('education', 'gas', ...).

export interface CatalogEntry {
  method: string;
  /** The resource address, path parameters as `:name`. */
  url: string;
  category: string;
  transport: ResourceTransport;
  matcher: RegExp;
}

export interface Catalog {
  entries: CatalogEntry[];
  /** How many descriptors were read, and how many addresses were asked. */
  read: number;
  asked: number;
  at: number;
}

interface AgentCard {
  url?: unknown;
  skills?: { name?: unknown; tags?: unknown }[];
}

const TTL_MS = 60_000;
const TIMEOUT_MS = 2_000;

function toMatcher(url: string): RegExp {
  const escaped = url.replace(/[.+?^${}()|[\]\\*]/g, '\\$&').replace(/\/:[A-Za-z0-9_]+/g, '/[^/]+');
  return new RegExp(`^${escaped}$`);
}

/** The catalog entries of one descriptor: its paid skills ("METHOD /path"). */
export function entriesOf(card: AgentCard, fallbackUrl: string): CatalogEntry[] {
  const base = (typeof card.url === 'string' ? card.url : fallbackUrl).replace(/\/+$/, '');
  const entries: CatalogEntry[] = [];
  for (const skill of card.skills ?? []) {
    const tags = Array.isArray(skill.tags) ? skill.tags.filter((t): t is string => typeof t === 'string') : [];
    const match = typeof skill.name === 'string' ? /^([A-Z]+) (\/\S*)$/.exec(skill.name) : null;
    if (!match || !tags.includes('paid')) continue;
    const category = tags.find((t) => t !== 'x402' && t !== 'paid' && t !== 'free' && t !== 'mcp');
    if (!category) continue;
    const url = base + match[2]!;
    entries.push({
      method: match[1]!,
      url,
      category,
      transport: tags.includes('mcp') ? 'mcp' : 'http',
      matcher: toMatcher(url),
    });
  }
  return entries;
}

/** Reads (and caches for a minute) the descriptors of the services at `sources()`. */
export function resourceCatalog(sources: () => string[], logger: Logger) {
  let cached: Catalog | undefined;
  let loading: Promise<Catalog> | undefined;

  async function load(): Promise<Catalog> {
    const urls = [...new Set(sources().map((u) => u.replace(/\/+$/, '')))];
    const cards = await Promise.all(
      urls.map(async (url) => {
        try {
          const response = await tracedFetch('GET /.well-known/agent-card.json', `${url}/.well-known/agent-card.json`, {
            signal: AbortSignal.timeout(TIMEOUT_MS),
          });
          if (!response.ok) return undefined;
          return entriesOf((await response.json()) as AgentCard, url);
        } catch (error) {
          logger.debug({ err: error, url }, 'descriptor not read');
          return undefined;
        }
      }),
    );
    const read = cards.filter((c) => c !== undefined);
    return { entries: read.flat(), read: read.length, asked: urls.length, at: Date.now() };
  }

  async function current(): Promise<Catalog> {
    if (cached && Date.now() - cached.at < TTL_MS) return cached;
    loading ??= load().finally(() => (loading = undefined));
    cached = await loading;
    return cached;
  }

  return {
    current,
    /** The category and transport of a settled resource: the catalog entry whose address matches (query ignored). */
    async facts(resourceUrl: string): Promise<ResourceFacts> {
      const catalog = await current();
      const address = resourceUrl.split(/[?#]/)[0]!;
      const entry = catalog.entries.find((e) => e.matcher.test(address));
      return entry ? { category: entry.category, transport: entry.transport } : { category: null, transport: 'http' };
    },
  };
}
