import { initContract } from '@ts-rest/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  SOLANA_MAINNET,
  authErrors,
  base58Encode,
  decodeX402Header,
  defineService,
  encodeX402Header,
  fixed,
  free,
  paymentErrors,
  standardErrors,
} from '@agent-economy/contracts';
import {
  AuthenticationError,
  BadRequestError,
  createServiceClient,
  createSiwxHeader,
  walletFromSecretKey,
  type Signer,
} from '@agent-economy/sdk';
import { callerOf, createServiceApp } from '../servers/src/runtime/app';
import { generateWallet } from '../servers/src/solana/keys';
import { startService, type RunningService } from './support/servers';

const c = initContract();
const fixture = defineService({
  id: 'fixture',
  title: 'Identified Fixture',
  description: 'Routes only a proven wallet may call',
  router: c.router({
    whoami: {
      method: 'POST',
      path: '/api/whoami',
      body: z.object({ note: z.string().min(2) }).strict(),
      responses: { 200: z.object({ caller: z.string(), note: z.string() }), ...standardErrors, ...authErrors },
      summary: 'Says which wallet called',
      metadata: { payment: free(), auth: 'siwx' },
    },
    paidMine: {
      method: 'POST',
      path: '/api/paid-mine',
      body: z.object({}).strict(),
      responses: { 200: z.object({ caller: z.string() }), ...standardErrors, ...authErrors, ...paymentErrors },
      summary: 'Paid and identified',
      metadata: { payment: fixed('0.01'), auth: 'siwx' },
    },
  }),
});

let service: RunningService;
let signer: Signer;
let raw: ReturnType<typeof createServiceClient<typeof fixture.router>>;

beforeAll(async () => {
  signer = await walletFromSecretKey(generateWallet().secretKey);
  service = await startService((context) =>
    createServiceApp({
      service: fixture,
      handlers: {
        whoami: async ({ body, res }) => ({ status: 200, body: { caller: callerOf(res), note: body.note } }),
        paidMine: async ({ res }) => ({ status: 200, body: { caller: callerOf(res) } }),
      },
      publicUrl: context.publicUrl,
      db: context.db,
      logger: context.logger,
      paywall: context.paywall,
    }),
  );
  raw = createServiceClient(fixture, service.url, { maxRetries: 0 });
});
afterAll(() => service?.close());

const url = () => `${service.url}/api/whoami`;
const callWith = (header: string) =>
  raw.whoami({ body: { note: 'hi' } }, { headers: { 'sign-in-with-x': header } }).catch((e) => e);
const reasonOf = (error: any) =>
  error instanceof AuthenticationError ? (error.details as { reason: string }).reason : `not a 401: ${error}`;

/** Re-encodes a proof with some fields changed, keeping the original signature. */
function tamper(header: string, change: Record<string, unknown>): string {
  return encodeX402Header({ ...(decodeX402Header(header) as object), ...change });
}

describe('SIGN-IN-WITH-X', () => {
  it('lets the SDK prove its wallet; the handler sees the caller', async () => {
    const client = createServiceClient(fixture, service.url, { wallet: signer, maxRetries: 0 });
    expect(await client.whoami({ body: { note: 'hello' } })).toEqual({ caller: signer.address, note: 'hello' });
    // Each call signs a fresh nonce, so repeated calls keep working.
    expect(await client.whoami({ body: { note: 'again' } })).toEqual({ caller: signer.address, note: 'again' });
  });

  it('refuses a request without a proof with 401 siwx_invalid', async () => {
    const error = await raw.whoami({ body: { note: 'hi' } }).catch((e) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error.code).toBe('siwx_invalid');
    expect(reasonOf(error)).toBe('missing');
    expect(reasonOf(await callWith('not base64!'))).toBe('malformed');
  });

  it('refuses every altered field', async () => {
    const header = await createSiwxHeader(signer, { url: url() });
    const other = await walletFromSecretKey(generateWallet().secretKey);
    const cases: [Record<string, unknown>, string][] = [
      [{ domain: 'evil.example:443' }, 'domain_mismatch'],
      [{ uri: 'https://evil.example' }, 'uri_mismatch'],
      [{ chainId: SOLANA_MAINNET }, 'unsupported_chain'],
      [{ address: other.address }, 'signature_invalid'],
      [{ nonce: 'ffffffffffffffffffffffffffffffff' }, 'signature_invalid'],
      [{ issuedAt: new Date(Date.now() - 1000).toISOString() }, 'signature_invalid'],
      [{ expirationTime: new Date(Date.now() + 3_600_000).toISOString() }, 'signature_invalid'],
      [{ statement: 'I agree to pay everything' }, 'signature_invalid'],
      [{ signature: base58Encode(new Uint8Array(64).fill(7)) }, 'signature_invalid'],
    ];
    for (const [change, reason] of cases)
      expect(reasonOf(await callWith(tamper(header, change))), JSON.stringify(change)).toBe(reason);
    // Untampered, the same header still works: none of the refusals used up its nonce.
    expect((await callWith(header)).caller).toBe(signer.address);
  });

  it('refuses stale, expired and future proofs', async () => {
    const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000);
    expect(
      reasonOf(
        await callWith(await createSiwxHeader(signer, { url: url(), now: minutesAgo(6), expirationSeconds: 3600 })),
      ),
    ).toBe('issued_at_too_old');
    expect(
      reasonOf(
        await callWith(await createSiwxHeader(signer, { url: url(), now: minutesAgo(2), expirationSeconds: 60 })),
      ),
    ).toBe('expired');
    expect(reasonOf(await callWith(await createSiwxHeader(signer, { url: url(), now: minutesAgo(-2) })))).toBe(
      'issued_at_in_future',
    );
  });

  it('refuses a proof made for another service', async () => {
    const header = await createSiwxHeader(signer, { url: 'http://127.0.0.1:1/api/whoami' });
    expect(reasonOf(await callWith(header))).toBe('domain_mismatch');
  });

  it('accepts each nonce once', async () => {
    const header = await createSiwxHeader(signer, { url: url() });
    expect((await callWith(header)).caller).toBe(signer.address);
    expect(reasonOf(await callWith(header))).toBe('nonce_reused');
  });

  it('validates input before identity, and identity before payment', async () => {
    const invalid = await raw.whoami({ body: { note: 'x' } }).catch((e) => e);
    expect(invalid).toBeInstanceOf(BadRequestError);
    const unidentified = await raw.paidMine({ body: {} }).catch((e) => e);
    expect(unidentified.status).toBe(401);
    const identified = await createServiceClient(fixture, service.url, { wallet: signer, maxRetries: 0 })
      .paidMine({ body: {} })
      .catch((e) => e);
    expect(identified.status).toBe(402);
  });

  it('reads secret keys as bytes, base58 or a solana-keygen JSON array, and rejects a mismatched pair', async () => {
    const { secretKey, address } = generateWallet();
    expect((await walletFromSecretKey(base58Encode(secretKey))).address).toBe(address);
    expect((await walletFromSecretKey(JSON.stringify([...secretKey]))).address).toBe(address);
    const mismatched = new Uint8Array(secretKey);
    mismatched.set(generateWallet().secretKey.subarray(32), 32);
    await expect(walletFromSecretKey(mismatched)).rejects.toThrow('does not match');
    // A JSON key with a value outside 0-255 is refused, not silently wrapped into another key.
    await expect(walletFromSecretKey(JSON.stringify([300, ...secretKey.subarray(1)]))).rejects.toThrow(
      'array of 64 bytes',
    );
  });
});
