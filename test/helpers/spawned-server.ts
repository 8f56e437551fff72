import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { AttestClient } from '../../src/client/index.ts';
import type { Dialect } from '../../src/server/db/types.ts';
import { builtEntry } from './built.ts';
import { createPostgresDatabase } from './dialects.ts';
import { NO_RETRY } from './http.ts';
import { delay } from './wait.ts';

// The real server as a child process (`node dist/server/main.js`, the build users run), for tests
// that kill it (DUR-13) or measure its memory.

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface SpawnedServer {
  child: ChildProcess;
  pid: number;
  url: string;
  admin: AttestClient;
  /** Every line the server printed (stdout and stderr). */
  output: string[];
  /** Resolves when the process is gone, with how it ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM (graceful shutdown) and wait. */
  stop(): Promise<void>;
}

/** Where a spawned server keeps its records: a data folder, plus a fresh PostgreSQL database on that dialect. */
export interface ServerStorage {
  dialect: Dialect;
  dataDir: string;
  databaseUrl: string | undefined;
  adminKey: string;
  drop(): Promise<void>;
}

export async function createStorage(dialect: Dialect, dataDir: string, adminKey: string): Promise<ServerStorage> {
  if (dialect === 'sqlite') return { dialect, dataDir, databaseUrl: undefined, adminKey, drop: async () => {} };
  const database = await createPostgresDatabase('attest_crash');
  return { dialect, dataDir, databaseUrl: database.url, adminKey, drop: database.drop };
}

/** A server process just started: it may go on to listen, or exit (a refused start). */
export interface LaunchedServer {
  child: ChildProcess;
  /** Every line the server printed (stdout and stderr, in arrival order), and each stream's own. */
  output: string[];
  stdout: string[];
  stderr: string[];
  /** Resolves when the process is gone, with how it ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the URL once it prints `attest listening <url>`; rejects if it exits first or takes over 60 s. */
  listening: Promise<string>;
}

/** Where and how a server process starts, beyond its environment. */
export interface LaunchOptions {
  /** Its working folder (where it reads `.env`); the repository by default. */
  cwd?: string;
  /** Variables to leave out of its environment, so a `.env` can set them. */
  unset?: string[];
}

/** Starts the built server (`dist/server/main.js`) on 127.0.0.1 and a free port, without waiting for anything. */
export function launchServer(storage: ServerStorage, env: Record<string, string> = {}, options: LaunchOptions = {}): LaunchedServer {
  const environment: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    ATTEST_DATA_DIR: storage.dataDir,
    ATTEST_ADMIN_EMAIL: 'admin@example.test',
    ATTEST_ADMIN_API_KEY: storage.adminKey,
    ATTEST_LOG_LEVEL: 'warn',
    ATTEST_RATE_LIMIT_PER_MINUTE: '0',
    ...(storage.databaseUrl ? { ATTEST_DATABASE_URL: storage.databaseUrl } : {}),
    ...env,
  };
  for (const name of options.unset ?? []) delete environment[name];
  // Absolute paths, so the process starts the same from any working folder.
  const child = spawn(process.execPath, [builtEntry('server/main')], {
    cwd: options.cwd ?? REPO_ROOT,
    env: environment,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const stdout: string[] = [];
  const stderr: string[] = [];
  // 'close', not 'exit': by then both streams are read to the end, so `output` holds every line.
  const exited = once(child, 'close').then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null }));
  createInterface({ input: child.stderr as NodeJS.ReadableStream }).on('line', (line) => {
    output.push(line);
    stderr.push(line);
  });
  const listening = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      output.push(line);
      stdout.push(line);
      const match = /^attest listening (\S+)$/.exec(line);
      if (match) resolve((match[1] as string).replace('0.0.0.0', '127.0.0.1'));
    });
    void exited.then(({ code, signal }) =>
      reject(new Error(`the server exited (${code ?? signal}) before listening:\n${output.join('\n')}`)),
    );
    setTimeout(() => reject(new Error(`the server did not listen within 60 s:\n${output.join('\n')}`)), 60_000).unref();
  });
  // A test that expects the start to be refused never awaits `listening`.
  listening.catch(() => {});
  return { child, output, stdout, stderr, exited, listening };
}

/**
 * Reads the lines of a server process started by the test itself (stderr and stdout, into `output`);
 * `listening` resolves with the URL once it prints `attest listening <url>`, and rejects if it exits first.
 * For tests that start it their own way (`npm start`'s command, no admin key) rather than by {@link launchServer}.
 */
export function readServerLines(child: ChildProcess): { output: string[]; listening: Promise<string> } {
  const output: string[] = [];
  createInterface({ input: child.stderr as NodeJS.ReadableStream }).on('line', (line) => output.push(line));
  const listening = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      output.push(line);
      const match = /^attest listening (\S+)$/.exec(line);
      if (match) resolve((match[1] as string).replace('0.0.0.0', '127.0.0.1'));
    });
    child.once('exit', (code) => reject(new Error(`exited (${code}) before listening:\n${output.join('\n')}`)));
  });
  return { output, listening };
}

/** Starts the built server (`dist/server/main.js`) on 127.0.0.1 and a free port; resolves once it prints `attest listening <url>`. */
export async function spawnServer(
  storage: ServerStorage,
  env: Record<string, string> = {},
  options: LaunchOptions = {},
): Promise<SpawnedServer> {
  const { child, output, exited, listening } = launchServer(storage, env, options);
  const url = await listening;
  return {
    child,
    pid: child.pid as number,
    url,
    admin: new AttestClient({ baseUrl: url, apiKey: storage.adminKey, retry: NO_RETRY }),
    output,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Resident set size of a process in bytes, from /proc/<pid>/status (Linux). */
export async function residentBytes(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kib === undefined) throw new Error(`no VmRSS for process ${pid}`);
  return Number(kib) * 1024;
}

/** What a {@link watchResident} saw: the first and the highest RSS, and how many samples it took. */
export interface ResidentPeak {
  first: number;
  peak: number;
  samples: number;
}

/**
 * Samples the resident set size of `pid` every `intervalMs` until `stop()`, which resolves with the
 * highest one seen. A decode of a few hundred megapixels takes seconds, far longer than the interval,
 * so a transient spike is caught even when the memory is given back before the request ends.
 */
export function watchResident(pid: number, intervalMs = 20): { stop(): Promise<ResidentPeak> } {
  let sampling = true;
  const seen: ResidentPeak = { first: 0, peak: 0, samples: 0 };
  const loop = (async () => {
    do {
      const rss = await residentBytes(pid);
      if (seen.samples++ === 0) seen.first = rss;
      seen.peak = Math.max(seen.peak, rss);
      // Deliberate: the sampling period.
      await delay(intervalMs);
    } while (sampling);
  })();
  // A process that died mid-sample surfaces at stop(), not as an unhandled rejection before it.
  const failed = loop.then(
    () => undefined,
    (error: unknown) => error,
  );
  return {
    async stop() {
      sampling = false;
      const error = await failed;
      if (error !== undefined) throw error;
      return seen;
    },
  };
}
