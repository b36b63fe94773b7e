import { isPaid, listRoutes, routeMeta, type PaymentMeta, type ServiceDefinition } from '@agent-economy/contracts';
import type { PaywallConfig } from './paywall';

// /llms.txt (llmstxt.org): a service described for language models in Markdown, generated from its contract and
// this deployment's prices and payee: what it sells, what each route costs, how x402 payment works, where the
// full documents are.

function price(payment: PaymentMeta): string {
  switch (payment.kind) {
    case 'free':
      return 'free';
    case 'fixed':
      return `${payment.usd} USD per call`;
    case 'adaptive':
      return `${payment.minUsd} to ${payment.maxUsd} USD per call, set per request by demand`;
    case 'tiered':
      return `by tier: ${payment.tiers.map((t) => `${t.id} ${t.usd} USD`).join(', ')}`;
  }
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

export function buildLlmsTxt(
  service: ServiceDefinition,
  options: { publicUrl: string; paywall: PaywallConfig },
): string {
  const url = options.publicUrl.replace(/\/+$/, '');
  const routes = listRoutes(service.router).map(({ route }) => ({ route, meta: routeMeta(route) }));
  const line = ({ route, meta }: (typeof routes)[number]) =>
    `- \`${route.method} ${route.path}\`: ${oneLine(route.summary ?? route.path)}. Price: ${price(meta.payment)}.` +
    (meta.auth === 'siwx' ? ' Requires a SIGN-IN-WITH-X wallet proof.' : '');
  const paid = routes.filter((r) => isPaid(r.meta.payment));
  const free = routes.filter((r) => !isPaid(r.meta.payment));
  const { paywall } = options;
  return [
    `# ${service.title}`,
    '',
    `> ${oneLine(service.description)}`,
    '',
    `Base URL: ${url}`,
    '',
    '## How to pay',
    '',
    paid.length === 0
      ? 'Every route of this service is free: no payment, no account.'
      : [
          'Paid routes use x402 v2 (https://x402.org): call the route; it answers `402 Payment Required` with a base64 JSON quote in the',
          '`PAYMENT-REQUIRED` header (`accepts`: scheme `exact`, network, asset, amount in atomic units, payTo, and `extra.feePayer`).',
          "Build a Solana transaction transferring exactly that amount of the asset to payTo's token account, with the fee payer",
          'as fee payer, sign it, and retry the same request with the base64 JSON payment in the `PAYMENT-SIGNATURE` header. The',
          'response carries the settlement receipt in `PAYMENT-RESPONSE`. Invalid requests are refused before any quote: you',
          'never pay for a request that fails validation. The @agent-economy/sdk client does all of this within the budgets you set.',
          '',
          `- Network: ${paywall.network}`,
          `- Asset: ${paywall.asset} (a USD stablecoin, 6 decimals: 1000000 = 1.00 USD)`,
          `- Pays to: ${paywall.payTo} (unless a quote names another payee, such as a seller on a market)`,
          ...(paywall.feePayer ? [`- Fee payer (the facilitator pays the network fee): ${paywall.feePayer}`] : []),
        ].join('\n'),
    '',
    ...(paid.length ? ['## Paid routes', '', ...paid.map(line), ''] : []),
    ...(free.length ? ['## Free routes', '', ...free.map(line), ''] : []),
    '## Documents',
    '',
    `- [OpenAPI document](${url}/openapi.json): every route, field, error and price (\`x-payment\`)`,
    `- [API reference](${url}/docs)`,
    `- [Agent card](${url}/.well-known/agent-card.json)`,
    `- [Health](${url}/health)`,
    '',
  ].join('\n');
}

/**
 * The served OpenAPI document with this deployment's payee on each paid operation's `x-payment` (`payTo`, `network`,
 * `asset`): the document shipped in the repository cannot know it. A route priced per request may name another payee
 * in its quote (a marketplace seller).
 */
export function withPayee<D>(document: D, paywall: PaywallConfig): D {
  const paths =
    (document as { paths?: Record<string, Record<string, { 'x-payment'?: Record<string, unknown> }>> }).paths ?? {};
  for (const operations of Object.values(paths)) {
    for (const operation of Object.values(operations)) {
      const payment = operation?.['x-payment'];
      if (payment && payment.kind !== 'free' && payment.protocol === 'x402')
        Object.assign(payment, { payTo: paywall.payTo, network: paywall.network, asset: paywall.asset });
    }
  }
  return document;
}
