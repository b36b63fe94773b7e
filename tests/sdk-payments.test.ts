import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { initContract } from '@ts-rest/core';
import axios, { AxiosHeaders, type AxiosInstance } from 'axios';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AccountRole,
  address,
  appendTransactionMessageInstructions,
  blockhash,
  compileTransaction,
  createNoopSigner,
  createTransactionMessage,
  decompileTransactionMessage,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  type Address,
  type Instruction,
} from '@solana/kit';
import {
  getSetComputeUnitLimitInstruction,
  getSetComputeUnitPriceInstruction,
  parseSetComputeUnitLimitInstruction,
  parseSetComputeUnitPriceInstruction,
} from '@solana-program/compute-budget';
import { getAddMemoInstruction, parseAddMemoInstruction } from '@solana-program/memo';
import {
  TOKEN_PROGRAM_ADDRESS,
  findAssociatedTokenPda,
  getMintEncoder,
  getTransferCheckedInstruction,
  parseTransferCheckedInstruction,
} from '@solana-program/token';
import {
  PAYMENT_REQUIRED_HEADER,
  PAYMENT_RESPONSE_HEADER,
  SOLANA_DEVNET,
  SOLANA_MAINNET,
  USDC_DEVNET,
  base58Decode,
  base58Encode,
  decodeX402Header,
  defineService,
  encodeX402Header,
  fixed,
  standardErrors,
  type PaymentRequired,
  type PaymentRequirements,
} from '@agent-economy/contracts';
import {
  AgentEconomyError,
  BudgetExceededError,
  ConnectionError,
  InsufficientFundsError,
  InternalServerError,
  PaymentNotAcceptableError,
  PaymentOutcomeUnknownError,
  PaymentRefusedError,
  PaymentRequiredError,
  createClient,
  createPayments,
  createServiceClient,
  walletFromEnv,
  walletFromFile,
  walletFromSecretKey,
  type PaymentOptions,
  type PaymentReceipt,
  type Signer,
} from '@agent-economy/sdk';
import { buildExactSvmTransaction } from '../sdk/src/payments/exact-svm';
import { createEducationApp } from '../servers/src/services/education';
import { generateWallet } from '../servers/src/solana/keys';
import { startService, type RunningService } from './support/servers';

// The SDK's x402 payer. Against the real education service without a facilitator (it quotes and refuses
// every payment, charging nothing): budget and policy refusals, and the exact payment the SDK builds.
// Against a scripted loopback server, as tests/sdk.test.ts does for the transport: the answers the real
// stack cannot give on demand (a dropped connection, a settlement pending, a 503, no PAYMENT-RESPONSE,
// another mint). The Solana RPC the SDK reads there (a blockhash, a mint) is a stand-in answering those
// two documented methods. Last, end to end: the education service paid through the facilitator on the
// local ledger.

const TOKEN_2022 = address('TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb');
const MEMO_V2 = address('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');

let service: RunningService;
let wallet: Signer;
let feePayer: string;
let rpc: Awaited<ReturnType<typeof startRpc>>;

// --- a Solana JSON-RPC stand-in: getLatestBlockhash and getAccountInfo, in the shapes the RPC documents ---

async function startRpc() {
  const calls: string[] = [];
  /** The address of each getAccountInfo, in order. */
  const accountReads: string[] = [];
  const accounts = new Map<string, { owner: string; data: Uint8Array }>();
  const state = {
    blockhash: base58Encode(randomBytes(32)),
    lastValidBlockHeight: 4242,
    genesisHash: DEVNET_GENESIS_HASH,
  };
  const server = createServer(async (req, res) => {
    const request = JSON.parse(await readBody(req)) as { id: number; method: string; params: unknown[] };
    calls.push(request.method);
    const context = { slot: 100 };
    let result: unknown;
    if (request.method === 'getLatestBlockhash')
      result = { context, value: { blockhash: state.blockhash, lastValidBlockHeight: state.lastValidBlockHeight } };
    // The SDK checks the RPC's chain against the quote's network before signing: this one poses as devnet.
    else if (request.method === 'getGenesisHash') result = state.genesisHash;
    else if (request.method === 'getAccountInfo') {
      accountReads.push(request.params[0] as string);
      const account = accounts.get(request.params[0] as string);
      result = {
        context,
        value: account
          ? {
              data: [Buffer.from(account.data).toString('base64'), 'base64'],
              executable: false,
              lamports: 1_461_600,
              owner: account.owner,
              rentEpoch: 0,
              space: account.data.length,
            }
          : null,
      };
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(
        result === undefined
          ? { jsonrpc: '2.0', id: request.id, error: { code: -32601, message: 'Method not found' } }
          : { jsonrpc: '2.0', id: request.id, result },
      ),
    );
  });
  const url = await listen(server);
  return { url, calls, accountReads, accounts, state, server };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => resolve(body));
  });
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

// --- what the client sends, seen through its own axios instance ---

interface Sent {
  url: string;
  payment: string | undefined;
}

/** An axios instance that records every request and, optionally, edits the quotes it receives. */
function recorder(options: { gate?: Promise<void>; editQuote?: (quote: PaymentRequired) => PaymentRequired } = {}) {
  const instance = axios.create();
  const sent: Sent[] = [];
  instance.interceptors.request.use(async (config) => {
    const payment = AxiosHeaders.from(config.headers).get('payment-signature');
    sent.push({ url: config.url!, payment: typeof payment === 'string' ? payment : undefined });
    if (payment && options.gate) await options.gate;
    return config;
  });
  if (options.editQuote) {
    const edit = options.editQuote;
    instance.interceptors.response.use((response) => {
      const header = response.headers[PAYMENT_REQUIRED_HEADER];
      if (typeof header === 'string')
        response.headers[PAYMENT_REQUIRED_HEADER] = encodeX402Header(edit(decodeX402Header(header) as PaymentRequired));
      return response;
    });
  }
  const payloads = () => sent.filter((s) => s.payment).map((s) => decodeX402Header(s.payment!) as PaymentPayload);
  return { instance, sent, payloads };
}

interface PaymentPayload {
  x402Version: number;
  resource: { url: string };
  accepted: PaymentRequirements;
  payload: { transaction: string };
}

function educationClient(axiosInstance: AxiosInstance, payments: PaymentOptions = {}) {
  return createClient({
    baseUrls: { education: service.url },
    wallet,
    axios: axiosInstance,
    maxRetries: 0,
    payments: { rpcUrl: rpc.url, ...payments },
  });
}

const lessonArgs = { body: { courseId: 'rag', lessonId: 'chunking' } } as const;

async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail');
}

// --- decoding what the SDK built ---

async function decodePayment(base64: string) {
  const wire = getBase64Encoder().encode(base64);
  const transaction = getTransactionDecoder().decode(wire);
  const compiled = getCompiledTransactionMessageDecoder().decode(transaction.messageBytes);
  const message = decompileTransactionMessage(compiled);
  return { wire: new Uint8Array(wire), transaction, compiled, message };
}

