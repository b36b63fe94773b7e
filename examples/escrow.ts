// A two-milestone escrow end to end: the demo agent (the buyer) escrows 2.5 USD with a new seller wallet funded
// from the ledger's faucet; the seller delivers both milestones; the buyer confirms the first and disputes the
// second; the seller answers and asks the mediator, whose binding decision is paid out on chain. Each step prints
// its transaction, and the balances of buyer, seller and vault are printed before and after.
// Run `npm start` in another terminal, then `npm run example:escrow`.
import {
  ConnectionError,
  atomicToUsd,
  createClient,
  fetchBalances,
  fundWallet,
  generateWallet,
  type Signer,
} from '@agent-economy/sdk';
import { demoWallet, localDeployment, serviceOf } from './deployment';

async function main() {
  const deployment = await localDeployment();
  const escrowService = serviceOf(deployment, 'escrow');
  const buyer = await demoWallet(deployment);
  const seller = await generateWallet();
  await fundWallet({ deployment, address: seller.address, usd: '1' });

  const payments = { maxPerCallUsd: '3', maxTotalUsd: '5' };
  const as = (wallet: Signer) => createClient({ deployment, wallet, payments }).escrow;
  const vault = escrowService.wallet!;
  const usd = async (owner: string) => (await fetchBalances({ deployment, address: owner })).usd;
  const balances = async () => ({
    buyer: await usd(buyer.address),
    seller: await usd(seller.address),
    vault: await usd(vault),
  });
  const before = await balances();
  console.log(`Buyer  ${buyer.address}: ${before.buyer} USD (the demo agent)`);
  console.log(`Seller ${seller.address}: ${before.seller} USD (new, funded by the faucet)`);
  console.log(`Vault  ${vault}: ${before.vault} USD (the escrow service's wallet)\n`);

  const created = await as(buyer).create.withResponse({
    body: {
      seller: seller.address,
      title: 'RAG pipeline module',
      terms: 'Markdown module covering chunking, embedding and retrieval, with runnable TypeScript examples.',
      amount: '2500000',
      milestones: [
        { title: 'Chunking and embedding', amount: '1000000' },
        { title: 'Retrieval and evaluation', amount: '1500000' },
      ],
    },
  });
  const escrow = created.data;
  console.log(
    `1. Created ${escrow.id}: ${atomicToUsd(BigInt(escrow.amount))} USD + fee ${atomicToUsd(BigInt(escrow.fee))} USD paid into the vault`,
  );
  console.log(`   funding transaction ${created.payment!.transaction}`);

  const first = await as(seller).deliver({
    body: {
      escrowId: escrow.id,
      milestoneId: 'm1',
      content: {
        title: 'Chunking and embedding',
        format: 'markdown',
        body:
          '# Chunking and embedding\n\nSplit each document into chunks of 300 to 500 tokens with an overlap of 50 tokens, then embed ' +
          'every chunk with the same model you will use for questions.\n\n```ts\nconst chunks = split(text, { size: 400, overlap: 50 });\n' +
          'const vectors = await embed(chunks);\n```\n',
      },
    },
  });
  console.log(`2. The seller delivered m1; the buyer reviews it until ${first.reviewEndsAt}`);
  await as(seller).deliver({
    body: {
      escrowId: escrow.id,
      milestoneId: 'm2',
      content: { title: 'Retrieval', format: 'markdown', body: 'Coming soon.' },
    },
  });
  console.log('   The seller delivered m2 (two words)');

  const confirmed = await as(buyer).confirm({
    body: { escrowId: escrow.id, milestoneIds: ['m1'], rating: 5, comment: 'Clear and complete.' },
  });
  console.log(
    `3. The buyer confirmed m1: ${atomicToUsd(BigInt(confirmed.transfers[0]!.amount))} USD released to the seller`,
  );
  console.log(
    `   release transaction ${confirmed.transfers[0]!.signature}; reputation report ${confirmed.reputationReport.status}`,
  );

  const disputed = await as(buyer).dispute({
    body: {
      escrowId: escrow.id,
      milestoneIds: ['m2'],
      reason: 'not_as_described',
      statement: 'The retrieval chapter is two words long; the terms ask for a chapter.',
    },
  });
  console.log(
    `4. The buyer disputed m2: ${atomicToUsd(BigInt(disputed.dispute.frozenAmount))} USD frozen (investigation ${disputed.dispute.investigation.status})`,
  );
  await as(seller).dispute({
    body: { escrowId: escrow.id, reason: 'other', statement: 'I delivered the retrieval chapter on time.' },
  });
  console.log('   The seller answered the dispute');

  const resolved = await as(seller).resolve({ body: { escrowId: escrow.id } });
  const { decision } = resolved;
  console.log(
    `5. The mediator (${decision.generator.engine}) decided ${decision.outcome}: ${decision.sellerPercent}% to the seller`,
  );
  console.log(`   ${decision.rationale}`);
  for (const t of decision.transfers)
    console.log(`   ${t.purpose} ${atomicToUsd(BigInt(t.amount))} USD to ${t.to}: transaction ${t.signature}`);
  console.log(
    `   The escrow is ${resolved.escrow.state}: released ${atomicToUsd(BigInt(resolved.escrow.balances.released))} USD, refunded ${atomicToUsd(BigInt(resolved.escrow.balances.refunded))} USD\n`,
  );

  const after = await balances();
  console.log(`Buyer  ${after.buyer} USD (was ${before.buyer})`);
  console.log(`Seller ${after.seller} USD (was ${before.seller})`);
  console.log(`Vault  ${after.vault} USD (was ${before.vault})`);
}

main().catch((error) => {
  if (error instanceof ConnectionError) console.error('A service does not answer. Start the economy first: npm start');
  else console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
