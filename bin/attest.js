#!/usr/bin/env node
// The installed `attest` command runs the compiled CLI: `npm install` builds dist/ (the `prepare`
// script), so production never compiles TypeScript at run time.
import { existsSync } from 'node:fs';

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('attest: dist/ is missing; run `npm run build` (npm install does it) first.\n');
  process.exit(1);
}
await import(entry.href);
