import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from './wait.ts';

// nginx in front of a test server, configured as docs/behind-nginx.md says: the test reads the
// document's `server { … }` block and changes only the addresses in it.

const DOC = fileURLToPath(new URL('../../docs/behind-nginx.md', import.meta.url));

/** Whether an nginx binary is on the PATH. */
export function nginxAvailable(): boolean {
  try {
    execFileSync('nginx', ['-v'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A free TCP port on 127.0.0.1 (taken and given back; nginx binds it right after). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

/**
 * The documented `server { … }` block with the test's addresses: nginx listens on `port` without
 * TLS, forwards to `upstream` and serves blobs from `blobsDir`. Every replaced line must be found,
 * so a change to the document that the test cannot follow fails here rather than going unnoticed.
 */
export function documentedServerBlock(port: number, upstream: string, blobsDir: string): string {
  const doc = fs.readFileSync(DOC, 'utf8');
  const block = [...doc.matchAll(/```nginx\n([\s\S]*?)```/g)].map((m) => m[1] as string).find((b) => /^server \{/m.test(b));
  if (!block) throw new Error('docs/behind-nginx.md has no ```nginx block with a server { … }');
  const replacements: [RegExp, string][] = [
    [/^(\s*)listen 443 ssl;/m, `$1listen 127.0.0.1:${port};`],
    [/proxy_pass http:\/\/127\.0\.0\.1:8080;/, `proxy_pass ${upstream};`],
    [/alias \/var\/lib\/attest\/blobs\/;/, `alias ${blobsDir.replace(/\/?$/, '/')};`],
  ];
  let config = block;
  for (const [pattern, replacement] of replacements) {
    if (!pattern.test(config)) throw new Error(`the documented nginx block no longer has ${pattern}`);
    config = config.replace(pattern, replacement);
  }
  return config;
}

export interface RunningNginx {
  url: string;
  /** The error log's contents (upstream failures are written there). */
  errorLog(): string;
  stop(): Promise<void>;
}

/**
 * docs/deployment.md's `upstream attest { … }` and `server { … }` blocks with the test's addresses:
 * nginx listens on `port` without TLS and balances over `instances` (`http://host:port` each).
 * As with documentedServerBlock, every line replaced must be found.
 */
export function documentedUpstreamBlocks(port: number, instances: string[]): string {
  const doc = fs.readFileSync(fileURLToPath(new URL('../../docs/deployment.md', import.meta.url)), 'utf8');
  const block = [...doc.matchAll(/```nginx\n([\s\S]*?)```/g)].map((m) => m[1] as string).find((b) => /^upstream attest \{/m.test(b));
  if (!block) throw new Error('docs/deployment.md has no ```nginx block with an upstream attest { … }');
  const servers = [...block.matchAll(/^(\s*)server 10\.0\.0\.\d+:8080( [^;]*)?;\n/gm)];
  if (servers.length === 0 || !/^(\s*)listen 443 ssl;/m.test(block))
    throw new Error('the documented upstream block no longer has its server or listen lines');
  const first = servers[0] as RegExpMatchArray;
  const indent = first[1] as string;
  const options = first[2] ?? '';
  const lines = instances.map((url) => `${indent}server ${new URL(url).host}${options};\n`).join('');
  return block
    .replace(/^(\s*)server 10\.0\.0\.\d+:8080( [^;]*)?;\n/gm, (line) => (line === first[0] ? lines : ''))
    .replace(/^(\s*)listen 443 ssl;/m, `$1listen 127.0.0.1:${port};`);
}

/** Starts nginx in the foreground (`-p <prefix> -c <conf> -g 'daemon off;'`) with the documented server block in front of `upstream`. */
export async function startNginx(upstream: string, blobsDir: string): Promise<RunningNginx> {
  return startNginxWith((port) => documentedServerBlock(port, upstream, blobsDir));
}

/** Starts nginx with `blocks(port)` inside its `http { … }`, listening on a free port. */
export async function startNginxWith(blocks: (port: number) => string): Promise<RunningNginx> {
  const prefix = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-nginx-'));
  // nginx's workers run as an unprivileged user when the master is root: they must reach the temp folders.
  fs.chmodSync(prefix, 0o755);
  const port = await freePort();
  const conf = path.join(prefix, 'nginx.conf');
  fs.writeFileSync(
    conf,
    [
      'worker_processes 1;',
      `pid ${prefix}/nginx.pid;`,
      `error_log ${prefix}/error.log warn;`,
      'events { worker_connections 1024; }',
      'http {',
      `  access_log ${prefix}/access.log;`,
      `  client_body_temp_path ${prefix}/client_body;`,
      `  proxy_temp_path ${prefix}/proxy;`,
      `  fastcgi_temp_path ${prefix}/fastcgi;`,
      `  uwsgi_temp_path ${prefix}/uwsgi;`,
      `  scgi_temp_path ${prefix}/scgi;`,
      blocks(port),
      '}',
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn('nginx', ['-p', prefix, '-c', conf, '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const stderr: string[] = [];
  child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
  const exited = once(child, 'exit');
  const url = `http://127.0.0.1:${port}`;
  const errorLog = () => {
    try {
      return fs.readFileSync(path.join(prefix, 'error.log'), 'utf8');
    } catch {
      return '';
    }
  };
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`nginx exited (${child.exitCode}): ${stderr.join('')}${errorLog()}`);
      const answer = await fetch(`${url}/health`).catch(() => undefined);
      return answer?.status === 200;
    },
    { timeoutMs: 20_000, intervalMs: 50, message: () => `nginx answering on ${url} (${stderr.join('')}${errorLog()})` },
  );
  return {
    url,
    errorLog,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGQUIT');
      await exited;
      fs.rmSync(prefix, { recursive: true, force: true });
    },
  };
}
