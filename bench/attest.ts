import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateKey } from '../src/server/security/api-key.ts';
import { multipart, send } from './http-client.ts';
import { answers, freePort, onExit, type Started, startPinned } from './lib.ts';

// The real server, started as users start it (`node dist/server/main.js`), and a small API client.

export const ADMIN_EMAIL = 'bench@example.test';

/** Settings the benchmark runs with; everything else is the server's default. */
export const BENCH_ENV = {
  // Request logging off: every figure would otherwise also measure writing two log lines per request.
  ATTEST_LOG_LEVEL: 'warn',
  // One key sends thousands of requests a second here, far above the default budget of 1,000 a
  // second: the limiter stays installed and counts every request, but never refuses one.
  ATTEST_RATE_LIMIT_PER_MINUTE: '10000000',
};

export interface Attest extends Started {
  url: string;
  key: string;
  dataDir: string;
}

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** A maker of temp folders that are all removed when the benchmark exits. */
export function tempFolders(): (prefix: string) => string {
  const made: string[] = [];
  onExit(() => {
    for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
  });
  return (prefix) => {
    const dir = tempDir(prefix);
    made.push(dir);
    return dir;
  };
}

/**
 * nginx in the foreground, pinned beside the servers, listening on 127.0.0.1 with `blocks` (given its
 * port) in its `http { … }`, its files in `dir`; resolves once `path` answers.
 */
export async function startNginx(dir: string, blocks: (port: number) => string, path = '/'): Promise<Started & { url: string }> {
  const port = await freePort();
  const conf = `${dir}/nginx.conf`;
  fs.writeFileSync(
    conf,
    `daemon off; worker_processes 1; pid ${dir}/nginx.pid; error_log ${dir}/error.log;
events { worker_connections 1024; }
http { access_log off; client_body_temp_path ${dir}; proxy_temp_path ${dir}; fastcgi_temp_path ${dir}; uwsgi_temp_path ${dir}; scgi_temp_path ${dir};
${blocks(port)}
}\n`,
  );
  const url = `http://127.0.0.1:${port}`;
  return { ...(await startPinned('nginx', ['-c', conf, '-p', dir], {}, answers(`${url}${path}`))), url };
}

export async function startAttest(options: {
  dataDir: string;
  key?: string;
  databaseUrl?: string;
  env?: Record<string, string>;
  /** The build folder to run (F11 runs two builds side by side); BENCH_DIST, else dist. */
  dist?: string;
}): Promise<Attest> {
  const port = await freePort();
  const key = options.key ?? generateKey('standard');
  const url = `http://127.0.0.1:${port}`;
  const env = {
    ...BENCH_ENV,
    PORT: String(port),
    HOST: '127.0.0.1',
    ATTEST_DATA_DIR: options.dataDir,
    ATTEST_ADMIN_EMAIL: ADMIN_EMAIL,
    ATTEST_ADMIN_API_KEY: key,
    ...(options.databaseUrl ? { ATTEST_DATABASE_URL: options.databaseUrl } : {}),
    ...options.env,
  };
  // BENCH_NODE_ARGS (for example --cpu-prof) and BENCH_DIST (another build folder): bench/README.md.
  const nodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const started = await startPinned(
    process.execPath,
    [...nodeArgs, `${options.dist ?? process.env.BENCH_DIST ?? 'dist'}/server/main.js`],
    env,
    answers(`${url}/api/v1/health`),
  );
  // The first admin is created just after the server listens: wait until its key works.
  for (let i = 0; i < 500; i++) {
    const me = await fetch(`${url}/api/v1/me`, { headers: { 'service.api-token': key } });
    await me.arrayBuffer();
    if (me.ok) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return { ...started, url, key, dataDir: options.dataDir };
}

export class Api {
  constructor(
    readonly url: string,
    readonly key: string,
  ) {}

  async call<T = Record<string, unknown>>(method: string, route: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
    const answer = await send(
      `${this.url}/api/v1${route}`,
      method,
      {
        'service.api-token': this.key,
        accept: 'application/json',
        ...(body ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      body === undefined ? undefined : JSON.stringify(body),
    );
    const text = answer.body.toString('utf8');
    if (answer.status >= 300) throw new Error(`${method} ${route}: ${answer.status} ${text.slice(0, 300)}`);
    return (text ? JSON.parse(text) : {}) as T;
  }

  /** A multipart artifact upload, as a reporter sends it. */
  async upload(projectId: string, metadata: Record<string, unknown>, bytes: Uint8Array, type: string): Promise<Record<string, unknown>> {
    const form = multipart({ metadata: JSON.stringify(metadata) }, { field: 'file', name: String(metadata.name), type, bytes });
    const answer = await send(
      `${this.url}/api/v1/projects/${projectId}/artifact`,
      'POST',
      { 'service.api-token': this.key, accept: 'application/json', 'content-type': form.type },
      form.body,
    );
    const text = answer.body.toString('utf8');
    if (answer.status >= 300) throw new Error(`upload: ${answer.status} ${text.slice(0, 300)}`);
    return JSON.parse(text) as Record<string, unknown>;
  }

  project(): Promise<{ id: string }> {
    return this.call('POST', '/projects', { key: `B${randomBytes(4).toString('hex').toUpperCase()}`, name: 'Benchmark' });
  }
}

/** `steps` steps, each with `cells` text cells of about `cellBytes` characters. */
export function stepsOf(steps: number, cells: number, cellBytes: number, prefix = 's') {
  const text = 'x'.repeat(cellBytes);
  return Array.from({ length: steps }, (_, i) => ({
    key: `${prefix}-${i}`,
    title: `Step ${i + 1}: open the page and check the heading`,
    status: 'passed',
    durationMs: 120 + i,
    ...(cells > 0 ? { cells: Array.from({ length: cells }, (_, j) => ({ key: `${prefix}-${i}-c${j}`, name: `cell ${j}`, text })) } : {}),
  }));
}
