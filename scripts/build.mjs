// The production build: `npm run build` (and so `npm install`, through `prepare`) bundles the server
// and its CLI into dist/ with esbuild, and the CLI package's bundle into packages/cli/dist. One
// bundle instead of ~1,500 module files (TypeBox alone is 700) halves start-up CPU and saves about
// 12 MB of memory (docs/performance.md). Type checking is `npm run typecheck`; native and optional
// packages stay external and load from node_modules.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { buildCli } from './build-cli.mjs';

// ATTEST_BUILD_DIR builds elsewhere than dist/ (the packaging test stages a tarball without touching the checkout's dist/).
const out = path.resolve(process.env.ATTEST_BUILD_DIR ?? 'dist');
fs.rmSync(out, { recursive: true, force: true });

// The Playwright reporter package first: the server imports its result mapping and CI detection
// through the package's exports (`@attest-hq/playwright-reporter/mapping`, `/ci`), as any consumer
// would, and those point at its compiled dist/.
const reporter = path.resolve('packages/playwright-reporter');
fs.rmSync(path.join(reporter, 'dist'), { recursive: true, force: true });
execFileSync(process.execPath, [path.resolve('node_modules/typescript/bin/tsc'), '-p', path.join(reporter, 'tsconfig.build.json')], {
  stdio: 'inherit',
});
// The CLI package (packages/cli): the remote commands in one bundle with no dependencies (scripts/build-cli.mjs).
await buildCli({ reporterBuilt: true });
await build({
  // The import worker (src/import/worker-pool.ts) is an entry of its own: a worker thread loads a
  // module file, and finds dist/server/import-worker.js beside the server's.
  entryPoints: { 'server/main': 'src/server/main.ts', 'server/import-worker': 'src/import/worker.ts', 'cli/main': 'src/cli/main.ts' },
  outdir: out,
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  // Native addons (and pg's optional native binding) cannot be bundled.
  external: ['better-sqlite3', 'sharp', 'pg-native'],
  // CommonJS dependencies inside an ES module bundle still call require() for Node's built-ins.
  banner: { js: "import { createRequire as __attestRequire } from 'node:module'; const require = __attestRequire(import.meta.url);" },
  logLevel: 'warning',
});

// The web interface (web/, Vite): hashed, immutable assets in dist/web, which the server serves at `/`.
// Vite reports each file's gzip size; the login and run pages' budget is in docs/web.md.
const { build: viteBuild } = await import('vite');
await viteBuild({ configFile: 'web/vite.config.ts', logLevel: 'info', build: { outDir: path.join(out, 'web'), emptyOutDir: true } });
