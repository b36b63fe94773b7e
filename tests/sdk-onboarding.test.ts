import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import axios, { AxiosHeaders } from 'axios';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOLANA_DEVNET, SOLANA_MAINNET, USDC_DEVNET, USDC_MAINNET, base58Decode } from '@agent-economy/contracts';
import {
  AgentEconomyError,
  ApiError,
  BadRequestError,
  ChainMismatchError,
  ConflictError,
  InsufficientFundsError,
  createClient,
  fetchBalances,
  fundWallet,
  generateWallet,
  loadDeployment,
  walletFromFile,
  walletToFile,
  type Deployment,
} from '@agent-economy/sdk';
import { createEducationApp } from '../servers/src/services/education';
import { startEconomy, type Economy } from './support/economy';
import { startService, type RunningService } from './support/servers';

// The kinder SDK end to end: a wallet made and saved by the SDK, funded through the local ledger's faucet,
// a client set up from the deployment's services.json, and what a payment that cannot settle does: it
// is refused before anything is signed (no money, another chain), with nothing reaching the ledger.

let economy: Economy;
let dir: string;
let deployment: Deployment;
let deploymentFile: string;

beforeAll(async () => {
  economy = await startEconomy();
  dir = mkdtempSync(join(tmpdir(), 'ae-sdk-onboarding-'));
  // The shape `npm start` writes (servers/src/main.ts), pointing at this test's economy.
  deployment = {
    database: 'pglite',
    chain: {
      network: SOLANA_DEVNET,
      rpcUrl: economy.rpcUrl,
      stablecoin: USDC_DEVNET,
      local: true,
      faucet: `${economy.rpcUrl}/faucet`,
    },
    demoWallet: { address: economy.buyer.address },
    services: [
      { id: 'facilitator', url: economy.facilitator.url, wallet: economy.feePayer.address },
      { id: 'education', url: economy.education.url, wallet: economy.education.context.wallet.address },
    ],
  };
  deploymentFile = join(dir, 'services.json');
  writeFileSync(deploymentFile, JSON.stringify(deployment));
});

