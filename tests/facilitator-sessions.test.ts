import {
  SOLANA_DEVNET,
  USDC_DEVNET,
  base58Decode,
  base58Encode,
  renewedByOnboarding,
  type MppOpenSessionInput,
  type SmartWalletOnboarding,
} from '@agent-economy/contracts';
import {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  NotFoundError,
  InternalServerError,
  PermissionDeniedError,
  RateLimitError,
  UnprocessableEntityError,
  createClient,
  walletFromSecretKey,
} from '@agent-economy/sdk';
import { getCloseAccountInstruction, getRevokeInstruction } from '@solana-program/token';
import { sendInstructions } from '../servers/src/solana/send';
import {
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  createNoopSigner,
  createSolanaRpc,
  createTransactionMessage,
  getBase64Decoder,
  getTransactionDecoder,
  getTransactionEncoder,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Base64EncodedWireTransaction,
} from '@solana/kit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TOKEN_PROGRAM, MEMO_PROGRAM } from '../servers/src/solana/programs';
import { generateWallet, signEd25519, verifyEd25519, type Wallet } from '../servers/src/solana/keys';
import { createFacilitatorApp } from '../servers/src/services/facilitator';
import { ata } from './support/payments';
import { startEconomy, type Economy } from './support/economy';
import { listenLocal, startService, type RunningService } from './support/servers';

// Payment sessions and onboarding against the local ledger: a buyer onboards (an SPL Token delegation the
// chain shows), opens a session with a seller, pays by vouchers for cumulative amounts, and a close moves
// exactly the accepted amount once; every refusal answers its code and changes nothing.

let economy: Economy;
let rpc: ReturnType<typeof createSolanaRpc>;
let seller: Wallet;

type FacilitatorClient = ReturnType<typeof createClient>['facilitator'];
const clients = new Map<string, FacilitatorClient>();

/** The facilitator as `wallet` (signed in with SIGN-IN-WITH-X by the SDK), or anonymous. */
async function as(wallet?: Wallet, url = economy.facilitator.url): Promise<FacilitatorClient> {
  const key = `${wallet?.address ?? 'anonymous'}@${url}`;
  if (!clients.has(key)) {
    const signer = wallet ? await walletFromSecretKey(wallet.secretKey) : undefined;
    clients.set(
      key,
      createClient({ baseUrls: { facilitator: url }, ...(signer ? { wallet: signer } : {}), maxRetries: 0 })
        .facilitator,
    );
  }
  return clients.get(key)!;
}

/**
 * A transaction signed in `wallet`'s slot (by `signer`, the wallet itself unless a forger), every other slot as it
 * came.
 */
function sign(transaction: string, wallet: Wallet, signer: Wallet = wallet): string {
  const tx = getTransactionDecoder().decode(Buffer.from(transaction, 'base64'));
  const signatures = { ...tx.signatures, [wallet.address]: signEd25519(signer, new Uint8Array(tx.messageBytes)) };
  return getBase64Decoder().decode(getTransactionEncoder().encode({ ...tx, signatures: signatures as never }));
}

/** The buyer's stablecoin account as the chain's jsonParsed view shows it. */
async function tokenAccount(
  owner: string,
): Promise<{ delegate?: string; delegatedAmount?: { amount: string }; tokenAmount: { amount: string } } | null> {
  const { value } = await rpc.getAccountInfo(address(ata(owner, USDC_DEVNET)), { encoding: 'jsonParsed' }).send();
  if (!value) return null;
  return (value.data as unknown as { parsed: { info: never } }).parsed.info;
}

async function onboard(buyer: Wallet, spendLimitAtomic = '5000000', ttlSeconds = 3600, url?: string) {
  const client = await as(buyer, url);
  const started = await client.onboard({
    body: { buyerWallet: buyer.address, network: 'devnet', spendLimitAtomic, ttlSeconds },
  });
  if (started.status === 'ready') return { started, confirmed: undefined };
  const confirmed = await client.confirmOnboarding({
    body: {
      buyerWallet: buyer.address,
      network: 'devnet',
      signedTransactions: started.transactions.map((t) => sign(t.transaction, buyer)),
    },
  });
  return { started, confirmed };
}

/** A buyer holding `usd` atomic units of the stablecoin. */
async function fundedBuyer(atomic = 2_000_000n): Promise<Wallet> {
  const buyer = generateWallet();
  await economy.ledger.mintTo(buyer.address, atomic);
  return buyer;
}

function openBody(buyer: Wallet, sessionKey: Wallet, extra: Partial<MppOpenSessionInput> = {}): MppOpenSessionInput {
  return {
    buyerWallet: buyer.address,
    sellerWallet: seller.address,
    depositAtomic: '1000000',
    sessionKey: sessionKey.address,
    network: 'devnet',
    ...extra,
  };
}

/** The request the buyer's session key signs, its JSON written out with keys in sorted order. */
function voucherRequest(
  key: Wallet,
  channelId: string,
  cumulativeAmount: string,
  units = 1,
  extra: { meter?: string; serverNonce?: string } = {},
) {
  const json =
    `{"channelId":${JSON.stringify(channelId)},"cumulativeAmount":${JSON.stringify(cumulativeAmount)}` +
    (extra.meter !== undefined ? `,"meter":${JSON.stringify(extra.meter)}` : '') +
    (extra.serverNonce !== undefined ? `,"serverNonce":${JSON.stringify(extra.serverNonce)}` : '') +
    `,"units":${units}}`;
  const signature = base58Encode(
    signEd25519(key, new TextEncoder().encode(`solana-mpp-session-voucher-request-v1:${json}`)),
  );
  return { channelId, cumulativeAmount, units, ...extra, signer: key.address, signature };
}

/** Sorted-key JSON, written independently of the server's, to check the voucher signature. */
function sortedJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const keys = Object.keys(value as object).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${sortedJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function expectError(
  promise: Promise<unknown>,
  type: new (...args: never[]) => Error,
  code: string,
): Promise<any> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const error: any = await promise.catch((e) => e);
  expect(error, String(error)).toBeInstanceOf(type);
  expect(error.code, String(error.body ? JSON.stringify(error.body) : error)).toBe(code);
  return error;
}

const sessionRows = () => economy.facilitator.database.db.selectFrom('facilitator_sessions').selectAll().execute();
const settlementRows = () =>
  economy.facilitator.database.db
    .selectFrom('facilitator_settlements')
    .selectAll()
    .where('kind', '=', 'session')
    .execute();

beforeAll(async () => {
  economy = await startEconomy();
  rpc = createSolanaRpc(economy.rpcUrl);
  seller = generateWallet();
  await economy.ledger.openTokenAccount(seller.address);
  economy.sellers.add(seller.address);
});
afterAll(async () => {
  await economy?.close();
});

