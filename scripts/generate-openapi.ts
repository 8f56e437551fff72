import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { v1Endpoints } from '../src/api/v1/index.ts';
import { buildOpenApiDocument } from '../src/server/openapi/document.ts';
import { APP_VERSION } from '../src/server/version.ts';

/** Where the committed OpenAPI document lives; a test fails when it differs from the contract. */
export const OPENAPI_FILE = fileURLToPath(new URL('../docs/openapi.json', import.meta.url));

/** The committed text: the document the server serves, pretty-printed, with a trailing newline. */
export function openApiFileText(): string {
  return `${JSON.stringify(buildOpenApiDocument(v1Endpoints, { version: 'v1', appVersion: APP_VERSION }), null, 2)}\n`;
}

// `npm run openapi` writes the file; `npm run openapi -- --check` only reports drift (exit code 1).
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = openApiFileText();
  if (process.argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(OPENAPI_FILE, 'utf8');
    } catch {
      // missing counts as drift
    }
    if (current !== text) {
      process.stderr.write('docs/openapi.json is out of date; run `npm run openapi`\n');
      process.exit(1);
    }
  } else {
    writeFileSync(OPENAPI_FILE, text);
    process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
  }
}