async function verifies(signer: string, signature: Uint8Array, message: Uint8Array): Promise<boolean> {
  const key = await crypto.subtle.importKey('raw', base58Decode(signer)!, { name: 'Ed25519' }, false, ['verify']);
  return crypto.subtle.verify('Ed25519', key, signature, message);
}

const ata = async (owner: string, mint: string, tokenProgram: Address = TOKEN_PROGRAM_ADDRESS) =>
  (await findAssociatedTokenPda({ owner: address(owner), mint: address(mint), tokenProgram }))[0];

/** An initialized token account (the 165-byte base layout both token programs share) holding `amount`. */
function tokenAccount(mint: string, owner: string, amount: bigint): Uint8Array {
  const data = new Uint8Array(165);
  data.set(base58Decode(mint)!, 0);
  data.set(base58Decode(owner)!, 32);
  new DataView(data.buffer).setBigUint64(64, amount, true);
  data[108] = 1; // state: initialized
  return data;
}

/** Devnet's genesis hash: what getGenesisHash answers there (and on the local ledger, which poses as devnet). */
const DEVNET_GENESIS_HASH = 'EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG';

beforeAll(async () => {
  wallet = await walletFromSecretKey(generateWallet().secretKey);
  feePayer = generateWallet().address;
  rpc = await startRpc();
  // The SDK reads the payer's token account before signing: the wallet holds 1,000 USD of USDC here.
  rpc.accounts.set(await ata(wallet.address, USDC_DEVNET), {
    owner: TOKEN_PROGRAM_ADDRESS,
    data: tokenAccount(USDC_DEVNET, wallet.address, 1_000_000_000n),
  });
  // The fee payer a facilitator advertises goes in extra.feePayer; with no facilitator to verify, the
  // service refuses every payment (payment_unverifiable) and charges nothing.
  service = await startService(createEducationApp, { paywall: { feePayer } });
});

afterAll(async () => {
  await service?.close();
  if (rpc) await close(rpc.server);
});

beforeEach(() => {
  rpc.calls.length = 0;
  rpc.accountReads.length = 0;
});

describe('budgets and policy against the real education service: refused before anything is built', () => {
  it('refuses a price above the per-call budget', async () => {
    const { instance, sent } = recorder();
    const error = await rejection(educationClient(instance, { maxPerCallUsd: '0.04' }).education.lesson(lessonArgs));
    expect(error).toBeInstanceOf(BudgetExceededError);
    expect(error).toBeInstanceOf(PaymentRequiredError);
    expect([error.limit, error.limitUsd, error.priceUsd, error.remainingUsd, error.service, error.route]).toEqual([
      'perCall',
      '0.04',
      '0.05',
      '0.04',
      'education',
      'POST /api/lesson',
    ]);
    expect(error.status).toBe(402);
    expect(error.quote.accepts[0].amount).toBe('50000');
    expect(sent.map((s) => [s.url, s.payment])).toEqual([[`${service.url}/api/lesson`, undefined]]);
    expect(rpc.calls).toEqual([]);
  });

  // Two calls at once: the first holds its 0.05 while its payment is in flight (held at the gate until
  // the second has been refused), so the second cannot also spend 0.05 of a 0.08 budget.
  for (const [name, payments, limit] of [
    ['per service, as a map', { maxPerServiceUsd: { education: '0.08' } }, 'perService'],
    ['per service, one value for all', { maxPerServiceUsd: '0.08' }, 'perService'],
    ['in total', { maxTotalUsd: '0.08' }, 'total'],
  ] as const) {
    it(`keeps concurrent calls within the budget ${name}`, async () => {
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      const { instance, sent, payloads } = recorder({ gate });
      const client = educationClient(instance, { ...payments, prepay: false });
      const call = () =>
        client.education.lesson(lessonArgs).catch((error) => {
          if (error instanceof BudgetExceededError) open();
          throw error;
        });
      const [first, second] = await Promise.allSettled([call(), call()]);
      const errors = [first, second].map((r) => (r as PromiseRejectedResult).reason);
      const refused = errors.find((e) => e instanceof BudgetExceededError);
      const paid = errors.find((e) => e instanceof PaymentRefusedError);
      expect([refused?.limit, refused?.limitUsd, refused?.priceUsd, refused?.remainingUsd]).toEqual([
        limit,
        '0.08',
        '0.05',
        '0.03',
      ]);
      // The one payment sent was refused (this deployment has no facilitator), so the budget is whole again.
      expect(paid?.payment.requirements.amount).toBe('50000');
      expect(payloads()).toHaveLength(1);
      expect(sent).toHaveLength(3);
      expect(client.payments.remainingUsd('education')).toBe('0.08');
      expect(client.payments.spentUsd()).toBe('0');
      expect(client.payments.receipts).toEqual([]);
    });
  }

  it('refuses a quote on a network not allowed', async () => {
    const { instance, sent } = recorder();
    const error = await rejection(
      educationClient(instance, { allowedNetworks: [SOLANA_MAINNET] }).education.lesson(lessonArgs),
    );
    expect(error).toBeInstanceOf(PaymentNotAcceptableError);
    expect(error.reasons).toEqual([
      `exact 50000 of ${USDC_DEVNET} on ${SOLANA_DEVNET}: network not allowed (allowedNetworks: ${SOLANA_MAINNET})`,
    ]);
    expect(sent.filter((s) => s.payment)).toEqual([]);
    expect(rpc.calls).toEqual([]);
  });

  it('refuses a quote in an asset not allowed', async () => {
    const { instance, sent } = recorder();
    const other = generateWallet().address;
    const error = await rejection(educationClient(instance, { allowedAssets: [other] }).education.lesson(lessonArgs));
    expect(error).toBeInstanceOf(PaymentNotAcceptableError);
    expect(error.reasons).toEqual([`exact 50000 of ${USDC_DEVNET} on ${SOLANA_DEVNET}: asset not allowed`]);
    expect(sent.filter((s) => s.payment)).toEqual([]);
  });

  it('follows the client network by default: a mainnet client does not pay a devnet quote', async () => {
    const { instance, sent } = recorder();
    const client = createClient({
      baseUrls: { education: service.url },
      wallet,
      axios: instance,
      maxRetries: 0,
      network: SOLANA_MAINNET,
      payments: { rpcUrl: rpc.url },
    });
    const error = await rejection(client.education.lesson(lessonArgs));
    expect(error).toBeInstanceOf(PaymentNotAcceptableError);
    expect(error.reasons[0]).toContain('network not allowed');
    expect(sent.filter((s) => s.payment)).toEqual([]);
  });

  it('refuses a quote with no fee payer (a deployment without facilitator)', async () => {
    const { instance, sent } = recorder({
      editQuote: (quote) => ({ ...quote, accepts: quote.accepts.map((a) => ({ ...a, extra: {} })) }),
    });
    const error = await rejection(educationClient(instance).education.lesson(lessonArgs));
    expect(error).toBeInstanceOf(PaymentNotAcceptableError);
    expect(error.code).toBe('payment_required');
    expect(error.reasons).toEqual([
      `exact 50000 of ${USDC_DEVNET} on ${SOLANA_DEVNET}: no fee payer in extra.feePayer (the service has no facilitator)`,
    ]);
    expect(sent.filter((s) => s.payment)).toEqual([]);
  });

  it('without a wallet, or with payments: false, a 402 stays a PaymentRequiredError', async () => {
    for (const client of [
      createClient({ baseUrls: { education: service.url }, maxRetries: 0 }),
      createClient({ baseUrls: { education: service.url }, maxRetries: 0, wallet, payments: false }),
    ]) {
      const error = await rejection(client.education.lesson(lessonArgs));
      expect(error.constructor).toBe(PaymentRequiredError);
      expect(error.quote.accepts[0].amount).toBe('50000');
    }
  });

  it('refuses bad budget values when the client is made', () => {
    expect(() => createClient({ wallet, payments: { maxTotalUsd: '-1' } })).toThrow(
      'payments.maxTotalUsd: not a USD amount: "-1"',
    );
    expect(() => createClient({ wallet, payments: { maxPerServiceUsd: { education: '0.0000001' } } })).toThrow(
      'payments.maxPerServiceUsd.education',
    );
    expect(() => createPayments({ maxPerCallUsd: 'one' })).toThrow(AgentEconomyError);
  });
});

