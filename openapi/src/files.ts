import { DEFAULT_PORTS, isPaid, listRoutes, priceRange, routeMeta, services, usdToAtomic } from '@agent-economy/contracts';
import { buildOpenApiDocument } from './document';

/** The committed documents describe a one-machine deployment at the default ports. */
export const defaultServerUrl = (id: keyof typeof DEFAULT_PORTS) => `http://127.0.0.1:${DEFAULT_PORTS[id]}`;

/** File name -> document text, exactly as committed (a test compares them to detect drift). */
export function renderDocuments(): Record<string, string> {
  return Object.fromEntries(
    services.map((service) => [`${service.id}.json`, `${JSON.stringify(buildOpenApiDocument(service, { serverUrl: defaultServerUrl(service.id) }), null, 2)}\n`]),
  );
}

/** openapi/README.md: each service with its endpoint count and price range. */
export function renderIndex(): string {
  const rows = services.map((service) => {
    const routes = listRoutes(service.router);
    const paid = routes.filter(({ route }) => isPaid(routeMeta(route).payment));
    const prices = paid.flatMap(({ route }) => Object.values(priceRange(routeMeta(route).payment))).filter((usd) => usdToAtomic(usd) > 0n);
    prices.sort((a, b) => (usdToAtomic(a) < usdToAtomic(b) ? -1 : usdToAtomic(a) > usdToAtomic(b) ? 1 : 0));
    const range = prices.length ? (prices[0] === prices.at(-1) ? `${prices[0]} USD` : `${prices[0]} to ${prices.at(-1)} USD`) : 'free';
    return `| [${service.id}](${service.id}.json) | ${service.title} | ${routes.length} | ${routes.length - paid.length} | ${range} |`;
  });
  return [
    '# OpenAPI documents',
    '',
    'Generated from the contracts by `npm run openapi`; do not edit by hand (a test fails when they drift).',
    'Each running service also serves its own document at `/openapi.json` and a reference page at `/docs`.',
    '',
    '| service | title | endpoints | free | paid price range |',
    '|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
