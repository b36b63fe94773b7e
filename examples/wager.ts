// Two chat users wager 2 USD on a coin flip through the chat wager service. The demo agent wallet that `npm start`
// funds challenges a second wallet (kept in the data directory, funded through the local ledger's faucet); each
// transfers its stake to the service's vault and names the transfer; the entropy service flips the coin, and the
// winner is paid the pot less the house cut from the vault. Prints the entropy proof, the winner, the payout
// transaction
// and the balances. Run `npm start` in another terminal, then `npm run example:wager`.
import { existsSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import {
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  createSolanaRpc,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  createNoopSigner,
  type Signature,
  type SignatureBytes,
} from '@solana/kit';
import { TOKEN_PROGRAM_ADDRESS, findAssociatedTokenPda, getTransferCheckedInstruction } from '@solana-program/token';
import {
  ApiError,
  ConnectionError,
  atomicToUsd,
  createClient,
  fundWallet,
  generateWallet,
  usdToAtomic,
  walletFromFile,
  walletToFile,
  type Signer,
} from '@agent-economy/sdk';
import { dataDir, localDeployment, requireFaucet, serviceOf } from './deployment';

const STAKE_USD = '2';

/** A second wallet for the opponent, generated once into the data directory (solana-keygen's JSON format, 0600). */
async function opponentKeyFile(): Promise<string> {
  const file = join(dataDir, 'keys', 'wager-opponent.json');
  if (!existsSync(file)) await walletToFile(await generateWallet(), file);
  return file;
}

async function main() {
  const deployment = await localDeployment();
  const { chain } = deployment;
  const wagers = serviceOf(deployment, 'wagers');
  requireFaucet(deployment);
  const rpc = createSolanaRpc(chain.rpcUrl);
  const mint = address(chain.stablecoin);

  const alice = await walletFromFile(deployment.demoWallet?.keyFile ?? join(dataDir, 'keys', 'demo-agent.json'));
  const bob = await walletFromFile(await opponentKeyFile());
  const usdOf = async (owner: string) => {
    const [ata] = await findAssociatedTokenPda({ owner: address(owner), mint, tokenProgram: TOKEN_PROGRAM_ADDRESS });
    const { value } = await rpc.getAccountInfo(ata, { encoding: 'jsonParsed', commitment: 'confirmed' }).send();
    const parsed = (value?.data as { parsed?: { info?: { tokenAmount?: { amount?: string } } } } | undefined)?.parsed;
    return BigInt(parsed?.info?.tokenAmount?.amount ?? '0');
  };
  // Each player pays the network fee of their own stake transfer; the faucet tops both up on the local ledger.
  for (const player of [alice, bob]) {
    const { value: lamports } = await rpc.getBalance(address(player.address), { commitment: 'confirmed' }).send();
    const needsUsd = (await usdOf(player.address)) < usdToAtomic(STAKE_USD);
    if (lamports < 10_000_000n || needsUsd)
      await fundWallet({
        deployment,
        address: player.address,
        ...(lamports < 10_000_000n ? { sol: '0.1' } : {}),
        ...(needsUsd ? { usd: '10' } : {}),
      });
  }

  const clientOf = (wallet: Signer) => createClient({ deployment, wallet, payments: false });
  const a = clientOf(alice);
  const b = clientOf(bob);
  const health = await a.wagers.health();
  const vault = health.vaultAddress;
  console.log(
    `Wager service ${wagers.url}: vault ${vault}, house cut ${health.limits.houseCutPercent} %, stakes ${health.limits.minWagerUsd} to ${health.limits.maxWagerUsd} USD\n`,
  );

  /** Transfers the stake from the player's wallet to the vault (TransferChecked, signed and paid by the player). */
  async function stake(player: Signer, usd: string): Promise<string> {
    const [[source], [destination]] = await Promise.all([
      findAssociatedTokenPda({ owner: address(player.address), mint, tokenProgram: TOKEN_PROGRAM_ADDRESS }),
      findAssociatedTokenPda({ owner: address(vault), mint, tokenProgram: TOKEN_PROGRAM_ADDRESS }),
    ]);
    const { value: lifetime } = await rpc.getLatestBlockhash({ commitment: 'confirmed' }).send();
    const me = createNoopSigner(address(player.address));
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayer(me.address, m),
      (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
      (m) =>
        appendTransactionMessageInstructions(
          [
            getTransferCheckedInstruction({
              source,
              mint,
              destination,
              authority: me,
              amount: usdToAtomic(usd),
              decimals: 6,
            }),
          ],
          m,
        ),
    );
    const compiled = compileTransaction(message);
    const signature = (await player.signMessage(new Uint8Array(compiled.messageBytes))) as SignatureBytes;
    const wire = getBase64EncodedWireTransaction({
      ...compiled,
      signatures: { ...compiled.signatures, [me.address]: signature },
    });
    const sent = await rpc.sendTransaction(wire, { encoding: 'base64', preflightCommitment: 'confirmed' }).send();
    for (let i = 0; i < 120; i++) {
      const { value } = await rpc.getSignatureStatuses([sent as Signature]).send();
      if (value[0]?.err) throw new Error(`the stake transfer ${sent} failed on chain`);
      if (value[0]?.confirmationStatus === 'confirmed' || value[0]?.confirmationStatus === 'finalized') return sent;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    throw new Error(`the stake transfer ${sent} was not confirmed in time`);
  }

  const before = { alice: await usdOf(alice.address), bob: await usdOf(bob.address), vault: await usdOf(vault) };
  console.log(`alice_demo ${alice.address}: ${atomicToUsd(before.alice)} USD`);
  console.log(`bob_second ${bob.address}: ${atomicToUsd(before.bob)} USD\n`);

  await a.wagers.connect({ body: { address: alice.address, username: 'alice_demo' } });
  await b.wagers.connect({ body: { address: bob.address, username: 'bob_second' } });

  // A challenge left over from an earlier run between these two is declined (its stake refunded) before starting anew.
  for (const old of (await b.wagers.challenges()).incoming.filter((c) => c.challenger.address === alice.address)) {
    await b.wagers.decline({ body: { challengeId: old.challengeId } });
  }

  const challenge = await a.wagers.challenge({
    body: {
      opponent: 'bob_second',
      amountUsd: STAKE_USD,
      stakeTxSignature: await stake(alice, STAKE_USD),
      message: 'Coin flip for 2 USD?',
    },
  });
  console.log(
    `alice_demo challenges bob_second: ${challenge.challengeId}, ${challenge.amountUsd} USD each, seed commitment ${challenge.seedHash}`,
  );
  const incoming = (await b.wagers.challenges()).incoming.find((c) => c.challengeId === challenge.challengeId)!;
  console.log(`bob_second sees "${incoming.message}" and accepts.\n`);

  let wager = await b.wagers.accept({
    body: { challengeId: challenge.challengeId, stakeTxSignature: await stake(bob, STAKE_USD) },
  });
  for (let i = 0; wager.status !== 'settled' && i < 20; i++) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    wager = await a.wagers.get({ params: { wagerId: wager.wagerId } });
  }
  if (wager.status !== 'settled' || !wager.flip)
    throw new Error(`wager ${wager.wagerId} is still ${wager.status}: the service finishes it later`);

  const { flip } = wager;
  console.log(
    `Entropy proof ${flip.proof.proofId} (${flip.proof.version}), slot ${flip.proof.slot} of ${flip.proof.network}`,
  );
  console.log(`  clientSeed ${flip.clientSeed} = SHA-256(seed:challengeId:stakes)`);
  const stakeOf = (wallet: string) => wager.transfers.find((t) => t.kind === 'stake' && t.from === wallet)!.txSignature;
  const check = createHash('sha256')
    .update(
      `${wager.seed}:${wager.challengeId}:${stakeOf(wager.challenger.address)}:${stakeOf(wager.opponent.address)}`,
    )
    .digest('hex');
  console.log(
    `  revealed seed ${wager.seed} (hash matches the commitment: ${createHash('sha256').update(Buffer.from(wager.seed!, 'hex')).digest('hex') === wager.seedHash}; clientSeed recomputed: ${check === flip.clientSeed})`,
  );
  console.log(
    `  stream seed ${flip.proof.seedHex.slice(0, 32)}…, first word ${flip.derivation.rawWords[0]} → ${flip.outcome} (fee ${flip.feeUsd} USD from the house cut)`,
  );
  const winnerName = wager.winner === 'challenger' ? wager.challenger.username : wager.opponent.username;
  console.log(
    `\nWinner: ${winnerName} (${wager.winner}), paid ${wager.payoutUsd} USD of the ${wager.potUsd} USD pot; the house keeps ${wager.houseCutUsd} USD`,
  );
  const payout = wager.transfers.find((t) => t.kind === 'payout')!;
  console.log(`Payout transaction ${payout.txSignature}\n`);

  const after = { alice: await usdOf(alice.address), bob: await usdOf(bob.address), vault: await usdOf(vault) };
  console.log(`alice_demo ${atomicToUsd(after.alice)} USD (was ${atomicToUsd(before.alice)})`);
  console.log(`bob_second ${atomicToUsd(after.bob)} USD (was ${atomicToUsd(before.bob)})`);
  console.log(`vault      ${atomicToUsd(after.vault)} USD (was ${atomicToUsd(before.vault)})`);
}

main().catch((error) => {
  if (error instanceof ConnectionError) console.error('A service does not answer. Start the economy first: npm start');
  else if (error instanceof ApiError)
    console.error(`${error.message}${error.details ? ` ${JSON.stringify(error.details)}` : ''}`);
  else console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
