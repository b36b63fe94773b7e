// `npm run openapi`: writes openapi/<id>.json for every registered service and openapi/README.md.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderIndex, renderDocuments } from './src/files';

const dir = fileURLToPath(new URL('.', import.meta.url));
const documents = renderDocuments();
for (const [file, text] of Object.entries(documents)) writeFileSync(`${dir}${file}`, text);
writeFileSync(`${dir}README.md`, renderIndex());
console.log(`wrote ${Object.keys(documents).length} OpenAPI document(s) and README.md to openapi/`);
