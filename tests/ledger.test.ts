import { execFile } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  SOLANA_ERROR__INSTRUCTION_ERROR__CUSTOM,
  SOLANA_ERROR__JSON_RPC__INVALID_PARAMS,
  SOLANA_ERROR__JSON_RPC__METHOD_NOT_FOUND,
  SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE,
  SOLANA_ERROR__JSON_RPC__SERVER_ERROR_TRANSACTION_SIGNATURE_VERIFICATION_FAILURE,
  SOLANA_ERROR__JSON_RPC__SERVER_ERROR_UNSUPPORTED_TRANSACTION_VERSION,
  SOLANA_ERROR__TRANSACTION_ERROR__ALREADY_PROCESSED,
  SOLANA_ERROR__TRANSACTION_ERROR__BLOCKHASH_NOT_FOUND,
  address,
  appendTransactionMessageInstructions,
  createKeyPairSignerFromBytes,
  createNoopSigner,
  createSolanaRpc,
  createTransactionMessage,
  devnet,
  getAddressDecoder,
  getBase64EncodedWireTransaction,
  getBase64Encoder,
  getSignatureFromTransaction,
  getTransactionDecoder,
  isSolanaError,
  partiallySignTransactionMessageWithSigners,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  setTransactionMessageLifetimeUsingDurableNonce,
  signTransactionMessageWithSigners,
  type Address,
  type Base64EncodedWireTransaction,
  type Blockhash,
  type Instruction,
  type KeyPairSigner,
  type Nonce,
  type Signature,
  type TransactionMessageBytesBase64,
} from '@solana/kit';
import {
  SYSTEM_PROGRAM_ADDRESS,
  getCreateAccountInstruction,
  getInitializeNonceAccountInstruction,
  getTransferSolInstruction,
} from '@solana-program/system';
import {
  TOKEN_PROGRAM_ADDRESS,
  fetchMint,
  findAssociatedTokenPda,
  getCreateAssociatedTokenIdempotentInstruction,
  getTokenDecoder,
  getTransferCheckedInstruction,
} from '@solana-program/token';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOLANA_DEVNET, USDC_DEVNET } from '@agent-economy/contracts';
import {
  DEVNET_GENESIS_HASH,
  LocalLedger,
  parseJson,
  startLedgerRpc,
  type LedgerRpcServer,
} from '../servers/src/ledger';
import { generateWallet, type Wallet } from '../servers/src/solana/keys';
import { handleRpcBody, handleRpcValue } from '../servers/src/ledger/rpc';
import { asKitRead, asRead } from '../servers/src/solana/local-rpc';
import { parseJsonWithBigInts, stringifyJsonWithBigInts } from '@solana/rpc-spec-types';

// The local ledger over its real JSON-RPC, driven with @solana/kit as any client would. Slots are an
// hour long here so that the clock never moves on its own during a test: time passes only by warp.

const HOUR_SLOTS = 3_600_000;
const MINT = address(USDC_DEVNET);
const root = fileURLToPath(new URL('..', import.meta.url));

// devnet(): the ledger poses as devnet, and kit types requestAirdrop only for test clusters
const connect = (url: string) => createSolanaRpc(devnet(url));
type Rpc = ReturnType<typeof connect>;

async function signer(wallet: Wallet = generateWallet()): Promise<KeyPairSigner> {
  return createKeyPairSignerFromBytes(wallet.secretKey);
}

