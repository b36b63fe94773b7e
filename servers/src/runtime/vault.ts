import { base58Encode } from '@agent-economy/contracts';
import {
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  createNoopSigner,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  isSolanaError,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Base64EncodedWireTransaction,
  type Blockhash,
  type Instruction,
  type Signature,
} from '@solana/kit';
import { getTransferCheckedInstruction } from '@solana-program/token';
import type { Migration } from 'kysely';
import { migrate } from '../db';
import { camelCaseDb } from '../db/camel-case';
import {
  MEMO_PROGRAM,
  associatedTokenAddress,
  decodeMint,
  decodeTokenAccount,
  isTokenProgram,
} from '../solana/programs';
import type { ServiceContext } from './context';
import { HttpError, conflict, unavailable } from './errors';
import { signEd25519 } from '../solana/keys';
import { tracedSolanaRpc } from './traced-rpc';

// The service's own wallet as a vault that pays out: refunds of settle-first routes, escrow releases,
// wager payouts. Every transfer is keyed; its signed transaction is recorded before it is broadcast, so
// a crash at any point leaves a row that the next call with the same key finishes instead of paying twice.

export interface VaultTransfer {
  to: string;
  amount: bigint;
  key: string;
  memo?: string;
}

export interface Vault {
  /** The vault wallet's address (context.wallet.address: the service's own wallet, where it is paid). */
  address: string;
  /** The vault's stablecoin balance on chain, atomic units (0n when its token account does not exist). */
  balance(): Promise<bigint>;
  /** Whether `owner` has its stablecoin account open: only then can the vault pay it. */
  accountOpen(owner: string): Promise<boolean>;
  /**
   * Sends `amount` atomic units of the stablecoin (context.paywall.asset) from the vault's associated token account to
   * `to`'s (which must exist: 409 `recipient_account_missing`, the vault never opens one), signed and fee-paid by the
   * vault wallet, and waits for `confirmed`.
   * Idempotent per `key` (unique, e.g. `escrow:esc_1:release:m0`): a key already sent returns its earlier transaction
   * and sends nothing. Crash-safe: the signed transaction's signature is recorded before it is sent; a key found
   * unfinished is looked up on chain and resent only once its blockhash has expired without landing.
   * Throws HttpError 503 `chain_unavailable` (Retry-After) when the chain does not answer, and HttpError 409
   * `vault_insufficient_funds` when the vault holds less than `amount`: in both cases nothing moved.
   * Throws HttpError 503 `transfer_pending` when the transaction was sent but its confirmation was not seen in
   * time: it may still land, and calling again with the same key finishes it (never sends it twice).
   */
  transfer(input: VaultTransfer): Promise<{ transaction: string }>;
}

export const vaultMigrations: Record<string, Migration> = {
  '001_vault_transfers': {
    async up(db) {
      // One row per transfer key: the signed transaction (wire and signature) is written here before it
      // is broadcast, and replaced only by a conditional update once its blockhash expired unlanded.
      await db.schema
        .createTable('runtime_vault_transfers')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('vault', 'text', (c) => c.notNull())
        .addColumn('to_address', 'text', (c) => c.notNull())
        .addColumn('amount', 'int8', (c) => c.notNull())
        .addColumn('memo', 'text')
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('transaction', 'text', (c) => c.notNull())
        .addColumn('wire', 'text', (c) => c.notNull())
        .addColumn('last_valid_block_height', 'int8', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'timestamptz', (c) => c.notNull())
        .addColumn('confirmed_at', 'timestamptz')
        .execute();
    },
  },
};

interface TransferRow {
  key: string;
  vault: string;
  toAddress: string;
  amount: bigint;
  memo: string | null;
  status: 'signed' | 'confirmed';
  transaction: string;
  wire: string;
  lastValidBlockHeight: bigint;
  attempts: number;
  createdAt: Date;
  confirmedAt: Date | null;
}

interface Tables {
  runtime_vault_transfers: TransferRow;
}

const KEY = /^[\x21-\x7e]{1,200}$/;
const MEMO_MAX = 200;
const CONFIRM_POLL_MS = 250;

export interface VaultOptions {
  /** How long transfer() waits for `confirmed` before answering transfer_pending; default 30 s. */
  confirmTimeoutMs?: number;
}

/** The chain's JSON-RPC endpoint did not answer (refused, reset, timed out, 5xx). */
function chainDown(error: unknown): boolean {
  if (
    error instanceof TypeError ||
    (error as Error)?.name === 'TimeoutError' ||
    (error as Error)?.name === 'AbortError'
  )
    return true;
  if (!isSolanaError(error)) return false;
  const status = (error.context as { statusCode?: number }).statusCode;
  return status !== undefined && status >= 500;
}

