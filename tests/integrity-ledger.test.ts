import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalLedger, startLedgerRpc, type LedgerRpcServer } from '../servers/src/ledger';
import { generateWallet } from '../servers/src/solana/keys';

// The ledger under an attacker's requests: a batch that would freeze the process, and a faucet any web
// page in the user's browser could call.

let ledger: LocalLedger;
let server: LedgerRpcServer;
let allowed: LedgerRpcServer;

beforeAll(async () => {
  ledger = await LocalLedger.open({ mintAuthority: generateWallet() });
  server = await startLedgerRpc(ledger, { port: 0 });
  allowed = await startLedgerRpc(ledger, {
    port: 0,
    corsOrigins: ['http://localhost:5173'],
    faucetCaps: { usd: '5', sol: '1' },
  });
});
afterAll(async () => {
  await server?.close();
  await allowed?.close();
  await ledger?.close();
});

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('JSON-RPC batches', () => {
  const call = (
    id: number,
    method = 'getProgramAccounts',
    params: unknown[] = ['TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA'],
  ) => ({ jsonrpc: '2.0', id, method, params });

  it('refuses a batch larger than the cap with one clear JSON-RPC error, doing none of it', async () => {
    const response = await post(
      server.url,
      Array.from({ length: 9000 }, (_, i) => call(i)),
    );
    expect(response.status).toBe(200);
    const body = (await response.json()) as { error: { code: number; message: string }; id: null };
    expect(body.id).toBeNull();
    expect(body.error.code).toBe(-32600);
    expect(body.error.message).toMatch(/at most 100 requests/);
  });

  it('refuses a batch holding more expensive calls than its work budget', async () => {
    const response = await post(
      server.url,
      Array.from({ length: 50 }, (_, i) => call(i)),
    );
    const body = (await response.json()) as { error: { code: number; message: string } };
    expect(body.error.code).toBe(-32600);
    expect(body.error.message).toMatch(/getProgramAccounts/);
  });

  it('still answers a batch within the caps', async () => {
    const response = await post(server.url, [call(1), call(2, 'getHealth', []), call(3, 'getSlot', [])]);
    const body = (await response.json()) as { id: number; result: unknown }[];
    expect(body.map((r) => r.id)).toEqual([1, 2, 3]);
    expect(body[1]!.result).toBe('ok');
  });
});

describe('the faucet and the RPC in a browser', () => {
  it('sends no CORS header unless the origin is configured, and refuses cross-origin calls', async () => {
    const who = generateWallet().address;
    const evil = { origin: 'https://evil.example' };
    const preflight = await fetch(`${server.url}/faucet`, {
      method: 'OPTIONS',
      headers: { ...evil, 'access-control-request-method': 'POST' },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    const minted = await post(`${server.url}/faucet`, { address: who, usd: '5' }, evil);
    expect(minted.status).toBe(403);
    expect(minted.headers.get('access-control-allow-origin')).toBeNull();
    const rpc = await post(
      server.url,
      { jsonrpc: '2.0', id: 1, method: 'requestAirdrop', params: [who, 1_000_000_000] },
      evil,
    );
    expect(rpc.status).toBe(403);
    expect(ledger.tokenBalance(who)).toBe(0n);
    expect(ledger.lamports(who)).toBe(0n);

    // A plain call (no Origin: curl, the SDK, a server) is served, without CORS headers.
    const plain = await post(`${server.url}/faucet`, { address: who, usd: '5' });
    expect(plain.status).toBe(200);
    expect(plain.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('answers a configured origin (LEDGER_CORS_ORIGINS) with CORS', async () => {
    const who = generateWallet().address;
    const origin = { origin: 'http://localhost:5173' };
    const preflight = await fetch(`${allowed.url}/faucet`, {
      method: 'OPTIONS',
      headers: { ...origin, 'access-control-request-method': 'POST' },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    const minted = await post(`${allowed.url}/faucet`, { address: who, usd: '1' }, origin);
    expect(minted.status).toBe(200);
    expect(minted.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
  });

  it('caps each request (1,000 USD and 10 SOL by default; configurable) and names units honestly', async () => {
    const who = generateWallet().address;
    const refused = async (url: string, body: unknown) => {
      const response = await post(`${url}/faucet`, body);
      expect(response.status).toBe(400);
      return ((await response.json()) as { error: { details: Record<string, string> } }).error.details;
    };
    expect((await refused(server.url, { address: who, usd: '1000.000001' })).usd).toContain('1000 USD');
    expect((await refused(server.url, { address: who, sol: '10.5' })).sol).toContain('10 SOL');
    expect((await refused(allowed.url, { address: who, usd: '6' })).usd).toContain('5 USD');
    expect(ledger.tokenBalance(who)).toBe(0n);

    const response = await post(`${server.url}/faucet`, { address: who, usd: '50.999', sol: '1.5' });
    expect(await response.json()).toMatchObject({
      usd: '50.999',
      usdAtomic: '50999000',
      sol: '1.5',
      lamports: '1500000000',
    });
    expect(ledger.tokenBalance(who)).toBe(50_999_000n);
  });
});