describe('onboarding', () => {
  it('makes the fee payer the close authority of a wallet it creates, so its owner cannot close it and keep the rent', async () => {
    const buyer = generateWallet();
    expect(await tokenAccount(buyer.address)).toBeNull();
    const { started, confirmed } = await onboard(buyer, '1000');
    expect(started.transactions.map((t) => t.type)).toEqual(['create_wallet', 'grant_role']);
    expect(confirmed?.status).toBe('ready');
    expect(await tokenAccount(buyer.address)).toMatchObject({
      closeAuthority: economy.feePayer.address,
      tokenAmount: { amount: '0' },
    });
    // The owner (with SOL of its own for the fee) tries to close it to itself: the token program refuses.
    await economy.ledger.airdrop(buyer.address, 100_000_000n);
    const close = getCloseAccountInstruction({
      account: address(ata(buyer.address, USDC_DEVNET)),
      destination: address(buyer.address),
      owner: address(buyer.address),
    });
    await expect(sendInstructions(rpc, [buyer], [close])).rejects.toThrow();
    expect(await tokenAccount(buyer.address)).not.toBeNull();
  });

  let confirmation: SmartWalletOnboarding & { signatures: string[] };
  let signedGrant: string;

  it('grants a delegation the chain shows: delegate and delegated amount on the buyer’s token account', async () => {
    const buyer = economy.buyer;
    const client = await as(buyer);
    expect(await client.onboardingStatus({ query: { wallet: buyer.address, network: 'devnet' } })).toMatchObject({
      status: 'not_onboarded',
      smartWallet: null,
      roleId: null,
      openSessions: 0,
      chainId: SOLANA_DEVNET,
    });

    const started = await client.onboard({
      body: { buyerWallet: buyer.address, network: 'devnet', spendLimitAtomic: '5000000', ttlSeconds: 3600 },
    });
    expect(started).toMatchObject({
      status: 'transactions_required',
      buyerWallet: buyer.address,
      network: 'devnet',
      chainId: SOLANA_DEVNET,
      smartWallet: ata(buyer.address, USDC_DEVNET),
      role: {
        roleId: null,
        spendLimitAtomic: '5000000',
        ttlSeconds: 3600,
        asset: USDC_DEVNET,
        programs: [TOKEN_PROGRAM],
        expiresAt: null,
      },
    });
    // The buyer already holds the stablecoin: only the grant is needed, with the facilitator as fee payer.
    expect(started.transactions.map((t) => t.type)).toEqual(['grant_role']);
    const decoded = getTransactionDecoder().decode(Buffer.from(started.transactions[0]!.transaction, 'base64'));
    expect(Object.keys(decoded.signatures)).toEqual([economy.feePayer.address, buyer.address]);
    expect(started.role.delegate).not.toBe(economy.feePayer.address);
    expect(Date.parse(started.transactionsExpireAt!)).toBeGreaterThan(Date.now());
    expect((await client.onboardingStatus({ query: { wallet: buyer.address, network: 'devnet' } })).status).toBe(
      'pending',
    );

    const feesBefore = economy.ledger.lamports(economy.feePayer.address);
    signedGrant = sign(started.transactions[0]!.transaction, buyer);
    confirmation = await client.confirmOnboarding({
      body: { buyerWallet: buyer.address, network: 'devnet', signedTransactions: [signedGrant] },
    });
    expect(confirmation).toMatchObject({
      status: 'ready',
      transactions: [],
      transactionsExpireAt: null,
      role: { roleId: 1, spendLimitAtomic: '5000000', spendLimitRemaining: '5000000' },
    });
    expect(confirmation.signatures).toHaveLength(1);
    expect(economy.ledger.lamports(economy.feePayer.address)).toBeLessThan(feesBefore);

    const account = await tokenAccount(buyer.address);
    expect(account?.delegate).toBe(started.role.delegate);
    expect(account?.delegatedAmount?.amount).toBe('5000000');
    const { value } = await rpc.getSignatureStatuses([confirmation.signatures[0] as never]).send();
    expect(value[0]?.err).toBeNull();

    const status = await client.onboardingStatus({ query: { wallet: buyer.address, network: 'devnet' } });
    expect(status).toMatchObject({
      status: 'active',
      smartWallet: ata(buyer.address, USDC_DEVNET),
      roleId: 1,
      spendLimitAtomic: '5000000',
      spendLimitRemaining: '5000000',
      roleExpiresAt: confirmation.role.expiresAt,
    });
    expect(Date.parse(status.roleExpiresAt!) - Date.now()).toBeGreaterThan(3500_000);
  });

  it('answers ready for the same limits, and recognises transactions already confirmed', async () => {
    const buyer = economy.buyer;
    const client = await as(buyer);
    const again = await client.onboard({
      body: { buyerWallet: buyer.address, network: 'devnet', spendLimitAtomic: '5000000', ttlSeconds: 3600 },
    });
    expect(again).toMatchObject({ status: 'ready', transactions: [], role: { roleId: 1 } });
    const repeat = await client.confirmOnboarding({
      body: { buyerWallet: buyer.address, network: 'devnet', signedTransactions: [signedGrant] },
    });
    expect(repeat).toMatchObject({ status: 'ready', signatures: confirmation.signatures, role: { roleId: 1 } });
    expect((await tokenAccount(buyer.address))?.delegatedAmount?.amount).toBe('5000000');
  });

  it('creates the wallet first when the buyer has none, and accepts the other client’s field spellings', async () => {
    const buyer = generateWallet();
    const client = await as(buyer);
    expect(await tokenAccount(buyer.address)).toBeNull();
    const started = await client.onboard({
      body: {
        buyer_wallet: buyer.address,
        network: 'solana-devnet',
        spend_limit_atomic: '700000',
        ttl_seconds: 600,
      } as never,
    });
    expect(started.transactions.map((t) => t.type)).toEqual(['create_wallet', 'grant_role']);
    const confirmed = await client.confirmOnboarding({
      body: {
        buyer_wallet: buyer.address,
        network: SOLANA_DEVNET,
        signed_transactions: started.transactions.map((t) => sign(t.transaction, buyer)),
      } as never,
    });
    expect(confirmed).toMatchObject({
      status: 'ready',
      role: { roleId: 1, spendLimitAtomic: '700000', ttlSeconds: 600 },
    });
    expect(confirmed.signatures).toHaveLength(2);
    const account = await tokenAccount(buyer.address);
    expect(account).toMatchObject({
      delegate: started.role.delegate,
      delegatedAmount: { amount: '700000' },
      tokenAmount: { amount: '0' },
    });
    expect(
      (await client.onboardingStatus({ query: { buyer_wallet: buyer.address, network: 'devnet' } as never })).status,
    ).toBe('active');
  });

  it('renews the role with new limits as the next role id', async () => {
    const buyer = await fundedBuyer();
    await onboard(buyer, '300000');
    const { confirmed } = await onboard(buyer, '400000');
    expect(confirmed).toMatchObject({ status: 'ready', role: { roleId: 2, spendLimitAtomic: '400000' } });
    expect((await tokenAccount(buyer.address))?.delegatedAmount?.amount).toBe('400000');
  });

  it('grants a spent role afresh on the same terms once it can move less than half its limit', async () => {
    const buyer = await fundedBuyer();
    await onboard(buyer, '400000');
    const client = await as(buyer);
    // 150000 settled: 250000 left of 400000, more than half: asking again on the same terms changes nothing.
    const spend = async (amount: string) => {
      const key = generateWallet();
      const { channelId } = await client.openSession({ body: openBody(buyer, key, { depositAtomic: amount }) });
      await client.signVoucher({ body: voucherRequest(key, channelId, amount) });
      await (await as(seller)).closeSession({ body: { channelId } });
    };
    await spend('150000');
    expect((await onboard(buyer, '400000')).started).toMatchObject({ status: 'ready', role: { roleId: 1 } });
    expect((await tokenAccount(buyer.address))?.delegatedAmount?.amount).toBe('250000');
    // Another 100000: 150000 left, under half. A deposit of 200000 is refused for the role, and the same onboarding
    // now asks the buyer to sign the grant again, back to the full limit.
    await spend('100000');
    const short = await expectError(
      client.openSession({ body: openBody(buyer, generateWallet(), { depositAtomic: '200000' }) }),
      UnprocessableEntityError,
      'insufficient_balance',
    );
    expect(short.details).toMatchObject({ reason: 'spend_limit', available: '150000' });
    const { started, confirmed } = await onboard(buyer, '400000');
    expect(started.transactions.map((t) => t.type)).toEqual(['grant_role']);
    expect(confirmed).toMatchObject({ status: 'ready', role: { roleId: 2, spendLimitAtomic: '400000' } });
    expect((await tokenAccount(buyer.address))?.delegatedAmount?.amount).toBe('400000');
    const reopened = await client.openSession({ body: openBody(buyer, generateWallet(), { depositAtomic: '200000' }) });
    expect(reopened).toMatchObject({ state: 'open', depositAtomic: '200000', roleId: 2 });
  });

  it('tells a role spent to its limit (the chain drops its delegate) from a revoked one, and renews it', async () => {
    const buyer = await fundedBuyer();
    await onboard(buyer, '100000');
    const client = await as(buyer);
    const key = generateWallet();
    const { channelId } = await client.openSession({ body: openBody(buyer, key, { depositAtomic: '100000' }) });
    await client.signVoucher({ body: voucherRequest(key, channelId, '100000') });
    await (await as(seller)).closeSession({ body: { channelId } });
    // Nothing left to move: the token program has cleared the delegate, which is not the buyer revoking it.
    expect((await tokenAccount(buyer.address))?.delegate).toBeUndefined();
    const spent = await expectError(
      client.openSession({ body: openBody(buyer, generateWallet(), { depositAtomic: '50000' }) }),
      UnprocessableEntityError,
      'wallet_role_not_found',
    );
    expect(spent.details.reason).toBe('spent');
    expect(spent.message).toContain('onboard again');
    const { started } = await onboard(buyer, '100000');
    expect(started.transactions.map((t) => t.type)).toEqual(['grant_role']);
    await client.openSession({ body: openBody(buyer, generateWallet(), { depositAtomic: '50000' }) });
  });

  it('confirms only the transactions it issued, unaltered and signed, in a live round', async () => {
    const buyer = await fundedBuyer();
    const client = await as(buyer);
    const confirm = (signedTransactions: string[]) =>
      client.confirmOnboarding({ body: { buyerWallet: buyer.address, network: 'devnet', signedTransactions } });

    // Nothing issued yet.
    const other = await fundedBuyer();
    const foreign = await (
      await as(other)
    ).onboard({ body: { buyerWallet: other.address, network: 'devnet', spendLimitAtomic: '1000', ttlSeconds: 600 } });
    await expectError(
      confirm([sign(foreign.transactions[0]!.transaction, buyer)]),
      NotFoundError,
      'onboarding_not_found',
    );

    const first = await client.onboard({
      body: { buyerWallet: buyer.address, network: 'devnet', spendLimitAtomic: '1000', ttlSeconds: 600 },
    });
    const round = await client.onboard({
      body: { buyerWallet: buyer.address, network: 'devnet', spendLimitAtomic: '2000', ttlSeconds: 600 },
    });
    const issued = round.transactions[0]!.transaction;

    // Altered: one byte of the message changed (in its memo), then signed by the buyer.
    const bytes = Buffer.from(issued, 'base64');
    bytes[bytes.length - 5] = bytes[bytes.length - 5]! ^ 1;
    const altered = await expectError(
      confirm([sign(bytes.toString('base64'), buyer)]),
      UnprocessableEntityError,
      'invalid_transaction',
    );
    expect(altered.details).toMatchObject({ index: 0, reason: 'not_issued' });
    // Issued to another wallet.
    expect(
      (
        await expectError(
          confirm([sign(foreign.transactions[0]!.transaction, other)]),
          UnprocessableEntityError,
          'invalid_transaction',
        )
      ).details.reason,
    ).toBe('not_issued');
    // Not signed, or signed by someone else.
    expect((await expectError(confirm([issued]), UnprocessableEntityError, 'invalid_transaction')).details.reason).toBe(
      'not_signed',
    );
    expect(
      (await expectError(confirm([sign(issued, buyer, other)]), UnprocessableEntityError, 'invalid_transaction'))
        .details.reason,
    ).toBe('not_signed');
    // From the round the second call replaced.
    expect(
      (
        await expectError(
          confirm([sign(first.transactions[0]!.transaction, buyer)]),
          UnprocessableEntityError,
          'invalid_transaction',
        )
      ).details.reason,
    ).toBe('superseded');
    // Nothing of that reached the chain.
    expect((await tokenAccount(buyer.address))?.delegate).toBeUndefined();

    // Too late: the blockhash expired.
    economy.ledger.warp(200);
    await expectError(confirm([sign(issued, buyer)]), ConflictError, 'blockhash_expired');
    expect((await tokenAccount(buyer.address))?.delegate).toBeUndefined();
    // A fresh round goes through.
    expect((await onboard(buyer, '2000', 600)).confirmed?.status).toBe('ready');
  });

  it('refuses a network it does not serve, and the facilitator’s own keys', async () => {
    const buyer = await fundedBuyer();
    const client = await as(buyer);
    const error = await expectError(
      client.onboard({ body: { buyerWallet: buyer.address, network: 'mainnet-beta' } }),
      UnprocessableEntityError,
      'unsupported_network',
    );
    expect(error.details.supported).toEqual(['devnet']);
    // Without a network, the facilitator's own cluster is meant (the spec's mainnet-beta default would be refused
    // here).
    expect(await client.onboardingStatus({ query: { wallet: buyer.address } })).toMatchObject({
      network: 'devnet',
      status: 'not_onboarded',
    });
    await expectError(
      client.onboardingStatus({ query: { wallet: buyer.address, network: 'mainnet-beta' } }),
      UnprocessableEntityError,
      'unsupported_network',
    );
    const own = await as(economy.feePayer);
    expect(
      (
        await expectError(
          own.onboard({ body: { buyerWallet: economy.feePayer.address, network: 'devnet' } }),
          UnprocessableEntityError,
          'not_eligible',
        )
      ).details.reason,
    ).toBe('facilitator_key');
  });
});

