// `npm run openapi`: writes openapi/<id>.json for every registered service and openapi/README.md.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderDocuments, renderIndex, renderReadme } from './src/files';

const dir = fileURLToPath(new URL('.', import.meta.url));
const documents = renderDocuments();
for (const [file, text] of Object.entries(documents)) writeFileSync(`${dir}${file}`, text);
writeFileSync(`${dir}README.md`, renderIndex());
const readme = `${dir}../README.md`;
writeFileSync(readme, renderReadme(readFileSync(readme, 'utf8')));
console.log(`wrote ${Object.keys(documents).length} OpenAPI document(s) and README.md to openapi/, and the price table of README.md`);
