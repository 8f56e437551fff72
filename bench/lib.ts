import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { promisify } from 'node:util';

// Processes, pinning and load generation for the benchmark. Every child is killed on exit.

const children = new Set<ChildProcess>();
const cleanups: (() => void)[] = [];
export const onExit = (cleanup: () => void) => cleanups.push(cleanup);
function killAll(): void {
  for (const child of children) child.kill('SIGKILL');
  for (const cleanup of cleanups.splice(0)) {
    try {
      cleanup();
    } catch {
      // best effort on the way out
    }
  }
}
process.on('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, () => {
    killAll();
    process.exit(130);
  });

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const hasCommand = (name: string) => {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

/** Server on CPU 0, load on CPU 1, when taskset exists and there are two cores. */
export const PINNED = hasCommand('taskset') && os.cpus().length >= 2;
export const SERVER_CPU = '0';
export const LOAD_CPU = '1';

/**
 * The benchmark's own process (its Node clients and in-process baselines) on the load core, with
 * every thread it has; the servers it starts are pinned to CPU 0 by `pinned`.
 */
export function pinSelf(): void {
  if (PINNED) execFileSync('taskset', ['-a', '-p', '-c', LOAD_CPU, String(process.pid)], { stdio: 'ignore' });
}

export function pinned(cpu: string, command: string, args: string[]): [string, string[]] {
  return PINNED ? ['taskset', ['-c', cpu, command, ...args]] : [command, args];
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface Started {
  child: ChildProcess;
  pid: number;
  output: string[];
  stop(): Promise<void>;
}

/** Starts a process pinned to the server core; `ready` decides when it serves. */
export async function startPinned(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: () => Promise<boolean>,
): Promise<Started> {
  const [file, argv] = pinned(SERVER_CPU, command, args);
  const child = spawn(file, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  const output: string[] = [];
  child.stdout?.on('data', (chunk) => output.push(String(chunk)));
  child.stderr?.on('data', (chunk) => output.push(String(chunk)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${command} exited: ${output.join('')}`);
    if (await ready().catch(() => false)) break;
    if (Date.now() > deadline) throw new Error(`${command} did not start: ${output.join('')}`);
    await sleep(5);
  }
  return {
    child,
    pid: child.pid as number,
    output,
    async stop() {
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(10_000)]);
      child.kill('SIGKILL');
      children.delete(child);
    },
  };
}

export const answers =
  (url: string, headers: Record<string, string> = {}) =>
  async () =>
    (await fetch(url, { headers })).ok;

/** CPU milliseconds (user + system) a process has used, from /proc. */
export function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * (1000 / 100);
}

/** Resident memory of a process in MB, from /proc. */
export function rssMb(pid: number): number {
  const match = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? 0) / 1024;
}

export interface Load {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  non2xx: number;
  /** Requests wrk gave up on (its timeout) or that failed on the socket: never in the latency figures. */
  errors: number;
  /** Server CPU per request, in microseconds, when the server's pid was given. */
  cpuUsPerRequest?: number;
}

const toMs = (value: string) => {
  const match = /^([\d.]+)(us|ms|s)$/.exec(value.trim());
  if (!match) return Number.NaN;
  const n = Number(match[1]);
  return match[2] === 'us' ? n / 1000 : match[2] === 's' ? n * 1000 : n;
};

/**
 * wrk on the load core: 1 thread, `connections` keep-alive connections, each sending its next
 * request when the last was answered; latency distribution. `script` is a Lua file that makes the
 * requests (bench/post-step.lua).
 */
export async function wrk(
  url: string,
  options: {
    headers?: Record<string, string>;
    seconds: number;
    connections?: number;
    serverPid?: number;
    script?: string;
    /** wrk's timeout per request (its default is 2 s; a slower answer is counted as an error, not a latency). */
    timeoutSeconds?: number;
  },
): Promise<Load> {
  const headerArgs = Object.entries(options.headers ?? {}).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);
  const [file, argv] = pinned(LOAD_CPU, 'wrk', [
    '-t1',
    `-c${options.connections ?? 8}`,
    ...(options.script ? ['-s', options.script] : []),
    `-d${options.seconds}s`,
    ...(options.timeoutSeconds ? [`--timeout=${options.timeoutSeconds}s`] : []),
    '--latency',
    ...headerArgs,
    url,
  ]);
  const before = options.serverPid ? cpuMs(options.serverPid) : 0;
  const { stdout: out } = await promisify(execFile)(file, argv, { encoding: 'utf8' });
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  const load: Load = {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0),
    p50Ms: toMs(/\s50%\s+(\S+)/.exec(out)?.[1] ?? ''),
    p99Ms: toMs(/\s99%\s+(\S+)/.exec(out)?.[1] ?? ''),
    requests,
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
    errors: [...(/Socket errors: (.*)/.exec(out)?.[1] ?? '').matchAll(/(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0),
  };
  if (options.serverPid && requests > 0) load.cpuUsPerRequest = ((cpuMs(options.serverPid) - before) * 1000) / requests;
  return load;
}

export const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};