const down = (action: string) =>
  unavailable('chain_unavailable', `The Solana RPC endpoint does not answer (${action}); nothing was sent`, 5);

/** 409 recipient_account_missing: nothing was sent; the same transfer goes through once the account is open. */
const recipientAccountMissing = (to: string, account: string) =>
  conflict(
    'recipient_account_missing',
    `${to} has no token account for the stablecoin (its associated token account ${account}): it must open one to be paid; nothing was sent, and the same transfer goes through once it exists`,
    { to, account },
  );

/** A chain read; a silent chain becomes 503 chain_unavailable (nothing was sent yet). */
async function read<T>(action: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (chainDown(error)) throw down(action);
    throw error;
  }
}

export async function createVault(context: ServiceContext, options: VaultOptions = {}): Promise<Vault> {
  await migrate(context.db, 'runtime_vault', vaultMigrations);
  const db = camelCaseDb<Tables>(context.db);
  // Calls made for a request (a refund) carry its trace to the chain.
  const rpc = tracedSolanaRpc(context.rpcUrl);
  const wallet = context.wallet;
  const mint = context.paywall.asset;
  const confirmTimeoutMs = options.confirmTimeoutMs ?? 30_000;
  let mintInfo: { decimals: number; tokenProgram: string } | undefined;

  async function mintOf(): Promise<{ decimals: number; tokenProgram: string }> {
    if (mintInfo) return mintInfo;
    const { value } = await read('getAccountInfo', () =>
      rpc.getAccountInfo(address(mint), { encoding: 'base64', commitment: 'confirmed' }).send(),
    );
    const state =
      value && isTokenProgram(value.owner) ? decodeMint(value.owner, Buffer.from(value.data[0], 'base64')) : null;
    if (!value || !state)
      throw unavailable('chain_unavailable', `the stablecoin mint ${mint} is not on the chain this service reads`, 30);
    mintInfo = { decimals: state.decimals, tokenProgram: value.owner };
    return mintInfo;
  }

  async function balance(): Promise<bigint> {
    const { tokenProgram } = await mintOf();
    const source = associatedTokenAddress(wallet.address, mint, tokenProgram);
    const { value } = await read('getAccountInfo', () =>
      rpc.getAccountInfo(address(source), { encoding: 'base64', commitment: 'confirmed' }).send(),
    );
    if (!value) return 0n;
    return decodeTokenAccount(value.owner, Buffer.from(value.data[0], 'base64'))?.amount ?? 0n;
  }

  async function accountExists(account: string): Promise<boolean> {
    const { value } = await read('getAccountInfo', () =>
      rpc.getAccountInfo(address(account), { encoding: 'base64', commitment: 'confirmed' }).send(),
    );
    return value !== null;
  }

  /** Builds and signs the transfer against the current blockhash (nothing is sent). */
  async function sign(
    input: VaultTransfer,
  ): Promise<{ transaction: string; wire: string; lastValidBlockHeight: bigint }> {
    const { decimals, tokenProgram } = await mintOf();
    const { value: lifetime } = await read('getLatestBlockhash', () =>
      rpc.getLatestBlockhash({ commitment: 'confirmed' }).send(),
    );
    const self = createNoopSigner(address(wallet.address));
    const program = address(tokenProgram);
    const destination = address(associatedTokenAddress(input.to, mint, tokenProgram));
    // The recipient's token account must exist: the vault never opens one. Opening it would cost the vault its rent in
    // SOL, which the recipient gets back by closing it, so a wallet that closes its account between payouts (a wager
    // declined, a small escrow released) would drain the vault's SOL one rent at a time.
    if (!(await accountExists(destination))) throw recipientAccountMissing(input.to, destination);
    // The memo carries the key: two transfers of one amount to one wallet in one slot must differ, or the chain drops
    // one.
    const memo = input.memo ? `${input.memo} (${input.key})` : input.key;
    const instructions: Instruction[] = [
      getTransferCheckedInstruction(
        {
          source: address(associatedTokenAddress(wallet.address, mint, tokenProgram)),
          mint: address(mint),
          destination,
          authority: self,
          amount: input.amount,
          decimals,
        },
        { programAddress: program },
      ),
      { programAddress: address(MEMO_PROGRAM), data: new TextEncoder().encode(memo) },
    ];
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayer(address(wallet.address), m),
      (m) =>
        setTransactionMessageLifetimeUsingBlockhash(
          { blockhash: lifetime.blockhash as Blockhash, lastValidBlockHeight: lifetime.lastValidBlockHeight },
          m,
        ),
      (m) => appendTransactionMessageInstructions(instructions, m),
    );
    const compiled = compileTransaction(message);
    const signature = signEd25519(wallet, new Uint8Array(compiled.messageBytes));
    const signed = {
      ...compiled,
      signatures: { ...compiled.signatures, [wallet.address]: signature },
    } as typeof compiled;
    return {
      transaction: base58Encode(signature),
      wire: getBase64EncodedWireTransaction(signed),
      lastValidBlockHeight: lifetime.lastValidBlockHeight,
    };
  }

  const get = (key: string) =>
    db.selectFrom('runtime_vault_transfers').selectAll().where('key', '=', key).executeTakeFirst();

  /**
   * Records a freshly signed transaction for the key: a new row, or in place of `replacing` (an attempt
   * that can no longer land). False when another caller got there first: the caller reads the row again.
   */
  async function record(input: VaultTransfer, replacing?: TransferRow): Promise<boolean> {
    if ((await balance()) < input.amount) {
      throw conflict(
        'vault_insufficient_funds',
        `The service's wallet holds less than ${input.amount} atomic units of the stablecoin; nothing was sent`,
        { vault: wallet.address, amountAtomic: input.amount.toString() },
      );
    }
    const signed = await sign(input);
    if (replacing) {
      const updated = await db
        .updateTable('runtime_vault_transfers')
        .set({
          transaction: signed.transaction,
          wire: signed.wire,
          lastValidBlockHeight: signed.lastValidBlockHeight,
          attempts: replacing.attempts + 1,
        })
        .where('key', '=', input.key)
        .where('transaction', '=', replacing.transaction)
        .where('status', '=', 'signed')
        .executeTakeFirst();
      return updated.numUpdatedRows > 0n;
    }
    const inserted = await db
      .insertInto('runtime_vault_transfers')
      .values({
        key: input.key,
        vault: wallet.address,
        toAddress: input.to,
        amount: input.amount,
        memo: input.memo ?? null,
        status: 'signed',
        transaction: signed.transaction,
        wire: signed.wire,
        lastValidBlockHeight: signed.lastValidBlockHeight,
        attempts: 1,
        createdAt: new Date(),
        confirmedAt: null,
      })
      .onConflict((oc) => oc.column('key').doNothing())
      .executeTakeFirst();
    return (inserted.numInsertedOrUpdatedRows ?? 0n) > 0n;
  }

  /** The signature's fate as the chain knows it now. */
  async function lookUp(transaction: string): Promise<'confirmed' | 'failed' | 'processed' | 'unseen'> {
    const { value } = await read('getSignatureStatuses', () =>
      rpc.getSignatureStatuses([transaction as Signature], { searchTransactionHistory: true }).send(),
    );
    const status = value[0];
    if (!status) return 'unseen';
    if (status.err) return 'failed';
    return status.confirmationStatus === 'confirmed' || status.confirmationStatus === 'finalized'
      ? 'confirmed'
      : 'processed';
  }

  async function markConfirmed(row: TransferRow): Promise<{ transaction: string }> {
    await db
      .updateTable('runtime_vault_transfers')
      .set({ status: 'confirmed', confirmedAt: new Date() })
      .where('key', '=', row.key)
      .where('transaction', '=', row.transaction)
      .execute();
    context.logger.info(
      { key: row.key, transaction: row.transaction, to: row.toAddress, amount: row.amount.toString() },
      'vault transfer confirmed',
    );
    return { transaction: row.transaction };
  }

  /** Broadcasts the recorded wire (again: the same signature can land only once). */
  async function broadcast(row: TransferRow): Promise<void> {
    try {
      await rpc
        .sendTransaction(row.wire as Base64EncodedWireTransaction, {
          encoding: 'base64',
          preflightCommitment: 'confirmed',
        })
        .send();
    } catch (error) {
      if (error instanceof TypeError && /ECONNREFUSED/.test(String((error as { cause?: unknown }).cause)))
        throw down('sendTransaction');
      if (chainDown(error)) {
        throw new HttpError(
          503,
          'transfer_pending',
          `The transfer ${row.transaction} may have been sent but the chain did not answer; call again with the same key to finish it`,
          { transaction: row.transaction },
          { 'retry-after': '5' },
        );
      }
      // A concurrent caller's broadcast of this same transaction landed first: the node refuses the duplicate in
      // preflight, and what counts is the landed one (await_ then reads its fate).
      if ((await lookUp(row.transaction).catch(() => 'unseen')) !== 'unseen') return;
      // The node refused it in preflight (e.g. funds spent meanwhile): it was not broadcast and cannot land.
      const message = (error as Error).message;
      if (
        /insufficient funds|custom program error: 0x1\b/i.test(
          message +
            JSON.stringify((error as { context?: unknown }).context ?? {}, (_k, v) =>
              typeof v === 'bigint' ? String(v) : v,
            ),
        )
      ) {
        throw conflict(
          'vault_insufficient_funds',
          `The service's wallet holds less than ${row.amount} atomic units of the stablecoin; nothing was sent`,
          { vault: wallet.address, amountAtomic: row.amount.toString() },
        );
      }
      throw new HttpError(502, 'transfer_refused', `The chain refused the transfer: ${message}; nothing was sent`, {
        transaction: row.transaction,
      });
    }
  }

  /** Waits for the transaction to be confirmed, to fail, or to outlive its blockhash. */
  async function await_(row: TransferRow): Promise<'confirmed' | 'failed' | 'expired' | 'timeout'> {
    const started = Date.now();
    for (;;) {
      const fate = await fateOf(row);
      if (fate === 'confirmed' || fate === 'failed' || fate === 'expired') return fate;
      if (Date.now() - started >= confirmTimeoutMs) return 'timeout';
      await new Promise((resolve) => setTimeout(resolve, CONFIRM_POLL_MS));
    }
  }

  /**
   * Where a recorded transaction stands. The block height is read BEFORE the signature: unseen at a
   * height past its last valid one means it can never land, so a new one may replace it.
   */
  async function fateOf(row: TransferRow): Promise<'confirmed' | 'failed' | 'expired' | 'in-flight'> {
    const height = await read('getBlockHeight', () => rpc.getBlockHeight({ commitment: 'confirmed' }).send());
    const seen = await lookUp(row.transaction);
    if (seen === 'confirmed' || seen === 'failed') return seen;
    if (seen === 'unseen' && height > row.lastValidBlockHeight) return 'expired';
    return 'in-flight';
  }

  async function transfer(input: VaultTransfer): Promise<{ transaction: string }> {
    if (!KEY.test(input.key))
      throw new Error(`vault transfer key must be 1-200 printable ASCII characters, not ${JSON.stringify(input.key)}`);
    if (typeof input.amount !== 'bigint' || input.amount <= 0n)
      throw new Error(`vault transfer amount must be a positive bigint, not ${String(input.amount)}`);
    if (input.memo !== undefined && input.memo.length > MEMO_MAX)
      throw new Error(`vault transfer memo is longer than ${MEMO_MAX} characters`);
    address(input.to); // throws on a malformed address
    for (let round = 0; round < 10; round++) {
      let row = await get(input.key);
      if (row && (row.toAddress !== input.to || BigInt(row.amount) !== input.amount)) {
        throw conflict(
          'vault_key_reused',
          `Vault transfer key ${input.key} was already used for ${row.amount} atomic units to ${row.toAddress}`,
        );
      }
      if (row?.status === 'confirmed') return { transaction: row.transaction };
      if (!row) {
        if (!(await record(input))) continue; // another caller recorded it first: follow theirs
        row = (await get(input.key))!;
      } else {
        // Unfinished (a crash, a timeout, a concurrent caller): what did the chain make of it?
        const fate = await fateOf(row);
        if (fate === 'confirmed') return markConfirmed(row);
        if (fate === 'failed' || fate === 'expired') {
          // It never moved anything (landed with an error, or can no longer land): sign it anew.
          context.logger.warn(
            { key: row.key, transaction: row.transaction, fate },
            'vault transfer did not land; signing it again',
          );
          await record(input, row);
          continue;
        }
      }
      await broadcast(row);
      const outcome = await await_(row);
      if (outcome === 'confirmed') return markConfirmed(row);
      if (outcome === 'timeout') {
        throw new HttpError(
          503,
          'transfer_pending',
          `The transfer ${row.transaction} was sent but not confirmed in time; call again with the same key to finish it`,
          { transaction: row.transaction },
          { 'retry-after': '5' },
        );
      }
      // failed or expired: the next round signs it again
    }
    throw new HttpError(
      503,
      'transfer_pending',
      `The transfer for ${input.key} did not settle after several attempts; call again with the same key`,
      undefined,
      { 'retry-after': '5' },
    );
  }

  async function accountOpen(owner: string): Promise<boolean> {
    const { tokenProgram } = await mintOf();
    return accountExists(associatedTokenAddress(owner, mint, tokenProgram));
  }

  return { address: wallet.address, balance, accountOpen, transfer };
}
