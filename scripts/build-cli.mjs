// The build of `@attest-hq/cli` (packages/cli): the remote commands of src/cli (src/cli/remote-main.ts)
// bundled with every dependency they use into one file, packages/cli/dist/attest.js. The package
// then has no dependencies at all: installing it downloads one tarball, runs no install script and
// compiles nothing, on any Node the package accepts, and no transitive package can bring an
// `engines` range of its own (docs/decisions.md, "Packages and the live reporter"). The licences of
// what the bundle contains go beside it (dist/THIRD_PARTY_NOTICES.md).
//
// `npm run build` calls buildCli() after compiling the reporter; `npm pack` in packages/cli runs this
// file on its own (prepack), which compiles the reporter first when its dist/ is missing or stale.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const CLI_DIR = path.join(ROOT, 'packages/cli');
const REPORTER_DIR = path.join(ROOT, 'packages/playwright-reporter');

/**
 * The only modules of src/server the remote commands may contain: the package version and the
 * `.env` reader, both plain Node. Anything else of the server (its configuration, the database,
 * blobs, media) would bring the server's dependencies and native modules back into the CLI.
 */
const SERVER_MODULES = new Set(['src/server/version.ts', 'src/server/env-file.ts']);
/** The maintenance side of src/cli, which opens the instance's database: never in the CLI package. */
const MAINTENANCE = /^src\/cli\/(instance\.ts|main\.ts|commands\/(admin-key|backup|gc|migrate|restore|retention|verify)\.ts)$/;

/** The package a bundled input file belongs to (`node_modules/<name>/…`, the innermost one), or undefined for our own sources. */
function packageDirOf(input) {
  const parts = input.split('/');
  const at = parts.lastIndexOf('node_modules');
  if (at === -1) return undefined;
  const length = parts[at + 1]?.startsWith('@') ? 2 : 1;
  return parts.slice(0, at + 1 + length).join('/');
}

/** What the bundle contains that it must not: a reason per offending input (none when it is sound). */
export function forbiddenInputs(inputs) {
  const problems = [];
  for (const input of inputs) {
    if (input.startsWith('src/server/') && !SERVER_MODULES.has(input)) problems.push(`${input}: server code`);
    if (MAINTENANCE.test(input)) problems.push(`${input}: a maintenance command (it opens the database)`);
    if (input.endsWith('.node')) problems.push(`${input}: a native addon`);
  }
  return problems;
}

/** The reporter's compiled dist/ (the CLI imports its CI detection through the package's exports), rebuilt when older than its source. */
function ensureReporterBuilt() {
  const built = path.join(REPORTER_DIR, 'dist/ci.js');
  const newest = Math.max(
    ...fs.readdirSync(path.join(REPORTER_DIR, 'src')).map((f) => fs.statSync(path.join(REPORTER_DIR, 'src', f)).mtimeMs),
  );
  if (fs.existsSync(built) && fs.statSync(built).mtimeMs >= newest) return;
  fs.rmSync(path.join(REPORTER_DIR, 'dist'), { recursive: true, force: true });
  execFileSync(
    process.execPath,
    [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', path.join(REPORTER_DIR, 'tsconfig.build.json')],
    {
      stdio: 'inherit',
    },
  );
}

function licenceText(dir) {
  const file = fs.readdirSync(dir).find((name) => /^licen[cs]e(\.(md|txt))?$/i.test(name));
  return file ? fs.readFileSync(path.join(dir, file), 'utf8').trim() : undefined;
}

/** dist/THIRD_PARTY_NOTICES.md: each bundled package with its version, licence and licence text. */
function notices(packageDirs) {
  const sections = [...packageDirs]
    .map((dir) => ({ dir, manifest: JSON.parse(fs.readFileSync(path.join(ROOT, dir, 'package.json'), 'utf8')) }))
    .sort((a, b) => a.manifest.name.localeCompare(b.manifest.name))
    .map(({ dir, manifest }) => {
      const text = licenceText(path.join(ROOT, dir)) ?? `(no licence file in the package; its package.json says ${manifest.license})`;
      return `## ${manifest.name} ${manifest.version} (${manifest.license})\n\n\`\`\`\n${text}\n\`\`\`\n`;
    });
  return `# Third-party software in dist/attest.js\n\nThe bundle contains these packages, under their own licences:\n\n${sections.join('\n')}`;
}

/**
 * Bundles the CLI into `outdir` (default packages/cli/dist). Fails when the bundle would contain
 * server code, a maintenance command or a native addon. Answers the bundled inputs and packages.
 */
export async function buildCli({ outdir = path.join(CLI_DIR, 'dist'), reporterBuilt = false } = {}) {
  if (!reporterBuilt) ensureReporterBuilt();
  fs.rmSync(outdir, { recursive: true, force: true });
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: { attest: 'src/cli/remote-main.ts' },
    outdir,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    metafile: true,
    // CommonJS dependencies (commander, cli-progress) inside an ES module bundle still call require() for Node's built-ins.
    banner: { js: "import { createRequire as __attestRequire } from 'node:module'; const require = __attestRequire(import.meta.url);" },
    logLevel: 'warning',
  });
  const inputs = Object.keys(result.metafile.inputs);
  const problems = forbiddenInputs(inputs);
  if (problems.length > 0) throw new Error(`the CLI bundle must not contain:\n  ${problems.join('\n  ')}`);
  const packageDirs = new Set(inputs.map(packageDirOf).filter((dir) => dir !== undefined));
  fs.writeFileSync(path.join(outdir, 'THIRD_PARTY_NOTICES.md'), notices(packageDirs));
  const imports = Object.values(result.metafile.outputs).flatMap((output) => output.imports.map((i) => i.path));
  return { inputs, packages: [...packageDirs].sort(), imports: [...new Set(imports)].sort() };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await buildCli();