describe('the exact payment, compiled without @solana/kit', () => {
  // The SDK writes the transaction out itself (kit's pipeline cost most of its CPU a payment): byte for byte what kit
  // compiles from the same instructions, for either token program, a payer paying itself, and a memo longer than 127
  // bytes (a two-byte length).
  it('is the transaction kit compiles, signed by the payer', async () => {
    const cases = [
      { tokenProgram: TOKEN_PROGRAM_ADDRESS, decimals: 6, self: false, memo: undefined },
      { tokenProgram: TOKEN_2022, decimals: 9, self: false, memo: 'm'.repeat(200) },
      { tokenProgram: TOKEN_PROGRAM_ADDRESS, decimals: 6, self: true, memo: 'order 7' },
    ];
    for (const [n, c] of cases.entries()) {
      for (let round = 0; round < 4; round++) {
        const payer = await walletFromSecretKey(generateWallet().secretKey);
        const requirements: PaymentRequirements = {
          scheme: 'exact',
          network: SOLANA_DEVNET,
          amount: String(1n + BigInt(`0x${randomBytes(7).toString('hex')}`)),
          asset: base58Encode(randomBytes(32)),
          payTo: c.self ? payer.address : base58Encode(randomBytes(32)),
          maxTimeoutSeconds: 60,
          extra: { feePayer: base58Encode(randomBytes(32)), ...(c.memo ? { memo: c.memo } : {}) },
        };
        const lifetime = { blockhash: base58Encode(randomBytes(32)), lastValidBlockHeight: 99n };
        const built = await buildExactSvmTransaction({
          requirements,
          wallet: payer,
          mint: { decimals: c.decimals, tokenProgram: c.tokenProgram },
          lifetime,
        });
        const mint = address(requirements.asset);
        const source = await ata(payer.address, mint, c.tokenProgram);
        const destination = await ata(requirements.payTo, mint, c.tokenProgram);
        const message = pipe(
          createTransactionMessage({ version: 0 }),
          (m) => setTransactionMessageFeePayer(address(String(requirements.extra!.feePayer)), m),
          (m) =>
            setTransactionMessageLifetimeUsingBlockhash(
              { blockhash: blockhash(lifetime.blockhash), lastValidBlockHeight: lifetime.lastValidBlockHeight },
              m,
            ),
          (m) =>
            appendTransactionMessageInstructions(
              [
                getSetComputeUnitLimitInstruction({ units: 20_000 }),
                getSetComputeUnitPriceInstruction({ microLamports: 1n }),
                getTransferCheckedInstruction(
                  {
                    source,
                    mint,
                    destination,
                    authority: createNoopSigner(address(payer.address)),
                    amount: BigInt(requirements.amount),
                    decimals: c.decimals,
                  },
                  { programAddress: c.tokenProgram },
                ),
                getAddMemoInstruction({ memo: built.memo }, { programAddress: MEMO_V2 }),
              ],
              m,
            ),
        );
        const expected = new Uint8Array(compileTransaction(message).messageBytes);
        const { wire, transaction } = await decodePayment(built.transaction);
        expect(new Uint8Array(transaction.messageBytes), `case ${n}, round ${round}`).toEqual(expected);
        expect(wire[0]).toBe(2);
        expect([...wire.subarray(1, 65)]).toEqual(new Array(64).fill(0));
        const signature = transaction.signatures[address(payer.address)]!;
        expect(await verifies(payer.address, signature, expected)).toBe(true);
        expect(base58Encode(signature)).toBe(built.payerSignature);
        if (c.memo) expect(built.memo).toBe(c.memo);
      }
    }
  });

  it('refuses a fee payer or payTo that is not an address, signing nothing', async () => {
    const payer = await walletFromSecretKey(generateWallet().secretKey);
    let signed = 0;
    const counting: Signer = { address: payer.address, signMessage: (m) => (signed++, payer.signMessage(m)) };
    const requirements: PaymentRequirements = {
      scheme: 'exact',
      network: SOLANA_DEVNET,
      amount: '1000',
      asset: USDC_DEVNET,
      payTo: base58Encode(randomBytes(32)),
      maxTimeoutSeconds: 60,
      extra: { feePayer: 'not-an-address' },
    };
    const input = {
      wallet: counting,
      mint: { decimals: 6, tokenProgram: TOKEN_PROGRAM_ADDRESS },
      lifetime: { blockhash: base58Encode(randomBytes(32)), lastValidBlockHeight: 1n },
    };
    await expect(buildExactSvmTransaction({ ...input, requirements })).rejects.toThrow(/extra.feePayer/);
    await expect(
      buildExactSvmTransaction({ ...input, requirements: { ...requirements, payTo: 'x', extra: { feePayer } } }),
    ).rejects.toThrow(/payTo/);
    expect(signed).toBe(0);
  });
});