describe('SIGN-IN-WITH-X', () => {
  it('is required on onboarding, open and close; the named wallet must be the proven one', async () => {
    const anonymous = await as();
    const buyer = economy.buyer;
    const stranger = await as(generateWallet());
    const body = { buyerWallet: buyer.address, network: 'devnet' as const };
    await expectError(anonymous.onboard({ body }), AuthenticationError, 'siwx_invalid');
    await expectError(
      anonymous.confirmOnboarding({ body: { ...body, signedTransactions: ['AAAA'] } }),
      AuthenticationError,
      'siwx_invalid',
    );
    await expectError(
      anonymous.onboardingStatus({ query: { wallet: buyer.address, network: 'devnet' } }),
      AuthenticationError,
      'siwx_invalid',
    );
    await expectError(
      anonymous.openSession({ body: openBody(buyer, generateWallet()) }),
      AuthenticationError,
      'siwx_invalid',
    );
    await expectError(
      anonymous.closeSession({ body: { channelId: 'chn_AAAAAAAAAAAAAAAAAAAAAAAA' } }),
      AuthenticationError,
      'siwx_invalid',
    );

    await expectError(stranger.onboard({ body }), PermissionDeniedError, 'wallet_mismatch');
    await expectError(
      stranger.confirmOnboarding({ body: { ...body, signedTransactions: ['AAAA'] } }),
      PermissionDeniedError,
      'wallet_mismatch',
    );
    await expectError(
      stranger.onboardingStatus({ query: { wallet: buyer.address, network: 'devnet' } }),
      PermissionDeniedError,
      'wallet_mismatch',
    );
    const before = (await sessionRows()).length;
    await expectError(
      stranger.openSession({ body: openBody(buyer, generateWallet()) }),
      PermissionDeniedError,
      'wallet_mismatch',
    );
    expect(await sessionRows()).toHaveLength(before);
  });
});

