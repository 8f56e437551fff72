import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// Another commit's build, for A/B figures between two builds (F11): the commit's tree is taken with
// `git archive` (no worktree is registered, the checkout is not touched), given this checkout's
// node_modules, and built with its own scripts/build.mjs into bench/.cache/dist-<commit>. The build
// folder sits inside the repository so that the server finds node_modules from it, as BENCH_DIST
// expects (bench/README.md). Built once per commit, then kept.

/** The build folder of `commit` (relative to the repository), building it first if it is not cached. */
export function buildOf(commit: string): string {
  const full = execFileSync('git', ['rev-parse', `${commit}^{commit}`], { encoding: 'utf8' }).trim();
  const short = full.slice(0, 7);
  const dist = path.join('bench/.cache', `dist-${short}`);
  if (fs.existsSync(path.join(dist, 'server/main.js'))) return dist;
  const tree = fs.mkdtempSync(path.join(os.tmpdir(), `attest-bench-tree-${short}-`));
  try {
    execFileSync('sh', ['-c', `git archive ${full} | tar -x -C "${tree}"`], { stdio: 'inherit' });
    fs.symlinkSync(fs.realpathSync('node_modules'), path.join(tree, 'node_modules'));
    const building = `${dist}.building`;
    fs.rmSync(building, { recursive: true, force: true });
    execFileSync(process.execPath, ['scripts/build.mjs'], {
      cwd: tree,
      env: { ...process.env, ATTEST_BUILD_DIR: path.resolve(building) },
      stdio: 'ignore',
    });
    fs.rmSync(dist, { recursive: true, force: true });
    fs.renameSync(building, dist);
  } finally {
    fs.rmSync(tree, { recursive: true, force: true });
  }
  return dist;
}
