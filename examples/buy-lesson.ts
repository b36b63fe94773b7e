// Buys one lesson from the education service with the demo agent wallet that `npm start` funds on the
// local ledger, and prints the receipt and the balances before and after. Run `npm start` in another
// terminal, then `npm run example:lesson`. AGENT_ECONOMY_WALLET (a secret key) pays instead of the demo wallet.
import { ConnectionError, createClient, fetchBalances } from '@agent-economy/sdk';
import { demoWallet, localDeployment, serviceOf } from './deployment';

async function main() {
  const deployment = await localDeployment();
  const wallet = await demoWallet(deployment);
  const education = serviceOf(deployment, 'education');
  // Addresses, network and the chain's RPC all come from the deployment.
  const client = createClient({ deployment, wallet, payments: { maxPerCallUsd: '0.10', maxTotalUsd: '1' } });

  const usd = async (owner: string) => (await fetchBalances({ deployment, address: owner })).usd;
  const before = { agent: await usd(wallet.address), seller: await usd(education.wallet!) };
  console.log(`Agent wallet   ${wallet.address}: ${before.agent} USD`);
  console.log(`Education pays ${education.wallet}: ${before.seller} USD\n`);

  const lesson = await client.education.lesson.withResponse({
    body: { courseId: 'tool-use', lessonId: 'function-calling' },
  });
  console.log(`Bought "${lesson.data.title}" (${lesson.data.sections.length} sections).`);
  const receipt = lesson.payment!;
  console.log(`Receipt: ${receipt.amountUsd} USD (${receipt.amount} atomic units of ${receipt.asset})`);
  console.log(`  from ${receipt.payer} to ${receipt.payTo} on ${receipt.network}`);
  console.log(`  transaction ${receipt.transaction}\n`);

  const after = { agent: await usd(wallet.address), seller: await usd(education.wallet!) };
  console.log(`Agent wallet   ${after.agent} USD (was ${before.agent})`);
  console.log(`Education      ${after.seller} USD (was ${before.seller})`);
  console.log(`Spent by this client: ${client.payments.spentUsd()} USD`);
}

main().catch((error) => {
  if (error instanceof ConnectionError) console.error('A service does not answer. Start the economy first: npm start');
  else console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