describe('the payment the SDK builds, sent to the real education service', () => {
  it('is the exact-scheme transfer: 4 instructions, fee payer slot empty, signed by the payer', async () => {
    const { instance, payloads } = recorder();
    const error = await rejection(educationClient(instance, { prepay: false }).education.lesson(lessonArgs));
    // Without a facilitator the service refuses the payment; the SDK reports that with what it sent.
    expect(error).toBeInstanceOf(PaymentRefusedError);
    expect(error.status).toBe(402);
    expect(error.code).toMatch(/^payment_/);
    expect(error.quote.accepts[0].amount).toBe('50000');
    const [sentPayload] = payloads();
    expect(payloads()).toHaveLength(1);
    const payTo = service.context.paywall.payTo;
    expect(sentPayload!.x402Version).toBe(2);
    expect(sentPayload!.resource.url).toBe(`${service.url}/api/lesson`);
    expect(sentPayload!.accepted).toEqual({
      scheme: 'exact',
      network: SOLANA_DEVNET,
      amount: '50000',
      asset: USDC_DEVNET,
      payTo,
      maxTimeoutSeconds: 60,
      extra: { feePayer },
    });
    expect(error.payment.signedTransaction).toBe(sentPayload!.payload.transaction);

    const { wire, transaction, compiled, message } = await decodePayment(sentPayload!.payload.transaction);
    expect(compiled.version).toBe(0);
    expect(compiled.staticAccounts.slice(0, 2)).toEqual([feePayer, wallet.address]);
    expect(compiled.header).toEqual({
      numSignerAccounts: 2,
      numReadonlySignerAccounts: 1,
      numReadonlyNonSignerAccounts: 4,
    });
    expect(compiled.lifetimeToken).toBe(rpc.state.blockhash);
    // USDC's mint is known, so no lookup: the one account read is the payer's token account, checked before signing.
    expect(rpc.calls.filter((m) => m !== 'getGenesisHash')).toEqual(
      expect.arrayContaining(['getLatestBlockhash', 'getAccountInfo']),
    );
    expect(rpc.accountReads).toEqual([await ata(wallet.address, USDC_DEVNET)]);
    // Wire format: 2 signatures, the fee payer's 64 zero bytes first, then the payer's, valid over the message.
    expect(wire[0]).toBe(2);
    expect([...wire.subarray(1, 65)]).toEqual(new Array(64).fill(0));
    expect(Object.keys(transaction.signatures)).toEqual([feePayer, wallet.address]);
    expect(transaction.signatures[address(feePayer)]).toBeNull();
    const signature = transaction.signatures[address(wallet.address)]!;
    expect(await verifies(wallet.address, signature, new Uint8Array(transaction.messageBytes))).toBe(true);
    expect(base58Encode(signature)).toBe(error.payment.payerSignature);

    const instructions = message.instructions as unknown as (Instruction & {
      accounts: { address: string; role: number }[];
      data: Uint8Array;
    })[];
    expect(instructions.map((i) => i.programAddress)).toEqual([
      'ComputeBudget111111111111111111111111111111',
      'ComputeBudget111111111111111111111111111111',
      TOKEN_PROGRAM_ADDRESS,
      MEMO_V2,
    ]);
    expect(parseSetComputeUnitLimitInstruction(instructions[0]!).data.units).toBe(20_000);
    expect(parseSetComputeUnitPriceInstruction(instructions[1]!).data.microLamports).toBe(1n);
    const transfer = parseTransferCheckedInstruction(instructions[2]!);
    expect(transfer.data.amount).toBe(50_000n);
    expect(transfer.data.decimals).toBe(6);
    expect(transfer.accounts.source).toEqual({
      address: await ata(wallet.address, USDC_DEVNET),
      role: AccountRole.WRITABLE,
    });
    expect(transfer.accounts.mint).toEqual({ address: USDC_DEVNET, role: AccountRole.READONLY });
    expect(transfer.accounts.destination).toEqual({
      address: await ata(payTo, USDC_DEVNET),
      role: AccountRole.WRITABLE,
    });
    expect(transfer.accounts.authority).toEqual({ address: wallet.address, role: AccountRole.READONLY_SIGNER });
    const memo = parseAddMemoInstruction(instructions[3]!).data.memo;
    expect(memo).toMatch(/^[0-9a-f]{32}$/);
    expect(error.payment.memo).toBe(memo);
    // The fee payer appears in no instruction: the facilitator only pays fees.
    expect(instructions.flatMap((i) => (i.accounts ?? []).map((a) => a.address))).not.toContain(feePayer);
  });

  it('uses the quote’s blockhash and memo when it carries them, and echoes them in accepted', async () => {
    const hint = { recentBlockhash: base58Encode(randomBytes(32)), lastValidBlockHeight: '987654', memo: 'invoice-42' };
    const { instance, payloads } = recorder({
      editQuote: (quote) => ({
        ...quote,
        accepts: quote.accepts.map((a) => ({ ...a, extra: { ...a.extra, ...hint } })),
      }),
    });
    await rejection(educationClient(instance, { prepay: false }).education.lesson(lessonArgs));
    const [sentPayload] = payloads();
    expect(sentPayload!.accepted.extra).toEqual({ feePayer, ...hint });
    const { compiled, message } = await decodePayment(sentPayload!.payload.transaction);
    expect(compiled.lifetimeToken).toBe(hint.recentBlockhash);
    expect(parseAddMemoInstruction(message.instructions[3] as never).data.memo).toBe('invoice-42');
    // The quote's blockhash is used as is; the RPC is read only for the checks before signing (chain, balance).
    expect(rpc.calls.filter((m) => m !== 'getGenesisHash' && m !== 'getAccountInfo')).toEqual([]);
  });

  it('makes two payments of the same quote differ (memo nonce)', async () => {
    const { instance, payloads } = recorder();
    const client = educationClient(instance, { prepay: false });
    const errors = await Promise.all([
      rejection(client.education.lesson(lessonArgs)),
      rejection(client.education.lesson(lessonArgs)),
    ]);
    const [a, b] = payloads();
    expect(a!.accepted).toEqual(b!.accepted);
    expect(a!.payload.transaction).not.toBe(b!.payload.transaction);
    const memos = errors.map((e) => e.payment.memo);
    expect(new Set(memos).size).toBe(2);
    const sentMemos = await Promise.all(
      [a, b].map(
        async (p) =>
          parseAddMemoInstruction((await decodePayment(p!.payload.transaction)).message.instructions[3] as never).data
            .memo,
      ),
    );
    expect(sentMemos.sort()).toEqual([...memos].sort());
  });

  it('pays up front once it knows the terms, falls back once when refused, then stops prepaying a route it cannot prepay', async () => {
    const { instance, sent } = recorder();
    const client = educationClient(instance);
    const first = await rejection(client.education.lesson(lessonArgs));
    const second = await rejection(client.education.lesson(lessonArgs));
    const third = await rejection(client.education.lesson(lessonArgs));
    for (const error of [first, second, third]) expect(error).toBeInstanceOf(PaymentRefusedError);
    // call 1: quote then pay; call 2: pay up front, refused, pay the fresh quote once; call 3: quote then pay.
    expect(sent.map((s) => Boolean(s.payment))).toEqual([false, true, true, true, false, true]);
    expect([first.payment.prepaid, second.payment.prepaid, third.payment.prepaid]).toEqual([false, false, false]);
    const prepaid = decodeX402Header(sent[2]!.payment!) as PaymentPayload;
    expect(prepaid.accepted).toEqual({
      scheme: 'exact',
      network: SOLANA_DEVNET,
      amount: '50000',
      asset: USDC_DEVNET,
      payTo: service.context.paywall.payTo,
      maxTimeoutSeconds: 60,
      extra: { feePayer },
    });
    expect(prepaid.resource.url).toBe(`${service.url}/api/lesson`);
    expect(client.payments.receipts).toEqual([]);
    expect(client.payments.remainingUsd()).toBeUndefined();
  });
});

// --- the settle half of the wire, scripted ---

