import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { SpanKind, endSpan, parseTraceparent, startSpan } from '../http/tracing';
import type { AddressInfo } from 'node:net';
import { LedgerError, type LocalLedger } from './ledger';
import { MAX_AIRDROP_LAMPORTS, handleRpcBody, handleRpcValue } from './rpc';
import { isAddress } from '../solana/wire';
import { limitConnections } from '../http/connections';
import { MAX_RPC_BODY_BYTES, serveLocally } from '../solana/local-rpc';

// The ledger's HTTP face: Solana JSON-RPC on POST /, GET /health, and a local faucet on POST /faucet.

const MAX_BODY_BYTES = MAX_RPC_BODY_BYTES;

/** What one faucet request may ask for, as decimal strings: 1,000 USD and 10 SOL unless configured. */
export interface FaucetCaps {
  usd: string;
  sol: string;
}
export const DEFAULT_FAUCET_CAPS: FaucetCaps = { usd: '1000', sol: '10' };

export interface LedgerRpcOptions {
  host?: string;
  port: number;
  /**
   * Web origins allowed to call the RPC and the faucet from a browser (LEDGER_CORS_ORIGINS). None by
   * default: a request carrying any other Origin is refused, so no web page can mint in the user's browser.
   */
  corsOrigins?: readonly string[];
  /** Per-request faucet caps; default DEFAULT_FAUCET_CAPS. */
  faucetCaps?: Partial<FaucetCaps>;
  /** Called with unexpected errors (they are answered as JSON-RPC internal errors, never thrown). */
  onError?: (error: unknown) => void;
}

export interface LedgerRpcServer {
  url: string;
  close(): Promise<void>;
}

class BodyTooLarge extends Error {}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) {
      reject(new BodyTooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new BodyTooLarge());
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(
  res: ServerResponse,
  status: number,
  body: string,
  contentType = 'application/json; charset=utf-8',
): void {
  if (res.headersSent) return;
  res.writeHead(status, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** Atomic units with `decimals` places as a decimal string ("50.999"). */
function decimal(atomic: bigint, decimals: number): string {
  const scale = 10n ** BigInt(decimals);
  const fraction = (atomic % scale).toString().padStart(decimals, '0').replace(/0+$/, '');
  return fraction ? `${atomic / scale}.${fraction}` : `${atomic / scale}`;
}

const faucetError = (message: string, details?: Record<string, string>) =>
  JSON.stringify({ error: { code: 'invalid_request', message, ...(details ? { details } : {}) } });

/** A positive decimal string ("2.5") as atomic units with `decimals` places, or an explanation. */
function parseAmount(value: unknown, decimals: number, cap: bigint, unit: string): bigint | string {
  if (typeof value !== 'string')
    return `must be a decimal string such as "2.5", not ${value === null ? 'null' : typeof value}`;
  const match = /^(\d{1,12})(?:\.(\d+))?$/.exec(value);
  if (!match) return `must be a decimal string such as "2.5", not "${value.slice(0, 40)}"`;
  const fraction = match[2] ?? '';
  if (fraction.length > decimals) return `has more than ${decimals} decimal places`;
  const atomic = BigInt(match[1]!) * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, '0') || '0');
  if (atomic === 0n) return 'must be more than zero';
  if (atomic > cap) return `is more than the ${decimal(cap, decimals)} ${unit} a request may ask for`;
  return atomic;
}

function faucet(
  ledger: LocalLedger,
  text: string,
  caps: { lamports: bigint; usdAtomic: bigint },
): { status: number; body: string } {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { status: 400, body: faucetError('the body must be JSON: {"address": "...", "sol": "2.5", "usd": "100"}') };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return {
      status: 400,
      body: faucetError('the body must be a JSON object: {"address": "...", "sol": "2.5", "usd": "100"}'),
    };
  }
  const request = body as Record<string, unknown>;
  const details: Record<string, string> = {};
  if (!isAddress(request.address)) details.address = 'must be a base58 Solana address (32 bytes)';
  let lamports: bigint | undefined;
  let atomic: bigint | undefined;
  if (request.sol !== undefined) {
    const parsed = parseAmount(request.sol, 9, caps.lamports, 'SOL');
    if (typeof parsed === 'string') details.sol = parsed;
    else lamports = parsed;
  }
  if (request.usd !== undefined) {
    const parsed = parseAmount(request.usd, 6, caps.usdAtomic, 'USD');
    if (typeof parsed === 'string') details.usd = parsed;
    else atomic = parsed;
  }
  if (request.sol === undefined && request.usd === undefined) details.amount = 'give sol, usd or both';
  const unknown = Object.keys(request).filter((key) => !['address', 'sol', 'usd'].includes(key));
  if (unknown.length > 0) details[unknown[0]!] = 'is not a faucet field (address, sol, usd)';
  if (Object.keys(details).length > 0) {
    const [field, reason] = Object.entries(details)[0]!;
    return { status: 400, body: faucetError(`${field} ${reason}`, details) };
  }
  const address = request.address as string;
  const signatures: string[] = [];
  if (lamports !== undefined) signatures.push(ledger.airdropNow(address, lamports));
  if (atomic !== undefined) signatures.push(ledger.mintToNow(address, atomic));
  // The wallet's balances after the grant: decimal amounts under the unit's name, atomic ones under theirs.
  const lamportBalance = ledger.lamports(address);
  const tokenBalance = ledger.tokenBalance(address);
  return {
    status: 200,
    body: JSON.stringify({
      signatures,
      sol: decimal(lamportBalance, 9),
      lamports: lamportBalance.toString(),
      usd: decimal(tokenBalance, 6),
      usdAtomic: tokenBalance.toString(),
    }),
  };
}

