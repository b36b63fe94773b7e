import { createServer, type Server } from 'node:http';
import { initContract } from '@ts-rest/core';
import { createKeyPairSignerFromBytes } from '@solana/kit';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client, x402HTTPClient } from '@x402/fetch';
import { ExactSvmScheme as ExactSvmClient } from '@x402/svm/exact/client';
import { ExactSvmScheme as ExactSvmServer } from '@x402/svm/exact/server';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { SOLANA_DEVNET, defineService, fixed, paymentErrors, standardErrors } from '@agent-economy/contracts';
import { createServiceClient, walletFromSecretKey } from '@agent-economy/sdk';
import { generateWallet } from '../servers/src/solana/keys';
import { startEconomy, type Economy } from './support/economy';

// Interoperability with the official x402 packages (devDependencies only): their client pays our
// service through our facilitator, and our SDK pays their Express middleware, which settles through
// our facilitator too. Both on the local ledger.

let economy: Economy;
beforeAll(async () => {
  economy = await startEconomy();
});
afterAll(async () => {
  await economy?.close();
});

describe('the official @x402/fetch client', () => {
  it('pays our education service for a lesson and gets the receipt', async () => {
    const signer = await createKeyPairSignerFromBytes(economy.buyer.secretKey);
    const http = new x402HTTPClient(
      new x402Client().register(SOLANA_DEVNET, new ExactSvmClient(signer, { rpcUrl: economy.rpcUrl })),
    );
    const payingFetch = wrapFetchWithPayment(fetch, http);
    const seller = economy.education.context.wallet.address;
    const [buyerBefore, sellerBefore] = [
      economy.ledger.tokenBalance(economy.buyer.address),
      economy.ledger.tokenBalance(seller),
    ];

    const response = await payingFetch(`${economy.education.url}/api/lesson`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ courseId: 'tool-use', lessonId: 'function-calling' }),
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { title: string }).title).toBe('Function Calling');
    const receipt = decodePaymentResponseHeader(response.headers.get('payment-response')!);
    expect(receipt).toMatchObject({ success: true, payer: economy.buyer.address, network: SOLANA_DEVNET });
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(buyerBefore - 50_000n);
    expect(economy.ledger.tokenBalance(seller)).toBe(sellerBefore + 50_000n);
  });
});

describe('our SDK against the official @x402/express middleware', () => {
  const c = initContract();
  const fortune = defineService({
    id: 'fortune',
    title: 'A server built with @x402/express',
    description: 'One paid route',
    router: c.router({
      tell: {
        method: 'GET',
        path: '/fortune',
        responses: { 200: z.object({ fortune: z.string() }), ...standardErrors, ...paymentErrors },
        summary: 'A fortune for one cent',
        metadata: { payment: fixed('0.01') },
      },
    }),
  });
  let server: Server;
  let url: string;
  const payTo = generateWallet().address;

  beforeAll(async () => {
    await economy.ledger.openTokenAccount(payTo);
    // An @x402/express server does not sign its facilitator calls: its payTo is a registered seller
    // (FACILITATOR_SELLERS).
    economy.sellers.add(payTo);
    const resourceServer = new x402ResourceServer(new HTTPFacilitatorClient({ url: economy.facilitator.url })).register(
      SOLANA_DEVNET,
      new ExactSvmServer(),
    );
    const app = express();
    app.use(
      paymentMiddleware(
        {
          'GET /fortune': {
            accepts: { scheme: 'exact', network: SOLANA_DEVNET, price: '$0.01', payTo },
            description: 'A fortune',
            mimeType: 'application/json',
          },
        },
        resourceServer,
      ),
    );
    app.get('/fortune', (_req, res) => {
      res.json({ fortune: 'A payment settled once is worth two promised.' });
    });
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  it('reads their 402, pays through our facilitator, and returns the receipt', async () => {
    const wallet = await walletFromSecretKey(economy.buyer.secretKey);
    const client = createServiceClient(fortune, url, {
      wallet,
      maxRetries: 0,
      payments: { prepay: false, rpcUrl: economy.rpcUrl },
    });
    const before = economy.ledger.tokenBalance(economy.buyer.address);

    const response = await client.tell.withResponse();
    expect(response.data).toEqual({ fortune: 'A payment settled once is worth two promised.' });
    expect(response.payment).toMatchObject({
      amount: '10000',
      amountUsd: '0.01',
      payTo,
      payer: economy.buyer.address,
      network: SOLANA_DEVNET,
    });
    expect(response.payment!.transaction).toMatch(/^[1-9A-HJ-NP-Za-km-z]{86,88}$/);
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before - 10_000n);
    expect(economy.ledger.tokenBalance(payTo)).toBe(10_000n);
    const row = await economy.facilitator.database.db
      .selectFrom('facilitator_settlements')
      .selectAll()
      .where('transaction', '=', response.payment!.transaction)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'settled', pay_to: payTo, amount: 10_000n });
  });
});