const c = initContract();
const body = z.object({ n: z.number() });
const paidRoute = (path: string, usd: string) => ({
  method: 'POST' as const,
  path,
  body,
  responses: { 200: z.object({ served: z.number() }), ...standardErrors },
  summary: `Paid ${path}`,
  metadata: { payment: fixed(usd) },
});
const shopA = defineService({
  id: 'shop-a',
  title: 'Shop A',
  description: 'Paid fixture routes',
  router: c.router({ item: paidRoute('/api/item', '0.02'), pricey: paidRoute('/api/pricey', '1.5') }),
});
const shopB = defineService({
  id: 'shop-b',
  title: 'Shop B',
  description: 'Another paid fixture',
  router: c.router({ item: paidRoute('/api/b-item', '0.03') }),
});

type Answer = 'settle' | 'refuse' | 'drop' | 'unavailable' | 'pending' | 'free';

/** Quotes each route's price, and answers a payment as the test says (each step used once, the last repeating). */
async function startShop() {
  const state = {
    answers: ['settle'] as Answer[],
    paid: 0,
    asset: USDC_DEVNET,
    payTo: generateWallet().address,
    settled: [] as string[],
    seen: [] as { path: string; payment?: PaymentPayload }[],
  };
  const prices: Record<string, string> = { '/api/item': '20000', '/api/pricey': '1500000', '/api/b-item': '30000' };
  const quoteFor = (path: string, url: string): PaymentRequired => ({
    x402Version: 2,
    error: 'Payment required',
    resource: { url, description: path, mimeType: 'application/json' },
    accepts: [
      {
        scheme: 'exact',
        network: SOLANA_DEVNET,
        amount: prices[path]!,
        asset: state.asset,
        payTo: state.payTo,
        maxTimeoutSeconds: 60,
        extra: { feePayer },
      },
    ],
  });
  const answer402 = (res: ServerResponse, quote: PaymentRequired, code: string, details: unknown) => {
    res.writeHead(402, { 'content-type': 'application/json', [PAYMENT_REQUIRED_HEADER]: encodeX402Header(quote) });
    res.end(JSON.stringify({ error: { code, message: code, details }, requestId: 'req_1' }));
  };
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    await readBody(req);
    const path = req.url!;
    const quote = quoteFor(path, `${url}${path}`);
    const header = req.headers['payment-signature'];
    const payment = typeof header === 'string' ? (decodeX402Header(header) as PaymentPayload) : undefined;
    state.seen.push({ path, ...(payment ? { payment } : {}) });
    if (!payment) return answer402(res, quote, 'payment_required', quote);
    const answer = state.answers[Math.min(state.paid++, state.answers.length - 1)]!;
    if (answer === 'drop') return req.socket.destroy();
    if (answer === 'unavailable') {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '0' });
      return res.end(
        JSON.stringify({
          error: { code: 'facilitator_unavailable', message: 'down; nothing was charged' },
          requestId: 'req_2',
        }),
      );
    }
    if (answer === 'pending') {
      const transaction = base58Encode(randomBytes(64));
      state.settled.push(transaction);
      const receipt = encodeX402Header({
        success: false,
        errorReason: 'settlement_pending',
        transaction,
        network: SOLANA_DEVNET,
      });
      res.writeHead(503, {
        'content-type': 'application/json',
        'retry-after': '5',
        [PAYMENT_RESPONSE_HEADER]: receipt,
      });
      return res.end(
        JSON.stringify({
          error: {
            code: 'settlement_pending',
            message: 'sent, not yet confirmed',
            details: { reason: 'settlement_pending' },
          },
          requestId: 'req_3',
        }),
      );
    }
    if (answer === 'refuse')
      return answer402(res, quote, 'payment_invalid', {
        ...quote,
        reason: 'invalid_exact_svm_payload_transaction_simulation_failed',
      });
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (answer === 'settle') {
      const transaction = base58Encode(randomBytes(64));
      state.settled.push(transaction);
      headers[PAYMENT_RESPONSE_HEADER] = encodeX402Header({
        success: true,
        transaction,
        network: SOLANA_DEVNET,
        payer: wallet.address,
        amount: payment.accepted.amount,
      });
    }
    res.writeHead(200, headers);
    res.end(JSON.stringify({ served: state.paid }));
  });
  const url = await listen(server);
  return { url, state, server };
}