describe('payment sessions', () => {
  it('open -> vouchers -> close moves exactly the cumulative amount to the seller, once', async () => {
    const buyer = economy.buyer;
    const key = generateWallet();
    const client = await as(buyer);
    const sellerClient = await as(seller);
    const balances = () => ({
      buyer: economy.ledger.tokenBalance(buyer.address),
      seller: economy.ledger.tokenBalance(seller.address),
    });
    const delegatedBefore = BigInt((await tokenAccount(buyer.address))!.delegatedAmount!.amount);
    const before = balances();

    const session = await client.openSession({
      body: openBody(buyer, key, { pricePerUnit: '1000', idleTimeoutSeconds: 600, metadata: { order: '42' } }),
    });
    expect(session).toMatchObject({
      success: true,
      ok: true,
      state: 'open',
      buyerWallet: buyer.address,
      smartWallet: ata(buyer.address, USDC_DEVNET),
      sellerWallet: seller.address,
      sessionKey: key.address,
      depositAtomic: '1000000',
      acceptedCumulative: '0',
      remainingAtomic: '1000000',
      pricePerUnit: '1000',
      asset: USDC_DEVNET,
      network: SOLANA_DEVNET,
      channelProgram: TOKEN_PROGRAM,
      roleId: 1,
      idleTimeoutSeconds: 600,
    });
    expect(session.channelId).toMatch(/^chn_[A-Za-z0-9]{24}$/);
    expect(Date.parse(session.expiresAt) - Date.parse(session.openedAt)).toBe(600_000);
    // Nothing moves at open; the deposit is reserved from the role.
    expect(balances()).toEqual(before);
    expect(
      (await client.onboardingStatus({ query: { wallet: buyer.address, network: 'devnet' } })).spendLimitRemaining,
    ).toBe((delegatedBefore - 1_000_000n).toString());

    const channel = session.channelId;
    const first = await client.signVoucher({
      body: voucherRequest(key, channel, '3000', 1, { meter: 'requests', serverNonce: 'req_1' }),
    });
    expect(first).toMatchObject({
      success: true,
      signer: session.voucherSigner,
      signatureType: 'ed25519',
      acceptedCumulative: '3000',
      deltaAtomic: '3000',
      remainingAtomic: '997000',
      voucher: {
        channelId: channel,
        payer: buyer.address,
        recipient: seller.address,
        cumulativeAmount: '3000',
        sequence: 1,
        units: 1,
        meter: 'requests',
        serverNonce: 'req_1',
        pricePerUnit: '1000',
        chainId: SOLANA_DEVNET,
        channelProgram: TOKEN_PROGRAM,
      },
    });
    // The seller checks the voucher: signed by the channel's signer over the sorted JSON.
    const signedBytes = new TextEncoder().encode(`solana-mpp-session-voucher-v1:${sortedJson(first.voucher)}`);
    expect(verifyEd25519(base58Decode(session.voucherSigner)!, signedBytes, base58Decode(first.signature)!)).toBe(true);

    // The other client's spellings: amount for cumulativeAmount, channel_id, server_nonce.
    const second = voucherRequest(key, channel, '5000', 2, { serverNonce: 'req_2' });
    const secondVoucher = await client.signVoucher({
      body: {
        channel_id: channel,
        amount: '5000',
        units: 2,
        server_nonce: 'req_2',
        signer: key.address,
        signature: second.signature,
      } as never,
    });
    expect(secondVoucher).toMatchObject({
      acceptedCumulative: '5000',
      deltaAtomic: '2000',
      voucher: { sequence: 2, units: 2 },
    });
    expect(secondVoucher.signer).toBe(first.signer);
    // A retry of the same request: the same voucher, not a new one.
    const retry = await client.signVoucher({ body: second });
    expect(retry.voucher).toEqual(secondVoucher.voucher);
    expect(retry.signature).toBe(secondVoucher.signature);

    // Refusals, each with its code; none changes the session.
    await expectError(
      client.signVoucher({ body: voucherRequest(key, channel, '5000', 1, { serverNonce: 'other' }) }),
      ConflictError,
      'amount_not_monotonic',
    );
    const lower = await expectError(
      client.signVoucher({ body: voucherRequest(key, channel, '4000') }),
      ConflictError,
      'amount_not_monotonic',
    );
    expect(lower.details.acceptedCumulative).toBe('5000');
    const under = await expectError(
      client.signVoucher({ body: voucherRequest(key, channel, '7000', 3) }),
      UnprocessableEntityError,
      'underpayment',
    );
    expect(under.details.minimum).toBe('3000');
    const over = await expectError(
      client.signVoucher({ body: voucherRequest(key, channel, '1000001') }),
      UnprocessableEntityError,
      'insufficient_balance',
    );
    expect(over.details).toMatchObject({ reason: 'deposit', available: '1000000' });
    const intruder = generateWallet();
    await expectError(
      client.signVoucher({ body: voucherRequest(intruder, channel, '9000') }),
      PermissionDeniedError,
      'signer_mismatch',
    );
    const forged = { ...voucherRequest(key, channel, '9000'), cumulativeAmount: '90000' };
    await expectError(client.signVoucher({ body: forged }), AuthenticationError, 'voucher_signature_invalid');
    await expectError(
      client.signVoucher({ body: voucherRequest(key, 'chn_AAAAAAAAAAAAAAAAAAAAAAAA', '9000') }),
      NotFoundError,
      'session_not_found',
    );
    await expectError(
      (await as(generateWallet())).closeSession({ body: { channelId: channel } }),
      PermissionDeniedError,
      'not_session_party',
    );
    const row = (await sessionRows()).find((r) => r.channel_id === channel)!;
    expect(row).toMatchObject({ state: 'open', accepted: 5000n, sequence: 2 });

    // The seller closes: one TransferChecked by the delegate, for exactly 5000.
    const closed = await sellerClient.closeSession({ body: { channelId: channel } });
    expect(closed).toMatchObject({
      success: true,
      state: 'closed',
      closedBy: 'seller',
      settlement: {
        seller: seller.address,
        buyer: buyer.address,
        amountSettled: '5000',
        buyerRefund: '995000',
        voucherCount: 2,
        network: SOLANA_DEVNET,
        asset: USDC_DEVNET,
      },
    });
    expect(balances()).toEqual({ buyer: before.buyer - 5000n, seller: before.seller + 5000n });
    expect((await tokenAccount(buyer.address))?.delegatedAmount?.amount).toBe((delegatedBefore - 5000n).toString());
    const value = await rpc
      .getTransaction(closed.settlement.signature as never, {
        encoding: 'jsonParsed',
        maxSupportedTransactionVersion: 0,
        commitment: 'confirmed',
      })
      .send();
    const instructions = value!.transaction.message.instructions as unknown as {
      programId: string;
      parsed?: { type: string; info: Record<string, unknown> };
    }[];
    const transfer = instructions.find((ix) => ix.parsed?.type === 'transferChecked')!;
    expect(transfer.parsed!.info).toMatchObject({
      source: ata(buyer.address, USDC_DEVNET),
      destination: ata(seller.address, USDC_DEVNET),
      tokenAmount: { amount: '5000' },
    });
    expect(transfer.parsed!.info.authority).toBe((await tokenAccount(buyer.address))?.delegate);
    expect(instructions.some((ix) => ix.programId === MEMO_PROGRAM)).toBe(true);

    const settlements = (await settlementRows()).filter((r) => r.transaction === closed.settlement.signature);
    expect(settlements).toMatchObject([
      {
        kind: 'session',
        status: 'settled',
        payer: buyer.address,
        pay_to: seller.address,
        amount: 5000n,
        asset: USDC_DEVNET,
      },
    ]);

    // Closed: no more vouchers, no second close.
    const late = await expectError(
      client.signVoucher({ body: voucherRequest(key, channel, '6000') }),
      ConflictError,
      'session_not_open',
    );
    expect(late.details).toMatchObject({ state: 'closed', signature: closed.settlement.signature });
    await expectError(client.closeSession({ body: { channelId: channel } }), ConflictError, 'session_not_open');
    expect(balances()).toEqual({ buyer: before.buyer - 5000n, seller: before.seller + 5000n });
  });

  it('closes a session with nothing consumed without a transaction', async () => {
    const buyer = economy.buyer;
    const client = await as(buyer);
    const before = economy.ledger.tokenBalance(seller.address);
    const session = await client.openSession({ body: openBody(buyer, generateWallet(), { depositAtomic: '1000' }) });
    const closed = await client.closeSession({ body: { channel_id: session.channelId } as never });
    expect(closed).toMatchObject({
      closedBy: 'buyer',
      settlement: { amountSettled: '0', buyerRefund: '1000', voucherCount: 0, signature: null },
    });
    expect(economy.ledger.tokenBalance(seller.address)).toBe(before);
  });

  it('settles once when two closes race', async () => {
    const buyer = economy.buyer;
    const key = generateWallet();
    const session = await (await as(buyer)).openSession({ body: openBody(buyer, key) });
    await (await as(buyer)).signVoucher({ body: voucherRequest(key, session.channelId, '7000') });
    const before = economy.ledger.tokenBalance(seller.address);
    const results = await Promise.allSettled([
      (await as(buyer)).closeSession({ body: { channelId: session.channelId } }),
      (await as(seller)).closeSession({ body: { channelId: session.channelId } }),
      (await as(buyer)).closeSession({ body: { channelId: session.channelId } }),
    ]);
    const won = results.filter((r) => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    for (const lost of results.filter((r) => r.status === 'rejected')) {
      expect((lost as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
      expect((lost as PromiseRejectedResult).reason.code).toBe('session_not_open');
    }
    expect(economy.ledger.tokenBalance(seller.address)).toBe(before + 7000n);
    const rows = (await settlementRows()).filter((r) => r.description === `payment session ${session.channelId}`);
    expect(rows).toHaveLength(1);
  });

  // Vouchers of one session racing: each is judged against the accepted amount it read, and lands only if the
  // session still holds that amount (one compare-and-set statement writing the session and the voucher's row); one
  // that lost is judged again. The accepted vouchers form one chain, and the close settles its last amount once.
  it('keeps racing vouchers of one session one chain: sequences without gaps, the close settling the highest', async () => {
    const buyer = economy.buyer;
    const key = generateWallet();
    const session = await (await as(buyer)).openSession({ body: openBody(buyer, key) });
    const client = await as(buyer);
    const results = await Promise.allSettled(
      [1, 2, 3, 4, 5, 6, 7, 8].map((i) =>
        client.signVoucher({ body: voucherRequest(key, session.channelId, String(1000 * i)) }),
      ),
    );
    const accepted = results
      .filter(
        (r): r is PromiseFulfilledResult<Awaited<ReturnType<typeof client.signVoucher>>> => r.status === 'fulfilled',
      )
      .map((r) => r.value)
      .sort((a, b) => a.voucher.sequence - b.voucher.sequence);
    for (const refused of results.filter((r) => r.status === 'rejected')) {
      expect((refused as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
      expect((refused as PromiseRejectedResult).reason.code).toBe('amount_not_monotonic');
    }
    expect(accepted.length).toBeGreaterThan(0);
    expect(accepted.map((v) => v.voucher.sequence)).toEqual(accepted.map((_, i) => i + 1));
    const amounts = accepted.map((v) => BigInt(v.voucher.cumulativeAmount));
    expect(amounts).toEqual([...amounts].sort((a, b) => (a < b ? -1 : 1)));
    expect(new Set(amounts).size).toBe(amounts.length);
    const highest = amounts[amounts.length - 1]!;
    const seen = await client.getSession({ params: { channelId: session.channelId } });
    expect(seen.acceptedCumulative).toBe(highest.toString());

    const before = economy.ledger.tokenBalance(seller.address);
    const closed = await client.closeSession({ body: { channelId: session.channelId } });
    expect(closed.settlement).toMatchObject({ amountSettled: highest.toString(), voucherCount: accepted.length });
    expect(economy.ledger.tokenBalance(seller.address)).toBe(before + highest);
  });

  it('refuses to open without a usable role or enough funds', async () => {
    const client = await as(economy.buyer);
    const stranger = await fundedBuyer();
    const none = await expectError(
      (await as(stranger)).openSession({ body: openBody(stranger, generateWallet()) }),
      UnprocessableEntityError,
      'wallet_role_not_found',
    );
    expect(none.details.reason).toBe('none');
    const wrongWallet = await expectError(
      client.openSession({
        body: openBody(economy.buyer, generateWallet(), { smartWallet: ata(stranger.address, USDC_DEVNET) }),
      }),
      UnprocessableEntityError,
      'wallet_role_not_found',
    );
    expect(wrongWallet.details.reason).toBe('smart_wallet_mismatch');
    await expectError(
      client.openSession({ body: openBody(economy.buyer, generateWallet(), { network: 'testnet' }) }),
      UnprocessableEntityError,
      'unsupported_network',
    );

    // A small buyer: 300000 held, a role of 400000.
    const small = await fundedBuyer(300_000n);
    await onboard(small, '400000');
    const smallClient = await as(small);
    const balance = await expectError(
      smallClient.openSession({ body: openBody(small, generateWallet(), { depositAtomic: '300001' }) }),
      UnprocessableEntityError,
      'insufficient_balance',
    );
    expect(balance.details).toEqual({ reason: 'balance', required: '300001', available: '300000' });
    // Open sessions reserve their deposits: the second cannot take what the first holds.
    await smallClient.openSession({ body: openBody(small, generateWallet(), { depositAtomic: '200000' }) });
    const reserved = await expectError(
      smallClient.openSession({ body: openBody(small, generateWallet(), { depositAtomic: '100001' }) }),
      UnprocessableEntityError,
      'insufficient_balance',
    );
    expect(reserved.details).toMatchObject({ required: '100001', available: '100000' });
    await smallClient.openSession({ body: openBody(small, generateWallet(), { depositAtomic: '100000' }) });
    expect(
      (await smallClient.onboardingStatus({ query: { wallet: small.address, network: 'devnet' } })).openSessions,
    ).toBe(2);
  });

  it('stops at a revoked role: open refused, close refused with the session kept open, then settled once restored', async () => {
    const buyer = await fundedBuyer();
    await economy.ledger.airdrop(buyer.address, 1_000_000_000n);
    await onboard(buyer, '1000000');
    const client = await as(buyer);
    const key = generateWallet();
    const session = await client.openSession({ body: openBody(buyer, key, { depositAtomic: '50000' }) });
    await client.signVoucher({ body: voucherRequest(key, session.channelId, '20000') });

    // The buyer revokes the delegation on chain, paying the fee themselves.
    const { value: lifetime } = await rpc.getLatestBlockhash().send();
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayer(address(buyer.address), m),
      (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
      (m) =>
        appendTransactionMessageInstructions(
          [
            getRevokeInstruction({
              source: address(ata(buyer.address, USDC_DEVNET)),
              owner: createNoopSigner(address(buyer.address)),
            }),
          ],
          m,
        ),
    );
    const compiled = compileTransaction(message);
    const wire = getTransactionEncoder().encode({
      ...compiled,
      signatures: { [buyer.address]: signEd25519(buyer, new Uint8Array(compiled.messageBytes)) } as never,
    });
    await rpc
      .sendTransaction(getBase64Decoder().decode(wire) as Base64EncodedWireTransaction, { encoding: 'base64' })
      .send();
    expect((await tokenAccount(buyer.address))?.delegate).toBeUndefined();

    expect((await client.onboardingStatus({ query: { wallet: buyer.address, network: 'devnet' } })).status).toBe(
      'revoked',
    );
    expect(
      (
        await expectError(
          client.openSession({ body: openBody(buyer, generateWallet()) }),
          UnprocessableEntityError,
          'wallet_role_not_found',
        )
      ).details.reason,
    ).toBe('revoked');
    expect(
      (
        await expectError(
          client.signVoucher({ body: voucherRequest(key, session.channelId, '30000') }),
          UnprocessableEntityError,
          'wallet_role_not_found',
        )
      ).details.reason,
    ).toBe('revoked');
    const before = economy.ledger.tokenBalance(seller.address);
    await expectError(
      client.closeSession({ body: { channelId: session.channelId } }),
      UnprocessableEntityError,
      'wallet_role_not_found',
    );
    expect((await sessionRows()).find((r) => r.channel_id === session.channelId)?.state).toBe('open');
    expect(economy.ledger.tokenBalance(seller.address)).toBe(before);

    await onboard(buyer, '1000000');
    const closed = await client.closeSession({ body: { channelId: session.channelId } });
    expect(closed.settlement.amountSettled).toBe('20000');
    expect(economy.ledger.tokenBalance(seller.address)).toBe(before + 20000n);
  });

  it('rejects bad input with 400 naming the field, and changes nothing', async () => {
    const buyer = economy.buyer;
    const client = await as(buyer);
    const key = generateWallet();
    // Amounts are stored as int8: 2^63 - 1 is the most any amount field takes, and it is taken.
    const MAX = '9223372036854775807';
    const widest = await client.openSession({ body: openBody(buyer, generateWallet(), { pricePerUnit: MAX }) });
    expect(widest.pricePerUnit).toBe(MAX);
    expect((await client.closeSession({ body: { channelId: widest.channelId } })).state).toBe('closed');
    const session = await client.openSession({ body: openBody(buyer, key, { depositAtomic: '1000' }) });
    const sessionsBefore = await sessionRows();
    const onboardingBefore = await economy.facilitator.database.db
      .selectFrom('facilitator_onboarding_txs')
      .selectAll()
      .execute();
    // Onboarding calls are counted for the rate limit: a refused body is not a call.
    const onboardingCalls = () =>
      economy.facilitator.database.db.selectFrom('facilitator_onboarding_calls').selectAll().execute();
    const callsBefore = await onboardingCalls();
    const tooLarge = ['9223372036854775808', '10000000000000000000', '99999999999999999999'];
    const badOpens: [Record<string, unknown>, string][] = [
      [{ depositAtomic: '0' }, 'body.depositAtomic'],
      [{ depositAtomic: '1.5' }, 'body.depositAtomic'],
      [{ buyerWallet: 'not-an-address' }, 'body.buyerWallet'],
      [{ sellerWallet: '' }, 'body.sellerWallet'],
      [{ sessionKey: '0OIl' }, 'body.sessionKey'],
      [{ pricePerUnit: '-1' }, 'body.pricePerUnit'],
      ...tooLarge.map((v): [Record<string, unknown>, string] => [{ pricePerUnit: v }, 'body.pricePerUnit']),
      ...tooLarge.map((v): [Record<string, unknown>, string] => [{ depositAtomic: v }, 'body.depositAtomic']),
      [{ idleTimeoutSeconds: 10 }, 'body.idleTimeoutSeconds'],
      [{ network: 'ethereum' }, 'body.network'],
      [{ surprise: true }, 'body.surprise'],
    ];
    for (const [change, field] of badOpens) {
      const error = await expectError(
        client.openSession({ body: { ...openBody(buyer, key), ...change } as never }),
        BadRequestError,
        'invalid_request',
      );
      expect(
        error.fields.map((f: { field: string }) => f.field),
        JSON.stringify(change),
      ).toContain(field);
    }
    const good = voucherRequest(key, session.channelId, '500');
    const badVouchers: [Record<string, unknown>, string][] = [
      [{ channelId: 'chn_short' }, 'body.channelId'],
      [{ cumulativeAmount: '0500' }, 'body.cumulativeAmount'],
      ...tooLarge.map((v): [Record<string, unknown>, string] => [{ cumulativeAmount: v }, 'body.cumulativeAmount']),
      [{ units: 0 }, 'body.units'],
      [{ meter: 'two words' }, 'body.meter'],
      [{ serverNonce: 'a'.repeat(129) }, 'body.serverNonce'],
      [{ signature: 'abc' }, 'body.signature'],
    ];
    for (const [change, field] of badVouchers) {
      const error = await expectError(
        client.signVoucher({ body: { ...good, ...change } as never }),
        BadRequestError,
        'invalid_request',
      );
      expect(
        error.fields.map((f: { field: string }) => f.field),
        JSON.stringify(change),
      ).toContain(field);
    }
    expect(
      (await expectError(client.closeSession({ body: {} as never }), BadRequestError, 'invalid_request')).fields[0]
        .field,
    ).toBe('body.channelId');
    const onboardBody = { buyerWallet: buyer.address, network: 'devnet' };
    expect(
      (
        await expectError(
          client.onboard({ body: { ...onboardBody, spendLimitAtomic: '0' } as never }),
          BadRequestError,
          'invalid_request',
        )
      ).fields[0].field,
    ).toBe('body.spendLimitAtomic');
    for (const spendLimitAtomic of tooLarge) {
      const error = await expectError(
        client.onboard({ body: { ...onboardBody, spendLimitAtomic } as never }),
        BadRequestError,
        'invalid_request',
      );
      expect(error.fields, spendLimitAtomic).toEqual([
        expect.objectContaining({ field: 'body.spendLimitAtomic', message: expect.stringContaining(MAX) }),
      ]);
    }
    expect(
      (
        await expectError(
          client.onboard({ body: { ...onboardBody, ttlSeconds: 60 } as never }),
          BadRequestError,
          'invalid_request',
        )
      ).fields[0].field,
    ).toBe('body.ttlSeconds');
    expect(
      (
        await expectError(
          client.confirmOnboarding({ body: { ...onboardBody, signedTransactions: [] } as never }),
          BadRequestError,
          'invalid_request',
        )
      ).fields[0].field,
    ).toBe('body.signedTransactions');
    expect(
      (
        await expectError(
          client.confirmOnboarding({ body: { ...onboardBody, signedTransactions: ['not base64!'] } as never }),
          BadRequestError,
          'invalid_request',
        )
      ).fields[0].field,
    ).toBe('body.signedTransactions.0');
    expect(
      (
        await expectError(
          client.onboardingStatus({ query: { network: 'devnet' } as never }),
          BadRequestError,
          'invalid_request',
        )
      ).fields[0].field,
    ).toBe('query.wallet');

    expect(await sessionRows()).toEqual(sessionsBefore);
    expect(
      await economy.facilitator.database.db.selectFrom('facilitator_onboarding_txs').selectAll().execute(),
    ).toEqual(onboardingBefore);
    expect(await onboardingCalls()).toEqual(callsBefore);
    // The good voucher still works: none of the refusals touched the session.
    expect((await client.signVoucher({ body: good })).voucher.sequence).toBe(1);
  });

  it('counts sessions in /mpp/stats', async () => {
    const buyer = economy.buyer;
    const client = await as(buyer);
    const before = await client.stats();
    const key = generateWallet();
    const session = await client.openSession({ body: openBody(buyer, key) });
    await client.signVoucher({ body: voucherRequest(key, session.channelId, '2500') });
    const opened = await client.stats();
    expect(opened.sessions).toMatchObject({
      open: before.sessions.open + 1,
      openedToday: before.sessions.openedToday + 1,
      closedToday: before.sessions.closedToday,
    });
    const closed = await client.closeSession({ body: { channelId: session.channelId } });
    const after = await client.stats();
    expect(after.sessions).toEqual({
      open: before.sessions.open,
      openedToday: before.sessions.openedToday + 1,
      closedToday: before.sessions.closedToday + 1,
      settledAtomic: (BigInt(before.sessions.settledAtomic) + 2500n).toString(),
    });
    expect(BigInt(after.volumeAtomic)).toBe(BigInt(before.volumeAtomic) + 2500n);
    expect(after.lastSettlement).toMatchObject({
      signature: closed.settlement.signature,
      kind: 'session',
      payer: buyer.address,
      recipient: seller.address,
      amount: '2500',
    });
  });
});

describe('reading a session', () => {
  it('shows it to its buyer and its seller only, as it stands', async () => {
    const buyer = await fundedBuyer();
    await onboard(buyer);
    const key = generateWallet();
    const session = await (await as(buyer)).openSession({ body: openBody(buyer, key, { depositAtomic: '40000' }) });
    await (await as(buyer)).signVoucher({ body: voucherRequest(key, session.channelId, '1500') });
    for (const party of [buyer, seller]) {
      const seen = await (await as(party)).getSession({ params: { channelId: session.channelId } });
      expect(seen).toMatchObject({
        channelId: session.channelId,
        state: 'open',
        buyerWallet: buyer.address,
        sellerWallet: seller.address,
        sessionKey: key.address,
        depositAtomic: '40000',
        acceptedCumulative: '1500',
        remainingAtomic: '38500',
      });
    }
    await expectError(
      (await as(generateWallet())).getSession({ params: { channelId: session.channelId } }),
      PermissionDeniedError,
      'not_session_party',
    );
    await expectError(
      (await as(buyer)).getSession({ params: { channelId: 'chn_NoSuchChannel0000000000' } }),
      NotFoundError,
      'session_not_found',
    );
    await (await as(buyer)).closeSession({ body: { channelId: session.channelId } });
    expect((await (await as(seller)).getSession({ params: { channelId: session.channelId } })).state).toBe('closed');
  });
});

describe('state in the database', () => {
  let replica: RunningService;
  afterAll(async () => replica?.stopServer());

  it('survives a restart: another facilitator on the same database goes on with the session', async () => {
    const buyer = economy.buyer;
    const key = generateWallet();
    const session = await (await as(buyer)).openSession({ body: openBody(buyer, key) });
    await (await as(buyer)).signVoucher({ body: voucherRequest(key, session.channelId, '1500') });
    replica = await startService((context) => createFacilitatorApp(context, { sellers: economy.sellers }), {
      id: 'facilitator',
      wallet: economy.feePayer,
      rpcUrl: economy.rpcUrl,
      database: economy.facilitator.database,
    });
    const next = await (
      await as(buyer, replica.url)
    ).signVoucher({ body: voucherRequest(key, session.channelId, '2500') });
    expect(next).toMatchObject({ signer: session.voucherSigner, acceptedCumulative: '2500', voucher: { sequence: 2 } });
    const before = economy.ledger.tokenBalance(seller.address);
    const closed = await (await as(seller, replica.url)).closeSession({ body: { channelId: session.channelId } });
    expect(closed.settlement).toMatchObject({ amountSettled: '2500', voucherCount: 2 });
    expect(economy.ledger.tokenBalance(seller.address)).toBe(before + 2500n);
  });
});

describe('time', () => {
  let clocked: RunningService;
  let offsetMs = 0;
  afterAll(async () => clocked?.close());

  it('closes an idle session itself, and stops using an expired role', async () => {
    clocked = await startService(
      (context) =>
        createFacilitatorApp(context, { sellers: economy.sellers, now: () => new Date(Date.now() + offsetMs) }),
      {
        id: 'facilitator',
        wallet: economy.feePayer,
        rpcUrl: economy.rpcUrl,
      },
    );
    const buyer = await fundedBuyer();
    await onboard(buyer, '500000', 300, clocked.url);
    const client = await as(buyer, clocked.url);
    const key = generateWallet();
    const session = await client.openSession({
      body: openBody(buyer, key, { depositAtomic: '100000', idleTimeoutSeconds: 30 }),
    });
    await client.signVoucher({ body: voucherRequest(key, session.channelId, '4000') });
    const before = economy.ledger.tokenBalance(seller.address);

    offsetMs = 31_000;
    const idle = await expectError(
      client.signVoucher({ body: voucherRequest(key, session.channelId, '5000') }),
      ConflictError,
      'session_not_open',
    );
    expect(idle.details.state).toBe('closed');
    expect(economy.ledger.tokenBalance(seller.address)).toBe(before + 4000n);
    const row = await clocked.database.db
      .selectFrom('facilitator_sessions')
      .selectAll()
      .where('channel_id', '=', session.channelId)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ state: 'closed', closed_by: 'idle', amount_settled: 4000n });

    // A session never outlives its role: its deadline is before the role's expiry.
    const capped = await client.openSession({
      body: openBody(buyer, generateWallet(), { depositAtomic: '1000', idleTimeoutSeconds: 86_400 }),
    });
    const status = await client.onboardingStatus({ query: { wallet: buyer.address, network: 'devnet' } });
    expect(Date.parse(capped.expiresAt)).toBeLessThan(Date.parse(status.roleExpiresAt!));

    offsetMs = 301_000;
    expect((await client.onboardingStatus({ query: { wallet: buyer.address, network: 'devnet' } })).status).toBe(
      'expired',
    );
    expect(
      (
        await expectError(
          client.openSession({ body: openBody(buyer, generateWallet()) }),
          UnprocessableEntityError,
          'wallet_role_not_found',
        )
      ).details.reason,
    ).toBe('expired');
  });
});

describe('a close slower than reconciliation', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterAll(async () => {
    vi.useRealTimers();
    for (const step of cleanup.reverse()) await step();
  });

  /** A facilitator whose clock runs `clock.offsetMs` ahead, reading the chain at `rpcUrl`; closes take no grace. */
  async function clockedFacilitator(rpcUrl = economy.rpcUrl) {
    const clock = { offsetMs: 0 };
    const service = await startService(
      (context) =>
        createFacilitatorApp(context, {
          sellers: economy.sellers,
          sessionCloseGraceSeconds: 0,
          now: () => new Date(Date.now() + clock.offsetMs),
        }),
      { id: 'facilitator', wallet: economy.feePayer, rpcUrl },
    );
    cleanup.push(() => service.close());
    return { service, clock };
  }

  /** A buyer onboarded at `url` with a session of 0.1 USD that has accepted a voucher of 4 000 atomic units. */
  async function vouchedSession(url: string) {
    const buyer = await fundedBuyer();
    await onboard(buyer, '500000', 3600, url);
    const client = await as(buyer, url);
    const key = generateWallet();
    const session = await client.openSession({
      body: openBody(buyer, key, { depositAtomic: '100000', idleTimeoutSeconds: 3600 }),
    });
    await client.signVoucher({ body: voucherRequest(key, session.channelId, '4000') });
    return { client, session };
  }

  it('never settles twice: reconciliation reopens a stalled close, which then sends nothing, and the next close settles once', async () => {
    // The chain's RPC behind a relay that holds getLatestBlockhash while a gate is set: a close stalls there, after it
    // took the session to closing and before anything is recorded or sent (an RPC without a timeout).
    let gate: { held: () => void; released: Promise<void> } | undefined;
    const relay = await listenLocal((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        void (async () => {
          const body = Buffer.concat(chunks);
          const method = (JSON.parse(body.toString()) as { method?: string }).method;
          if (method === 'getLatestBlockhash' && gate) {
            const held = gate;
            held.held();
            await held.released;
          }
          const upstream = await fetch(economy.rpcUrl, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body,
          });
          res.writeHead(upstream.status, { 'content-type': 'application/json' });
          res.end(Buffer.from(await upstream.arrayBuffer()));
        })();
      });
    });
    cleanup.push(() => relay.close());
    // Reconciliation runs on the facilitator's 15 s interval: that interval (only) is the test's to advance.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const { service: slow, clock } = await clockedFacilitator(relay.url);
    const { client, session } = await vouchedSession(slow.url);
    const before = economy.ledger.tokenBalance(seller.address);
    const row = () =>
      slow.database.db
        .selectFrom('facilitator_sessions')
        .selectAll()
        .where('channel_id', '=', session.channelId)
        .executeTakeFirstOrThrow();
    const settlements = () =>
      slow.database.db
        .selectFrom('facilitator_settlements')
        .selectAll()
        .where('kind', '=', 'session')
        .where('description', '=', `payment session ${session.channelId}`)
        .execute();

    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      gate = { held: resolve, released: new Promise<void>((done) => (release = done)) };
    });
    const stalled = client.closeSession({ body: { channelId: session.channelId } }).catch((e: unknown) => e);
    await held;
    expect((await row()).state).toBe('closing');

    // Three minutes later (by the facilitator's clock) reconciliation finds it closing, with nothing recorded.
    clock.offsetMs = 3 * 60_000;
    await vi.advanceTimersByTimeAsync(15_000);
    await expect.poll(async () => (await row()).state, { timeout: 10_000 }).toBe('open');

    // The stalled close goes on: it no longer owns the session, so it sends nothing and says so.
    gate = undefined;
    release();
    const answer = (await stalled) as { status?: number; code?: string };
    expect(answer, JSON.stringify(answer)).toBeInstanceOf(InternalServerError);
    expect(answer).toMatchObject({ status: 503, code: 'chain_unavailable' });
    expect((await row()).state).toBe('open');
    expect(await settlements()).toHaveLength(0);
    expect(economy.ledger.tokenBalance(seller.address)).toBe(before);

    // Closed again, the session settles its accepted amount once.
    const closed = await client.closeSession({ body: { channelId: session.channelId } });
    expect(closed.settlement.amountSettled).toBe('4000');
    expect(await settlements()).toHaveLength(1);
    expect(economy.ledger.tokenBalance(seller.address)).toBe(before + 4000n);
    expect(await row()).toMatchObject({ state: 'closed', amount_settled: 4000n });
  });

  it('renews a role past half its lifetime on the same terms, and an expiring role refused an open (the buyer renews it so)', async () => {
    const { service: clocked, clock } = await clockedFacilitator();
    const buyer = await fundedBuyer();
    const first = await onboard(buyer, '500000', 300, clocked.url);
    expect(first.started.status).toBe('transactions_required');
    // The same terms again at once: nothing to sign.
    expect((await onboard(buyer, '500000', 300, clocked.url)).started.status).toBe('ready');
    const client = await as(buyer, clocked.url);

    // Under half its lifetime gone, still nothing to sign.
    clock.offsetMs = 100_000;
    expect((await onboard(buyer, '500000', 300, clocked.url)).started.status).toBe('ready');
    // Four minutes and ten seconds on, the 5-minute role expires within the minute: no session opens on it.
    clock.offsetMs = 250_000;
    const expiring = await expectError(
      client.openSession({ body: openBody(buyer, generateWallet(), { depositAtomic: '50000' }) }),
      UnprocessableEntityError,
      'wallet_role_not_found',
    );
    expect(expiring.details.reason).toBe('expiring');
    expect(renewedByOnboarding(expiring.code, expiring.details)).toBe(true);
    // Onboarding on the same terms grants it afresh, with a new lifetime, and the session opens.
    const renewed = await onboard(buyer, '500000', 300, clocked.url);
    expect(renewed.started.transactions.map((t) => t.type)).toEqual(['grant_role']);
    const status = await client.onboardingStatus({ query: { wallet: buyer.address, network: 'devnet' } });
    expect(status.status).toBe('active');
    expect(Date.parse(status.roleExpiresAt!) - (Date.now() + clock.offsetMs)).toBeGreaterThan(290_000);
    const opened = await client.openSession({ body: openBody(buyer, generateWallet(), { depositAtomic: '50000' }) });
    expect(opened.depositAtomic).toBe('50000');
  });

  it('never settles twice: a close stalled after noting its settlement, before claiming it, finds it taken once reconciliation reopened the session', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const { service: slow, clock } = await clockedFacilitator();
    const { client, session } = await vouchedSession(slow.url);
    const before = economy.ledger.tokenBalance(seller.address);
    const db = slow.database.db;
    const row = () =>
      db
        .selectFrom('facilitator_sessions')
        .selectAll()
        .where('channel_id', '=', session.channelId)
        .executeTakeFirstOrThrow();
    // A close that took the session to closing and noted its settlement (its key and signature), then stalled before
    // claiming it (a database that stopped answering): its state, as the close leaves it at that point.
    const stalledKey = 'stalled-close-settlement-key';
    await db
      .updateTable('facilitator_sessions')
      .set({
        state: 'closing',
        close_owner: 'cls_stalled',
        closed_by: 'buyer',
        closing_at: new Date(),
        settlement_key: stalledKey,
        settlement_signature: 'stalled-close-signature',
      })
      .where('channel_id', '=', session.channelId)
      .execute();

    // Three minutes later reconciliation claims that settlement as abandoned, then reopens the session.
    clock.offsetMs = 3 * 60_000;
    await vi.advanceTimersByTimeAsync(15_000);
    await expect.poll(async () => (await row()).state, { timeout: 10_000 }).toBe('open');
    const abandoned = await db
      .selectFrom('facilitator_settlements')
      .selectAll()
      .where('key', '=', stalledKey)
      .executeTakeFirstOrThrow();
    expect([abandoned.status, abandoned.kind, abandoned.error]).toEqual([
      'failed',
      'session',
      expect.stringMatching(/^abandoned: the close stalled/),
    ]);
    // The stalled close, waking, claims its settlement to send it: taken, so it sends nothing.
    const { settlementStore } = await import('../servers/src/services/facilitator/store');
    const settlements = settlementStore(slow.database.db);
    const { status: _status, error: _error, settledAt: _settledAt, ...claim } = (await settlements.get(stalledKey))!;
    expect(await settlements.claim(claim)).toBe(false);

    // Closed again, the session settles its accepted amount once.
    const closed = await client.closeSession({ body: { channelId: session.channelId } });
    expect(closed.settlement.amountSettled).toBe('4000');
    expect(economy.ledger.tokenBalance(seller.address)).toBe(before + 4000n);
    const settled = await db
      .selectFrom('facilitator_settlements')
      .select(['key', 'status'])
      .where('description', '=', `payment session ${session.channelId}`)
      .orderBy('status')
      .execute();
    expect(settled.map((s) => s.status)).toEqual(['failed', 'settled']);
    expect(await row()).toMatchObject({ state: 'closed', amount_settled: 4000n });
  });
});

