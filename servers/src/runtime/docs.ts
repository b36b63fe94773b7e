import { createRequire } from 'node:module';
import express, { type Router } from 'express';

const require = createRequire(import.meta.url);

/** The API reference page at /docs: Swagger UI served from our own process (these machines are offline). */
export function docsRouter(title: string): Router {
  const router = express.Router();
  const assets: string = require('swagger-ui-dist').getAbsoluteFSPath();
  router.use('/docs/assets', express.static(assets, { index: false, maxAge: '1h' }));
  router.get('/docs', (req, res) => {
    // The page's links are relative (it may sit behind a path prefix): /docs/ would resolve them wrongly.
    if (req.path.endsWith('/')) return res.redirect(301, '../docs');
    res.type('html').send(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(title)} API reference</title>
<link rel="stylesheet" href="docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/assets/swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({ url: 'openapi.json', dom_id: '#swagger-ui', deepLinking: true });
</script>
</body>
</html>`);
  });
  return router;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}