afterAll(async () => {
  await economy?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** An axios instance that counts the requests carrying a payment. */
function paymentCounter() {
  const instance = axios.create();
  const paid: string[] = [];
  instance.interceptors.request.use((config) => {
    if (AxiosHeaders.from(config.headers).get('payment-signature')) paid.push(config.url!);
    return config;
  });
  return { instance, paid };
}

const lesson = { body: { courseId: 'rag', lessonId: 'chunking' } } as const;

describe('wallets', () => {
  it('generates a wallet, saves it 0600 in the solana-keygen format, reads it back, never overwrites', async () => {
    const wallet = await generateWallet();
    expect(wallet.secretKey).toHaveLength(64);
    expect(base58Decode(wallet.address)).toEqual(wallet.secretKey.subarray(32));
    const file = join(dir, 'keys', 'agent.json');
    await walletToFile(wallet, file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual([...wallet.secretKey]);

    const loaded = await walletFromFile(file);
    expect(loaded.address).toBe(wallet.address);
    // Both sign with the same key: Ed25519 signatures are deterministic.
    const message = new TextEncoder().encode('round trip');
    expect(await loaded.signMessage(message)).toEqual(await wallet.signMessage(message));

    const other = await generateWallet();
    expect(other.address).not.toBe(wallet.address);
    const refused = await walletToFile(other, file).catch((e) => e);
    expect(refused).toBeInstanceOf(AgentEconomyError);
    expect(refused.message).toBe(`the wallet file ${file} already exists; walletToFile never overwrites a key`);
    expect((await walletFromFile(file)).address).toBe(wallet.address);
  });
});

describe('the local ledger faucet', () => {
  it('funds a wallet in USD and SOL and reports its balances, as the chain does', async () => {
    const wallet = await generateWallet();
    const grant = await fundWallet({ deployment, address: wallet.address, usd: '2.5', sol: '0.5' });
    expect(grant).toMatchObject({ sol: '0.5', lamports: '500000000', usd: '2.5', usdAtomic: '2500000' });
    expect(grant.signatures).toHaveLength(2);
    expect(await fetchBalances({ deployment, address: wallet.address })).toEqual({
      lamports: 500_000_000n,
      tokenAtomic: 2_500_000n,
      usd: '2.5',
    });
    expect(economy.ledger.tokenBalance(wallet.address)).toBe(2_500_000n);
    // By RPC address alone, too: the faucet sits beside the ledger's JSON-RPC.
    await fundWallet({ rpcUrl: economy.rpcUrl, address: wallet.address, usd: '0.5' });
    expect(economy.ledger.tokenBalance(wallet.address)).toBe(3_000_000n);
  });

  it('passes on the faucet’s refusal as a typed error naming the field', async () => {
    const wallet = await generateWallet();
    const error = await fundWallet({ deployment, address: wallet.address, usd: '1000000' }).catch((e) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect([error.status, error.code, error.details]).toEqual([
      400,
      'invalid_request',
      { usd: 'is more than the 1000 USD a request may ask for' },
    ]);
    const cluster = { ...deployment, chain: { ...deployment.chain, local: false, faucet: undefined } } as Deployment;
    await expect(fundWallet({ deployment: cluster, address: wallet.address, usd: '1' })).rejects.toThrow(
      /is not the local ledger: it has no faucet/,
    );
  });
});

describe('a client from the deployment', () => {
  it('reads services.json from a file or a URL, and refuses one that is not a deployment', async () => {
    expect(await loadDeployment(deploymentFile)).toEqual(deployment);
    const server = createServer((_, res) => res.end(JSON.stringify(deployment)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      expect(await loadDeployment(`http://127.0.0.1:${(server.address() as AddressInfo).port}/services.json`)).toEqual(
        deployment,
      );
    } finally {
      server.close();
    }
    const bad = join(dir, 'bad.json');
    writeFileSync(
      bad,
      JSON.stringify({ chain: { network: 'devnet', rpcUrl: economy.rpcUrl, stablecoin: USDC_DEVNET }, services: [] }),
    );
    await expect(loadDeployment(bad)).rejects.toThrow(
      `${bad} is not a services.json of an Agent Economy deployment: chain.network must be a CAIP-2 Solana id (solana:…)`,
    );
    await expect(loadDeployment(join(dir, 'missing.json'))).rejects.toThrow(
      /ENOENT \(start the economy with npm start/,
    );
    expect(() => createClient({ deployment: 'http://127.0.0.1:1/services.json' })).toThrow(/await loadDeployment/);
  });

  it('a new wallet, funded by the faucet, buys a lesson: receipt and balances, with addresses, network and RPC from services.json', async () => {
    const wallet = await generateWallet();
    await fundWallet({ deployment, address: wallet.address, usd: '1' });
    const seller = economy.education.context.wallet.address;
    const sellerBefore = economy.ledger.tokenBalance(seller);
    // The path of the file: no base URL, network or RPC given by hand.
    const client = createClient({ deployment: deploymentFile, wallet, maxRetries: 0 });
    const bought = await client.education.lesson.withResponse(lesson);
    expect(bought.data.title).toBe('Chunking Documents');
    expect(bought.payment).toMatchObject({
      service: 'education',
      amount: '50000',
      amountUsd: '0.05',
      asset: USDC_DEVNET,
      network: SOLANA_DEVNET,
      payer: wallet.address,
      payTo: seller,
    });
    expect(economy.ledger.transaction(bought.payment!.transaction)).toBeDefined();
    expect((await fetchBalances({ deployment, address: wallet.address })).tokenAtomic).toBe(950_000n);
    expect(economy.ledger.tokenBalance(seller) - sellerBefore).toBe(50_000n);
  });

  it('a client with neither deployment nor RPC, its services off their default ports, says so before signing', async () => {
    const wallet = await generateWallet();
    await fundWallet({ deployment, address: wallet.address, usd: '1' });
    const { instance, paid } = paymentCounter();
    const client = createClient({
      baseUrls: { education: economy.education.url },
      wallet,
      axios: instance,
      maxRetries: 0,
    });
    const error = await client.education.lesson(lesson).catch((e) => e);
    expect(error).toBeInstanceOf(AgentEconomyError);
    expect(error.message).toMatch(
      /^this client knows no Solana RPC to pay with: pass createClient\(\{ deployment \}\)/,
    );
    expect(paid).toEqual([]);
    expect([client.payments.spentUsd(), client.payments.remainingUsd()]).toEqual(['0', undefined]);
    expect(economy.ledger.tokenBalance(wallet.address)).toBe(1_000_000n);
  });
});

describe('payments that cannot settle are refused before signing', () => {
  it('a wallet without a token account: InsufficientFundsError, no transaction reaches the ledger, no balance moves', async () => {
    const wallet = await generateWallet();
    const { instance, paid } = paymentCounter();
    const client = createClient({ deployment, wallet, axios: instance, maxRetries: 0 });
    const seller = economy.education.context.wallet.address;
    const before = { transactions: economy.ledger.transactionCount(), seller: economy.ledger.tokenBalance(seller) };
    const error = await client.education.lesson(lesson).catch((e) => e);
    expect(error).toBeInstanceOf(InsufficientFundsError);
    expect([error.address, error.asset, error.needed, error.held, error.hasTokenAccount]).toEqual([
      wallet.address,
      USDC_DEVNET,
      '50000',
      '0',
      false,
    ]);
    expect(error.message).toContain('has no token account');
    expect(paid).toEqual([]);
    expect([
      economy.ledger.transactionCount(),
      economy.ledger.tokenBalance(seller),
      economy.ledger.tokenBalance(wallet.address),
    ]).toEqual([before.transactions, before.seller, 0n]);
    expect(client.payments.spentUsd()).toBe('0');
  });

  it('a wallet holding less than the price: InsufficientFundsError with what it holds; funded, the same client pays', async () => {
    const wallet = await generateWallet();
    await fundWallet({ deployment, address: wallet.address, usd: '0.01' });
    const { instance, paid } = paymentCounter();
    const client = createClient({ deployment, wallet, axios: instance, maxRetries: 0 });
    const transactions = economy.ledger.transactionCount();
    const error = await client.education.lesson(lesson).catch((e) => e);
    expect(error).toBeInstanceOf(InsufficientFundsError);
    expect([error.needed, error.held, error.hasTokenAccount]).toEqual(['50000', '10000', true]);
    expect([paid, economy.ledger.transactionCount(), economy.ledger.tokenBalance(wallet.address)]).toEqual([
      [],
      transactions,
      10_000n,
    ]);

    await fundWallet({ deployment, address: wallet.address, usd: '0.04' });
    const bought = await client.education.lesson.withResponse(lesson);
    expect(bought.payment?.amount).toBe('50000');
    expect(economy.ledger.tokenBalance(wallet.address)).toBe(0n);
  });

  it('an RPC on another chain than the quote’s network: ChainMismatchError before signing', async () => {
    // A service quoting mainnet USDC, while this client's RPC is the local ledger (devnet's genesis).
    let mainnet: RunningService | undefined;
    try {
      mainnet = await startService(createEducationApp, {
        rpcUrl: economy.rpcUrl,
        paywall: {
          network: SOLANA_MAINNET,
          asset: USDC_MAINNET,
          feePayer: economy.feePayer.address,
          facilitatorUrl: economy.facilitator.url,
        },
      });
      const wallet = await generateWallet();
      await fundWallet({ deployment, address: wallet.address, usd: '1' });
      const { instance, paid } = paymentCounter();
      const client = createClient({
        baseUrls: { education: mainnet.url },
        network: SOLANA_MAINNET,
        wallet,
        axios: instance,
        maxRetries: 0,
        payments: { rpcUrl: economy.rpcUrl },
      });
      const transactions = economy.ledger.transactionCount();
      const error = await client.education.lesson(lesson).catch((e) => e);
      expect(error).toBeInstanceOf(ChainMismatchError);
      expect([error.network, error.rpcUrl, error.genesisHash]).toEqual([
        SOLANA_MAINNET,
        economy.rpcUrl,
        'EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG',
      ]);
      expect([paid, economy.ledger.transactionCount(), client.payments.spentUsd()]).toEqual([[], transactions, '0']);
    } finally {
      await mainnet?.close();
    }
  });
});

describe('typed error details', () => {
  it('a 409 negotiation_exists carries the open negotiation’s id', () => {
    const body = {
      error: {
        code: 'negotiation_exists',
        message: 'This buyer already negotiates over this module',
        details: { negotiationId: 'neg_123' },
      },
    };
    const error = ApiError.from(409, body, {});
    expect(error).toBeInstanceOf(ConflictError);
    expect((error as ConflictError).negotiationId).toBe('neg_123');
    expect(
      (ApiError.from(409, { error: { code: 'other', message: 'x' } }, {}) as ConflictError).negotiationId,
    ).toBeUndefined();
  });
});
