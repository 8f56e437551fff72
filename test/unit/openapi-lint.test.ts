import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

// docs/openapi.json lints clean under Redocly's recommended rules (SEC-9b), with the linter from
// npm (@redocly/cli, a devDependency: one package, no binary to download). The drift check in
// test/api/openapi.test.ts keeps the committed file equal to what the generator builds, so a
// problem here is fixed in the generator (src/server/openapi), never in the JSON.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const REDOCLY = path.join(path.dirname(createRequire(import.meta.url).resolve('@redocly/cli/package.json')), 'bin/cli.js');

interface LintReport {
  totals: { errors: number; warnings: number };
  problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[];
}

describe('docs/openapi.json', () => {
  test("has no error and no warning under Redocly's recommended rules", async () => {
    // No telemetry and no update check: the linter's only input is the file.
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [REDOCLY, 'lint', 'docs/openapi.json', '--extends', 'recommended', '--format', 'json', '--max-problems', '1000'],
      { cwd: ROOT, env, maxBuffer: 16 * 1024 * 1024 },
    ).catch((error: { stdout?: string; stderr?: string }) => {
      // The linter exits 1 when it finds an error; its report is still on stdout.
      if (!error.stdout) throw error;
      return { stdout: error.stdout };
    });
    const report = JSON.parse(stdout) as LintReport;
    const problems = report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);
    assert.deepEqual(problems, []);
    assert.deepEqual(report.totals, { ...report.totals, errors: 0, warnings: 0 });
  });
});
