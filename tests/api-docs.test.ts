import { readFileSync } from 'node:fs';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { services } from '@agent-economy/contracts';
import { serviceApps, type DeploymentId } from '../servers/src/services';
import { isLocal, launchBrowser, recordRequests } from './support/browser';
import { startEconomy, type Economy } from './support/economy';
import { startService, type RunningService } from './support/servers';

// What each service serves about itself: /openapi.json (the committed document, with this deployment's address
// and wallet), and /docs, the API reference page, in a real headless Chromium: every operation rendered, nothing
// asked of another machine, working behind a reverse proxy's path prefix, its 1.7 MB bundle compressed and cached.

let economy: Economy;
const running = new Map<string, RunningService>();
let browser: Browser;
let proxy: Server;
let proxyUrl: string;

const committed = (id: string) => JSON.parse(readFileSync(new URL(`../openapi/${id}.json`, import.meta.url), 'utf8'));
const operationCount = (document: { paths: Record<string, object> }) =>
  Object.values(document.paths).reduce((n, item) => n + Object.keys(item).length, 0);

/** A GET with exactly these request headers (fetch would add Accept-Encoding and decompress). */
function get(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    request(url, { headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks) }),
      );
      response.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

beforeAll(async () => {
  economy = await startEconomy();
  // As `npm start`: one database for every service, each paid through the facilitator.
  const database = economy.facilitator.database;
  for (const [id, factory] of Object.entries(serviceApps)) {
    if (id === 'facilitator') running.set(id, economy.facilitator);
    else if (id === 'education') running.set(id, economy.education);
    else
      running.set(
        id,
        await startService(factory!, {
          id,
          database,
          rpcUrl: economy.rpcUrl,
          paywall: { feePayer: economy.feePayer.address, facilitatorUrl: economy.facilitator.url },
        }),
      );
  }
  // A reverse proxy mounting the education service at /edu/, as a deployment behind one host name would.
  const upstream = new URL(economy.education.url);
  proxy = createServer((req, res) => {
    if (!req.url?.startsWith('/edu/')) return void res.writeHead(404).end();
    const forward = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url.slice('/edu'.length),
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.writeHead(502).end());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const address = proxy.address();
  proxyUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => proxy?.close(resolve));
  await Promise.all(
    [...running].filter(([id]) => id !== 'facilitator' && id !== 'education').map(([, s]) => s.stopServer()),
  );
  await economy?.close();
});

describe('/openapi.json', () => {
  it('is the committed document of each service, with this deployment’s address and wallet', async () => {
    const ids = services.map((s) => s.id).filter((id) => running.has(id));
    expect(ids).toHaveLength(services.length);
    for (const id of ids) {
      const service = running.get(id)!;
      const served = (await fetch(`${service.url}/openapi.json`).then((r) => r.json())) as any;
      const document = committed(id);
      expect(served.servers, id).toEqual([{ url: service.url, description: 'this deployment' }]);
      // The only other difference: each paid operation names where its payment goes.
      for (const item of Object.values<Record<string, any>>(served.paths)) {
        for (const operation of Object.values<any>(item)) {
          const payment = operation['x-payment'];
          if (payment.kind === 'free') continue;
          expect(payment, `${id} ${operation.operationId}`).toMatchObject({
            payTo: service.context.wallet.address,
            network: service.context.paywall.network,
            asset: service.context.paywall.asset,
          });
          delete payment.payTo;
          delete payment.network;
          delete payment.asset;
        }
      }
      expect({ ...served, servers: document.servers }, id).toEqual(document);
    }
  });
});

