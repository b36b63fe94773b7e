// Buys one lesson from the education service with the demo agent wallet that `npm start` funds on the
// local ledger, and prints the receipt and the balances before and after. Run `npm start` in another
// terminal, then `npm run example:lesson`. AGENT_ECONOMY_WALLET (a secret key) pays instead of the demo wallet.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConnectionError, atomicToUsd, createClient, walletFromEnv, walletFromFile } from '@agent-economy/sdk';

interface ServicesFile {
  chain: { rpcUrl: string; stablecoin: string; network: string };
  demoWallet: { address: string; keyFile?: string };
  services: { id: string; url: string; wallet: string }[];
}

const dataDir = process.env.DATA_DIR ?? join(import.meta.dirname, '..', '.data');

/** The stablecoin balance of a wallet, read from the chain over JSON-RPC (0 when it has no token account). */
async function balance(rpcUrl: string, owner: string, mint: string): Promise<bigint> {
  const response = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getTokenAccountsByOwner', params: [owner, { mint }, { encoding: 'jsonParsed' }] }),
  });
  const { result } = (await response.json()) as { result: { value: { account: { data: { parsed: { info: { tokenAmount: { amount: string } } } } } }[] } };
  return result.value.reduce((sum, a) => sum + BigInt(a.account.data.parsed.info.tokenAmount.amount), 0n);
}

async function main() {
  let deployment: ServicesFile;
  try {
    deployment = JSON.parse(readFileSync(join(dataDir, 'services.json'), 'utf8'));
  } catch {
    throw new Error(`No ${join(dataDir, 'services.json')}: start the economy first with npm start`);
  }
  const { chain } = deployment;
  const wallet = process.env.AGENT_ECONOMY_WALLET ? await walletFromEnv() : await walletFromFile(deployment.demoWallet.keyFile!);
  const education = deployment.services.find((s) => s.id === 'education')!;
  const client = createClient({
    baseUrls: { education: education.url },
    wallet,
    network: chain.network,
    payments: { maxPerCallUsd: '0.10', maxTotalUsd: '1', rpcUrl: chain.rpcUrl },
  });

  const usd = async (owner: string) => atomicToUsd(await balance(chain.rpcUrl, owner, chain.stablecoin));
  const before = { agent: await usd(wallet.address), seller: await usd(education.wallet) };
  console.log(`Agent wallet   ${wallet.address}: ${before.agent} USD`);
  console.log(`Education pays ${education.wallet}: ${before.seller} USD\n`);

  const lesson = await client.education.lesson.withResponse({ body: { courseId: 'tool-use', lessonId: 'function-calling' } });
  console.log(`Bought "${lesson.data.title}" (${lesson.data.sections.length} sections).`);
  const receipt = lesson.payment!;
  console.log(`Receipt: ${receipt.amountUsd} USD (${receipt.amount} atomic units of ${receipt.asset})`);
  console.log(`  from ${receipt.payer} to ${receipt.payTo} on ${receipt.network}`);
  console.log(`  transaction ${receipt.transaction}\n`);

  const after = { agent: await usd(wallet.address), seller: await usd(education.wallet) };
  console.log(`Agent wallet   ${after.agent} USD (was ${before.agent})`);
  console.log(`Education      ${after.seller} USD (was ${before.seller})`);
  console.log(`Spent by this client: ${client.payments.spentUsd()} USD`);
}

main().catch((error) => {
  if (error instanceof ConnectionError) console.error('A service does not answer. Start the economy first: npm start');
  else console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
