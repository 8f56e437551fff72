import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Tests that start Attest as its own process (the server, the `attest` command) run the build in
// dist/, as users do: a bundle starts in about 0.4 s, the TypeScript source through tsx in about
// 2 s, and the suite starts a few hundred such processes. `npm test` builds first (`pretest`); a
// test file run on its own after a change to the source needs `npm run build`, and says so.

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** What the bundles are built from. */
const SOURCES = [path.join(REPO_ROOT, 'src'), path.join(REPO_ROOT, 'packages', 'playwright-reporter', 'src')];

/** The newest modification time of the code under `dir` (its READMEs do not go into a build). */
function newestIn(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestIn(full));
    else if (/\.(ts|tsx|js|mjs|json)$/.test(entry.name)) newest = Math.max(newest, fs.statSync(full).mtimeMs);
  }
  return newest;
}

let checked: Map<string, string> | undefined;

/** The absolute path of a built entry (`server/main`, `cli/main`); throws if it is missing or older than the source. */
export function builtEntry(entry: 'server/main' | 'cli/main'): string {
  checked ??= new Map();
  const known = checked.get(entry);
  if (known) return known;
  const file = path.join(REPO_ROOT, 'dist', `${entry}.js`);
  if (!fs.existsSync(file)) throw new Error(`${path.relative(REPO_ROOT, file)} is missing: run \`npm run build\` (npm test does) first`);
  const source = Math.max(...SOURCES.map(newestIn));
  if (fs.statSync(file).mtimeMs < source) {
    throw new Error(`${path.relative(REPO_ROOT, file)} is older than the source: run \`npm run build\` (npm test does) first`);
  }
  checked.set(entry, file);
  return file;
}