describe('paying through the x402 wire: receipts, spend log, prepay, refusals, unknown outcomes', () => {
  let shop: Awaited<ReturnType<typeof startShop>>;
  beforeAll(async () => {
    shop = await startShop();
  });
  afterAll(() => close(shop.server));
  beforeEach(() => {
    shop.state.answers = ['settle'];
    shop.state.paid = 0;
    shop.state.settled.length = 0;
    shop.state.seen.length = 0;
    shop.state.asset = USDC_DEVNET;
  });

  const clients = (options: PaymentOptions = {}) => {
    const hooked: PaymentReceipt[] = [];
    const payments = createPayments({ rpcUrl: rpc.url, onPayment: (receipt) => hooked.push(receipt), ...options });
    const common = { wallet, payments, maxRetries: 2 };
    return {
      payments,
      hooked,
      a: createServiceClient(shopA, shop.url, common),
      b: createServiceClient(shopB, shop.url, common),
    };
  };
  const paidFlags = () => shop.state.seen.map((s) => Boolean(s.payment));

  it('returns the body, or with withResponse the receipt; logs it and calls onPayment', async () => {
    const { a, payments, hooked } = clients({ prepay: false });
    const started = Date.now();
    const response = await a.item.withResponse({ body: { n: 1 } });
    expect(response.status).toBe(200);
    expect(response.data).toEqual({ served: 1 });
    const receipt = response.payment!;
    expect({ ...receipt, at: undefined }).toEqual({
      service: 'shop-a',
      route: 'POST /api/item',
      amount: '20000',
      amountUsd: '0.02',
      asset: USDC_DEVNET,
      network: SOLANA_DEVNET,
      payTo: shop.state.payTo,
      payer: wallet.address,
      transaction: shop.state.settled[0],
      at: undefined,
      origin: new URL(shop.url).origin,
    });
    expect(Date.parse(receipt.at)).toBeGreaterThanOrEqual(started - 1000);
    expect(await a.item({ body: { n: 2 } })).toEqual({ served: 2 });
    expect(payments.receipts.map((r) => r.transaction)).toEqual(shop.state.settled);
    expect(hooked).toEqual(payments.receipts);
    expect([payments.spentUsd(), payments.spentUsd('shop-a'), payments.spentUsd('shop-b')]).toEqual([
      '0.04',
      '0.04',
      '0',
    ]);
    expect(paidFlags()).toEqual([false, true, false, true]);
  });

  it('prepays a fixed-price route once the service’s terms are known: no 402 round trip', async () => {
    const { a, payments } = clients();
    await a.item({ body: { n: 1 } });
    await a.item({ body: { n: 2 } });
    const prepaid = await a.item.withResponse({ body: { n: 3 } });
    expect(paidFlags()).toEqual([false, true, true, true]);
    expect(prepaid.payment!.transaction).toBe(shop.state.settled[2]);
    expect(shop.state.seen[2]!.payment!.accepted).toEqual(shop.state.seen[1]!.payment!.accepted);
    expect(payments.spentUsd()).toBe('0.06');
    // terms are per service: another service still starts with its quote
    const { b } = { b: createServiceClient(shopB, shop.url, { wallet, payments }) };
    await b.item({ body: { n: 4 } });
    expect(paidFlags().slice(4)).toEqual([false, true]);
  });

  it('falls back once to the quote when an up-front payment is refused; one payment settles', async () => {
    const { a, payments } = clients();
    await a.item({ body: { n: 1 } });
    shop.state.answers = ['settle', 'refuse', 'settle'];
    const response = await a.item.withResponse({ body: { n: 2 } });
    expect(response.payment!.transaction).toBe(shop.state.settled[1]);
    expect(paidFlags()).toEqual([false, true, true, true]);
    expect(payments.receipts).toHaveLength(2);
    expect(payments.spentUsd()).toBe('0.04');
  });

  it('a refused quoted payment is final: PaymentRefusedError with the reason and the fresh quote, paid once', async () => {
    const { a, payments } = clients({ prepay: false });
    shop.state.answers = ['refuse'];
    const error = await rejection(a.item({ body: { n: 1 } }));
    expect(error).toBeInstanceOf(PaymentRefusedError);
    expect([error.code, error.reason, error.status]).toEqual([
      'payment_invalid',
      'invalid_exact_svm_payload_transaction_simulation_failed',
      402,
    ]);
    expect(error.quote.accepts[0].amount).toBe('20000');
    expect(error.payment.requirements.amount).toBe('20000');
    expect(paidFlags()).toEqual([false, true]);
    expect(payments.receipts).toEqual([]);
  });

  it('budgets count settled spend: per service, in total across services', async () => {
    const { a, b, payments } = clients({ maxPerServiceUsd: '0.05', maxTotalUsd: '0.07' });
    await a.item({ body: { n: 1 } });
    await a.item({ body: { n: 2 } });
    expect(payments.remainingUsd('shop-a')).toBe('0.01');
    const perService = await rejection(a.item({ body: { n: 3 } }));
    expect([perService.constructor, perService.limit, perService.limitUsd, perService.remainingUsd]).toEqual([
      BudgetExceededError,
      'perService',
      '0.05',
      '0.01',
    ]);
    await b.item({ body: { n: 4 } });
    expect([payments.spentUsd(), payments.remainingUsd(), payments.remainingUsd('shop-b')]).toEqual(['0.07', '0', '0']);
    const total = await rejection(b.item({ body: { n: 5 } }));
    expect([total.limit, total.limitUsd, total.remainingUsd, total.service]).toEqual(['total', '0.07', '0', 'shop-b']);
    // the refused calls sent no payment: a prepay that would break the budget is not attempted
    expect(shop.state.seen.filter((s) => s.payment)).toHaveLength(3);
  });

  it('caps one call at 1 USD by default; maxPerCallUsd: false lifts the cap', async () => {
    const capped = await rejection(clients().a.pricey({ body: { n: 1 } }));
    expect([capped.constructor, capped.limit, capped.limitUsd, capped.priceUsd]).toEqual([
      BudgetExceededError,
      'perCall',
      '1',
      '1.5',
    ]);
    const { a, payments } = clients({ maxPerCallUsd: false });
    await a.pricey({ body: { n: 2 } });
    expect(payments.spentUsd()).toBe('1.5');
  });

  it('no answer after paying: the outcome is unknown, nothing is re-sent, the money stays held until resolved', async () => {
    const { a, payments } = clients({ prepay: false, maxTotalUsd: '0.05' });
    shop.state.answers = ['drop'];
    const error = await rejection(a.item({ body: { n: 1 } }));
    expect(error).toBeInstanceOf(PaymentOutcomeUnknownError);
    expect(error).not.toBeInstanceOf(ConnectionError);
    expect(error.message).toContain('may have settled');
    expect(paidFlags()).toEqual([false, true]); // maxRetries 2, yet the paid request went once
    const sentTx = shop.state.seen[1]!.payment!.payload.transaction;
    const { transaction } = await decodePayment(sentTx);
    expect(error.payment.payerSignature).toBe(base58Encode(Object.values(transaction.signatures)[1]!));
    expect(error.payment.signedTransaction).toBe(sentTx);
    expect(error.payment.transaction).toBeUndefined();
    expect(payments.pending).toEqual([error.payment]);
    expect(payments.remainingUsd()).toBe('0.03');
    expect(payments.resolve(error.payment, null)).toBeUndefined();
    expect([payments.pending, payments.remainingUsd()]).toEqual([[], '0.05']);

    const again = await rejection(a.item({ body: { n: 2 } }));
    const receipt = payments.resolve(again.payment, 'found-on-chain');
    expect([receipt?.transaction, receipt?.amountUsd, payments.spentUsd(), payments.pending.length]).toEqual([
      'found-on-chain',
      '0.02',
      '0.02',
      0,
    ]);
  });

  it('a settlement still pending: the outcome is unknown, with the transaction the service reported', async () => {
    const { a, payments } = clients({ prepay: false, maxTotalUsd: '0.05' });
    shop.state.answers = ['pending'];
    const error = await rejection(a.item({ body: { n: 1 } }));
    expect(error).toBeInstanceOf(PaymentOutcomeUnknownError);
    expect(error.payment.transaction).toBe(shop.state.settled[0]);
    expect(error.message).toBe(
      `POST /api/item: the payment of 0.02 USD was sent but the service answered 503 settlement_pending; it may have settled, so it is not sent again: check the chain for transaction ${shop.state.settled[0]}`,
    );
    expect(error.cause).toBeInstanceOf(InternalServerError);
    expect(paidFlags()).toEqual([false, true]);
    expect([payments.pending, payments.remainingUsd()]).toEqual([[error.payment], '0.03']);
    expect(payments.resolve(error.payment, error.payment.transaction)?.transaction).toBe(shop.state.settled[0]);
    expect([payments.pending, payments.spentUsd(), payments.remainingUsd()]).toEqual([[], '0.02', '0.03']);
  });

  it('503 after paying: nothing was charged, no retry with the payment, the budget is released', async () => {
    const { a, payments } = clients({ prepay: false, maxTotalUsd: '0.05' });
    shop.state.answers = ['unavailable'];
    const error = await rejection(a.item({ body: { n: 1 } }));
    expect(error).toBeInstanceOf(InternalServerError);
    expect([error.status, error.code]).toEqual([503, 'facilitator_unavailable']);
    expect(paidFlags()).toEqual([false, true]);
    expect([payments.remainingUsd(), payments.receipts.length]).toEqual(['0.05', 0]);
  });

  it('a 2xx without PAYMENT-RESPONSE charged nothing: no receipt', async () => {
    const { a, payments } = clients({ prepay: false });
    shop.state.answers = ['free'];
    const response = await a.item.withResponse({ body: { n: 1 } });
    expect([response.status, response.payment, payments.receipts.length, payments.spentUsd()]).toEqual([
      200,
      undefined,
      0,
      '0',
    ]);
  });

  it('reads another mint over RPC once (Token-2022, 6 decimals) and transfers under its program', async () => {
    const mint = generateWallet().address;
    const data = new Uint8Array(200); // base layout then extension space
    data.set(
      getMintEncoder().encode({
        mintAuthority: null,
        supply: 10n ** 12n,
        decimals: 6,
        isInitialized: true,
        freezeAuthority: null,
      }),
    );
    rpc.accounts.set(mint, { owner: TOKEN_2022, data });
    rpc.accounts.set(await ata(wallet.address, mint, TOKEN_2022), {
      owner: TOKEN_2022,
      data: tokenAccount(mint, wallet.address, 1_000_000n),
    });
    shop.state.asset = mint;
    const { a, payments } = clients({ prepay: false, allowedAssets: [mint] });
    await a.item({ body: { n: 1 } });
    await a.item({ body: { n: 2 } });
    expect(rpc.accountReads.filter((a) => a === mint)).toHaveLength(1);
    const { message } = await decodePayment(shop.state.seen[1]!.payment!.payload.transaction);
    const transfer = parseTransferCheckedInstruction(message.instructions[2] as never);
    expect(message.instructions[2]!.programAddress).toBe(TOKEN_2022);
    expect(transfer.accounts.source.address).toBe(await ata(wallet.address, mint, TOKEN_2022));
    expect(transfer.accounts.destination.address).toBe(await ata(shop.state.payTo, mint, TOKEN_2022));
    expect(payments.receipts.map((r) => r.asset)).toEqual([mint, mint]);
  });

  it('refuses a mint that is not a 6-decimal token, before sending anything', async () => {
    const nine = generateWallet().address;
    const data = getMintEncoder().encode({
      mintAuthority: null,
      supply: 1n,
      decimals: 9,
      isInitialized: true,
      freezeAuthority: null,
    });
    rpc.accounts.set(nine, { owner: TOKEN_PROGRAM_ADDRESS, data: new Uint8Array(data) });
    const missing = generateWallet().address;
    for (const [mint, reason] of [
      [nine, `${nine} has 9 decimals; budgets count only 6-decimal USD stablecoins`],
      [missing, `mint ${missing} does not exist on this chain`],
    ] as const) {
      shop.state.asset = mint;
      shop.state.seen.length = 0;
      const { a, payments } = clients({ allowedAssets: [mint] });
      const error = await rejection(a.item({ body: { n: 1 } }));
      expect(error).toBeInstanceOf(PaymentNotAcceptableError);
      expect(error.reasons).toEqual([reason]);
      expect(paidFlags()).toEqual([false]);
      expect(payments.remainingUsd()).toBeUndefined();
    }
  });
});

