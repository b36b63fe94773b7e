import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { address, createSolanaRpc, type Base64EncodedWireTransaction } from '@solana/kit';
import { getCloseAccountInstruction } from '@solana-program/token';
import {
  SOLANA_DEVNET,
  USDC_DEVNET,
  base58Encode,
  usdToAtomic,
  type PaymentRequirements,
  type Wager,
} from '@agent-economy/contracts';
import { ApiError, createClient, walletFromSecretKey, type AgentEconomyClient } from '@agent-economy/sdk';
import { createEntropyApp } from '../servers/src/services/entropy';
import { cascade, drawCoins, initialKey } from '../servers/src/services/entropy/domain';
import { createWagersApp } from '../servers/src/services/wagers';
import { wagerStore } from '../servers/src/services/wagers/store';
import { generateWallet, type Wallet } from '../servers/src/solana/keys';
import { sendInstructions } from '../servers/src/solana/send';
import { startEconomy, type Economy } from './support/economy';
import { ata, buildPaymentTransaction, type PaymentShape } from './support/payments';
import { startService, type RunningService } from './support/servers';

// Amounts are worked out by hand: a pot is both stakes; the house keeps pot × 5 / 100 rounded down to the atomic unit;
// the winner gets the rest. The entropy service charges the vault 0.001 USD (1000 atomic units) per flip.

const run = promisify(execFile);
const TTL_SECONDS = 600;
const FLIP_FEE = 1000n;

let economy: Economy;
let entropy: RunningService;
let service: RunningService;
let rpc: ReturnType<typeof createSolanaRpc>;
let vault: string;
let clockMs = Date.now();
let entropyUrl = '';
const players: Record<'alice' | 'bob' | 'carol' | 'dave', { wallet: Wallet; client: AgentEconomyClient }> = {} as never;

const usd = (text: string) => usdToAtomic(text);
const balance = (owner: string) => economy.ledger.tokenBalance(owner);
const fail = (p: Promise<unknown>) =>
  p.then(
    () => expect.unreachable('expected an error') as never,
    (e: unknown) => e as ApiError,
  );
const sha256Hex = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const fakeSignature = () => base58Encode(randomBytes(64));

/** A player's transfer to the vault (or wherever `shape` says), paid and signed by the player; its signature. */
async function transfer(from: Wallet, amount: bigint, shape: Partial<PaymentShape> = {}): Promise<string> {
  const { value } = await rpc.getLatestBlockhash({ commitment: 'confirmed' }).send();
  const requirements = {
    scheme: 'exact',
    network: SOLANA_DEVNET,
    asset: USDC_DEVNET,
    amount: amount.toString(),
    payTo: vault,
    maxTimeoutSeconds: 60,
    extra: {},
  } as PaymentRequirements;
  const wire = await buildPaymentTransaction({
    payer: from,
    requirements,
    blockhash: value,
    feePayer: (shape.authority ?? from).address,
    ...shape,
  });
  return await rpc
    .sendTransaction(wire as Base64EncodedWireTransaction, { encoding: 'base64', preflightCommitment: 'confirmed' })
    .send();
}

/** A new wallet with 1 SOL and `fundUsd` of stablecoin, and its client of the wagers service (no payments). */
async function fundedPlayer(fundUsd: string) {
  const wallet = generateWallet();
  await economy.ledger.airdrop(wallet.address, 1_000_000_000n);
  await economy.ledger.mintTo(wallet.address, usd(fundUsd));
  const client = createClient({
    baseUrls: { wagers: service.url },
    wallet: await walletFromSecretKey(wallet.secretKey),
    payments: false,
    maxRetries: 0,
  });
  return { wallet, client };
}

async function player(name: keyof typeof players, fundUsd = '50') {
  players[name] = await fundedPlayer(fundUsd);
}

const connect = (name: keyof typeof players, username: string = name) =>
  players[name].client.wagers.connect({ body: { address: players[name].wallet.address, username } });

/**
 * Transfers into the vault that the tests have the service refuse as stakes (wrong amount, stranger, too late...): the
 * service never took that money up, so the books leave it out and the test counts it here.
 */
let stray = 0n;
/** Wagers settled by the acceptance winning its race with a decline (either may win): 1 USD each. */
let racedWagers = 0n;
async function refusedStake(from: Wallet, amount: bigint, shape: Partial<PaymentShape> = {}): Promise<string> {
  const signature = await transfer(from, amount, shape);
  if (!shape.destination) stray += amount;
  return signature;
}

/** The books: what the vault holds for players plus what the house kept must be the vault's balance on chain. */
async function assertBooksBalance() {
  const books = await wagerStore(service.database.db).books();
  expect(balance(vault)).toBe(books.held + books.houseRetained + stray);
  return books;
}

/**
 * An HTTP relay to `target()` on a port of its own. `hold` forwards a request now (by default) or later; `answer` may
 * take an answer over (true), else it is passed back as it came.
 */
