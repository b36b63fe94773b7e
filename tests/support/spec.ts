import { readFileSync } from 'node:fs';

/**
 * The specification's endpoint inventory, kept in the repository as data (contracts/spec-endpoints.json):
 * every "METHOD path" of the three endpoint tables, by service id, in table order. Tests never read the
 * specification itself, which is not part of the repository.
 */
const inventoryFile = new URL('../../contracts/spec-endpoints.json', import.meta.url);

export function specEndpoints(): Map<string, string[]> {
  const { endpoints } = JSON.parse(readFileSync(inventoryFile, 'utf8')) as { endpoints: Record<string, string[]> };
  return new Map(Object.entries(endpoints));
}

/** The facilitator's x402 operations, named in spec 002 but specified by x402 itself. */
export const X402_FACILITATOR_ENDPOINTS = [
  'GET /supported',
  'POST /verify',
  'POST /settle',
  // Discovery: the settlement feed the marketplace API syncs from, and x402's bazaar extension.
  'GET /discovery/settlements',
  // A seller's refund of a settled payment, checked on chain, so the feed stops counting the sale.
  'POST /discovery/refunds',
  'GET /discovery/resources',
  'GET /discovery/search',
  // A payment session as the facilitator holds it: sellers check a channel before serving its first voucher.
  'GET /mpp/session/:channelId',
];

/** Services the gateway fronts that the spec names but does not describe: their routes are our design. */
export const COMPANION_SERVICES = ['knowledge-market', 'negotiation', 'reputation', 'verification'];
