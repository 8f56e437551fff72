import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { v1 } from '../../src/client/index.ts';
import { generateKey } from '../../src/server/security/api-key.ts';
import { unique } from '../helpers/factories.ts';
import { nginxAvailable, type RunningNginx, startNginx } from '../helpers/nginx.ts';
import { createStorage, type ServerStorage, type SpawnedServer, spawnServer } from '../helpers/spawned-server.ts';
import { waitFor } from '../helpers/wait.ts';

// LOAD-4b and LOAD-4c with real clients: every early refusal (401, 403, 404, 413, 415, 429, 507)
// reaches Node's fetch, Node's http, curl and Python's requests in 20 of 20 tries at 35 KB and at
// 5 MB, from the server directly and through nginx configured as docs/behind-nginx.md says (no 502).
// The server runs as its own process, as in production; the clients are separate from it.
// SQLite only: the refusals are decided before any dialect-specific work (test/api/early-refusal.test.ts
// checks lingering and Expect on both databases), and the matrix moves about 5.6 GB, once is enough.

const execFileAsync = promisify(execFile);

const TRIES = 20;
const SIZES = [35 * 1024, 5 * 1024 * 1024];
/** The JSON body limit of this server: the 413 case sends more. */
const BODY_LIMIT = 16 * 1024;
/** The per-key budget: above what any other case's key sends (160 tries a path), spent on purpose for the 429 case. */
const RATE_LIMIT = 400;

/** What a client saw of one try: the status it read, or the error it got instead. */
interface Attempt {
  status?: number;
  error?: string;
}

interface Target {
  url: string;
  headers: Record<string, string>;
  /** The body, in memory and in a file (curl and Python read it from there). */
  body: Buffer;
  file: string;
}

/** A client sends `tries` requests to the target at once, each on its own connection. */
type Client = (target: Target, tries: number) => Promise<Attempt[]>;

const times = <T>(n: number, make: () => Promise<T>): Promise<T[]> => Promise.all(Array.from({ length: n }, make));
const describeError = (error: unknown): string => {
  const e = error as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  return e.cause?.code ?? e.code ?? e.cause?.message ?? e.message ?? String(error);
};

const nodeFetch: Client = (target, tries) =>
  times(tries, async () => {
    try {
      const answer = await fetch(target.url, { method: 'POST', headers: target.headers, body: target.body });
      await answer.text();
      return { status: answer.status };
    } catch (error) {
      return { error: describeError(error) };
    }
  });

const nodeHttp: Client = (target, tries) =>
  times(
    tries,
    () =>
      new Promise<Attempt>((resolve) => {
        let settled = false;
        const settle = (attempt: Attempt) => {
          if (settled) return;
          settled = true;
          resolve(attempt);
        };
        const request = http.request(target.url, {
          method: 'POST',
          headers: { ...target.headers, 'content-length': target.body.length },
          agent: false,
        });
        request.on('response', (response) => {
          response.resume();
          response.on('end', () => settle({ status: response.statusCode }));
          response.on('error', (error) => settle({ error: describeError(error) }));
        });
        request.on('error', (error) => settle({ error: describeError(error) }));
        request.end(target.body);
      }),
  );

/** curl's `-H name: value` arguments for `headers`. */
const headerArgs = (headers: Record<string, string>) => Object.entries(headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);

/**
 * One curl POST of the file at `file` to `url` with `headers`, curl's defaults kept (`Expect:
 * 100-continue` on a large body); answers what its `-w format` wrote.
 */
async function curlPost(url: string, file: string, headers: Record<string, string>, format: string): Promise<string> {
  const args = ['-sS', '-o', '/dev/null', '-w', format, '-X', 'POST', ...headerArgs(headers), '--data-binary', `@${file}`, url];
  return (await execFileAsync('curl', args)).stdout;
}

/** curl as a user types it (its defaults, `Expect: 100-continue` included), all tries from one process (`--parallel`). */
const curl: Client = async (target, tries) => {
  const headers = headerArgs(target.headers);
  const urls = Array.from({ length: tries }, () => ['-o', '/dev/null', target.url]).flat();
  const args = ['-sS', '--parallel', '--parallel-immediate', '--parallel-max', String(tries), '--max-time', '60'];
  const format = '%{http_code} %{exitcode} %{errormsg}\\n';
  let stdout: string;
  try {
    ({ stdout } = await execFileAsync('curl', [
      ...args,
      '-w',
      format,
      '-X',
      'POST',
      ...headers,
      '--data-binary',
      `@${target.file}`,
      ...urls,
    ]));
  } catch (error) {
    // curl exits non-zero when any transfer failed; each transfer's line still says how it went.
    stdout = String((error as { stdout?: string }).stdout ?? '');
  }
  const lines = stdout.split('\n').filter(Boolean);
  const attempts = lines.map((line): Attempt => {
    const [code, exit, ...message] = line.split(' ');
    return exit === '0' ? { status: Number(code) } : { error: `curl exit ${exit}: ${message.join(' ')}` };
  });
  while (attempts.length < tries) attempts.push({ error: 'curl reported no transfer' });
  return attempts;
};