describe('backpressure and outages', () => {
  const started: RunningService[] = [];
  afterAll(async () => {
    await Promise.all(started.map((s) => s.close()));
  });

  it('limits onboarding calls per wallet (the facilitator pays their fees), with Retry-After', async () => {
    const limited = await startService(
      (context) => createFacilitatorApp(context, { sellers: economy.sellers, onboardingLimits: { callsPerHour: 2 } }),
      {
        id: 'facilitator',
        wallet: economy.feePayer,
        rpcUrl: economy.rpcUrl,
      },
    );
    started.push(limited);
    const buyer = await fundedBuyer();
    const client = await as(buyer, limited.url);
    const body = { buyerWallet: buyer.address, network: 'devnet' as const };
    await client.onboard({ body });
    await client.onboard({ body });
    const error = await expectError(client.onboard({ body }), RateLimitError, 'rate_limited');
    expect(Number(error.headers['retry-after'])).toBeGreaterThan(3500);
    // Another wallet is not held back.
    const other = await fundedBuyer();
    expect(
      (await (await as(other, limited.url)).onboard({ body: { buyerWallet: other.address, network: 'devnet' } }))
        .status,
    ).toBe('transactions_required');
  });

  it('caps the wallets it creates per hour in all (new keys are free to make), with Retry-After', async () => {
    const capped = await startService(
      (context) => createFacilitatorApp(context, { sellers: economy.sellers, onboardingLimits: { walletsPerHour: 1 } }),
      {
        id: 'facilitator',
        wallet: economy.feePayer,
        rpcUrl: economy.rpcUrl,
      },
    );
    started.push(capped);
    expect((await onboard(generateWallet(), '1000', 600, capped.url)).confirmed?.status).toBe('ready');
    const second = generateWallet();
    const error = await expectError(onboard(second, '1000', 600, capped.url), RateLimitError, 'onboarding_capacity');
    expect(error.details).toEqual({ limit: 1 });
    expect(Number(error.headers['retry-after'])).toBeGreaterThan(3500);
    expect(await tokenAccount(second.address)).toBeNull();
    // A buyer whose wallet exists needs none created: not held back.
    expect((await onboard(await fundedBuyer(), '1000', 600, capped.url)).confirmed?.status).toBe('ready');
  });

  it('answers 503 with Retry-After when the chain does not answer, and records nothing', async () => {
    // No chain: nothing listens on the default RPC port of a test service.
    const offline = await startService((context) => createFacilitatorApp(context, { sellers: economy.sellers }), {
      id: 'facilitator',
      wallet: economy.feePayer,
    });
    started.push(offline);
    const buyer = generateWallet();
    const client = await as(buyer, offline.url);
    const onboardError = await client
      .onboard({ body: { buyerWallet: buyer.address, network: 'devnet' } })
      .catch((e) => e);
    expect(onboardError).toBeInstanceOf(InternalServerError);
    expect(onboardError.status).toBe(503);
    expect(onboardError.code).toBe('temporarily_unavailable');
    expect(onboardError.headers['retry-after']).toBe('5');
    const statusError = await client
      .onboardingStatus({ query: { wallet: buyer.address, network: 'devnet' } })
      .catch((e) => e);
    expect(statusError.code).toBe('temporarily_unavailable');
    const openError = await client.openSession({ body: openBody(buyer, generateWallet()) }).catch((e) => e);
    expect(openError.status).toBe(503);
    expect(openError.code).toBe('chain_unavailable');
    expect(await offline.database.db.selectFrom('facilitator_onboarding_txs').selectAll().execute()).toEqual([]);
    expect(await offline.database.db.selectFrom('facilitator_sessions').selectAll().execute()).toEqual([]);
  });
});
