// A whole trade through the gateway. A seller (a fresh wallet funded by the local ledger's faucet) publishes a
// module and gets it certified; then the demo agent wallet that `npm start` funds onboards through the gateway,
// searches, starts a trade (the gateway negotiates for it as broker), executes it in one payment (verification,
// purchase for the buyer, content hash check, reputation report) and rates the module. Each step prints its price
// and transaction. Run `npm start` in another terminal, then `npm run example:trade`.
// AGENT_ECONOMY_WALLET (a secret key) buys instead of the demo wallet.
import { randomInt } from 'node:crypto';
import {
  ApiError,
  ConnectionError,
  createClient,
  fundWallet,
  generateWallet,
  type PaymentReceipt,
} from '@agent-economy/sdk';
import { demoWallet, localDeployment, requireFaucet, serviceOf } from './deployment';

/**
 * Module content unique to this run: the verification service compares every scan with the earlier ones, so a
 * module published again by each run would be a near-duplicate of the last and not certified.
 */
function moduleContent(): string {
  const rows = Array.from({ length: 24 }, () => {
    const slot = 280_000_000 + randomInt(1_000_000);
    return `| ${slot} | ${randomInt(2, 60)} | ${randomInt(1_000, 90_000)} | ${randomInt(100, 900)} |`;
  });
  const p75 = randomInt(4_000, 40_000);
  return [
    '# Priority fees from recent slots',
    '',
    `This note shows how an agent picks a compute-unit price from recent prioritization fees. On this sample the seventy-fifth percentile is ${p75} micro-lamports, which landed within two slots.`,
    '',
    '## Method',
    '',
    'Read the fees paid for the accounts your transaction writes, drop the empty slots, sort the rest and take the seventy-fifth percentile. Recompute it every minute.',
    '',
    '```ts',
    'const sorted = fees.filter((f) => f > 0).sort((a, b) => a - b);',
    'const price = sorted[Math.floor(sorted.length * 0.75)];',
    '```',
    '',
    '## Observations',
    '',
    '| slot | transactions | micro-lamports | compute units (thousands) |',
    '|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

const priced = (r: PaymentReceipt | undefined) => (r ? `${r.amountUsd} USD, transaction ${r.transaction}` : 'free');

async function main() {
  const deployment = await localDeployment();
  for (const id of ['gateway', 'knowledge-market', 'negotiation', 'reputation', 'verification'])
    serviceOf(deployment, id);
  const payments = { maxPerCallUsd: '1', maxTotalUsd: '3' };
  const buyerWallet = await demoWallet(deployment);
  const sellerWallet = await generateWallet();
  const buyer = createClient({ deployment, wallet: buyerWallet, payments });
  const seller = createClient({ deployment, wallet: sellerWallet, payments });

  // 0. A seller with something to sell: funded by the ledger's faucet, publishes and certifies a module.
  requireFaucet(deployment);
  await fundWallet({ deployment, address: sellerWallet.address, usd: '1' });
  console.log(`Seller ${sellerWallet.address} funded with 1 USD by the faucet`);
  const content = moduleContent();
  const published = await seller.knowledgeMarket.publish.withResponse({
    body: {
      title: 'Priority fees from recent slots',
      description:
        'Choose a compute-unit price from recent prioritization fees, with a worked sample of observed slots.',
      tags: ['solana', 'fees'],
      capabilities: ['fee-estimation', 'transaction-landing'],
      priceUsd: '0.25',
      format: 'markdown',
      content,
      sellerName: 'fee-scholar',
      negotiation: { mode: 'auto', maxDiscountPercent: 20 },
    },
  });
  const moduleId = published.data.id;
  console.log(
    `0a. publish ${moduleId} at ${published.data.priceUsd} USD (floor ${published.data.negotiation.floorUsd}): ${priced(published.payment)}`,
  );
  const scan = await seller.verification.scan.withResponse({
    body: {
      content: { title: published.data.title, format: 'markdown', body: content },
      moduleId,
      holder: sellerWallet.address,
    },
  });
  console.log(
    `0b. scan: verdict ${scan.data.verdict}, score ${scan.data.score}, certificate ${scan.data.certification.certificateId ?? `none (${scan.data.certification.reason})`}: ${priced(scan.payment)}\n`,
  );

  // 1. Onboard the buyer through the gateway.
  const onboarding = await buyer.gateway.onboard.withResponse({
    body: {
      wallet: buyerWallet.address,
      name: 'demo-agent',
      capabilities: ['fee-estimation', 'transaction-landing'],
      interests: ['solana', 'fees'],
      role: 'buyer',
    },
  });
  console.log(
    `1. onboard ${buyerWallet.address} (${onboarding.data.agent.newlyRegistered ? 'new' : 'known'}): ${priced(onboarding.payment)}`,
  );
  for (const r of onboarding.data.registrations) console.log(`     ${r.service}: ${r.status} — ${r.detail}`);
  for (const m of onboarding.data.recommendedModules.slice(0, 3))
    console.log(`     recommended ${m.moduleId} "${m.title}" score ${m.score}: ${m.reason}`);

  // 2. Search.
  const found = await buyer.gateway.search({ query: { q: 'priority fees compute-unit price', limit: 5 } });
  console.log(
    `2. search: ${found.items.length} of ${Object.values(found.counts).reduce((a, b) => a + b, 0)} hits in ${found.tookMs} ms: free`,
  );
  for (const hit of found.items)
    console.log(`     ${hit.score.toFixed(3)} ${hit.type.padEnd(11)} ${hit.title} (${hit.service})`);

  // 3. Start a trade for the module: the gateway opens the negotiation for the buyer as broker.
  const started = await buyer.gateway.startTrade.withResponse({
    body: { need: 'choose compute-unit prices that land Solana transactions', moduleId, maxPriceUsd: '0.25' },
  });
  const plan = started.data;
  console.log(`3. trade/start plan ${plan.id}: ${priced(started.payment)}`);
  if (plan.negotiation) {
    const n = plan.negotiation;
    console.log(
      `     negotiation ${n.id}: offered ${n.lastBuyerOfferUsd}, ${n.state}${n.standingOffer ? `, standing ${n.standingOffer.by} offer ${n.standingOffer.priceUsd}` : ''}`,
    );
  }
  for (const step of plan.steps) {
    console.log(
      `     ${step.order}. ${step.name.padEnd(9)} ${step.status.padEnd(7)} via ${step.via.method} ${step.via.path}`,
    );
    for (const e of step.endpoints)
      console.log(
        `          ${e.method} ${e.path} on ${e.service}: ${e.pricing.maxUsd === '0' ? 'free' : `${e.pricing.minUsd === e.pricing.maxUsd ? e.pricing.maxUsd : `${e.pricing.minUsd}-${e.pricing.maxUsd}`} USD`} (paid by ${e.paidBy})`,
      );
  }
  console.log(
    `     estimate: ${plan.estimate.totalUsd} USD (${plan.estimate.priceBasis} ${plan.estimate.modulePriceUsd} + fee ${plan.estimate.gatewayFeeUsd}); next: ${plan.nextAction}`,
  );

  // 4. Execute: one payment of the module price plus the fee, settled first; a failure is refunded on chain.
  const executed = await buyer.gateway.executeTrade.withResponse({ body: { planId: plan.id } });
  const trade = executed.data;
  console.log(`4. trade/execute ${trade.id}: ${priced(executed.payment)}`);
  console.log(
    `     verify:   ${trade.verification.status} (certificate ${trade.verification.certificateId}), content SHA-256 matches: ${trade.verification.contentMatches}`,
  );
  console.log(
    `     purchase: ${trade.purchase.purchaseId} at ${trade.purchase.priceUsd} USD (${trade.purchase.priceBasis}), paid by the gateway ${trade.purchase.paidBy} to the seller, transaction ${trade.purchase.transaction}`,
  );
  console.log(
    `     report:   ${trade.reputation.status} ${trade.reputation.reportId ?? ''} — ${trade.reputation.detail}`,
  );
  console.log(`     content:  ${trade.purchase.content.split('\n')[0]} (${trade.purchase.content.length} characters)`);

  // 5. Rate the module (free: a purchase is required).
  const rated = await buyer.knowledgeMarket.rate({
    params: { moduleId },
    body: { purchaseId: trade.purchase.purchaseId, rating: 5, comment: 'Landed on the first try.' },
  });
  console.log(`5. rate 5/5: the module is rated ${rated.moduleRating.average} by ${rated.moduleRating.count}: free`);

  console.log(
    `\nThe buyer spent ${buyer.payments.spentUsd()} USD in ${buyer.payments.receipts.length} payments; the seller ${seller.payments.spentUsd()} USD.`,
  );
}

main().catch((error) => {
  if (error instanceof ConnectionError) console.error('A service does not answer. Start the economy first: npm start');
  else if (error instanceof ApiError)
    console.error(`${error.message}${error.details ? ` ${JSON.stringify(error.details)}` : ''}`);
  else console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
