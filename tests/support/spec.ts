import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The specification beside the repository (../shared/spec), as CI and every developer machine lay it out. */
export const specDir = fileURLToPath(new URL('../../../shared/spec', import.meta.url));

/** Endpoint-table headings of the specification, mapped to our service ids (DESIGN.md). */
const SECTION_IDS: [RegExp, string][] = [
  [/^Cognition service/, 'cognition'],
  [/^Escrow service/, 'escrow'],
  [/^Gateway/, 'gateway'],
  [/^Identity service/, 'identity'],
  [/^Education service/, 'education'],
  [/^Adaptive-pricing marketplace/, 'pricing'],
  [/^Competitive-intelligence stack/, 'intel'],
  [/^Market conviction index/, 'conviction'],
  [/^Gas fee optimizer/, 'gas'],
  [/^Entropy oracle/, 'entropy'],
  [/^Token analysis/, 'tokens'],
  [/^Funding-rate scanner/, 'funding'],
  [/^Bitcoin on-chain metrics/, 'btc-metrics'],
  [/^Bitcoin exchange-flow monitor/, 'exchange-flows'],
  [/^Wallet protocol-history service/, 'wallet-history'],
  [/^Ad network/, 'ads'],
  [/^Public marketplace API/, 'marketplace'],
  [/^Settlement API/, 'facilitator'],
  [/^Chat wager service/, 'wagers'],
];

/** Every "METHOD path" of the spec's endpoint tables, by service id, in table order. */
export function specEndpoints(): Map<string, string[]> {
  const endpoints = new Map<string, string[]>();
  for (const file of readdirSync(specDir).filter((f) => /^\d{3}_.*\.txt$/.test(f)).sort()) {
    const text = readFileSync(join(specDir, file), 'utf8');
    const section = text.slice(text.indexOf('\n## Endpoints'), text.indexOf('\n## Authentication'));
    let service: string | undefined;
    let defaultMethod: string | undefined;
    for (const line of section.split('\n')) {
      const heading = /^### (.*)$/.exec(line);
      if (heading) {
        service = SECTION_IDS.find(([pattern]) => pattern.test(heading[1]!))?.[1];
        if (!service) throw new Error(`unmapped endpoint table "${heading[1]}" in ${file}`);
        defaultMethod = /\(all (GET|POST)\b/.exec(heading[1]!)?.[1];
        endpoints.set(service, []);
        continue;
      }
      if (!service || !line.startsWith('|')) continue;
      const cells = line.split('|').slice(1, -1).map((c) => c.trim());
      const withMethod = /^(GET|POST|PUT|PATCH|DELETE)$/.test(cells[0]!) && cells[1]?.startsWith('/');
      if (withMethod) endpoints.get(service)!.push(`${cells[0]} ${cells[1]}`);
      else if (defaultMethod && cells[0]?.startsWith('/')) endpoints.get(service)!.push(`${defaultMethod} ${cells[0]}`);
    }
  }
  return endpoints;
}

/** The facilitator's x402 operations, named in spec 002 but specified by x402 itself. */
export const X402_FACILITATOR_ENDPOINTS = ['GET /supported', 'POST /verify', 'POST /settle'];

/** Services the gateway fronts that the spec names but does not describe: their routes are our design. */
export const COMPANION_SERVICES = ['knowledge-market', 'negotiation', 'reputation', 'verification'];
