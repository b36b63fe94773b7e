import { base58Encode } from '@agent-economy/contracts';
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
  type Blockhash,
  type Instruction,
  type Signature,
} from '@solana/kit';
import { signEd25519, type Wallet } from './keys';

export type SolanaRpc = ReturnType<typeof createSolanaRpc>;

/** A transaction that did not land, with the chain's reason. */
export class TransactionFailed extends Error {
  constructor(
    readonly signature: string,
    readonly reason: string,
  ) {
    super(`transaction ${signature} failed: ${reason}`);
    this.name = 'TransactionFailed';
  }
}

/**
 * Signs a v0 transaction of `instructions` with every wallet in `signers` (the first pays the fees), sends it and
 * waits until it is confirmed. Signer accounts inside the instructions are no-op signers of these wallets' addresses:
 * the message is compiled once and each wallet signs its bytes, so no private key leaves this process's memory.
 */
export async function sendInstructions(
  rpc: SolanaRpc,
  signers: readonly Wallet[],
  instructions: readonly Instruction[],
  options: { timeoutMs?: number; pollMs?: number } = {},
): Promise<string> {
  const [feePayer] = signers;
  if (!feePayer) throw new Error('sendInstructions needs at least the fee payer');
  const { value: lifetime } = await rpc.getLatestBlockhash({ commitment: 'confirmed' }).send();
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(address(feePayer.address), m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: lifetime.blockhash as Blockhash, lastValidBlockHeight: lifetime.lastValidBlockHeight },
        m,
      ),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const compiled = compileTransaction(message);
  const signatures = { ...compiled.signatures };
  for (const wallet of signers) {
    if (!(wallet.address in signatures)) throw new Error(`${wallet.address} is not a signer of this transaction`);
    signatures[wallet.address as keyof typeof signatures] = signEd25519(
      wallet,
      new Uint8Array(compiled.messageBytes),
    ) as never;
  }
  const signed = { ...compiled, signatures } as typeof compiled;
  const signature = base58Encode(signatures[feePayer.address as keyof typeof signatures] as unknown as Uint8Array);
  await rpc
    .sendTransaction(getBase64EncodedWireTransaction(signed), { encoding: 'base64', preflightCommitment: 'confirmed' })
    .send();
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  while (Date.now() < deadline) {
    const { value } = await rpc.getSignatureStatuses([signature as Signature]).send();
    const status = value[0];
    if (status?.err)
      throw new TransactionFailed(
        signature,
        JSON.stringify(status.err, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v)),
      );
    if (status && (status.confirmationStatus === 'confirmed' || status.confirmationStatus === 'finalized'))
      return signature;
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 200));
  }
  throw new Error(`transaction ${signature} was not confirmed in time`);
}
