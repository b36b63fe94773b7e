import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import express, { type Request, type Response, type Router } from 'express';

const require = createRequire(import.meta.url);
const brotli = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

// The package's directory, found without loading it: its entry point runs the whole 3.4 MB bundle (about 40 MB of
// RSS in every process) just to tell its own path.
const dist: string = dirname(require.resolve('swagger-ui-dist/package.json'));
/**
 * The assets' path carries the Swagger UI version, so a new version is a new URL and the old ones may be cached
 * forever.
 */
const VERSION: string = require('swagger-ui-dist/package.json').version;
const ASSETS: Record<string, string> = {
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'swagger-ui.css': 'text/css; charset=utf-8',
};

interface Encoded {
  identity: Buffer;
  br: Buffer;
  gzip: Buffer;
  etag: string;
}

/**
 * Each asset read and compressed once per process (brotli and gzip, on zlib's thread pool), on first request:
 * the bundle is 1.7 MB, 390 kB as brotli. Every service of a process shares the result.
 */
const encoded = new Map<string, Promise<Encoded>>();
function encodedAsset(file: string): Promise<Encoded> {
  let pending = encoded.get(file);
  if (!pending) {
    pending = (async () => {
      const identity = await readFile(join(dist, file));
      // Quality 9: within a few percent of 11 at a twentieth of the time (0.7 s rather than 13 s for the bundle).
      const [br, gz] = await Promise.all([
        brotli(identity, {
          params: { [constants.BROTLI_PARAM_QUALITY]: 9, [constants.BROTLI_PARAM_SIZE_HINT]: identity.length },
        }),
        gzipAsync(identity, { level: 9 }),
      ]);
      return { identity, br, gzip: gz, etag: createHash('sha256').update(identity).digest('base64url').slice(0, 27) };
    })();
    pending.catch(() => encoded.delete(file));
    encoded.set(file, pending);
  }
  return pending;
}

/** The best encoding the client accepts: brotli, then gzip, else none (a `q=0` refuses one). */
function negotiate(header: string | undefined): 'br' | 'gzip' | 'identity' {
  const accepted = new Map<string, number>();
  for (const part of (header ?? '').split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find(Boolean);
    accepted.set(name, q === undefined ? 1 : Number(q));
  }
  const weight = (name: string) => accepted.get(name) ?? accepted.get('*') ?? 0;
  if (weight('br') > 0) return 'br';
  if (weight('gzip') > 0) return 'gzip';
  return 'identity';
}

async function sendAsset(req: Request, res: Response, file: string): Promise<void> {
  const asset = await encodedAsset(file);
  const encoding = negotiate(req.headers['accept-encoding']);
  // One ETag per representation: a cache must not answer a gzip client with brotli bytes.
  const etag = `"${asset.etag}${encoding === 'identity' ? '' : `-${encoding}`}"`;
  res.setHeader('content-type', ASSETS[file]!);
  res.setHeader('cache-control', 'public, max-age=31536000, immutable');
  res.setHeader('vary', 'Accept-Encoding');
  res.setHeader('etag', etag);
  const match = req.headers['if-none-match'];
  if (match && match.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)) {
    res.status(304).end();
    return;
  }
  if (encoding !== 'identity') res.setHeader('content-encoding', encoding);
  const body = asset[encoding];
  res.setHeader('content-length', body.length);
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** The API reference page at /docs: Swagger UI served from our own process (these machines are offline). */
export function docsRouter(title: string): Router {
  const router = express.Router();
  router.get(`/docs/assets/${VERSION}/:file`, (req, res, next) => {
    const file = req.params.file!;
    if (!(file in ASSETS)) return next();
    sendAsset(req, res, file).catch(next);
  });
  // The rest of the package (and unversioned links from older pages), uncompressed.
  router.use('/docs/assets', express.static(dist, { index: false, maxAge: '1h' }));
  router.get('/docs', (req, res) => {
    // The page's links are relative (it may sit behind a path prefix): /docs/ would resolve them wrongly.
    if (req.path.endsWith('/')) return res.redirect(301, '../docs');
    res.setHeader('cache-control', 'no-cache');
    // validatorUrl: null, or Swagger UI asks validator.swagger.io about the document.
    res.type('html').send(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(title)} API reference</title>
<link rel="stylesheet" href="docs/assets/${VERSION}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/assets/${VERSION}/swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({ url: 'openapi.json', dom_id: '#swagger-ui', deepLinking: true, validatorUrl: null });
</script>
</body>
</html>`);
  });
  return router;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}
