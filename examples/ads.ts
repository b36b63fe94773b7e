// The ad network end to end: an advertiser (a fresh wallet funded by the local ledger's faucet) registers, creates a
// campaign recommending the education service's exercises to buyers of education resources, and activates it, which
// pays its budget into the ad network's wallet on chain. The demo agent then buys a lesson: the facilitator asks the
// ad network for a match and the receipt carries the recommendation; the agent fires the impression beacon and buys
// the recommended exercise (a conversion the facilitator reports). Finally the campaign's spend and remaining budget
// are printed and the campaign is paused, which pays the unspent budget back. Run `npm start` in another terminal,
// then `npm run example:ads`.
import { ConnectionError, atomicToUsd, createClient, fundWallet, generateWallet } from '@agent-economy/sdk';
import { demoWallet, localDeployment, requireFaucet, serviceOf } from './deployment';

/** Polls until `ok` (the facilitator reports settlements to the ad network just after answering). */
async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const value = await read();
    if (ok(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what} did not show up within 10 s`);
}

async function main() {
  const deployment = await localDeployment();
  const { chain } = deployment;
  const [adsUrl, educationUrl] = [serviceOf(deployment, 'ads').url, serviceOf(deployment, 'education').url];
  requireFaucet(deployment);

  // 1. An advertiser wallet, funded with 10 USD of the stablecoin and some SOL by the faucet.
  const advertiser = await generateWallet();
  await fundWallet({ deployment, address: advertiser.address, usd: '10', sol: '1' });
  const advertiserClient = createClient({
    deployment,
    wallet: advertiser,
    payments: { maxPerCallUsd: '10', maxTotalUsd: '10' },
  });
  console.log(`Advertiser wallet ${advertiser.address}: funded with 10 USD by the faucet`);

  // 2. Register, create a campaign targeting education, and activate it (paying the 5 USD budget on chain).
  const profile = await advertiserClient.ads.advertisers.create({
    body: { name: 'Exercise Lab', wallet_address: advertiser.address, network: chain.network },
  });
  const draft = await advertiserClient.ads.campaigns.create({
    body: {
      advertiser_id: profile.id,
      name: 'Exercises for lesson buyers',
      budget_total: '5000000',
      budget_daily: '2000000',
      max_bid_amount: '1000000',
      bid_strategy: 'cpm',
      schedule_start: new Date(Date.now() - 60_000).toISOString(),
      rec_resource_url: `${educationUrl}/api/exercise`,
      rec_description: 'Practice what you just learned with a graded exercise',
      rec_sponsor_name: 'Exercise Lab',
      target_categories: ['education'],
      target_networks: [chain.network],
    },
  });
  const activation = await advertiserClient.ads.campaigns.activate.withResponse({ params: { id: draft.id } });
  const campaign = activation.data;
  console.log(
    `Campaign ${campaign.id} is ${campaign.status}: paid ${atomicToUsd(BigInt(campaign.budget_funded))} USD into the ad network (transaction ${activation.payment?.transaction})\n`,
  );

  // 3. The demo agent buys a lesson; the facilitator attaches the recommendation to the settlement.
  const agent = await demoWallet(deployment);
  const agentClient = createClient({
    deployment,
    wallet: agent,
    payments: { maxPerCallUsd: '0.10', maxTotalUsd: '1' },
  });
  const lesson = await agentClient.education.lesson.withResponse({
    body: { courseId: 'tool-use', lessonId: 'function-calling' },
  });
  const receipt = lesson.payment!;
  console.log(`Agent bought "${lesson.data.title}" for ${receipt.amountUsd} USD (transaction ${receipt.transaction})`);
  const sponsored = receipt.sponsoredAccess;
  if (!sponsored) throw new Error('The receipt carries no recommendation: is the facilitator reaching the ad network?');
  const recommendation = sponsored.recommendations[0]!;
  console.log(
    `Recommendation on the receipt (campaign ${sponsored.campaignId}): "${recommendation.description}" by ${recommendation.sponsor}`,
  );
  console.log(`  ${recommendation.resourceUrl}`);

  // 4. The agent shows it and fires the impression beacon (counted once per settlement).
  const beacon = await fetch(sponsored.tracking.impressionBeacon);
  console.log(`Impression beacon: HTTP ${beacon.status}`);

  // 5. The agent follows the recommendation: the facilitator reports the conversion.
  const exercise = await agentClient.education.exercise.withResponse({
    body: { courseId: 'rag', lessonId: 'chunking' },
  });
  console.log(
    `Agent bought the recommended exercise for ${exercise.payment!.amountUsd} USD (transaction ${exercise.payment!.transaction})`,
  );
  const reader = createClient({ baseUrls: { ads: adsUrl } });
  const conversions = await until(
    () => reader.ads.conversions.list({ params: { id: campaign.id }, query: {} }),
    (page) => page.items.length > 0,
    'The conversion',
  );
  console.log(
    `Conversion recorded: ${conversions.items[0]!.conversionId} (${conversions.items[0]!.originalTxHash.slice(0, 12)}… → ${conversions.items[0]!.conversionTxHash.slice(0, 12)}…)\n`,
  );

  // 6. What the campaign spent and has left.
  const now = await until(
    () => reader.ads.campaigns.get({ params: { id: campaign.id } }),
    (c) => c.stats.settlements > 0 && c.stats.impressions > 0,
    'The settlement event',
  );
  const remaining = BigInt(now.budget_total) - BigInt(now.spent_total);
  console.log(
    `Campaign ${now.id}: spent ${atomicToUsd(BigInt(now.spent_total))} USD (${now.spent_total} atomic units), ${atomicToUsd(remaining)} USD of the ${atomicToUsd(BigInt(now.budget_total))} USD budget left`,
  );
  console.log(
    `  stats: ${now.stats.matches} match(es), ${now.stats.settlements} sponsored settlement(s), ${now.stats.impressions} impression(s), ${now.stats.conversions} conversion(s)`,
  );

  // 7. Pausing withdraws what the campaign still holds, back to the advertiser's wallet.
  const paused = await advertiserClient.ads.campaigns.pause({ params: { id: campaign.id } });
  console.log(
    `Paused: ${atomicToUsd(BigInt(paused.budget_refunded))} USD paid back to the advertiser (transaction ${paused.last_refund_transaction})`,
  );
}

main().catch((error) => {
  if (error instanceof ConnectionError) console.error('A service does not answer. Start the economy first: npm start');
  else console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