/** A decimal cap ("1000") in atomic units; the configuration checks it, so a bad one is a programming error. */
function capOf(value: string, decimals: number, name: string): bigint {
  const parsed = parseAmount(value, decimals, 2n ** 63n, name);
  if (typeof parsed === 'string') throw new Error(`faucet cap ${name} ${parsed}`);
  return parsed;
}

/** A method name a span may carry (as the text's is read): letters only, at most 64. */
const SPAN_METHOD = /^[A-Za-z]{1,64}$/;

/** Serves the ledger over HTTP; resolves once listening (port 0 picks a free port). */
export async function startLedgerRpc(ledger: LocalLedger, options: LedgerRpcOptions): Promise<LedgerRpcServer> {
  const host = options.host ?? '127.0.0.1';
  const origins = new Set(options.corsOrigins ?? []);
  const faucetCaps = { ...DEFAULT_FAUCET_CAPS, ...options.faucetCaps };
  const caps = { lamports: capOf(faucetCaps.sol, 9, 'SOL'), usdAtomic: capOf(faucetCaps.usd, 6, 'USD') };
  if (caps.lamports > MAX_AIRDROP_LAMPORTS)
    throw new Error(`faucet cap SOL is above the ledger's ${decimal(MAX_AIRDROP_LAMPORTS, 9)} SOL airdrop limit`);
  const server = createServer((req, res) => {
    void route(req, res).catch((error: unknown) => {
      options.onError?.(error);
      send(res, 500, JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null }));
    });
  });

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    // Browsers name the page's origin; servers, curl and the SDK send none. Only configured origins may call:
    // a simple cross-origin POST needs no preflight, so refusing it here is what stops a page from minting.
    const origin = req.headers.origin;
    if (origin !== undefined && !origins.has(origin)) {
      if (req.method === 'OPTIONS') res.writeHead(204).end();
      else
        send(
          res,
          403,
          JSON.stringify({
            error: {
              code: 'origin_not_allowed',
              message: `requests from the web origin ${origin.slice(0, 100)} are refused; allow it with LEDGER_CORS_ORIGINS`,
            },
          }),
        );
      return;
    }
    if (origin !== undefined) {
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('vary', 'origin');
    }
    if (req.method === 'OPTIONS') {
      res.writeHead(204, {
        'access-control-allow-methods': 'POST, GET, OPTIONS',
        'access-control-allow-headers': 'content-type, solana-client',
        'access-control-max-age': '86400',
      });
      res.end();
      return;
    }
    if (path === '/health' && (req.method === 'GET' || req.method === 'HEAD')) {
      send(res, 200, 'ok', 'text/plain; charset=utf-8');
      return;
    }
    if (path !== '/' && path !== '/faucet') {
      send(res, 404, 'Not Found', 'text/plain; charset=utf-8');
      return;
    }
    if (req.method !== 'POST') {
      send(res, 405, 'Used HTTP Method is not allowed. POST or OPTIONS is required', 'text/plain; charset=utf-8');
      return;
    }
    let text: string;
    try {
      text = await readBody(req);
    } catch (error) {
      if (error instanceof BodyTooLarge) send(res, 413, 'Payload Too Large', 'text/plain; charset=utf-8');
      else res.destroy();
      return;
    }
    if (path === '/faucet') {
      try {
        const { status, body } = faucet(ledger, text, caps);
        send(res, status, body);
      } catch (error) {
        if (!(error instanceof LedgerError)) options.onError?.(error);
        send(
          res,
          error instanceof LedgerError ? 503 : 500,
          JSON.stringify({ error: { code: 'faucet_failed', message: (error as Error).message } }),
        );
      }
      return;
    }
    send(
      res,
      200,
      answer(text, typeof req.headers.traceparent === 'string' ? req.headers.traceparent : undefined) ?? '',
    );
  }

  /** A JSON-RPC body's answer over HTTP. */
  function answer(text: string, traceparent: string | undefined): string | undefined {
    const method = () => /"method"\s*:\s*"([A-Za-z]{1,64})"/.exec(text)?.[1];
    return inSpanOf(traceparent, method, () => handleRpcBody(ledger, text, options.onError));
  }

  /** A request's answer for a caller in this process (solana/local-rpc.ts): the same, without the text. */
  function answerValue(request: unknown, traceparent: string | undefined): unknown {
    const method = () => {
      const named = (request as { method?: unknown } | null)?.method;
      return typeof named === 'string' && SPAN_METHOD.test(named) ? named : undefined;
    };
    return inSpanOf(traceparent, method, () => handleRpcValue(ledger, request, options.onError));
  }

  /** A caller's W3C trace (the facilitator settling a service's payment): the call is a server span of it. */
  function inSpanOf<T>(traceparent: string | undefined, method: () => string | undefined, run: () => T): T {
    const parent = parseTraceparent(traceparent);
    const span = parent
      ? startSpan(`ledger jsonrpc ${method() ?? 'batch'}`, SpanKind.SERVER, parent, { 'rpc.system': 'jsonrpc' })
      : undefined;
    const response = run();
    if (span) endSpan(span);
    return response;
  }

  // Every service of the process reads the chain here: a flood of idle connections must not lock them out.
  // As the services (runtime/server.ts): idle connections are closed by the client first, never under a
  // request it is sending on them.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  limitConnections(server);

  server.on('clientError', (_error, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  // Services of this process call it directly (solana/local-rpc.ts).
  const unserve = serveLocally(url, answerValue);
  let closing: Promise<void> | undefined;
  return {
    url,
    close: () =>
      (closing ??= new Promise<void>((resolve, reject) => {
        unserve();
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      })),
  };
}