describe('wallet loaders', () => {
  let dir: string;
  let key: ReturnType<typeof generateWallet>;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ae-wallet-'));
    key = generateWallet();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('loads a solana-keygen JSON file', async () => {
    const path = join(dir, 'id.json');
    writeFileSync(path, JSON.stringify([...key.secretKey]));
    expect((await walletFromFile(path)).address).toBe(key.address);
  });

  it('refuses a missing file, and a file without a usable key without echoing it', async () => {
    await expect(walletFromFile(join(dir, 'none.json'))).rejects.toThrow(
      `cannot read the wallet file ${join(dir, 'none.json')}: ENOENT`,
    );
    const short = join(dir, 'short.json');
    writeFileSync(short, JSON.stringify([...key.secretKey.subarray(0, 32)]));
    const error = await rejection(walletFromFile(short));
    expect(error.message).toBe(
      `the wallet file ${short} holds no usable key: a Solana secret key has 64 bytes, not 32`,
    );
    const garbage = join(dir, 'garbage.json');
    writeFileSync(garbage, 'not-a-key!');
    expect((await rejection(walletFromFile(garbage))).message).toBe(
      `the wallet file ${garbage} holds no usable key: a secret key must be base58 or a JSON array of bytes`,
    );
  });

  it('loads from an environment variable: base58, JSON array or a file path', async () => {
    const path = join(dir, 'env.json');
    writeFileSync(path, JSON.stringify([...key.secretKey]));
    const saved = process.env.AGENT_ECONOMY_WALLET;
    try {
      for (const value of [base58Encode(key.secretKey), JSON.stringify([...key.secretKey]), path, `  ${path}\n`]) {
        process.env.AGENT_ECONOMY_WALLET = value;
        expect((await walletFromEnv()).address).toBe(key.address);
      }
      process.env.MY_AGENT_KEY = base58Encode(key.secretKey);
      expect((await walletFromEnv('MY_AGENT_KEY')).address).toBe(key.address);
      process.env.AGENT_ECONOMY_WALLET = '';
      await expect(walletFromEnv()).rejects.toThrow('the environment variable AGENT_ECONOMY_WALLET is not set');
      delete process.env.AGENT_ECONOMY_WALLET;
      await expect(walletFromEnv()).rejects.toThrow('the environment variable AGENT_ECONOMY_WALLET is not set');
      const secret = JSON.stringify([...key.secretKey.subarray(0, 63)]);
      process.env.AGENT_ECONOMY_WALLET = secret;
      const error = await rejection(walletFromEnv());
      expect(error.message).toBe('AGENT_ECONOMY_WALLET holds no usable key: a Solana secret key has 64 bytes, not 63');
      process.env.AGENT_ECONOMY_WALLET = join(dir, 'missing.json');
      await expect(walletFromEnv()).rejects.toThrow('ENOENT');
    } finally {
      delete process.env.MY_AGENT_KEY;
      if (saved === undefined) delete process.env.AGENT_ECONOMY_WALLET;
      else process.env.AGENT_ECONOMY_WALLET = saved;
    }
  });

  it('keeps the SDK importable in browsers: no static import of Node modules in its sources', () => {
    const root = fileURLToPath(new URL('../sdk/src', import.meta.url));
    // The command line and the MCP server are Node programs of their own (the package's bin), outside the library.
    const nodeOnly = new Set(['cli', 'mcp'].map((dir) => join(root, dir)));
    const files = (function walk(path: string): string[] {
      if (nodeOnly.has(path)) return [];
      return statSync(path).isDirectory() ? readdirSync(path).flatMap((name) => walk(join(path, name))) : [path];
    })(root);
    for (const file of files)
      expect(readFileSync(file, 'utf8')).not.toMatch(
        /^import[^;]*from '(node:)?(fs|os|path|crypto|http)(\/[a-z]+)?';/m,
      );
  });
});