describe('/docs', () => {
  for (const id of ['education', 'cognition', 'facilitator', 'escrow']) {
    it(`${id}: renders every operation of its document in a browser, asking nothing of another machine`, async () => {
      const service = running.get(id)!;
      const expected = operationCount(committed(id));
      const page = await browser.newPage();
      const requested = recordRequests(page);
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(String(error)));
      try {
        await page.goto(`${service.url}/docs`, { waitUntil: 'load' });
        await page.waitForFunction(`document.querySelectorAll('.opblock').length >= ${expected}`, { timeout: 60_000 });
        expect(await page.evaluate(`document.querySelectorAll('.opblock').length`)).toBe(expected);
        expect(await page.evaluate(`document.querySelector('.info .title')?.textContent ?? ''`)).toContain(
          committed(id).info.title,
        );
        expect(errors).toEqual([]);
        expect(requested.filter((url) => !isLocal(url))).toEqual([]);
        expect(requested).toContain(`${service.url}/openapi.json`);
      } finally {
        await page.close();
      }
    }, 90_000);
  }

  it('works behind a path prefix: every asset and the document are fetched under it', async () => {
    const page = await browser.newPage();
    const requested = recordRequests(page);
    try {
      await page.goto(`${proxyUrl}/edu/docs`, { waitUntil: 'load' });
      const expected = operationCount(committed('education'));
      await page.waitForFunction(`document.querySelectorAll('.opblock').length >= ${expected}`, { timeout: 60_000 });
      expect(await page.evaluate(`document.querySelectorAll('.opblock').length`)).toBe(expected);
      expect(requested).toContain(`${proxyUrl}/edu/openapi.json`);
      // Everything the page loads comes through the prefix (the browser's own favicon probe aside).
      const outside = requested.filter(
        (url) => !url.startsWith(`${proxyUrl}/edu/`) && !url.startsWith('data:') && url !== `${proxyUrl}/favicon.ico`,
      );
      expect(outside).toEqual([]);
      // /docs/ (which would resolve the relative links one level too deep) redirects to /docs, under the prefix too.
      const slash = await get(`${proxyUrl}/edu/docs/`);
      expect(slash.status).toBe(301);
      expect(new URL(slash.headers.location!, `${proxyUrl}/edu/docs/`).href).toBe(`${proxyUrl}/edu/docs`);
    } finally {
      await page.close();
    }
  }, 90_000);

  it('serves the bundle compressed by Accept-Encoding, with an ETag, cached as immutable under a versioned path', async () => {
    const base = running.get('gas')!.url;
    const html = (await get(`${base}/docs`)).body.toString('utf8');
    const path = /src="(docs\/assets\/[^"]+\/swagger-ui-bundle\.js)"/.exec(html)?.[1];
    expect(path).toMatch(/^docs\/assets\/\d+\.\d+\.\d+\/swagger-ui-bundle\.js$/);
    const url = `${base}/${path}`;

    const plain = await get(url);
    expect(plain.status).toBe(200);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.body.length).toBeGreaterThan(1_000_000);
    expect(plain.headers['content-type']).toMatch(/javascript/);

    const br = await get(url, { 'accept-encoding': 'gzip, deflate, br' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(Number(br.headers['content-length'])).toBe(br.body.length);
    expect(br.body.length).toBeLessThan(plain.body.length / 3);
    expect(brotliDecompressSync(br.body).equals(plain.body)).toBe(true);

    const gz = await get(url, { 'accept-encoding': 'gzip' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.body).equals(plain.body)).toBe(true);
    // br refused with q=0: gzip.
    expect((await get(url, { 'accept-encoding': 'br;q=0, gzip' })).headers['content-encoding']).toBe('gzip');

    for (const answer of [plain, br, gz]) {
      expect(answer.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(answer.headers.vary).toMatch(/accept-encoding/i);
      expect(answer.headers.etag).toMatch(/^"[^"]+"$/);
    }
    // One ETag per representation, stable across requests; a revalidation with it is 304 without a body.
    expect(new Set([plain.headers.etag, br.headers.etag, gz.headers.etag]).size).toBe(3);
    expect((await get(url, { 'accept-encoding': 'br' })).headers.etag).toBe(br.headers.etag);
    const revalidated = await get(url, { 'accept-encoding': 'br', 'if-none-match': br.headers.etag! });
    expect(revalidated.status).toBe(304);
    expect(revalidated.body.length).toBe(0);
    expect((await get(url, { 'accept-encoding': 'gzip', 'if-none-match': br.headers.etag! })).status).toBe(200);

    const css = await get(url.replace('swagger-ui-bundle.js', 'swagger-ui.css'), { 'accept-encoding': 'br' });
    expect(css.headers['content-type']).toMatch(/text\/css/);
    expect(css.headers['content-encoding']).toBe('br');
  });
});