async function relay(
  target: () => string,
  hooks: {
    hold?: (req: IncomingMessage, forward: () => void) => void;
    answer?: (req: IncomingMessage, answer: IncomingMessage) => boolean;
  },
): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const forward = () => {
      const url = new URL(req.url ?? '/', target());
      const upstream = httpRequest(
        url,
        { method: req.method, headers: { ...req.headers, host: url.host } },
        (answer) => {
          if (hooks.answer?.(req, answer)) return;
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    };
    if (hooks.hold) hooks.hold(req, forward);
    else forward();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A connection to a service that loses the answers of paid requests while `drop` is set: the request reaches the
 * service, which settles and answers, then the connection is cut before the answer comes back.
 */
async function lossyProxy(target: () => string) {
  const state = { drop: false, dropped: 0 };
  const relayed = await relay(target, {
    answer: (req, answer) => {
      if (!state.drop || !req.headers['payment-signature']) return false;
      answer.resume();
      answer.on('end', () => {
        state.dropped += 1;
        req.socket.destroy();
      });
      return true;
    },
  });
  return Object.assign(state, relayed);
}

beforeAll(async () => {
  economy = await startEconomy();
  rpc = createSolanaRpc(economy.rpcUrl);
  entropy = await economy.startPaidService(createEntropyApp, { id: 'entropy' });
  entropyUrl = entropy.url;
  service = await economy.startPaidService(
    (context) =>
      createWagersApp(context, {
        entropyUrl: () => entropyUrl,
        now: () => new Date(clockMs),
        sweepEveryMs: 0,
        challengeTtlSeconds: TTL_SECONDS,
      }),
    { id: 'wagers', sol: true },
  );
  vault = service.context.wallet.address;
  await Promise.all((['alice', 'bob', 'carol', 'dave'] as const).map((name) => player(name)));
}, 60_000);
afterAll(async () => {
  await economy?.close();
});

describe('health, ping and the credential', () => {
  it('answers health and ping without authentication', async () => {
    const anonymous = createClient({ baseUrls: { wagers: service.url }, maxRetries: 0 });
    const health = await anonymous.wagers.health();
    expect(health).toEqual({
      status: 'ok',
      service: 'wagers',
      version: '1.0.0',
      network: SOLANA_DEVNET,
      vaultAddress: vault,
      asset: USDC_DEVNET,
      limits: { minWagerUsd: '1', maxWagerUsd: '25', houseCutPercent: 5, challengeTtlSeconds: TTL_SECONDS },
    });
    expect(await anonymous.wagers.ping()).toEqual({ pong: true, time: new Date(clockMs).toISOString() });
  });

  it('refuses every other route without a SIGN-IN-WITH-X proof', async () => {
    const anonymous = createClient({ baseUrls: { wagers: service.url }, maxRetries: 0 });
    const error = await fail(anonymous.wagers.wallet());
    expect(error.status).toBe(401);
    expect(error.code).toBe('siwx_invalid');
  });
});

describe('wallet connection', () => {
  it('needs a connected wallet first', async () => {
    const error = await fail(players.alice.client.wagers.wallet());
    expect([error.status, error.code]).toEqual([409, 'WALLET_NOT_CONNECTED']);
    const { wagers } = players.alice.client;
    for (const call of [
      () => wagers.challenges(),
      () => wagers.active(),
      () => wagers.disconnect(),
      () => wagers.decline({ body: {} }),
    ]) {
      expect((await fail(call())).code).toBe('WALLET_NOT_CONNECTED');
    }
    const challenge = await fail(
      wagers.challenge({ body: { opponent: 'bob', amountUsd: '2', stakeTxSignature: fakeSignature() } }),
    );
    expect(challenge.code).toBe('WALLET_NOT_CONNECTED');
    const accept = await fail(
      wagers.accept({ body: { challengeId: 'chl_doesnotexist1', stakeTxSignature: fakeSignature() } }),
    );
    expect(accept.code).toBe('WALLET_NOT_CONNECTED');
  });

  it('refuses a malformed address with INVALID_ADDRESS and another wallet with ADDRESS_MISMATCH', async () => {
    const bad = await fail(
      players.alice.client.wagers.connect({ body: { address: 'not-a-wallet', username: 'alice' } }),
    );
    expect([bad.status, bad.code]).toEqual([400, 'INVALID_ADDRESS']);
    const other = await fail(
      players.alice.client.wagers.connect({ body: { address: players.bob.wallet.address, username: 'alice' } }),
    );
    expect([other.status, other.code]).toEqual([403, 'ADDRESS_MISMATCH']);
    const name = await fail(
      players.alice.client.wagers.connect({ body: { address: players.alice.wallet.address, username: 'a b' } }),
    );
    expect([name.status, name.code]).toEqual([400, 'invalid_request']);
    expect(await wagerStore(service.database.db).user(players.alice.wallet.address)).toBeUndefined();
  });

  it('binds the wallet to a username, with the balance read from the chain', async () => {
    const connected = await connect('alice');
    expect(connected).toMatchObject({
      username: 'alice',
      address: players.alice.wallet.address,
      network: SOLANA_DEVNET,
      balanceUsd: '50',
      record: { wagers: 0, wins: 0, losses: 0, wageredUsd: '0', wonUsd: '0' },
    });
    await Promise.all([connect('bob'), connect('carol'), connect('dave')]);
    // Usernames are unique regardless of case; the same wallet may rename itself.
    const taken = await fail(
      players.dave.client.wagers.connect({ body: { address: players.dave.wallet.address, username: 'ALICE' } }),
    );
    expect([taken.status, taken.code]).toEqual([409, 'USERNAME_TAKEN']);
    expect(
      (await players.dave.client.wagers.connect({ body: { address: players.dave.wallet.address, username: 'dave_2' } }))
        .username,
    ).toBe('dave_2');
    const info = await players.dave.client.wagers.wallet();
    expect(info.username).toBe('dave_2');
    expect(info.connectedAt).toBe(connected.connectedAt);
  });
});

describe('challenges', () => {
  it('refuses yourself, unknown users and amounts out of range, verbatim', async () => {
    const { client } = players.alice;
    const body = { opponent: 'bob', amountUsd: '2', stakeTxSignature: fakeSignature() };
    const self = await fail(client.wagers.challenge({ body: { ...body, opponent: 'Alice' } }));
    expect([self.status, self.code]).toEqual([422, 'SELF_WAGER']);
    const nobody = await fail(client.wagers.challenge({ body: { ...body, opponent: 'nobody_here' } }));
    expect([nobody.status, nobody.code]).toEqual([404, 'USER_NOT_FOUND']);
    for (const amountUsd of ['0.999999', '25.000001', '0']) {
      const range = await fail(client.wagers.challenge({ body: { ...body, amountUsd } }));
      expect([range.status, range.code]).toEqual([422, 'AMOUNT_OUT_OF_RANGE']);
    }
    const malformed = await fail(client.wagers.challenge({ body: { ...body, stakeTxSignature: 'abc' } }));
    expect([malformed.status, malformed.code]).toEqual([400, 'invalid_request']);
  });

  it('refuses a message the database cannot store (NUL) with 400 naming the field; the stake stays unused', async () => {
    const { client, wallet } = players.alice;
    const stakeTxSignature = await refusedStake(wallet, usd('2'));
    const nul = await fail(
      client.wagers.challenge({
        body: { opponent: 'bob', amountUsd: '2', stakeTxSignature, message: 'Best\u0000of one?' },
      }),
    );
    expect([nul.status, nul.code]).toEqual([400, 'invalid_request']);
    expect(JSON.stringify(nul.details)).toContain('body.message');
    expect((await client.wagers.challenges()).outgoing).toEqual([]);
    expect(await wagerStore(service.database.db).transferUsed(stakeTxSignature)).toBe(false);
  });

  it('refuses a stake that is fake, of the wrong amount, to the wrong account or from someone else', async () => {
    const { client, wallet } = players.alice;
    const before = balance(wallet.address);
    const cases: [string, string][] = [
      [fakeSignature(), 'no confirmed transaction'],
      [await refusedStake(wallet, usd('1.5')), 'not the stake of 2 USD'],
      [
        await refusedStake(wallet, usd('2'), { destination: ata(players.carol.wallet.address, USDC_DEVNET) }),
        'nothing to the vault',
      ],
      [await refusedStake(players.carol.wallet, usd('2')), 'not signed by your connected wallet'],
    ];
    for (const [stakeTxSignature, reason] of cases) {
      const error = await fail(
        client.wagers.challenge({ body: { opponent: 'bob', amountUsd: '2', stakeTxSignature } }),
      );
      expect([error.status, error.code]).toEqual([422, 'STAKE_INVALID']);
      expect((error.details as { reason: string }).reason).toContain(reason);
    }
    expect((await client.wagers.challenges()).outgoing).toEqual([]);
    expect(balance(wallet.address)).toBe(before - usd('1.5') - usd('2'));
  });

  it('creates a pending challenge from a stake in the vault; the signature funds one stake only', async () => {
    const { client, wallet } = players.alice;
    const vaultBefore = balance(vault);
    const stakeTxSignature = await transfer(wallet, usd('2'));
    const challenge = await client.wagers.challenge({
      body: { opponent: 'bob', amountUsd: '2', stakeTxSignature, message: 'Best of one?' },
    });
    expect(challenge).toMatchObject({
      status: 'pending',
      challenger: { username: 'alice', address: wallet.address },
      opponent: { username: 'bob', address: players.bob.wallet.address },
      amountUsd: '2',
      message: 'Best of one?',
      stakeTxSignature,
      refundTxSignature: null,
      wagerId: null,
      respondedAt: null,
      createdAt: new Date(clockMs).toISOString(),
      expiresAt: new Date(clockMs + TTL_SECONDS * 1000).toISOString(),
    });
    expect(challenge.challengeId).toMatch(/^chl_/);
    expect(challenge.seedHash).toMatch(/^[0-9a-f]{64}$/);
    expect(balance(vault)).toBe(vaultBefore + usd('2'));
    await assertBooksBalance();

    const again = await fail(
      client.wagers.challenge({
        body: { opponent: 'bob', amountUsd: '2', stakeTxSignature: await refusedStake(wallet, usd('2')) },
      }),
    );
    expect([again.status, again.code]).toEqual([409, 'CHALLENGE_EXISTS']);
    const reused = await fail(
      client.wagers.challenge({ body: { opponent: 'carol', amountUsd: '2', stakeTxSignature } }),
    );
    expect([reused.status, reused.code]).toEqual([409, 'STAKE_ALREADY_USED']);
    // The opponent named by the stake's signature cannot reuse it either.
    const stolen = await fail(
      players.bob.client.wagers.challenge({ body: { opponent: 'carol', amountUsd: '2', stakeTxSignature } }),
    );
    expect(stolen.code).toBe('STAKE_ALREADY_USED');

    const mine = await client.wagers.challenges();
    expect(mine.outgoing.map((c) => c.challengeId)).toEqual([challenge.challengeId]);
    expect(mine.incoming).toEqual([]);
    const theirs = await players.bob.client.wagers.challenges();
    expect(theirs.incoming.map((c) => c.challengeId)).toEqual([challenge.challengeId]);
    expect(theirs.outgoing).toEqual([]);
  });
});

describe('a wager', () => {
  let wager: Wager;
  let challengeId: string;
  let seedHash: string;
  const before: Record<string, bigint> = {};

  it('refuses acceptance by a stranger, with the wrong stake, or with a used signature', async () => {
    const pending = (await players.bob.client.wagers.challenges()).incoming[0]!;
    challengeId = pending.challengeId;
    seedHash = pending.seedHash;
    const stranger = await fail(
      players.carol.client.wagers.accept({
        body: { challengeId, stakeTxSignature: await refusedStake(players.carol.wallet, usd('2')) },
      }),
    );
    expect([stranger.status, stranger.code]).toEqual([404, 'CHALLENGE_NOT_FOUND']);
    const own = await fail(
      players.alice.client.wagers.accept({
        body: { challengeId, stakeTxSignature: await refusedStake(players.alice.wallet, usd('2')) },
      }),
    );
    expect(own.code).toBe('CHALLENGE_NOT_FOUND');
    const reused = await fail(
      players.bob.client.wagers.accept({ body: { challengeId, stakeTxSignature: pending.stakeTxSignature } }),
    );
    expect([reused.status, reused.code]).toEqual([409, 'STAKE_ALREADY_USED']);
    const short = await fail(
      players.bob.client.wagers.accept({
        body: { challengeId, stakeTxSignature: await refusedStake(players.bob.wallet, usd('1')) },
      }),
    );
    expect([short.status, short.code]).toEqual([422, 'STAKE_INVALID']);
    const unknown = await fail(
      players.bob.client.wagers.accept({
        body: { challengeId: 'chl_doesnotexist1', stakeTxSignature: fakeSignature() },
      }),
    );
    expect(unknown.code).toBe('CHALLENGE_NOT_FOUND');
    expect((await players.bob.client.wagers.challenges()).incoming.map((c) => c.challengeId)).toEqual([challengeId]);
  });

  it('flips the coin at the entropy service and pays the winner the pot less the house cut, on chain', async () => {
    for (const p of ['alice', 'bob'] as const) before[p] = balance(players[p].wallet.address);
    const vaultBefore = balance(vault);
    const stake = await transfer(players.bob.wallet, usd('2'));
    wager = await players.bob.client.wagers.accept({ body: { challengeId, stakeTxSignature: stake } });
    expect(wager).toMatchObject({
      challengeId,
      status: 'settled',
      network: SOLANA_DEVNET,
      vaultAddress: vault,
      amountUsd: '2',
      potUsd: '4',
      houseCutPercent: 5,
      houseCutUsd: '0.2',
      payoutUsd: '3.8',
      seedHash,
    });
    const flip = wager.flip!;
    expect(wager.winner).toBe(flip.outcome === 'heads' ? 'challenger' : 'opponent');
    expect(flip.feeUsd).toBe('0.001');

    // Anyone can check the draw: the seed matches its commitment, the clientSeed mixes it with both stakes, and the
    // entropy proof recomputes to the same flip.
    const seed = wager.seed!;
    expect(sha256Hex(Buffer.from(seed, 'hex'))).toBe(seedHash);
    const challengerStake = wager.transfers.find(
      (t) => t.kind === 'stake' && t.from === players.alice.wallet.address,
    )!.txSignature;
    expect(flip.clientSeed).toBe(sha256Hex(`${seed}:${challengeId}:${challengerStake}:${stake}`));
    expect(flip.proof.clientSeed).toBe(flip.clientSeed);
    const recomputed = cascade(initialKey(flip.proof.proofId, flip.clientSeed), flip.proof.sources);
    expect(recomputed.seed.toString('hex')).toBe(flip.proof.seedHex);
    expect(drawCoins(recomputed.seed, 1).outcomes[0]).toBe(flip.outcome);

    // Money, to the atomic unit, on chain.
    const winner = wager.winner === 'challenger' ? 'alice' : 'bob';
    const loser = winner === 'alice' ? 'bob' : 'alice';
    const stakeOf = { alice: 0n, bob: usd('2') }; // Bob's stake left his wallet during this test
    expect(balance(players[winner].wallet.address)).toBe(before[winner]! - stakeOf[winner] + 3_800_000n);
    expect(balance(players[loser].wallet.address)).toBe(before[loser]! - stakeOf[loser]);
    expect(balance(vault)).toBe(vaultBefore + usd('2') - 3_800_000n - FLIP_FEE);
    await assertBooksBalance();
    expect(wager.transfers.map((t) => [t.kind, t.from, t.to, t.amountUsd])).toEqual([
      ['stake', players.alice.wallet.address, vault, '2'],
      ['stake', players.bob.wallet.address, vault, '2'],
      ['payout', vault, players[winner].wallet.address, '3.8'],
    ]);
    const payout = wager.transfers[2]!.txSignature;
    const onChain = await rpc
      .getTransaction(payout as never, {
        encoding: 'jsonParsed',
        commitment: 'confirmed',
        maxSupportedTransactionVersion: 0,
      })
      .send();
    expect(onChain?.meta?.err).toBeNull();

    // The record counts the settled wager for both.
    const winnerInfo = await players[winner].client.wagers.wallet();
    expect(winnerInfo.record).toEqual({ wagers: 1, wins: 1, losses: 0, wageredUsd: '2', wonUsd: '3.8' });
    expect((await players[loser].client.wagers.wallet()).record).toEqual({
      wagers: 1,
      wins: 0,
      losses: 1,
      wageredUsd: '2',
      wonUsd: '0',
    });
  });

  it('is readable by its players only, and accepted once', async () => {
    expect(await players.alice.client.wagers.get({ params: { wagerId: wager.wagerId } })).toEqual(wager);
    expect(await players.bob.client.wagers.get({ params: { wagerId: wager.wagerId } })).toEqual(wager);
    const stranger = await fail(players.carol.client.wagers.get({ params: { wagerId: wager.wagerId } }));
    expect([stranger.status, stranger.code]).toEqual([403, 'NOT_A_PLAYER']);
    const missing = await fail(players.alice.client.wagers.get({ params: { wagerId: 'wgr_doesnotexist1' } }));
    expect([missing.status, missing.code]).toEqual([404, 'WAGER_NOT_FOUND']);
    const malformed = await fail(players.alice.client.wagers.get({ params: { wagerId: 'nope' } }));
    expect(malformed.status).toBe(400);
    const twice = await fail(
      players.bob.client.wagers.accept({
        body: { challengeId, stakeTxSignature: await refusedStake(players.bob.wallet, usd('2')) },
      }),
    );
    expect([twice.status, twice.code]).toEqual([409, 'CHALLENGE_NOT_PENDING']);
    const none = await fail(players.alice.client.wagers.active());
    expect([none.status, none.code]).toEqual([404, 'NO_ACTIVE_WAGER']);
  });
});

describe('an unfinished wager', () => {
  it('stays active while the entropy service is down, blocks its players, then settles exactly', async () => {
    const { alice, carol, bob } = players;
    // 1.000001 each: pot 2.000002, cut 5 % = 0.1000001 rounded down to 0.1, payout 1.900002.
    const challenge = await carol.client.wagers.challenge({
      body: {
        opponent: 'alice',
        amountUsd: '1.000001',
        stakeTxSignature: await transfer(carol.wallet, usd('1.000001')),
      },
    });
    // Bob's challenge to alice waits; it expires (and is refunded) in a later test.
    const waiting = await bob.client.wagers.challenge({
      body: { opponent: 'alice', amountUsd: '1', stakeTxSignature: await transfer(bob.wallet, usd('1')) },
    });
    const before = { alice: balance(alice.wallet.address), carol: balance(carol.wallet.address) };
    const vaultBefore = balance(vault);
    const strayBefore = stray;
    entropyUrl = 'http://127.0.0.1:9';
    let wagerId = '';
    try {
      const stake = await transfer(alice.wallet, usd('1.000001'));
      const active = await alice.client.wagers.accept({
        body: { challengeId: challenge.challengeId, stakeTxSignature: stake },
      });
      expect(active).toMatchObject({
        status: 'active',
        winner: null,
        seed: null,
        flip: null,
        potUsd: '2.000002',
        houseCutUsd: '0.1',
        payoutUsd: '1.900002',
        settledAt: null,
      });
      expect(active.transfers.map((t) => t.kind)).toEqual(['stake', 'stake']);
      wagerId = active.wagerId;
      expect(await carol.client.wagers.active()).toEqual(active);
      expect(balance(vault)).toBe(vaultBefore + usd('1.000001'));
      await assertBooksBalance();

      const busy = await fail(
        bob.client.wagers.challenge({
          body: { opponent: 'carol', amountUsd: '1', stakeTxSignature: await refusedStake(bob.wallet, usd('1')) },
        }),
      );
      expect([busy.status, busy.code]).toEqual([409, 'WAGER_IN_PROGRESS']);
      const second = await fail(
        alice.client.wagers.accept({
          body: { challengeId: waiting.challengeId, stakeTxSignature: await refusedStake(alice.wallet, usd('1')) },
        }),
      );
      expect([second.status, second.code]).toEqual([409, 'WAGER_IN_PROGRESS']);
      const leaving = await fail(alice.client.wagers.disconnect());
      expect([leaving.status, leaving.code]).toEqual([409, 'WAGER_IN_PROGRESS']);
    } finally {
      entropyUrl = entropy.url;
    }
    // Reading it (or any sweep) finishes it now that the entropy service answers.
    const settled = await alice.client.wagers.get({ params: { wagerId } });
    expect(settled.status).toBe('settled');
    const winner = settled.winner === 'challenger' ? 'carol' : 'alice';
    // Alice paid her stake and the 1 USD transfer refused while she was busy.
    const paid = { alice: before.alice - usd('1.000001') - usd('1'), carol: before.carol };
    paid[winner] += 1_900_002n;
    expect(balance(alice.wallet.address)).toBe(paid.alice);
    expect(balance(carol.wallet.address)).toBe(paid.carol);
    expect(balance(vault)).toBe(vaultBefore + usd('1.000001') + (stray - strayBefore) - 1_900_002n - FLIP_FEE);
    expect(settled.transfers.map((t) => [t.kind, t.amountUsd])).toEqual([
      ['stake', '1.000001'],
      ['stake', '1.000001'],
      ['payout', '1.900002'],
    ]);
    await assertBooksBalance();
  });
});

describe('declines, expiry and disconnection refund on chain', () => {
  it('declines the oldest incoming challenge and refunds the stake', async () => {
    const { bob, dave } = players;
    const before = balance(bob.wallet.address);
    const vaultBefore = balance(vault);
    const challenge = await bob.client.wagers.challenge({
      body: { opponent: 'dave_2', amountUsd: '3', stakeTxSignature: await transfer(bob.wallet, usd('3')) },
    });
    expect(balance(bob.wallet.address)).toBe(before - usd('3'));
    const stranger = await fail(players.carol.client.wagers.decline({ body: { challengeId: challenge.challengeId } }));
    expect([stranger.status, stranger.code]).toEqual([404, 'CHALLENGE_NOT_FOUND']);
    const declined = await dave.client.wagers.decline({ body: {} });
    expect(declined).toMatchObject({
      challengeId: challenge.challengeId,
      status: 'declined',
      respondedAt: new Date(clockMs).toISOString(),
    });
    expect(declined.refundTxSignature).toMatch(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/);
    expect(balance(bob.wallet.address)).toBe(before);
    expect(balance(vault)).toBe(vaultBefore);
    await assertBooksBalance();
    const again = await fail(dave.client.wagers.decline({ body: { challengeId: challenge.challengeId } }));
    expect([again.status, again.code]).toEqual([409, 'CHALLENGE_NOT_PENDING']);
    const none = await fail(dave.client.wagers.decline({ body: {} }));
    expect([none.status, none.code]).toEqual([404, 'CHALLENGE_NOT_FOUND']);
    const late = await fail(
      dave.client.wagers.accept({
        body: { challengeId: challenge.challengeId, stakeTxSignature: await refusedStake(dave.wallet, usd('3')) },
      }),
    );
    expect(late.code).toBe('CHALLENGE_NOT_PENDING');
  });

  it('expires a challenge once its lifetime passes on the injected clock, refunding it once', async () => {
    const { carol, dave } = players;
    const before = balance(carol.wallet.address);
    const challenge = await carol.client.wagers.challenge({
      body: { opponent: 'dave_2', amountUsd: '1', stakeTxSignature: await transfer(carol.wallet, usd('1')) },
    });
    clockMs += (TTL_SECONDS - 1) * 1000;
    expect((await dave.client.wagers.challenges()).incoming.map((c) => c.challengeId)).toEqual([challenge.challengeId]);
    expect(balance(carol.wallet.address)).toBe(before - usd('1'));
    clockMs += 1000;
    const stake = await transfer(dave.wallet, usd('1'));
    const expired = await fail(
      dave.client.wagers.accept({ body: { challengeId: challenge.challengeId, stakeTxSignature: stake } }),
    );
    expect([expired.status, expired.code]).toEqual([409, 'CHALLENGE_NOT_PENDING']);
    expect(await dave.client.wagers.challenges()).toEqual({ incoming: [], outgoing: [] });
    expect(balance(carol.wallet.address)).toBe(before);
    const stored = await wagerStore(service.database.db).challenge(challenge.challengeId);
    expect(stored).toMatchObject({ status: 'expired', respondedAt: new Date(clockMs) });
    expect(stored?.refundTx).toBeTruthy();
    // Sweeping again (another replica, a later request) refunds nothing more.
    await carol.client.wagers.challenges();
    expect(balance(carol.wallet.address)).toBe(before);
    // Dave's refused stake was never used: it can fund a later challenge.
    const reuse = await dave.client.wagers.challenge({
      body: { opponent: 'carol', amountUsd: '1', stakeTxSignature: stake },
    });
    expect(reuse.status).toBe('pending');
  });

  it('disconnects: cancels outgoing, declines incoming, refunds both, and goes offline', async () => {
    const { bob, carol, dave } = players;
    const before = { bob: balance(bob.wallet.address), dave: balance(dave.wallet.address) };
    const incoming = await bob.client.wagers.challenge({
      body: { opponent: 'carol', amountUsd: '2', stakeTxSignature: await transfer(bob.wallet, usd('2')) },
    });
    const outgoing = (await carol.client.wagers.challenges()).incoming.find((c) => c.challenger.username === 'dave_2')!;
    const gone = await carol.client.wagers.disconnect();
    expect(gone).toMatchObject({
      username: 'carol',
      address: carol.wallet.address,
      disconnectedAt: new Date(clockMs).toISOString(),
    });
    expect(gone.declinedChallenges.sort()).toEqual([incoming.challengeId, outgoing.challengeId].sort());
    expect(gone.cancelledChallenges).toEqual([]);
    expect(balance(bob.wallet.address)).toBe(before.bob);
    expect(balance(dave.wallet.address)).toBe(before.dave + usd('1'));
    const offline = await fail(
      bob.client.wagers.challenge({
        body: { opponent: 'carol', amountUsd: '2', stakeTxSignature: await refusedStake(bob.wallet, usd('2')) },
      }),
    );
    expect([offline.status, offline.code]).toEqual([404, 'USER_NOT_FOUND']);
    expect((await fail(carol.client.wagers.wallet())).code).toBe('WALLET_NOT_CONNECTED');
    // Back online under the same name; the record survived.
    expect((await connect('carol')).record.wagers).toBe(1);

    const mine = await dave.client.wagers.challenge({
      body: { opponent: 'bob', amountUsd: '1', stakeTxSignature: await transfer(dave.wallet, usd('1')) },
    });
    const left = await dave.client.wagers.disconnect();
    expect(left.cancelledChallenges).toEqual([mine.challengeId]);
    expect(balance(dave.wallet.address)).toBe(before.dave + usd('1'));
  });
});

describe('replicas and races', () => {
  it('lets one of two concurrent challenges with the same stake signature through', async () => {
    const { alice } = players;
    await connect('dave', 'dave_2');
    const stake = await transfer(alice.wallet, usd('1'));
    const results = await Promise.allSettled([
      alice.client.wagers.challenge({ body: { opponent: 'bob', amountUsd: '1', stakeTxSignature: stake } }),
      alice.client.wagers.challenge({ body: { opponent: 'dave_2', amountUsd: '1', stakeTxSignature: stake } }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((refused.reason as ApiError).code).toBe('STAKE_ALREADY_USED');
  });

  it('lets one of two racing acceptances through; the other stake stays unused', async () => {
    const { bob, dave } = players;
    const challenge = await bob.client.wagers.challenge({
      body: { opponent: 'dave_2', amountUsd: '1', stakeTxSignature: await transfer(bob.wallet, usd('1')) },
    });
    const [first, second] = [await transfer(dave.wallet, usd('1')), await refusedStake(dave.wallet, usd('1'))];
    const results = await Promise.allSettled(
      [first, second].map((stakeTxSignature) =>
        dave.client.wagers.accept({ body: { challengeId: challenge.challengeId, stakeTxSignature } }),
      ),
    );
    const accepted = results.filter((r): r is PromiseFulfilledResult<Wager> => r.status === 'fulfilled');
    expect(accepted).toHaveLength(1);
    expect(accepted[0]!.value.status).toBe('settled');
    const refused = (results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason as ApiError;
    expect(['CHALLENGE_NOT_PENDING', 'WAGER_IN_PROGRESS']).toContain(refused.code);
    // Whichever lost, its signature was not taken: it may fund a later stake.
    const used = accepted[0]!.value.transfers.find((t) => t.from === dave.wallet.address)!.txSignature;
    const unused = used === first ? second : first;
    expect(await wagerStore(service.database.db).transferUsed(unused)).toBe(false);
    // One of the two 1 USD transfers is stray whichever lost: `stray` already counts 1 USD for it.
    await assertBooksBalance();
  });

  it('lets an acceptance or a decline racing it through, never both: the stake is paid out or refunded, once', async () => {
    const { bob, dave } = players;
    const bobBefore = balance(bob.wallet.address);
    const challenge = await bob.client.wagers.challenge({
      body: { opponent: 'dave_2', amountUsd: '1', stakeTxSignature: await transfer(bob.wallet, usd('1')) },
    });
    const stake = await transfer(dave.wallet, usd('1'));
    const [accept, decline] = await Promise.allSettled([
      dave.client.wagers.accept({ body: { challengeId: challenge.challengeId, stakeTxSignature: stake } }),
      dave.client.wagers.decline({ body: { challengeId: challenge.challengeId } }),
    ]);
    expect([accept.status, decline.status].filter((s) => s === 'fulfilled')).toHaveLength(1);
    const transfers = await wagerStore(service.database.db).transfers(challenge.challengeId);
    if (accept.status === 'fulfilled') {
      expect(accept.value.status).toBe('settled');
      expect(((decline as PromiseRejectedResult).reason as ApiError).code).toBe('CHALLENGE_NOT_PENDING');
      expect(transfers.map((t) => t.kind).sort()).toEqual(['payout', 'stake', 'stake']);
      racedWagers += 1n;
    } else {
      expect((decline as PromiseFulfilledResult<{ status: string }>).value.status).toBe('declined');
      expect((accept.reason as ApiError).code).toBe('CHALLENGE_NOT_PENDING');
      expect(transfers.map((t) => [t.kind, t.amount])).toEqual([
        ['stake', usd('1')],
        ['refund', usd('1')],
      ]);
      expect(balance(bob.wallet.address)).toBe(bobBefore);
      // Dave's transfer was not taken up: it stays his to name in a later stake.
      expect(await wagerStore(service.database.db).transferUsed(stake)).toBe(false);
      stray += usd('1');
    }
    await assertBooksBalance();
  });

  it('expires and refunds a challenge once when two replicas on one database sweep at the same time', async () => {
    const { bob, dave } = players;
    const replica = await startService(
      (context) =>
        createWagersApp(context, {
          entropyUrl: () => entropyUrl,
          now: () => new Date(clockMs),
          sweepEveryMs: 0,
          challengeTtlSeconds: TTL_SECONDS,
        }),
      {
        id: 'wagers',
        wallet: service.context.wallet,
        rpcUrl: economy.rpcUrl,
        database: service.database,
        paywall: { feePayer: economy.feePayer.address, facilitatorUrl: economy.facilitator.url },
      },
    );
    try {
      const before = balance(bob.wallet.address);
      const challenge = await bob.client.wagers.challenge({
        body: { opponent: 'dave_2', amountUsd: '4', stakeTxSignature: await transfer(bob.wallet, usd('4')) },
      });
      clockMs += TTL_SECONDS * 1000;
      const onReplica = createClient({
        baseUrls: { wagers: replica.url },
        wallet: await walletFromSecretKey(dave.wallet.secretKey),
        payments: false,
        maxRetries: 0,
      });
      const [here, there] = await Promise.all([bob.client.wagers.challenges(), onReplica.wagers.challenges()]);
      expect(here.outgoing).toEqual([]);
      expect(there.incoming).toEqual([]);
      expect(balance(bob.wallet.address)).toBe(before);
      const refunds = (await wagerStore(service.database.db).transfers(challenge.challengeId)).filter(
        (t) => t.kind === 'refund',
      );
      expect(refunds.map((t) => [t.to, t.amount])).toEqual([[bob.wallet.address, usd('4')]]);
      await assertBooksBalance();
    } finally {
      await replica.close();
    }
  });
});

describe('the books', () => {
  it('balance: vault = stakes held for pending and active wagers + the house cut retained', async () => {
    const books = await assertBooksBalance();
    // Nothing is pending any more (the last sweep expired and refunded alice's 1 USD challenge too); the house kept
    // three cuts (0.2, 0.1 and 0.1 USD) less three flip fees, and 0.1 less a fee for an acceptance that won its race.
    expect(books.held).toBe(0n);
    expect(books.houseRetained).toBe(
      200_000n + 100_000n + 100_000n - 3n * FLIP_FEE + racedWagers * (100_000n - FLIP_FEE),
    );
  });
});

describe('a flip whose answer is lost', () => {
  it('is asked for again without a second fee: the entropy service answers the retry from the first payment', async () => {
    // The flip's answer is lost on the way back (the entropy service settled the vault's fee and answered, the
    // connection died): the wager stays active. Asked again later, the vault must not pay a second fee that the
    // books never count.
    const lossy = await lossyProxy(() => entropy.url);
    const named = async (username: string) => {
      const wallet = generateWallet();
      await economy.ledger.airdrop(wallet.address, 1_000_000_000n);
      await economy.ledger.mintTo(wallet.address, usd('10'));
      const client = createClient({
        baseUrls: { wagers: service.url },
        wallet: await walletFromSecretKey(wallet.secretKey),
        payments: false,
        maxRetries: 0,
      });
      await client.wagers.connect({ body: { address: wallet.address, username } });
      return { wallet, client };
    };
    const erin = await named('erin');
    const frank = await named('frank');
    const entropyWallet = entropy.context.wallet.address;
    const challenge = await erin.client.wagers.challenge({
      body: { opponent: 'frank', amountUsd: '2', stakeTxSignature: await transfer(erin.wallet, usd('2')) },
    });
    const [vaultBefore, entropyBefore] = [balance(vault), balance(entropyWallet)];
    entropyUrl = lossy.url;
    lossy.drop = true;
    let wagerId = '';
    try {
      const active = await frank.client.wagers.accept({
        body: { challengeId: challenge.challengeId, stakeTxSignature: await transfer(frank.wallet, usd('2')) },
      });
      expect(active).toMatchObject({ status: 'active', flip: null, winner: null });
      wagerId = active.wagerId;
      // The entropy service was paid and answered (the SDK presented the payment twice), but nothing came back.
      expect(lossy.dropped).toBe(2);
      expect(balance(entropyWallet)).toBe(entropyBefore + FLIP_FEE);
      expect(balance(vault)).toBe(vaultBefore + usd('2') - FLIP_FEE);
      lossy.drop = false;
      // Reading the wager finishes it: the flip is asked for again, through the same (now reliable) connection.
      const settled = await frank.client.wagers.get({ params: { wagerId } });
      expect(settled.status).toBe('settled');
      expect(settled.flip!.feeUsd).toBe('0.001');
      // One fee, to the atomic unit, on chain: the pot less the payout less one flip fee stays in the vault.
      expect(balance(entropyWallet)).toBe(entropyBefore + FLIP_FEE);
      expect(balance(vault)).toBe(vaultBefore + usd('2') - 3_800_000n - FLIP_FEE);
      const winner = settled.winner === 'challenger' ? erin : frank;
      expect(balance(winner.wallet.address)).toBe(usd('10') - usd('2') + 3_800_000n);
      await assertBooksBalance();
    } finally {
      entropyUrl = entropy.url;
      await lossy.close();
    }
  });
});

/**
 * A connection to a service that holds paid requests (those carrying PAYMENT-SIGNATURE) until `release()`: the vault's
 * fee is settled, and the flip drawn, only then.
 */
async function gatedProxy(target: () => string) {
  const waiting: (() => void)[] = [];
  let open = false;
  const state = {
    held: 0,
    release: () => {
      open = true;
      for (const go of waiting.splice(0)) go();
    },
  };
  const relayed = await relay(target, {
    hold: (req, forward) => {
      if (open || !req.headers['payment-signature']) return forward();
      state.held += 1;
      waiting.push(forward);
    },
  });
  return Object.assign(state, relayed);
}

async function until(condition: () => boolean, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('a wager the entropy service never flips', () => {
  // WAGER_VOID_HOURS, default 24: a wager with no flip for longer is void, both stakes refunded.
  const HOUR = 3600 * 1000;
  const DEAD_ENTROPY = 'http://127.0.0.1:9';

  const newPlayer = async (username: string, fundUsd = '10') => {
    const { wallet, client } = await fundedPlayer(fundUsd);
    await client.wagers.connect({ body: { address: wallet.address, username } });
    return { wallet, client };
  };
  type Player = Awaited<ReturnType<typeof newPlayer>>;

  /** The player closes its (empty) stablecoin account: the vault can no longer pay it until it opens one again. */
  const closeAccount = (wallet: Wallet) =>
    sendInstructions(
      rpc,
      [wallet],
      [
        getCloseAccountInstruction({
          account: address(ata(wallet.address, USDC_DEVNET)),
          destination: address(wallet.address),
          owner: address(wallet.address),
        }),
      ],
    );

  /** `challenger` challenges `opponent` (by username), who accepts: the wager as the acceptance answers it. */
  async function wager(challenger: Player, opponent: Player & { name: string }, amountUsd: string) {
    const challenge = await challenger.client.wagers.challenge({
      body: {
        opponent: opponent.name,
        amountUsd,
        stakeTxSignature: await transfer(challenger.wallet, usd(amountUsd)),
      },
    });
    return opponent.client.wagers.accept({
      body: { challengeId: challenge.challengeId, stakeTxSignature: await transfer(opponent.wallet, usd(amountUsd)) },
    });
  }

  it('is void once it has had no flip for longer than the limit: both stakes refunded in full, players free', async () => {
    const gina = await newPlayer('gina');
    const hank = { ...(await newPlayer('hank')), name: 'hank' };
    const ivan = await newPlayer('ivan');
    const judy = { ...(await newPlayer('judy')), name: 'judy' };
    const entropyWallet = entropy.context.wallet.address;
    const [vaultBefore, entropyBefore] = [balance(vault), balance(entropyWallet)];
    entropyUrl = DEAD_ENTROPY;
    let late: Wager;
    let voided: Wager;
    try {
      const active = await wager(gina, hank, '2');
      expect(active).toMatchObject({ status: 'active', flip: null, winner: null });
      const createdAt = clockMs;
      // Half a day later another wager starts; it is still within the limit when the first one passes it.
      clockMs += 12 * HOUR;
      late = await wager(ivan, judy, '1');
      expect(late.status).toBe('active');
      clockMs = createdAt + 24 * HOUR;
      // At the limit, not past it: still active, its players still blocked.
      expect((await gina.client.wagers.active()).wagerId).toBe(active.wagerId);
      const busy = await fail(
        gina.client.wagers.challenge({
          body: { opponent: 'ivan', amountUsd: '1', stakeTxSignature: await refusedStake(gina.wallet, usd('1')) },
        }),
      );
      expect(busy.code).toBe('WAGER_IN_PROGRESS');
      expect(balance(gina.wallet.address)).toBe(usd('10') - usd('2') - usd('1'));

      clockMs += 1000;
      // The sweep (here run by a read) voids it and refunds both stakes from the vault.
      const none = await fail(gina.client.wagers.active());
      expect([none.status, none.code]).toEqual([404, 'NO_ACTIVE_WAGER']);
      voided = await hank.client.wagers.get({ params: { wagerId: active.wagerId } });
      expect(voided).toMatchObject({
        status: 'void',
        winner: null,
        flip: null,
        seed: null,
        settledAt: null,
        voidedAt: new Date(clockMs).toISOString(),
      });
      expect(voided.transfers.map((t) => [t.kind, t.from, t.to, t.amountUsd])).toEqual([
        ['stake', gina.wallet.address, vault, '2'],
        ['stake', hank.wallet.address, vault, '2'],
        ['refund', vault, gina.wallet.address, '2'],
        ['refund', vault, hank.wallet.address, '2'],
      ]);
      expect(voided.refundTxSignatures).toEqual({
        challenger: voided.transfers[2]!.txSignature,
        opponent: voided.transfers[3]!.txSignature,
      });
      // Back to exactly what they had before staking (gina also paid the 1 USD transfer refused while she was busy);
      // the vault paid no flip fee and no house cut was taken.
      expect(balance(gina.wallet.address)).toBe(usd('10') - usd('1'));
      expect(balance(hank.wallet.address)).toBe(usd('10'));
      expect(balance(vault)).toBe(vaultBefore + usd('1') + usd('1') + usd('1'));
      expect(balance(entropyWallet)).toBe(entropyBefore);
      // The wager within the limit stays active.
      expect((await judy.client.wagers.active()).wagerId).toBe(late.wagerId);
      await assertBooksBalance();
      // A void is neither won nor lost.
      for (const p of [gina, hank])
        expect((await p.client.wagers.wallet()).record).toEqual({
          wagers: 0,
          wins: 0,
          losses: 0,
          wageredUsd: '0',
          wonUsd: '0',
        });
    } finally {
      entropyUrl = entropy.url;
    }
    // The entropy service is back: the void wager stays void (its flip is never asked for), the other settles.
    expect((await judy.client.wagers.get({ params: { wagerId: late.wagerId } })).status).toBe('settled');
    await gina.client.wagers.challenges();
    expect(await gina.client.wagers.get({ params: { wagerId: voided.wagerId } })).toEqual(voided);
    expect(balance(entropyWallet)).toBe(entropyBefore + FLIP_FEE);
    expect(balance(gina.wallet.address)).toBe(usd('10') - usd('1'));
    expect(balance(hank.wallet.address)).toBe(usd('10'));
    await assertBooksBalance();
    // Both players may wager again.
    const again = await wager(gina, hank, '1');
    expect(again.status).toBe('settled');
    await assertBooksBalance();
  });

  it('pays out or voids, never both, when the flip arrives while the sweep voids it', async () => {
    const kate = await newPlayer('kate');
    const liam = { ...(await newPlayer('liam')), name: 'liam' };
    const gate = await gatedProxy(() => entropy.url);
    const vaultBefore = balance(vault);
    entropyUrl = gate.url;
    try {
      // The acceptance takes the wager's lease and asks for the flip, which is held on its way.
      const accepting = wager(kate, liam, '2');
      await until(() => gate.held === 1);
      // A day later the lease has lapsed: a sweep takes it, sees no flip, and voids the wager.
      clockMs += 24 * HOUR + 1000;
      expect((await fail(kate.client.wagers.active())).code).toBe('NO_ACTIVE_WAGER');
      expect(balance(kate.wallet.address)).toBe(usd('10'));
      expect(balance(liam.wallet.address)).toBe(usd('10'));
      // Now the flip arrives (the vault's fee settles): it is too late to decide anything.
      gate.release();
      const answered = await accepting;
      expect(answered).toMatchObject({ status: 'void', flip: null, winner: null, seed: null });
      expect(answered.transfers.map((t) => t.kind)).toEqual(['stake', 'stake', 'refund', 'refund']);
      expect(await liam.client.wagers.get({ params: { wagerId: answered.wagerId } })).toEqual(answered);
      expect(balance(kate.wallet.address)).toBe(usd('10'));
      expect(balance(liam.wallet.address)).toBe(usd('10'));
      // The fee of the late flip is the house's loss, and the books say so.
      expect(balance(vault)).toBe(vaultBefore - FLIP_FEE);
      await assertBooksBalance();
    } finally {
      entropyUrl = entropy.url;
      gate.release();
      await gate.close();
    }
  });

  it('is never voided once its flip is drawn: only its payout is retried', async () => {
    // Both players stake all they have and close their stablecoin accounts: the winner cannot be paid yet.
    const mona = await newPlayer('mona', '2');
    const nick = { ...(await newPlayer('nick', '2')), name: 'nick' };
    const challenge = await mona.client.wagers.challenge({
      body: { opponent: 'nick', amountUsd: '2', stakeTxSignature: await transfer(mona.wallet, usd('2')) },
    });
    const stake = await transfer(nick.wallet, usd('2'));
    await Promise.all([closeAccount(mona.wallet), closeAccount(nick.wallet)]);
    const drawn = await nick.client.wagers.accept({
      body: { challengeId: challenge.challengeId, stakeTxSignature: stake },
    });
    expect(drawn.status).toBe('active');
    expect(drawn.flip).not.toBeNull();
    const winner = drawn.winner === 'challenger' ? mona : nick;
    clockMs += 48 * HOUR;
    await mona.client.wagers.challenges();
    const still = await mona.client.wagers.get({ params: { wagerId: drawn.wagerId } });
    expect(still).toMatchObject({ status: 'active', winner: drawn.winner, flip: drawn.flip });
    expect(still.transfers.map((t) => t.kind)).toEqual(['stake', 'stake']);
    // Even asked directly (a sweep that read the wager just before another finisher stored the flip), the store
    // refuses to void a wager that has its flip.
    const store = wagerStore(service.database.db);
    expect(await store.voidWager(drawn.wagerId, new Date(clockMs))).toMatchObject({ status: 'active', voidedAt: null });
    expect(await store.hasActiveWager(mona.wallet.address)).toBe(true);
    await assertBooksBalance();
    await Promise.all([
      economy.ledger.openTokenAccount(mona.wallet.address),
      economy.ledger.openTokenAccount(nick.wallet.address),
    ]);
    const settled = await nick.client.wagers.get({ params: { wagerId: drawn.wagerId } });
    expect(settled.status).toBe('settled');
    expect(balance(winner.wallet.address)).toBe(3_800_000n);
    await assertBooksBalance();
  });

  it('leaves a refund the vault cannot send owed, and a later sweep sends it once', async () => {
    // Olga stakes all she has and closes her stablecoin account; the entropy service is gone.
    const olga = await newPlayer('olga', '2');
    const pete = { ...(await newPlayer('pete')), name: 'pete' };
    const challenge = await olga.client.wagers.challenge({
      body: { opponent: 'pete', amountUsd: '2', stakeTxSignature: await transfer(olga.wallet, usd('2')) },
    });
    await closeAccount(olga.wallet);
    const vaultBefore = balance(vault);
    entropyUrl = DEAD_ENTROPY;
    let wagerId = '';
    try {
      const active = await pete.client.wagers.accept({
        body: { challengeId: challenge.challengeId, stakeTxSignature: await transfer(pete.wallet, usd('2')) },
      });
      wagerId = active.wagerId;
      clockMs += 24 * HOUR + 1000;
      await pete.client.wagers.challenges();
      const owed = await pete.client.wagers.get({ params: { wagerId } });
      expect(owed).toMatchObject({ status: 'void', flip: null });
      // Pete is refunded; Olga's refund waits for her account, and her stake stays in the vault (held, in the books).
      expect(owed.refundTxSignatures).toEqual({ challenger: null, opponent: expect.any(String) });
      expect(owed.transfers.map((t) => [t.kind, t.to])).toEqual([
        ['stake', vault],
        ['stake', vault],
        ['refund', pete.wallet.address],
      ]);
      expect(balance(pete.wallet.address)).toBe(usd('10'));
      expect(balance(vault)).toBe(vaultBefore);
      expect((await assertBooksBalance()).held).toBeGreaterThanOrEqual(usd('2'));
      // Both are free to wager again; Olga can disconnect.
      expect((await fail(olga.client.wagers.active())).code).toBe('NO_ACTIVE_WAGER');
      await olga.client.wagers.disconnect();
      await olga.client.wagers.connect({ body: { address: olga.wallet.address, username: 'olga' } });

      await economy.ledger.openTokenAccount(olga.wallet.address);
      await pete.client.wagers.challenges();
      await pete.client.wagers.challenges();
      const done = await olga.client.wagers.get({ params: { wagerId } });
      expect(done.status).toBe('void');
      expect(done.refundTxSignatures!.challenger).toEqual(expect.any(String));
      expect(done.transfers.map((t) => [t.kind, t.to, t.amountUsd])).toEqual([
        ['stake', vault, '2'],
        ['stake', vault, '2'],
        ['refund', pete.wallet.address, '2'],
        ['refund', olga.wallet.address, '2'],
      ]);
      expect(balance(olga.wallet.address)).toBe(usd('2'));
      expect(balance(vault)).toBe(vaultBefore - usd('2'));
      await assertBooksBalance();
    } finally {
      entropyUrl = entropy.url;
    }
  });
});

describe('npm run example:wager', () => {
  it('wagers 2 USD between the demo wallet and a faucet-funded second wallet, and prints the proof, winner, payout and balances', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ae-wager-example-'));
    try {
      const demo = generateWallet();
      await economy.ledger.mintTo(demo.address, usd('10'));
      const keyFile = join(dataDir, 'keys', 'demo-agent.json');
      mkdirSync(join(dataDir, 'keys'), { recursive: true });
      writeFileSync(keyFile, JSON.stringify([...demo.secretKey]));
      writeFileSync(
        join(dataDir, 'services.json'),
        JSON.stringify({
          chain: {
            rpcUrl: economy.rpcUrl,
            stablecoin: USDC_DEVNET,
            network: SOLANA_DEVNET,
            local: true,
            faucet: `${economy.rpcUrl}/faucet`,
          },
          demoWallet: { address: demo.address, keyFile },
          services: [{ id: 'wagers', url: service.url, wallet: vault }],
        }),
      );
      const before = (await wagerStore(service.database.db).books()).houseRetained;
      const { stdout } = await run(
        process.execPath,
        ['--import', 'tsx', '--conditions=ae-source', 'examples/wager.ts'],
        {
          cwd: fileURLToPath(new URL('..', import.meta.url)),
          env: { ...process.env, DATA_DIR: dataDir },
        },
      );
      expect(stdout).toContain(`alice_demo ${demo.address}: 10 USD`);
      expect(stdout).toMatch(/Entropy proof ent_[0-9a-f]+ \(ae-entropy-v1\)/);
      expect(stdout).toContain('hash matches the commitment: true; clientSeed recomputed: true');
      expect(stdout).toMatch(
        /Winner: (alice_demo|bob_second) \((challenger|opponent)\), paid 3\.8 USD of the 4 USD pot; the house keeps 0\.2 USD/,
      );
      expect(stdout).toMatch(/Payout transaction [1-9A-HJ-NP-Za-km-z]{64,88}/);
      const demoWon = /Winner: alice_demo/.test(stdout);
      expect(balance(demo.address)).toBe(demoWon ? usd('11.8') : usd('8'));
      expect(stdout).toContain(`alice_demo ${demoWon ? '11.8' : '8'} USD (was 10)`);
      const books = await assertBooksBalance();
      expect(books.houseRetained).toBe(before + 200_000n - FLIP_FEE);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('settings', () => {
  it('reads the spec’s variables with their defaults and refuses bad values by name', async () => {
    const { loadConfig } = await import('../servers/src/config');
    const { wagers } = await import('@agent-economy/contracts');
    const defaults = loadConfig([wagers], {});
    expect([
      defaults.MIN_WAGER_USD,
      defaults.MAX_WAGER_USD,
      defaults.HOUSE_CUT_PERCENT,
      defaults.WAGER_CHALLENGE_TTL_SECONDS,
      defaults.WAGER_VOID_HOURS,
      defaults.CHAIN_RPC_URL,
    ]).toEqual(['1', '25', 500, 600, 24, undefined]);
    const custom = loadConfig([wagers], {
      MIN_WAGER_USD: '0.5',
      MAX_WAGER_USD: '100',
      HOUSE_CUT_PERCENT: '2.5',
      WAGER_VOID_HOURS: '72',
      CHAIN_RPC_URL: 'http://127.0.0.1:8899',
    });
    expect([
      custom.MIN_WAGER_USD,
      custom.MAX_WAGER_USD,
      custom.HOUSE_CUT_PERCENT,
      custom.WAGER_VOID_HOURS,
      custom.CHAIN_RPC_URL,
    ]).toEqual(['0.5', '100', 250, 72, 'http://127.0.0.1:8899']);
    let message = '';
    try {
      loadConfig([wagers], {
        MIN_WAGER_USD: '0',
        HOUSE_CUT_PERCENT: '100',
        WAGER_VOID_HOURS: '0',
        CHAIN_RPC_URL: 'mainnet',
      });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('MIN_WAGER_USD: must be more than 0');
    expect(message).toContain('HOUSE_CUT_PERCENT: must be a percentage from 0 to below 100');
    expect(message).toContain('WAGER_VOID_HOURS: ');
    expect(message).toContain('CHAIN_RPC_URL: ');
    expect(() => loadConfig([wagers], { MIN_WAGER_USD: '30' })).toThrow(
      'MIN_WAGER_USD: must not be above MAX_WAGER_USD',
    );
  });

  it('refuses a house cut that cannot pay for the flip of the smallest pot: the fee would come out of other players’ stakes', async () => {
    // The vault pays the entropy service up to 0.01 USD per flip out of the house cut. With no cut (or 0.25 % of a 2
    // USD
    // pot: 0.005 USD) every wager would take its flip fee from stakes the vault holds for others.
    await expect(createWagersApp(service.context, { houseCutBps: 0, sweepEveryMs: 0 })).rejects.toThrow(
      /HOUSE_CUT_PERCENT .*0\.01 USD/,
    );
    await expect(createWagersApp(service.context, { houseCutBps: 25, sweepEveryMs: 0 })).rejects.toThrow(
      /HOUSE_CUT_PERCENT/,
    );
    // 0.5 % of the smallest pot (2 USD) is 0.01 USD: enough.
    await expect(createWagersApp(service.context, { houseCutBps: 50, sweepEveryMs: 0 })).resolves.toBeTruthy();
  });
});
