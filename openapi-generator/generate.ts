// `npm run openapi`: writes openapi/<id>.json for every registered service, openapi/README.md, and the price table of
// README.md.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderDocuments, renderIndex, renderReadme } from './src/files';

const out = fileURLToPath(new URL('../openapi/', import.meta.url));
const documents = renderDocuments();
for (const [file, text] of Object.entries(documents)) writeFileSync(`${out}${file}`, text);
writeFileSync(`${out}README.md`, renderIndex());
const readme = fileURLToPath(new URL('../README.md', import.meta.url));
writeFileSync(readme, renderReadme(readFileSync(readme, 'utf8')));
console.log(
  `wrote ${Object.keys(documents).length} OpenAPI document(s) and README.md to openapi/, and the price table of README.md`,
);
