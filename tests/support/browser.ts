import chromium from '@sparticuz/chromium';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';

/**
 * A real headless Chromium for page tests. The binary ships inside an npm package (@sparticuz/chromium), so
 * `npm ci` is all a clone needs: no browser download at install time, no system package.
 */
export async function launchBrowser(): Promise<Browser> {
  return puppeteer.launch({
    executablePath: await chromium.executablePath(),
    headless: true,
    // Without these Chromium phones home at start (updates, sync, field trials); a test must see only its own requests.
    args: [
      ...chromium.args,
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
  });
}

/** Every URL a page requested, so a test can assert that nothing left the machine. */
export function recordRequests(page: Page): string[] {
  const urls: string[] = [];
  page.on('request', (request) => urls.push(request.url()));
  return urls;
}

/** True when a URL stays on this machine (loopback, data: or blob:). */
export function isLocal(url: string): boolean {
  if (url.startsWith('data:') || url.startsWith('blob:') || url === 'about:blank') return true;
  const host = new URL(url).hostname;
  return host === '127.0.0.1' || host === 'localhost' || host === '[::1]';
}