const PYTHON = `
import concurrent.futures, json, sys
import requests
job = json.load(sys.stdin)
with open(job["file"], "rb") as f:
    body = f.read()
def one(_):
    try:
        answer = requests.post(job["url"], data=body, headers=job["headers"], timeout=60)
        return {"status": answer.status_code}
    except Exception as error:
        return {"error": type(error).__name__ + ": " + str(error)[:200]}
with concurrent.futures.ThreadPoolExecutor(max_workers=job["tries"]) as pool:
    print(json.dumps(list(pool.map(one, range(job["tries"])))))
`;

/** Python's requests, all tries from one interpreter (one thread each). */
const pythonRequests: Client = async (target, tries) => {
  const child = execFile('python3', ['-c', PYTHON], { maxBuffer: 1 << 20 });
  child.stdin?.end(JSON.stringify({ url: target.url, headers: target.headers, file: target.file, tries }));
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.on('data', (chunk: string) => {
    stderr += chunk;
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) return Array.from({ length: tries }, () => ({ error: `python3 exited ${code}: ${stderr.trim()}` }));
  return JSON.parse(stdout) as Attempt[];
};

const CLIENTS: [string, Client][] = [
  ['Node fetch', nodeFetch],
  ['Node http', nodeHttp],
  ['curl', curl],
  ['Python requests', pythonRequests],
];

/** What is missing for this suite; with CI=true a missing tool fails the suite instead of skipping it. */
function missingTools(): string[] {
  const missing: string[] = [];
  if (!nginxAvailable()) missing.push('nginx');
  try {
    execFileSync('curl', ['--version'], { stdio: 'ignore' });
  } catch {
    missing.push('curl');
  }
  try {
    execFileSync('python3', ['-c', 'import requests'], { stdio: 'ignore' });
  } catch {
    missing.push("python3 with the 'requests' package");
  }
  return missing;
}

const MISSING = missingTools();
if (MISSING.length > 0 && process.env.CI === 'true') {
  test('the early-refusal clients suite has its tools', () => {
    assert.fail(`missing ${MISSING.join(', ')} (.ci/run installs them)`);
  });
}
const skip = MISSING.length > 0 && process.env.CI !== 'true' ? `needs ${MISSING.join(', ')}` : false;
if (skip) process.stderr.write(`early-refusal-clients: skipped, ${skip}\n`);

/** A multipart upload of `size` bytes in all: the metadata part first, then one file part. */
function uploadBody(size: number, metadata: Record<string, unknown>): { body: Buffer; contentType: string } {
  const boundary = 'attest-refusal-boundary';
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="metadata"\r\nContent-Type: application/json\r\n\r\n${JSON.stringify(metadata)}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.log"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const filler = Buffer.alloc(Math.max(0, size - head.length - tail.length), 'a');
  return { body: Buffer.concat([head, filler, tail]), contentType: `multipart/form-data; boundary=${boundary}` };
}

interface RefusalCase {
  status: number;
  what: string;
  /** The path, headers and body of a request of `size` bytes that is refused this way. */
  request(size: number): { path: string; headers: Record<string, string>; body: Buffer };
  /** Brings the server into the refusing state before a batch (the 429 spends the key's budget). */
  prepare?(): Promise<void>;
}

describe('[sqlite] early refusals reach every client (LOAD-4b, LOAD-4c)', { skip }, () => {
  let dataDir: string;
  let storage: ServerStorage;
  let server: SpawnedServer;
  let nginx: RunningNginx;
  const files = new Map<string, string>();
  let cases: RefusalCase[] = [];

  /** A user with the roles given, a member of the projects given, and a key. */
  async function user(roles: ('viewer' | 'tester')[], projects: string[]): Promise<string> {
    const email = `${unique('user-')}@example.test`;
    await server.admin.call(v1.users.createUser, { body: { email, name: email, roles } });
    for (const projectId of projects) await server.admin.call(v1.projects.addMember, { params: { projectId, email } });
    return (await server.admin.call(v1.users.createApiKey, { params: { email }, body: { name: 'refusals' } })).key;
  }

  /** Spends the key's budget for this minute, and a new minute's if fewer than 20 s of this one are left. */
  async function spendBudget(key: string): Promise<void> {
    const probe = () =>
      fetch(`${server.url}/api/v1/projects`, { headers: { accept: 'application/json', 'service.api-token': key } }).then(async (answer) => {
        await answer.arrayBuffer();
        return answer;
      });
    let answer = await probe();
    if (answer.status === 429 && Number(answer.headers.get('x-ratelimit-reset')) < 20) {
      const reset = Number(answer.headers.get('x-ratelimit-reset'));
      answer = await waitFor(async () => ((await probe()).status !== 429 ? probe() : undefined), {
        timeoutMs: (reset + 5) * 1000,
        intervalMs: 500,
        message: 'a new rate-limit window',
      });
    }
    for (let remaining = Number(answer.headers.get('x-ratelimit-remaining')); remaining > 0; remaining -= 50) {
      await times(Math.min(50, remaining), probe);
    }
    assert.equal((await probe()).status, 429, 'the key is over its budget');
  }

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-refusals-'));
    storage = await createStorage('sqlite', path.join(dataDir, 'data'), generateKey('standard'));
    server = await spawnServer(storage, {
      ATTEST_BODY_LIMIT: String(BODY_LIMIT),
      ATTEST_RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT),
    });
    nginx = await startNginx(server.url, path.join(dataDir, 'data', 'blobs'));

    const projectA = await server.admin.call(v1.projects.createProject, { body: { key: unique('A').toUpperCase(), name: 'A' } });
    const projectB = await server.admin.call(v1.projects.createProject, { body: { key: unique('B').toUpperCase(), name: 'B' } });
    const full = await server.admin.call(v1.projects.createProject, { body: { key: unique('Q').toUpperCase(), name: 'Full' } });
    // A key for each case: each spends its own rate-limit budget.
    const viewer = await user(['viewer'], [projectA.id]);
    const outsider = await user(['tester'], [projectA.id]);
    const importer = await user(['tester'], [projectA.id]);
    const spender = await user(['tester'], [projectA.id]);
    const tester = await user(['tester'], [full.id]);
    const runA = await server.admin.call(v1.runs.createRun, { body: { projectId: projectA.id, name: 'refusals' } });
    const runFull = await server.admin.call(v1.runs.createRun, { body: { projectId: full.id, name: 'refusals' } });
    // A quota of 0 bytes: the project is at its quota, and every upload is refused before its file is read.
    await server.admin.call(v1.projects.updateProject, { params: { projectId: full.id }, body: { quotaBytes: 0 } });

    const json = { 'content-type': 'application/json', accept: 'application/json' };
    const jsonBody = (size: number) => Buffer.from(`{"name":"${'x'.repeat(size - 11)}"}`);
    const upload = (key: string, projectId: string, runId: string) => (size: number) => {
      const { body, contentType } = uploadBody(size, { testRunId: runId, kind: 'log', name: 'big.log' });
      return {
        path: `/api/v1/projects/${projectId}/artifact`,
        headers: { 'content-type': contentType, accept: 'application/json', 'service.api-token': key },
        body,
      };
    };
    cases = [
      {
        status: 401,
        what: 'no key (a JSON route)',
        request: (size) => ({ path: '/api/v1/projects', headers: json, body: jsonBody(size) }),
      },
      { status: 403, what: "a viewer's upload", request: upload(viewer, projectA.id, runA.id) },
      { status: 404, what: 'an upload to a project the caller does not see', request: upload(outsider, projectB.id, runA.id) },
      {
        status: 413,
        what: `a JSON body over ATTEST_BODY_LIMIT (${BODY_LIMIT} bytes)`,
        request: (size) => ({
          path: '/api/v1/projects',
          headers: { ...json, 'service.api-token': storage.adminKey },
          body: jsonBody(size),
        }),
      },
      {
        status: 415,
        what: 'an import of a type no import takes',
        request: (size) => ({
          path: `/api/v1/projects/${projectA.id}/imports`,
          headers: { 'content-type': 'text/plain', accept: 'application/json', 'service.api-token': importer },
          body: Buffer.alloc(size, 'r'),
        }),
      },
      {
        status: 429,
        what: 'an upload by a key over its rate limit',
        request: upload(spender, projectA.id, runA.id),
        prepare: () => spendBudget(spender),
      },
      { status: 507, what: 'an upload to a project at its quota', request: upload(tester, full.id, runFull.id) },
    ];
  });

  after(async () => {
    await nginx?.stop();
    await server?.stop();
    await storage?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** The body of a case at a size, written once to a file for the clients that read it from there. */
  function target(base: string, refusal: RefusalCase, size: number): Target {
    const { path: urlPath, headers, body } = refusal.request(size);
    const name = `${refusal.status}-${size}`;
    let file = files.get(name);
    if (file === undefined) {
      file = path.join(dataDir, `${name}.body`);
      fs.writeFileSync(file, body);
      files.set(name, file);
    }
    return { url: `${base}${urlPath}`, headers, body, file };
  }

  for (const via of ['directly', 'behind nginx'] as const) {
    describe(via, () => {
      for (const status of [401, 403, 404, 413, 415, 429, 507]) {
        test(`${status}: Node fetch, Node http, curl and Python requests read it in ${TRIES} of ${TRIES} tries at 35 KB and at 5 MB`, async () => {
          const refusal = cases.find((c) => c.status === status) as RefusalCase;
          const base = via === 'directly' ? server.url : nginx.url;
          const failures: string[] = [];
          for (const size of SIZES) {
            await refusal.prepare?.();
            const batch = target(base, refusal, size);
            // All four clients at once, each with its tries at once: the check is per try, and a
            // loaded server makes the race between answer and body more likely, not less.
            const seen = await Promise.all(CLIENTS.map(async ([name, client]) => [name, await client(batch, TRIES)] as const));
            for (const [name, attempts] of seen) {
              const wrong = attempts.filter((a) => a.status !== status);
              if (wrong.length > 0) {
                const sample = [...new Set(wrong.map((a) => a.error ?? String(a.status)))].slice(0, 3).join(' | ');
                failures.push(`${name} at ${size} bytes: ${TRIES - wrong.length} of ${TRIES} (${sample})`);
              }
            }
          }
          assert.deepEqual(failures, [], `${refusal.what} ${via}:\n${failures.join('\n')}`);
        });
      }
    });
  }

  test('curl sends no byte of a body refused before it is read: Expect: 100-continue is answered after the checks (LOAD-4c)', async () => {
    // The quota is checked after the upload's metadata part, so that body is sent (and lingered on).
    for (const status of [401, 403, 404, 413, 415, 429]) {
      const refusal = cases.find((c) => c.status === status) as RefusalCase;
      await refusal.prepare?.();
      const batch = target(server.url, refusal, SIZES[1] as number);
      const stdout = await curlPost(batch.url, batch.file, batch.headers, '%{http_code} %{size_upload}');
      assert.equal(stdout, `${status} 0`, `${refusal.what}: status and bytes curl sent`);
    }
  });

  test('accepted requests with Expect: 100-continue still work, directly and behind nginx: curl uploads and posts JSON', async () => {
    const project = await server.admin.call(v1.projects.createProject, { body: { key: unique('E').toUpperCase(), name: 'Expect' } });
    const run = await server.admin.call(v1.runs.createRun, { body: { projectId: project.id, name: 'expect' } });
    for (const base of [server.url, nginx.url]) {
      for (const size of SIZES) {
        const { body, contentType } = uploadBody(size, { testRunId: run.id, kind: 'log', name: `${unique('log-')}.log` });
        const file = path.join(dataDir, 'accepted.body');
        fs.writeFileSync(file, body);
        const headers = { 'content-type': contentType, accept: 'application/json', 'service.api-token': storage.adminKey };
        const stdout = await curlPost(`${base}/api/v1/projects/${project.id}/artifact`, file, headers, '%{http_code} %{size_upload}');
        assert.equal(stdout, `201 ${body.length}`, `an upload of ${size} bytes via ${base}`);
      }
      const json = path.join(dataDir, 'accepted.json');
      fs.writeFileSync(json, JSON.stringify({ key: unique('J').toUpperCase(), name: 'x', description: 'd'.repeat(4000) }));
      const headers = {
        expect: '100-continue',
        'content-type': 'application/json',
        accept: 'application/json',
        'service.api-token': storage.adminKey,
      };
      const stdout = await curlPost(`${base}/api/v1/projects`, json, headers, '%{http_code}');
      assert.equal(stdout, '201', `a JSON post of 4 KB with Expect via ${base}`);
    }
  });

  test('nginx logged no upstream failure', () => {
    // Warnings (a request body buffered to a temporary file) are expected; errors are not.
    const errors = nginx
      .errorLog()
      .split('\n')
      .filter((line) => /\[(error|crit|alert|emerg)\]|reset by peer|broken pipe|prematurely closed/i.test(line));
    assert.deepEqual(errors, []);
  });
});
