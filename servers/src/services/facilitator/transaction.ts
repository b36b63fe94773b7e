import { base58Decode, base58Encode } from '@agent-economy/contracts';
import {
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  createTransactionMessage,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Blockhash,
  type Instruction,
} from '@solana/kit';
import {
  WireError,
  decodeBase64,
  encodeTransaction,
  parseMessage,
  parseTransaction,
  sanitizeTransaction,
  toBase64,
} from '../../solana/wire';
import { messageKey } from '../../runtime/paywall';
import { signEd25519, verifyEd25519, type Wallet } from '../../solana/keys';

// A payment transaction as the facilitator reads it, for both the x402 `exact` rules and the charge
// policy: decoded with the ledger's wire reader (the one parser of Solana bytes in this repository).

export interface ReadInstruction {
  program: string;
  /** The instruction's accounts by address ('' for an index into an address lookup table). */
  accounts: string[];
  data: Uint8Array;
}

export interface ReadTransaction {
  /** The transaction's bytes exactly (trailing bytes dropped). */
  wire: Uint8Array;
  messageBytes: Uint8Array;
  /** SHA-256 of the message bytes: one payment, however its unsigned fee-payer slot is filled. */
  key: string;
  version: 'legacy' | 0;
  /** Static account keys; [0] is the fee payer, the first numRequiredSignatures are the signers. */
  accounts: string[];
  numRequiredSignatures: number;
  signatures: Uint8Array[];
  blockhash: string;
  /** Number of address lookup tables the message loads accounts from. */
  lookups: number;
  instructions: ReadInstruction[];
}

/** Decodes a base64 wire transaction, or throws WireError saying why it is not one. */
export function readTransaction(base64: string): ReadTransaction {
  const parsed = parseTransaction(decodeBase64(base64));
  const malformed = sanitizeTransaction(parsed);
  if (malformed) throw new WireError(`invalid transaction: ${malformed}`);
  const { message } = parsed;
  const accounts = message.staticKeys;
  return {
    wire: parsed.bytes,
    messageBytes: message.bytes,
    key: messageKey(message.bytes),
    version: message.version,
    accounts,
    numRequiredSignatures: message.numRequiredSignatures,
    signatures: parsed.signatures,
    blockhash: message.recentBlockhash,
    lookups: message.lookups.length,
    instructions: message.instructions.map((ix) => ({
      program: accounts[ix.programIdIndex]!,
      accounts: ix.accounts.map((i) => accounts[i] ?? ''),
      data: ix.data,
    })),
  };
}

/** Whether signer `index` signed the message (an all-zero slot is an empty one, never valid). */
export function hasValidSignature(tx: ReadTransaction, index: number): boolean {
  const key = base58Decode(tx.accounts[index] ?? '');
  const signature = tx.signatures[index];
  return !!key && !!signature && signature.some((b) => b !== 0) && verifyEd25519(key, tx.messageBytes, signature);
}

/** The transaction with the fee payer's signature in slot 0; that signature is also its id. */
export function coSign(tx: ReadTransaction, feePayer: Wallet): { wire: Uint8Array; signature: string } {
  const own = signEd25519(feePayer, tx.messageBytes);
  const signatures = tx.signatures.map((s, i) => (i === 0 ? own : s));
  return { wire: encodeTransaction(signatures, tx.messageBytes), signature: base58Encode(own) };
}

/**
 * A v0 transaction the facilitator builds itself (onboarding, session settlement), signed by `signers`
 * and with every other signature slot empty (the fee payer's is filled by coSign when it is sent).
 */
export function buildTransaction(
  feePayer: string,
  lifetime: { blockhash: string; lastValidBlockHeight: bigint },
  instructions: Instruction[],
  signers: Wallet[] = [],
): ReadTransaction {
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(address(feePayer), m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: lifetime.blockhash as Blockhash, lastValidBlockHeight: lifetime.lastValidBlockHeight },
        m,
      ),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const messageBytes = new Uint8Array(compileTransaction(message).messageBytes);
  const parsed = parseMessage(messageBytes);
  const signatures = parsed.staticKeys.slice(0, parsed.numRequiredSignatures).map((key) => {
    const signer = signers.find((w) => w.address === key);
    return signer ? signEd25519(signer, messageBytes) : new Uint8Array(64);
  });
  return readTransaction(toBase64(encodeTransaction(signatures, messageBytes)));
}
