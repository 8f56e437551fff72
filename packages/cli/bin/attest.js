#!/usr/bin/env node
// The installed `attest` command of @attest-hq/cli runs its bundle (dist/attest.js, built by the
// repository's scripts/build-cli.mjs on `npm pack` and `npm run build`).
import { existsSync } from 'node:fs';

const entry = new URL('../dist/attest.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('attest: dist/ is missing; run `npm run build` in the Attest checkout first.\n');
  process.exit(1);
}
await import(entry.href);