describe('end to end: the real education service, the facilitator and the local ledger', () => {
  // Imported when the suite runs, as tests/examples.test.ts does, so the tests above do not depend on it.
  let economy: import('./support/economy').Economy;
  beforeAll(async () => {
    economy = await (await import('./support/economy')).startEconomy();
  });
  afterAll(() => economy?.close());

  it('pays a lesson, prepays the next, moves exactly that money on chain, and stops at the budget', async () => {
    const buyer = await walletFromSecretKey(economy.buyer.secretKey);
    const seller = economy.education.context.wallet.address;
    const { instance, sent } = recorder();
    const client = createClient({
      baseUrls: { education: economy.education.url },
      wallet: buyer,
      axios: instance,
      maxRetries: 0,
      payments: { rpcUrl: economy.rpcUrl, maxPerServiceUsd: { education: '0.12' } },
    });
    const first = await client.education.lesson.withResponse(lessonArgs);
    expect([first.status, first.data.title]).toEqual([200, 'Chunking Documents']);
    expect({ ...first.payment, at: undefined }).toEqual({
      service: 'education',
      route: 'POST /api/lesson',
      amount: '50000',
      amountUsd: '0.05',
      asset: USDC_DEVNET,
      network: SOLANA_DEVNET,
      payTo: seller,
      payer: buyer.address,
      transaction: first.payment!.transaction,
      at: undefined,
      origin: new URL(economy.education.url).origin,
      // the service advertises x402 payment-identifier: the call's identifier (tests/sdk-budgets.test.ts)
      paymentId: first.payment!.paymentId,
    });
    const second = await client.education.lesson.withResponse(lessonArgs);
    // the second call paid with its first request: no 402 round trip
    expect(sent.map((s) => Boolean(s.payment))).toEqual([false, true, true]);
    for (const { payment } of [first, second]) expect(economy.ledger.transaction(payment!.transaction)).toBeDefined();
    expect(second.payment!.transaction).not.toBe(first.payment!.transaction);
    expect([economy.ledger.tokenBalance(buyer.address), economy.ledger.tokenBalance(seller)]).toEqual([
      9_900_000n,
      100_000n,
    ]);
    expect([client.payments.spentUsd(), client.payments.remainingUsd('education')]).toEqual(['0.1', '0.02']);

    const over = await Promise.allSettled([
      client.education.lesson(lessonArgs),
      client.education.tutor({ body: { question: 'How should chunk overlap be chosen?' } }),
    ]);
    expect(
      over.map((r) => [
        (r as PromiseRejectedResult).reason.constructor,
        (r as PromiseRejectedResult).reason.remainingUsd,
      ]),
    ).toEqual([
      [BudgetExceededError, '0.02'],
      [BudgetExceededError, '0.02'],
    ]);
    expect(sent.slice(3).map((s) => Boolean(s.payment))).toEqual([false, false]);
    expect(economy.ledger.tokenBalance(buyer.address)).toBe(9_900_000n);
  });

  it('a blockhash read that expired meanwhile is read again: the refused payment is built once more, nothing lost', async () => {
    const buyer = await walletFromSecretKey(economy.buyer.secretKey);
    const seller = economy.education.context.wallet.address;
    const before = [economy.ledger.tokenBalance(buyer.address), economy.ledger.tokenBalance(seller)];
    // One client prepays, one pays only on the 402's quote: both share one blockhash read for 2 s.
    for (const prepay of [true, false]) {
      const { instance, sent, payloads } = recorder();
      const client = createClient({
        baseUrls: { education: economy.education.url },
        wallet: buyer,
        axios: instance,
        maxRetries: 0,
        payments: { rpcUrl: economy.rpcUrl, prepay },
      });
      await client.education.lesson(lessonArgs);
      // The chain moves past the blockhash's 150 slots before the next call, well within the 2 s of reuse.
      economy.ledger.warp(200);
      const second = await client.education.lesson.withResponse(lessonArgs);
      expect(second.status).toBe(200);
      // The stale payment (prepaid or quoted) was refused, the fresh one settled; the blockhashes differ.
      expect(sent.map((s) => Boolean(s.payment))).toEqual(
        prepay ? [false, true, true, true] : [false, true, false, true, true],
      );
      const hashes = await Promise.all(
        payloads().map(async (p) => (await decodePayment(p.payload.transaction)).compiled.lifetimeToken),
      );
      expect(hashes[hashes.length - 1]).not.toBe(hashes[hashes.length - 2]);
      expect(client.payments.receipts.map((r) => r.amount)).toEqual(['50000', '50000']);
      if (prepay) {
        // A refusal for an expired blockhash does not stop the route's prepaying.
        await client.education.lesson(lessonArgs);
        expect(sent.slice(-1).map((s) => Boolean(s.payment))).toEqual([true]);
      }
    }
    // Five lessons settled: two per client and the third prepaid one.
    expect([economy.ledger.tokenBalance(buyer.address), economy.ledger.tokenBalance(seller)]).toEqual([
      before[0]! - 250_000n,
      before[1]! + 250_000n,
    ]);
  });

  it('a service that says the blockhash expired when it did not is not paid again: the chain is asked first', async () => {
    const buyer = await walletFromSecretKey(economy.buyer.secretKey);
    const before = economy.ledger.tokenBalance(buyer.address);
    const { instance, sent } = recorder();
    // The lie: the service settled the payment, then answers as if it had been refused for an expired blockhash.
    instance.interceptors.response.use((response) => {
      if (!AxiosHeaders.from(response.config.headers).get('payment-signature') || response.status !== 200)
        return response;
      const quote = { x402Version: 2, accepts: [], resource: { url: response.config.url! } };
      response.status = 402;
      response.headers = { [PAYMENT_REQUIRED_HEADER]: encodeX402Header(quote) } as never;
      response.data = JSON.stringify({
        error: {
          code: 'payment_invalid',
          message: 'the blockhash expired',
          details: { reason: 'invalid_exact_svm_blockhash_expired' },
        },
        requestId: 'req_lie',
      });
      return response;
    });
    const client = createClient({
      baseUrls: { education: economy.education.url },
      wallet: buyer,
      axios: instance,
      maxRetries: 0,
      payments: { rpcUrl: economy.rpcUrl, prepay: false },
    });
    const error = await rejection(client.education.lesson(lessonArgs));
    expect([error.constructor, (error as PaymentRefusedError).reason]).toEqual([
      PaymentRefusedError,
      'invalid_exact_svm_blockhash_expired',
    ]);
    // One payment went out and landed; none was built again.
    expect(sent.map((s) => Boolean(s.payment))).toEqual([false, true]);
    expect(economy.ledger.tokenBalance(buyer.address)).toBe(before - 50_000n);
  });

  it('a wallet without funds: refused before signing (InsufficientFundsError), nothing sent, nothing moves', async () => {
    const broke = await walletFromSecretKey(generateWallet().secretKey);
    const seller = economy.education.context.wallet.address;
    const before = economy.ledger.tokenBalance(seller);
    const { instance, payloads } = recorder();
    const client = createClient({
      baseUrls: { education: economy.education.url },
      wallet: broke,
      axios: instance,
      maxRetries: 0,
      payments: { rpcUrl: economy.rpcUrl },
    });
    const error = await rejection(client.education.lesson(lessonArgs));
    expect(error).toBeInstanceOf(InsufficientFundsError);
    expect([error.address, error.asset, error.needed, error.held, error.hasTokenAccount]).toEqual([
      broke.address,
      USDC_DEVNET,
      '50000',
      '0',
      false,
    ]);
    expect(payloads()).toHaveLength(0);
    expect([client.payments.receipts, client.payments.spentUsd(), economy.ledger.tokenBalance(seller)]).toEqual([
      [],
      '0',
      before,
    ]);
  });
});