async function ata(owner: Address): Promise<Address> {
  return (await findAssociatedTokenPda({ owner, mint: MINT, tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];
}

/** A signed transaction paid by `payer`, wire-encoded as base64. */
async function signed(
  rpc: Rpc,
  payer: KeyPairSigner,
  instructions: Instruction[],
  blockhash?: { blockhash: Blockhash; lastValidBlockHeight: bigint },
) {
  const lifetime = blockhash ?? (await rpc.getLatestBlockhash({ commitment: 'confirmed' }).send()).value;
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const tx = await signTransactionMessageWithSigners(message);
  return { wire: getBase64EncodedWireTransaction(tx), signature: getSignatureFromTransaction(tx) as string };
}

async function transferChecked(
  rpc: Rpc,
  from: KeyPairSigner,
  to: Address,
  amount: bigint,
  blockhash?: { blockhash: Blockhash; lastValidBlockHeight: bigint },
) {
  const instruction = getTransferCheckedInstruction({
    source: await ata(from.address),
    mint: MINT,
    destination: await ata(to),
    authority: from,
    amount,
    decimals: 6,
  });
  return signed(rpc, from, [instruction], blockhash);
}

async function rawCall(url: string, body: unknown): Promise<any> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return parseJson(await response.text());
}

async function caught(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

const call = (method: string, params?: unknown[]) => ({ jsonrpc: '2.0', id: 7, method, ...(params ? { params } : {}) });

let ledger: LocalLedger;
let server: LedgerRpcServer;
let rpc: Rpc;

beforeAll(async () => {
  ledger = await LocalLedger.open({ mintAuthority: generateWallet(), slotMs: HOUR_SLOTS });
  server = await startLedgerRpc(ledger, { port: 0 });
  rpc = connect(server.url);
});

afterAll(async () => {
  await server?.close();
  await ledger?.close();
});

describe('clock and blockhashes', () => {
  it('hands out the current slot blockhash, valid for exactly 150 slots', async () => {
    const { context, value } = await rpc.getLatestBlockhash({ commitment: 'confirmed' }).send();
    expect(context.slot).toBe(ledger.slot());
    expect(value.blockhash).toBe(ledger.blockhashOf(context.slot));
    expect(value.lastValidBlockHeight).toBe(context.slot + 150n);
    expect(await rpc.getBlockHeight({ commitment: 'confirmed' }).send()).toBe(context.slot);

    ledger.warp(150);
    expect((await rpc.isBlockhashValid(value.blockhash, { commitment: 'confirmed' }).send()).value).toBe(true);
    ledger.warp(1);
    expect((await rpc.isBlockhashValid(value.blockhash, { commitment: 'confirmed' }).send()).value).toBe(false);
    expect(
      (await rpc.isBlockhashValid('11111111111111111111111111111111' as Blockhash, { commitment: 'confirmed' }).send())
        .value,
    ).toBe(false);
  });

  it('answers finalized reads 32 slots behind the tip', async () => {
    const tip = ledger.slot();
    const { context, value } = await rpc.getLatestBlockhash({ commitment: 'finalized' }).send();
    expect(context.slot).toBe(tip - 32n);
    expect(value.blockhash).toBe(ledger.blockhashOf(tip - 32n));
    expect(value.lastValidBlockHeight).toBe(tip - 32n + 150n);
    expect(await rpc.getSlot({ commitment: 'finalized' }).send()).toBe(tip - 32n);
    expect(await rpc.getSlot({ commitment: 'processed' }).send()).toBe(tip);
  });

  it('refuses a transfer signed with an expired blockhash as a node does (BlockhashNotFound)', async () => {
    const alice = await signer();
    await ledger.airdrop(alice.address, 1_000_000_000n);
    const bob = generateWallet().address as Address;
    const old = (await rpc.getLatestBlockhash({ commitment: 'confirmed' }).send()).value;
    const transfer = await signed(
      rpc,
      alice,
      [getTransferSolInstruction({ source: alice, destination: bob, amount: 1_000_000n })],
      old,
    );
    ledger.warp(151);

    const error = await caught(
      rpc.sendTransaction(transfer.wire as Base64EncodedWireTransaction, { encoding: 'base64' }).send(),
    );
    expect(isSolanaError(error, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE)).toBe(true);
    expect(isSolanaError(error.cause, SOLANA_ERROR__TRANSACTION_ERROR__BLOCKHASH_NOT_FOUND)).toBe(true);

    // skipping preflight, the node takes it and the leader drops it: it never lands
    const signature = await rpc
      .sendTransaction(transfer.wire as Base64EncodedWireTransaction, { encoding: 'base64', skipPreflight: true })
      .send();
    expect(signature).toBe(transfer.signature);
    expect((await rpc.getSignatureStatuses([signature], { searchTransactionHistory: true }).send()).value).toEqual([
      null,
    ]);
    expect(ledger.droppedTransactionError(signature)).toBe('BlockhashNotFound');
    expect(ledger.lamports(bob)).toBe(0n);
  });
});

describe('airdrops and stablecoins', () => {
  it('airdrops SOL with requestAirdrop and reports the balance', async () => {
    const who = generateWallet().address as Address;
    const signature = await rpc.requestAirdrop(who, 2_500_000_000n as never).send();
    const [status] = (await rpc.getSignatureStatuses([signature]).send()).value;
    expect(status).toMatchObject({ err: null, confirmationStatus: 'confirmed', confirmations: 0n });
    expect((await rpc.getBalance(who).send()).value).toBe(2_500_000_000n);
    expect(ledger.lamports(who)).toBe(2_500_000_000n);
  });

  it('mints stablecoins into the owner token account and lists it by owner', async () => {
    const owner = generateWallet().address as Address;
    expect(ledger.tokenBalance(owner)).toBe(0n);
    await ledger.mintTo(owner, 5_000_000n);
    await ledger.mintTo(owner, 250_000n);
    expect(ledger.tokenBalance(owner)).toBe(5_250_000n);
    const account = await ata(owner);

    const balance = (await rpc.getTokenAccountBalance(account).send()).value;
    expect(balance).toEqual({ amount: '5250000', decimals: 6, uiAmount: 5.25, uiAmountString: '5.25' });

    const parsed = (await rpc.getTokenAccountsByOwner(owner, { mint: MINT }, { encoding: 'jsonParsed' }).send()).value;
    expect(parsed.map((a) => a.pubkey)).toEqual([account]);
    expect(parsed[0]!.account.data.parsed.info).toMatchObject({
      mint: MINT,
      owner,
      state: 'initialized',
      tokenAmount: { amount: '5250000', uiAmountString: '5.25' },
    });
    expect(parsed[0]!.account.owner).toBe(TOKEN_PROGRAM_ADDRESS);

    const raw = (
      await rpc.getTokenAccountsByOwner(owner, { programId: TOKEN_PROGRAM_ADDRESS }, { encoding: 'base64' }).send()
    ).value;
    const decoded = getTokenDecoder().decode(getBase64Encoder().encode(raw[0]!.account.data[0]));
    expect(decoded).toMatchObject({ mint: MINT, owner, amount: 5_250_000n });

    const mint = await fetchMint(rpc, MINT);
    expect(mint.data.decimals).toBe(6);
    expect((await rpc.getTokenSupply(MINT).send()).value).toMatchObject({
      amount: String(mint.data.supply),
      decimals: 6,
    });
    expect(mint.data.supply).toBeGreaterThanOrEqual(5_250_000n);
    const largest = (await rpc.getTokenLargestAccounts(MINT).send()).value;
    expect(largest.find((a) => a.address === account)?.amount).toBe('5250000');
  });

  it('writes u64 values as exact JSON integers', async () => {
    const text = await (
      await fetch(server.url, {
        method: 'POST',
        body: JSON.stringify(call('getAccountInfo', [USDC_DEVNET, { encoding: 'base64' }])),
      })
    ).text();
    expect(text).toContain('"rentEpoch":18446744073709551615');
    const info = (await rpc.getAccountInfo(MINT, { encoding: 'base64' }).send()).value!;
    expect((info as unknown as { rentEpoch: bigint }).rentEpoch).toBe(18_446_744_073_709_551_615n);
    expect(info.space).toBe(82n);
  });
});

describe('a TransferChecked between two wallets', () => {
  let alice: KeyPairSigner;
  let bob: Address;
  let transfer: { wire: string; signature: string };
  let slot: bigint;

  beforeAll(async () => {
    alice = await signer();
    bob = generateWallet().address as Address;
    await ledger.airdrop(alice.address, 1_000_000_000n);
    await ledger.mintTo(alice.address, 5_000_000n);
    await ledger.openTokenAccount(bob);
    transfer = await transferChecked(rpc, alice, bob, 2_000_000n);
    slot = ledger.slot();
  });

  it('is sent with sendTransaction and moves the tokens, charging one signature fee', async () => {
    const before = ledger.lamports(alice.address);
    const signature = await rpc
      .sendTransaction(transfer.wire as Base64EncodedWireTransaction, {
        encoding: 'base64',
        preflightCommitment: 'confirmed',
      })
      .send();
    expect(signature).toBe(transfer.signature);
    expect(ledger.tokenBalance(alice.address)).toBe(3_000_000n);
    expect(ledger.tokenBalance(bob)).toBe(2_000_000n);
    expect(ledger.lamports(alice.address)).toBe(before - 5000n);
  });

  it('is found by getSignatureStatuses, getTransaction and getSignaturesForAddress', async () => {
    const signature = transfer.signature as Signature;
    const [status] = (await rpc.getSignatureStatuses([signature]).send()).value;
    expect(status).toEqual({
      slot,
      confirmations: 0n,
      err: null,
      status: { Ok: null },
      confirmationStatus: 'confirmed',
    });

    const tx = (await rpc
      .getTransaction(signature, { encoding: 'json', maxSupportedTransactionVersion: 0, commitment: 'confirmed' })
      .send())!;
    expect(tx.slot).toBe(slot);
    expect(tx.version).toBe(0);
    expect(tx.meta!.err).toBeNull();
    expect(tx.meta!.fee).toBe(5000n);
    expect(tx.transaction.signatures).toEqual([signature]);
    expect(tx.transaction.message.accountKeys[0]).toBe(alice.address);
    expect(tx.meta!.logMessages).toContain(`Program ${TOKEN_PROGRAM_ADDRESS} success`);
    const tokenAmounts = (list: readonly { accountIndex: number; uiTokenAmount: { amount: string } }[]) =>
      Object.fromEntries(list.map((b) => [tx.transaction.message.accountKeys[b.accountIndex], b.uiTokenAmount.amount]));
    expect(tokenAmounts(tx.meta!.preTokenBalances!)).toEqual({
      [await ata(alice.address)]: '5000000',
      [await ata(bob)]: '0',
    });
    expect(tokenAmounts(tx.meta!.postTokenBalances!)).toEqual({
      [await ata(alice.address)]: '3000000',
      [await ata(bob)]: '2000000',
    });

    const parsed = (await rpc
      .getTransaction(signature, { encoding: 'jsonParsed', maxSupportedTransactionVersion: 0, commitment: 'confirmed' })
      .send())!;
    const instruction = parsed.transaction.message.instructions[0] as {
      parsed: { type: string; info: { tokenAmount: { amount: string } } };
    };
    expect(instruction.parsed.type).toBe('transferChecked');
    expect(instruction.parsed.info.tokenAmount.amount).toBe('2000000');

    const base64 = (await rpc
      .getTransaction(signature, { encoding: 'base64', maxSupportedTransactionVersion: 0, commitment: 'confirmed' })
      .send())!;
    expect(base64.transaction[0]).toBe(transfer.wire);
    expect(
      Object.keys(getTransactionDecoder().decode(getBase64Encoder().encode(base64.transaction[0])).signatures)[0],
    ).toBe(alice.address);

    const history = await rpc.getSignaturesForAddress(alice.address, { commitment: 'confirmed' }).send();
    expect(history[0]).toMatchObject({ signature, slot, err: null, confirmationStatus: 'confirmed', memo: null });
    expect(history.map((h) => h.signature)).toHaveLength(3); // the airdrop, the minting, the transfer
    const older = await rpc
      .getSignaturesForAddress(alice.address, { commitment: 'confirmed', before: signature, limit: 1 })
      .send();
    expect(older.map((h) => h.signature)).toEqual([history[1]!.signature]);
    const newer = await rpc
      .getSignaturesForAddress(alice.address, { commitment: 'confirmed', until: history[1]!.signature })
      .send();
    expect(newer.map((h) => h.signature)).toEqual([signature]);

    const block = await rpc
      .getBlock(slot, {
        commitment: 'confirmed',
        maxSupportedTransactionVersion: 0,
        transactionDetails: 'signatures',
        rewards: false,
      })
      .send();
    expect(block!.signatures).toContain(signature);
    expect(block!.blockhash).toBe(ledger.blockhashOf(slot));
    expect(await rpc.getBlockTime(slot).send()).toBe(BigInt(ledger.blockTime(slot)));
  });

  it('becomes finalized 32 slots later', async () => {
    const signature = transfer.signature as Signature;
    expect(
      await rpc
        .getTransaction(signature, { encoding: 'json', maxSupportedTransactionVersion: 0, commitment: 'finalized' })
        .send(),
    ).toBeNull();
    // an address's history holds the transactions listing it: the transfer lists Bob's token account, not Bob
    const bobAta = await ata(bob);
    expect(
      (await rpc.getSignaturesForAddress(bobAta, { commitment: 'finalized' }).send()).map((h) => h.signature),
    ).not.toContain(signature);
    ledger.warp(32);
    const [status] = (await rpc.getSignatureStatuses([signature]).send()).value;
    expect(status).toMatchObject({ confirmations: null, confirmationStatus: 'finalized' });
    expect(
      (await rpc
        .getTransaction(signature, { encoding: 'json', maxSupportedTransactionVersion: 0, commitment: 'finalized' })
        .send())!.slot,
    ).toBe(slot);
    expect((await rpc.getSignaturesForAddress(bobAta, { commitment: 'finalized' }).send())[0]).toMatchObject({
      signature,
      confirmationStatus: 'finalized',
    });
  });

  it('refuses a v0 transaction to a client that does not ask for them', async () => {
    const error = await caught(
      rpc.getTransaction(transfer.signature as Signature, { encoding: 'json', commitment: 'confirmed' }).send(),
    );
    expect(isSolanaError(error, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_UNSUPPORTED_TRANSACTION_VERSION)).toBe(true);
  });
});

describe('transactions that must not land twice or at all', () => {
  let alice: KeyPairSigner;
  let bob: Address;

  beforeAll(async () => {
    alice = await signer();
    bob = generateWallet().address as Address;
    await ledger.airdrop(alice.address, 1_000_000_000n);
    await ledger.mintTo(alice.address, 1_000_000n);
    await ledger.openTokenAccount(bob);
  });

  it('answers a replay with AlreadyProcessed and moves nothing', async () => {
    const transfer = await transferChecked(rpc, alice, bob, 400_000n);
    await rpc.sendTransaction(transfer.wire as Base64EncodedWireTransaction, { encoding: 'base64' }).send();
    const error = await caught(
      rpc.sendTransaction(transfer.wire as Base64EncodedWireTransaction, { encoding: 'base64' }).send(),
    );
    expect(isSolanaError(error, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE)).toBe(true);
    expect(isSolanaError(error.cause, SOLANA_ERROR__TRANSACTION_ERROR__ALREADY_PROCESSED)).toBe(true);
    expect(
      await rpc
        .sendTransaction(transfer.wire as Base64EncodedWireTransaction, { encoding: 'base64', skipPreflight: true })
        .send(),
    ).toBe(transfer.signature);
    expect(ledger.tokenBalance(bob)).toBe(400_000n);

    const raw = await rawCall(server.url, call('sendTransaction', [transfer.wire, { encoding: 'base64' }]));
    expect(raw.error.code).toBe(-32002);
    expect(raw.error.message).toBe('Transaction simulation failed: This transaction has already been processed');
    expect(raw.error.data).toMatchObject({
      err: 'AlreadyProcessed',
      logs: [],
      accounts: null,
      unitsConsumed: 0,
      returnData: null,
    });
  });

  it('rejects a bad signature: -32003 with preflight, never lands without', async () => {
    const transfer = await transferChecked(rpc, alice, bob, 100_000n);
    const bytes = Buffer.from(transfer.wire, 'base64');
    bytes[10] = bytes[10]! ^ 0xff;
    const forged = bytes.toString('base64') as Base64EncodedWireTransaction;
    const error = await caught(rpc.sendTransaction(forged, { encoding: 'base64' }).send());
    expect(isSolanaError(error, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_TRANSACTION_SIGNATURE_VERIFICATION_FAILURE)).toBe(
      true,
    );

    const signature = await rpc.sendTransaction(forged, { encoding: 'base64', skipPreflight: true }).send();
    expect((await rpc.getSignatureStatuses([signature], { searchTransactionHistory: true }).send()).value).toEqual([
      null,
    ]);
    expect(ledger.droppedTransactionError(signature)).toBe('SignatureFailure');
    expect(ledger.tokenBalance(bob)).toBe(400_000n);
  });

  it('fails an overdraft in preflight, and lands it with its error and fee when preflight is skipped', async () => {
    const transfer = await transferChecked(rpc, alice, bob, 50_000_000n);
    const error = await caught(
      rpc.sendTransaction(transfer.wire as Base64EncodedWireTransaction, { encoding: 'base64' }).send(),
    );
    expect(isSolanaError(error.cause, SOLANA_ERROR__INSTRUCTION_ERROR__CUSTOM)).toBe(true);
    const raw = await rawCall(server.url, call('sendTransaction', [transfer.wire, { encoding: 'base64' }]));
    expect(raw.error.message).toBe(
      'Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1',
    );
    expect(raw.error.data.err).toEqual({ InstructionError: [0, { Custom: 1 }] });
    expect(raw.error.data.logs).toContain('Program log: Error: insufficient funds');

    const lamports = ledger.lamports(alice.address);
    const signature = await rpc
      .sendTransaction(transfer.wire as Base64EncodedWireTransaction, { encoding: 'base64', skipPreflight: true })
      .send();
    const [status] = (await rpc.getSignatureStatuses([signature]).send()).value;
    // (kit upcasts every number in an error to bigint)
    expect(status!.err).toEqual({ InstructionError: [0n, { Custom: 1n }] });
    expect(status!.status).toEqual({ Err: { InstructionError: [0n, { Custom: 1n }] } });
    expect(ledger.lamports(alice.address)).toBe(lamports - 5000n);
    expect(ledger.tokenBalance(bob)).toBe(400_000n);
  });

  // The ledger runs a preflighted transaction once and puts back what a failure wrote: it must leave every account
  // as it was (no fee, no account created by an instruction before the one that failed) and the transaction unknown.
  it('leaves nothing behind of a transaction that fails its preflight', async () => {
    const created = generateWallet().address as Address;
    const lamports = ledger.lamports(alice.address);
    const tokens = [ledger.tokenBalance(alice.address), ledger.tokenBalance(bob)];
    const failing = await signed(rpc, alice, [
      getTransferSolInstruction({ source: alice, destination: created, amount: 2_000_000n }),
      getTransferCheckedInstruction({
        source: await ata(alice.address),
        mint: MINT,
        destination: await ata(bob),
        authority: alice,
        amount: 50_000_000n,
        decimals: 6,
      }),
    ]);
    const raw = await rawCall(server.url, call('sendTransaction', [failing.wire, { encoding: 'base64' }]));
    expect(raw.error.code).toBe(-32002);
    expect(raw.error.data.err).toEqual({ InstructionError: [1, { Custom: 1 }] });
    expect(ledger.lamports(alice.address)).toBe(lamports);
    expect(ledger.lamports(created)).toBe(0n);
    expect(ledger.getAccount(created)).toBeNull();
    expect([ledger.tokenBalance(alice.address), ledger.tokenBalance(bob)]).toEqual(tokens);
    const [status] = (await rpc.getSignatureStatuses([failing.signature as Signature]).send()).value;
    expect(status).toBeNull();
    // The same bytes fail again the same way (not "already processed"), and a payment that passes lands once.
    const again = await rawCall(server.url, call('sendTransaction', [failing.wire, { encoding: 'base64' }]));
    expect(again.error.data.err).toEqual({ InstructionError: [1, { Custom: 1 }] });
    const paying = await signed(rpc, alice, [
      getTransferSolInstruction({ source: alice, destination: created, amount: 2_000_000n }),
    ]);
    await rpc.sendTransaction(paying.wire as Base64EncodedWireTransaction, { encoding: 'base64' }).send();
    expect(ledger.lamports(created)).toBe(2_000_000n);
    expect(ledger.lamports(alice.address)).toBe(lamports - 2_000_000n - 5000n);
  });

  // A durable-nonce transaction that fails pays its fee when it lands, and on a cluster its nonce advances too (LiteSVM
  // today charges the fee alone): failing its preflight, it must do neither, and the same bytes fail the same way.
  it('leaves a durable nonce where it was when its transaction fails the preflight', async () => {
    const nonceAccount = await signer();
    const create = await signed(rpc, alice, [
      getCreateAccountInstruction({
        payer: alice,
        newAccount: nonceAccount,
        lamports: ledger.minimumBalanceForRentExemption(80),
        space: 80,
        programAddress: SYSTEM_PROGRAM_ADDRESS,
      }),
      getInitializeNonceAccountInstruction({ nonceAccount: nonceAccount.address, nonceAuthority: alice.address }),
    ]);
    await rpc.sendTransaction(create.wire as Base64EncodedWireTransaction, { encoding: 'base64' }).send();
    const [source, destination] = [await ata(alice.address), await ata(bob)];
    const nonceData = () => Buffer.from(ledger.getAccount(nonceAccount.address)!.data).toString('hex');
    const stored = nonceData();
    const nonce = getAddressDecoder().decode(ledger.getAccount(nonceAccount.address)!.data.subarray(40, 72));
    const lamports = ledger.lamports(alice.address);
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(alice, m),
      (m) =>
        setTransactionMessageLifetimeUsingDurableNonce(
          {
            nonce: nonce as string as Nonce,
            nonceAccountAddress: nonceAccount.address,
            nonceAuthorityAddress: alice.address,
          },
          m,
        ),
      (m) =>
        appendTransactionMessageInstructions(
          [
            getTransferCheckedInstruction({
              source,
              mint: MINT,
              destination,
              authority: alice,
              amount: 50_000_000n,
              decimals: 6,
            }),
          ],
          m,
        ),
    );
    const wire = getBase64EncodedWireTransaction(await signTransactionMessageWithSigners(message));
    for (let attempt = 0; attempt < 2; attempt++) {
      const raw = await rawCall(server.url, call('sendTransaction', [wire, { encoding: 'base64' }]));
      expect(raw.error.code).toBe(-32002);
      expect(raw.error.data.err).toEqual({ InstructionError: [1, { Custom: 1 }] });
      expect(nonceData()).toBe(stored);
      expect(ledger.lamports(alice.address)).toBe(lamports);
    }
  });
});

describe('simulateTransaction', () => {
  it('simulates a payment whose fee payer has not signed yet, as an x402 facilitator does', async () => {
    const payer = await signer();
    await ledger.mintTo(payer.address, 1_000_000n);
    const feePayer = generateWallet();
    await ledger.airdrop(feePayer.address, 1_000_000_000n);
    const merchant = generateWallet().address as Address;
    await ledger.openTokenAccount(merchant);
    const { value: latest } = await rpc.getLatestBlockhash({ commitment: 'confirmed' }).send();
    const ix = getTransferCheckedInstruction({
      source: await ata(payer.address),
      mint: MINT,
      destination: await ata(merchant),
      authority: payer,
      amount: 10_000n,
      decimals: 6,
    });
    const partial = await partiallySignTransactionMessageWithSigners(
      pipe(
        createTransactionMessage({ version: 0 }),
        (m) => setTransactionMessageFeePayer(address(feePayer.address), m),
        (m) => setTransactionMessageLifetimeUsingBlockhash(latest, m),
        (m) => appendTransactionMessageInstructions([ix], m),
      ),
    );
    const wire = getBase64EncodedWireTransaction(partial);
    const merchantAta = await ata(merchant);

    const { value } = await rpc
      .simulateTransaction(wire, {
        encoding: 'base64',
        sigVerify: false,
        commitment: 'confirmed',
        accounts: { addresses: [merchantAta], encoding: 'base64' },
      })
      .send();
    expect(value.err).toBeNull();
    expect(value.fee).toBe(10_000n);
    expect(value.unitsConsumed).toBeGreaterThan(0n);
    expect(getTokenDecoder().decode(getBase64Encoder().encode(value.accounts[0]!.data[0])).amount).toBe(10_000n);
    expect(ledger.tokenBalance(merchant)).toBe(0n); // nothing committed
    // Loaded size: each account's data and 64 bytes, and an upgradeable program's data account with it. The token
    // program's figure is remembered after the first simulation; the second must read the same.
    const sized = (a: string) => {
      const account = ledger.getAccount(a);
      return account ? account.data.length + 64 : 0;
    };
    const program = ledger.getAccount(TOKEN_PROGRAM_ADDRESS)!;
    const programData = getAddressDecoder().decode(program.data.subarray(4, 36));
    expect(sized(programData)).toBeGreaterThan(100_000);
    const loaded =
      [feePayer.address, payer.address, await ata(payer.address), merchantAta, MINT, TOKEN_PROGRAM_ADDRESS]
        .map(sized)
        .reduce((a, b) => a + b, 0) + sized(programData);
    expect(value.loadedAccountsDataSize).toBe(loaded);
    const again = (await rpc.simulateTransaction(wire, { encoding: 'base64', commitment: 'confirmed' }).send()).value;
    expect(again.loadedAccountsDataSize).toBe(loaded);

    const error = await caught(rpc.simulateTransaction(wire, { encoding: 'base64', sigVerify: true }).send());
    expect(isSolanaError(error, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_TRANSACTION_SIGNATURE_VERIFICATION_FAILURE)).toBe(
      true,
    );

    ledger.warp(200);
    const expired = (await rpc.simulateTransaction(wire, { encoding: 'base64' }).send()).value;
    expect(expired).toMatchObject({ err: 'BlockhashNotFound', logs: [], unitsConsumed: 0n, fee: null });
    const replaced = (await rpc.simulateTransaction(wire, { encoding: 'base64', replaceRecentBlockhash: true }).send())
      .value;
    expect(replaced.err).toBeNull();
    expect(replaced.replacementBlockhash).toEqual({
      blockhash: ledger.blockhashOf(ledger.slot()),
      lastValidBlockHeight: ledger.slot() + 150n,
    });
  });

  it('reports inner instructions parsed, as a node does', async () => {
    const payer = await signer();
    await ledger.airdrop(payer.address, 1_000_000_000n);
    const owner = generateWallet().address as Address;
    const create = getCreateAssociatedTokenIdempotentInstruction({ payer, ata: await ata(owner), owner, mint: MINT });
    const { wire } = await signed(rpc, payer, [create]);
    const { value } = await rpc
      .simulateTransaction(wire as Base64EncodedWireTransaction, { encoding: 'base64', innerInstructions: true })
      .send();
    expect(value.err).toBeNull();
    const types = value.innerInstructions![0]!.instructions.map((ix) =>
      'parsed' in ix ? (ix.parsed as { type: string }).type : 'unparsed',
    );
    expect(types).toContain('createAccount');
    expect(types).toContain('initializeAccount3');
  });
});

describe('the JSON-RPC surface', () => {
  it('identifies itself as devnet and answers the cluster methods with real values', async () => {
    expect(await rpc.getGenesisHash().send()).toBe(DEVNET_GENESIS_HASH);
    expect(SOLANA_DEVNET).toBe(`solana:${DEVNET_GENESIS_HASH.slice(0, 32)}`);
    expect(await rpc.getHealth().send()).toBe('ok');
    expect((await rpc.getVersion().send())['solana-core']).toMatch(/^\d+\.\d+\.\d+$/);
    const slot = ledger.slot();
    const identity = (await rpc.getIdentity().send()).identity;
    expect(await rpc.getSlotLeaders(slot, 3).send()).toEqual([identity, identity, identity]);
    expect(await rpc.getEpochInfo({ commitment: 'confirmed' }).send()).toMatchObject({
      absoluteSlot: slot,
      blockHeight: slot,
      epoch: slot / 432_000n,
      slotIndex: slot % 432_000n,
      slotsInEpoch: 432_000n,
    });
    expect(await rpc.getMinimumBalanceForRentExemption(165n).send()).toBe(2_039_280n);
    expect(await rpc.getFirstAvailableBlock().send()).toBe(ledger.firstSlot);

    const payer = await signer();
    const { value: latest } = await rpc.getLatestBlockhash({ commitment: 'confirmed' }).send();
    const tx = await partiallySignTransactionMessageWithSigners(
      pipe(
        createTransactionMessage({ version: 0 }),
        (m) => setTransactionMessageFeePayer(payer.address, m),
        (m) => setTransactionMessageLifetimeUsingBlockhash(latest, m),
        (m) =>
          appendTransactionMessageInstructions(
            [
              getTransferSolInstruction({
                source: createNoopSigner(payer.address),
                destination: payer.address,
                amount: 1n,
              }),
            ],
            m,
          ),
      ),
    );
    const message = Buffer.from(tx.messageBytes).toString('base64') as TransactionMessageBytesBase64;
    expect((await rpc.getFeeForMessage(message, { commitment: 'confirmed' }).send()).value).toBe(5000n);

    const fees = await rpc.getRecentPrioritizationFees().send();
    expect(fees).toHaveLength(150);
    expect(fees[149]!.slot).toBe(ledger.slot());
    const samples = await rpc.getRecentPerformanceSamples(1).send();
    expect(samples[0]).toMatchObject({ slot: ledger.slot(), numSlots: 150n, samplePeriodSecs: 60 });
  });

  it('answers bad input with the node error codes and messages, and survives it', async () => {
    const bad = async (body: unknown) => (await rawCall(server.url, body)).error;
    expect(await bad(call('getBalance', ['not-an-address']))).toMatchObject({
      code: -32602,
      message: expect.stringContaining('params[0]'),
    });
    expect(await bad(call('getBalance'))).toEqual({
      code: -32602,
      message: '`params` should have at least 1 argument(s)',
    });
    expect(await bad(call('getBalance', [USDC_DEVNET, { commitment: 'soon' }]))).toMatchObject({
      code: -32602,
      message: expect.stringContaining('params[1].commitment'),
    });
    expect(await bad(call('getSignaturesForAddress', [USDC_DEVNET, { limit: 1001 }]))).toEqual({
      code: -32602,
      message: 'Invalid limit; max 1000',
    });
    expect(await bad(call('getTransaction', ['1'.repeat(64), { commitment: 'processed' }]))).toEqual({
      code: -32602,
      message: 'Method does not support commitment below `confirmed`',
    });
    expect(await bad(call('sendTransaction', ['AAAA', { encoding: 'base64' }]))).toMatchObject({
      code: -32602,
      message: expect.stringContaining('failed to deserialize'),
    });
    expect(await bad(call('sendTransaction', ['AQID', { encoding: 'base64' }]))).toMatchObject({ code: -32602 });
    expect(await bad(call('sendTransaction', ['l0l', {}]))).toMatchObject({
      code: -32602,
      message: expect.stringContaining('invalid base58 encoding'),
    });
    expect(await bad(call('getAccountInfo', [USDC_DEVNET, { encoding: 'xml' }]))).toMatchObject({ code: -32602 });
    expect(await bad(call('noSuchMethod'))).toEqual({ code: -32601, message: 'Method not found' });
    expect(await bad('{"jsonrpc": "2.0", "method": ')).toEqual({ code: -32700, message: 'Parse error' });
    expect(await bad({ id: 1, method: 'getSlot' })).toEqual({ code: -32600, message: 'Invalid request' });
    expect(await bad([])).toEqual({ code: -32600, message: 'Invalid request' });
    expect(await bad('['.repeat(10_000))).toEqual({ code: -32700, message: 'Parse error' });

    const batch = await rawCall(server.url, [call('getHealth'), { ...call('nope'), id: 'b' }, 42]);
    expect(batch).toEqual([
      { jsonrpc: '2.0', result: 'ok', id: 7 },
      { jsonrpc: '2.0', error: { code: -32601, message: 'Method not found' }, id: 'b' },
      { jsonrpc: '2.0', error: { code: -32600, message: 'Invalid request' }, id: null },
    ]);

    const kitError = await caught(rpc.getBalance('x' as Address).send());
    expect(isSolanaError(kitError, SOLANA_ERROR__JSON_RPC__INVALID_PARAMS)).toBe(true);
    const missing = await caught(
      (rpc as unknown as { getNothing(): { send(): Promise<unknown> } }).getNothing().send(),
    );
    expect(isSolanaError(missing, SOLANA_ERROR__JSON_RPC__METHOD_NOT_FOUND)).toBe(true);

    expect((await fetch(server.url, { method: 'POST', body: 'x'.repeat(2 * 1024 * 1024) })).status).toBe(413);
    expect((await fetch(server.url)).status).toBe(405);
    expect(await (await fetch(`${server.url}/health`)).text()).toBe('ok');
    expect(await rpc.getHealth().send()).toBe('ok');
  });
});

describe('in process', () => {
  // Services of the process that serves the ledger call it without HTTP or JSON text (solana/local-rpc.ts): each
  // answer must be what kit reads from the HTTP answer's text, to the type of every integer.
  it('answers kit’s requests as over HTTP, read as kit reads them', async () => {
    const alice = await signer();
    await ledger.airdrop(alice.address, 1_000_000_000n);
    await ledger.mintTo(alice.address, 3_000_000n);
    const bob = generateWallet().address as Address;
    await ledger.openTokenAccount(bob);
    const transfer = await transferChecked(rpc, alice, bob, 1_250_000n);
    const unfunded = await transferChecked(rpc, await signer(), bob, 1n);
    let id = 0;
    const request = (method: string, ...params: unknown[]) => ({ jsonrpc: '2.0', id: ++id, method, params });
    const payloads: unknown[] = [
      request('getLatestBlockhash', { commitment: 'confirmed' }),
      request('getBalance', alice.address, { commitment: 'confirmed' }),
      request('getAccountInfo', await ata(alice.address), { encoding: 'base64' }),
      request('getAccountInfo', await ata(alice.address), { encoding: 'jsonParsed' }),
      request('getTokenAccountBalance', await ata(alice.address)),
      request('getMinimumBalanceForRentExemption', 165n),
      request('simulateTransaction', transfer.wire, { encoding: 'base64', sigVerify: true }),
      request('simulateTransaction', unfunded.wire, { encoding: 'base64', sigVerify: false }),
      request('getSignatureStatuses', [transfer.signature], { searchTransactionHistory: true }),
      request('getEpochInfo', { commitment: 'finalized', minContextSlot: undefined }),
      request('getBalance', 'not-an-address'),
      request('noSuchMethod'),
      [request('getSlot'), request('getBlockHeight', { commitment: 'processed' })],
    ];
    for (const payload of payloads) {
      const text = handleRpcBody(ledger, stringifyJsonWithBigInts(payload));
      expect(asKitRead(handleRpcValue(ledger, asRead(payload))), stringifyJsonWithBigInts(payload)).toStrictEqual(
        parseJsonWithBigInts(text ?? ''),
      );
    }
  });
});

describe('the faucet', () => {
  const faucet = (body: unknown) => fetch(`${server.url}/faucet`, { method: 'POST', body: JSON.stringify(body) });

  it('airdrops SOL and mints stablecoins with real transactions', async () => {
    const who = generateWallet().address;
    const response = await faucet({ address: who, sol: '2.5', usd: '100' });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { signatures: Signature[]; sol: string; usd: string };
    expect(body).toMatchObject({ sol: '2.5', lamports: '2500000000', usd: '100', usdAtomic: '100000000' });
    expect(body.signatures).toHaveLength(2);
    const statuses = (await rpc.getSignatureStatuses(body.signatures).send()).value;
    expect(statuses.map((s) => s?.err)).toEqual([null, null]);
    expect(await (await faucet({ address: who, usd: '0.5' })).json()).toMatchObject({
      lamports: '2500000000',
      usd: '100.5',
      usdAtomic: '100500000',
    });
  });

  it('refuses bad requests with 400 and a reason per field', async () => {
    const who = generateWallet().address;
    const refused = async (body: unknown) => {
      const response = await faucet(body);
      expect(response.status).toBe(400);
      return ((await response.json()) as { error: { message: string; details: Record<string, string> } }).error;
    };
    expect((await refused({ address: who })).details).toEqual({ amount: 'give sol, usd or both' });
    expect((await refused({ address: 'nope', sol: '1' })).details.address).toContain('base58');
    expect((await refused({ address: who, sol: 2 })).details.sol).toContain('decimal string');
    expect((await refused({ address: who, sol: '-1' })).details.sol).toContain('decimal string');
    expect((await refused({ address: who, sol: '0' })).details.sol).toBe('must be more than zero');
    expect((await refused({ address: who, sol: '10.1' })).details.sol).toContain('10 SOL');
    expect((await refused({ address: who, usd: '1000.01' })).details.usd).toContain('1000 USD');
    expect((await refused({ address: who, usd: '1.0000001' })).details.usd).toBe('has more than 6 decimal places');
    expect((await refused([1])).message).toContain('JSON object');
    expect(ledger.lamports(who)).toBe(0n);
  });
});

describe('persistence', () => {
  it('keeps accounts, history and the blockhash window across a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ledger-'));
    const authority = generateWallet();
    try {
      let local = await LocalLedger.open({ dataDir: dir, mintAuthority: authority, slotMs: HOUR_SLOTS });
      let service = await startLedgerRpc(local, { port: 0 });
      let client = connect(service.url);
      const alice = await signer();
      const bob = generateWallet().address as Address;
      await local.airdrop(alice.address, 1_000_000_000n);
      await local.mintTo(alice.address, 3_000_000n);
      await local.openTokenAccount(bob);
      const first = await transferChecked(client, alice, bob, 1_000_000n);
      await client.sendTransaction(first.wire as Base64EncodedWireTransaction, { encoding: 'base64' }).send();
      const { value: held } = await client.getLatestBlockhash({ commitment: 'confirmed' }).send();
      const slotBefore = local.slot();
      const lamportsBefore = local.lamports(alice.address);
      await expect(LocalLedger.open({ dataDir: dir, mintAuthority: authority })).rejects.toThrow(/already open/);
      await service.close();
      await local.close();
      appendFileSync(join(dir, 'ledger.log'), '{"t":"tx","r":{"torn'); // a write cut short by a crash

      local = await LocalLedger.open({ dataDir: dir, mintAuthority: authority, slotMs: HOUR_SLOTS });
      service = await startLedgerRpc(local, { port: 0 });
      client = connect(service.url);
      expect(local.slot()).toBeGreaterThanOrEqual(slotBefore);
      expect(local.lamports(alice.address)).toBe(lamportsBefore);
      expect(local.tokenBalance(alice.address)).toBe(2_000_000n);
      expect(local.tokenBalance(bob)).toBe(1_000_000n);
      const found = await client
        .getTransaction(first.signature as Signature, {
          encoding: 'json',
          maxSupportedTransactionVersion: 0,
          commitment: 'confirmed',
        })
        .send();
      expect(found!.meta!.postTokenBalances!.map((b) => b.uiTokenAmount.amount).sort()).toEqual(['1000000', '2000000']);
      expect(
        (await client.getSignaturesForAddress(await ata(bob), { commitment: 'confirmed' }).send()).map(
          (h) => h.signature,
        ),
      ).toContain(first.signature);

      const replay = await caught(
        client.sendTransaction(first.wire as Base64EncodedWireTransaction, { encoding: 'base64' }).send(),
      );
      expect(isSolanaError(replay.cause, SOLANA_ERROR__TRANSACTION_ERROR__ALREADY_PROCESSED)).toBe(true);
      const second = await transferChecked(client, alice, bob, 500_000n, held);
      await client.sendTransaction(second.wire as Base64EncodedWireTransaction, { encoding: 'base64' }).send();
      expect(local.tokenBalance(bob)).toBe(1_500_000n);
      local.warp(151);
      const late = await transferChecked(client, alice, bob, 500_000n, held);
      const expired = await caught(
        client.sendTransaction(late.wire as Base64EncodedWireTransaction, { encoding: 'base64' }).send(),
      );
      expect(isSolanaError(expired.cause, SOLANA_ERROR__TRANSACTION_ERROR__BLOCKHASH_NOT_FOUND)).toBe(true);
      await service.close();
      await local.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answers for old transactions read back from the log exactly as while they were in memory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ledger-'));
    const authority = generateWallet();
    // only the latest 6 records stay whole in memory: the 6 of the first phase are evicted by the 10 after them
    const open = () =>
      LocalLedger.open({ dataDir: dir, mintAuthority: authority, slotMs: HOUR_SLOTS, recordsInMemory: 6 });
    try {
      let local = await open();
      let service = await startLedgerRpc(local, { port: 0 });
      const client = connect(service.url);
      const alice = await signer();
      const bob = generateWallet().address as Address;
      const firstSlot = local.slot();
      await local.airdrop(alice.address, 1_000_000_000n);
      await local.mintTo(alice.address, 3_000_000n); // opens alice's token account, then mints
      local.warp(1);
      await local.openTokenAccount(bob);
      const transfer = await transferChecked(client, alice, bob, 1_000_000n);
      await client.sendTransaction(transfer.wire as Base64EncodedWireTransaction, { encoding: 'base64' }).send();
      const overdraft = await transferChecked(client, alice, bob, 50_000_000n); // lands with its error
      await client
        .sendTransaction(overdraft.wire as Base64EncodedWireTransaction, { encoding: 'base64', skipPreflight: true })
        .send();
      local.warp(1);
      const early = [firstSlot, firstSlot + 1n].flatMap((slot) =>
        local.blockTransactions(slot).map((r) => r.signature),
      );

      const addresses = [alice.address, await ata(alice.address), await ata(bob), MINT];
      const answers = async () => {
        const url = service.url;
        const out: unknown[] = [];
        for (const signature of early)
          for (const encoding of ['json', 'jsonParsed', 'base64'])
            out.push(
              await rawCall(
                url,
                call('getTransaction', [
                  signature,
                  { encoding, maxSupportedTransactionVersion: 0, commitment: 'confirmed' },
                ]),
              ),
            );
        out.push(await rawCall(url, call('getSignatureStatuses', [early])));
        out.push(await rawCall(url, call('getSignatureStatuses', [early, { searchTransactionHistory: true }])));
        for (const a of addresses)
          out.push(await rawCall(url, call('getSignaturesForAddress', [a, { commitment: 'confirmed' }])));
        out.push(
          await rawCall(
            url,
            call('getSignaturesForAddress', [
              alice.address,
              { commitment: 'confirmed', before: early.at(-1), limit: 2 },
            ]),
          ),
        );
        for (const slot of [firstSlot, firstSlot + 1n])
          for (const transactionDetails of ['full', 'signatures'])
            out.push(
              await rawCall(
                url,
                call('getBlock', [
                  Number(slot),
                  { commitment: 'confirmed', maxSupportedTransactionVersion: 0, transactionDetails },
                ]),
              ),
            );
        return out;
      };
      // the system program's history goes on below; up to the first later transaction it must stay as it was
      const systemHistory = (olderThan?: string) =>
        rawCall(
          service.url,
          call('getSignaturesForAddress', [
            '11111111111111111111111111111111',
            { commitment: 'confirmed', before: olderThan },
          ]),
        );
      expect(early).toHaveLength(6);
      const before = await answers();
      const systemBefore = await systemHistory();
      expect(systemBefore.result.length).toBeGreaterThan(0);
      expect(before.filter((answer) => 'error' in (answer as object))).toEqual([]);

      // ten later transactions in the same slot, none touching the addresses above
      const later: string[] = [];
      for (let i = 0; i < 10; i++) later.push(await local.airdrop(generateWallet().address, 1_000_000n));
      // a record held in memory is the same object at every ask; one read back from the log is a new one
      expect(local.transaction(later.at(-1)!)).toBe(local.transaction(later.at(-1)!));
      for (const signature of early) expect(local.transaction(signature)).not.toBe(local.transaction(signature));
      expect(await answers()).toEqual(before);
      expect(await systemHistory(later[0])).toEqual(systemBefore);

      await service.close();
      await local.close();
      local = await open();
      service = await startLedgerRpc(local, { port: 0 });
      expect(local.transaction(early[0]!)).not.toBe(local.transaction(early[0]!));
      expect(await answers()).toEqual(before);
      expect(await systemHistory(later[0])).toEqual(systemBefore);
      expect(local.transactionCount()).toBe(16n);
      await service.close();
      await local.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps every committed write when the process is killed without closing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ledger-'));
    const authority = generateWallet();
    const who = generateWallet().address;
    try {
      const script = `
        const { LocalLedger } = await import('./servers/src/ledger/index.ts');
        const mintAuthority = { address: process.env.AUTHORITY, secretKey: Uint8Array.from(JSON.parse(process.env.SECRET)) };
        const ledger = await LocalLedger.open({ dataDir: process.env.DIR, mintAuthority });
        await ledger.airdrop(process.env.WHO, 7000000000n);
        await ledger.mintTo(process.env.WHO, 1234567n);
        process.kill(process.pid, 'SIGKILL');`;
      const env = {
        ...process.env,
        DIR: dir,
        WHO: who,
        AUTHORITY: authority.address,
        SECRET: JSON.stringify([...authority.secretKey]),
      };
      await promisify(execFile)(
        process.execPath,
        ['--import', 'tsx', '--conditions=ae-source', '--input-type=module', '-e', script],
        { cwd: root, env },
      ).catch((error: { signal?: string }) => expect(error.signal).toBe('SIGKILL'));
      const reopened = await LocalLedger.open({ dataDir: dir, mintAuthority: authority });
      expect(reopened.lamports(who)).toBe(7_000_000_000n);
      expect(reopened.tokenBalance(who)).toBe(1_234_567n);
      await reopened.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
