import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { CreateBucketCommand, DeleteObjectCommand, PutObjectCommand, paginateListObjectsV2, S3Client } from '@aws-sdk/client-s3';
import { parseBlobUrl } from '../../src/server/blob/create-blob-store.ts';
import type { Dialect } from '../../src/server/db/types.ts';
import { blobFile } from './blob-files.ts';
import type { TestServer } from './server.ts';
import { filesUnder } from './uploads.ts';

/**
 * s3rver's one account. Attest takes credentials from the SDK's default chain only, so the test
 * process sets them in its environment for the servers it builds, and `env()` hands them on to the
 * processes it starts.
 */
export const S3_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };
Object.assign(process.env, S3_CREDENTIALS);

export interface TestS3 {
  /** `http://127.0.0.1:<port>`, the same across stop and start. */
  endpoint: string;
  /** The folder s3rver keeps the buckets in. */
  directory: string;
  /** Kills the server process at once, without waiting (for an exit handler). */
  kill(): void;
  /** A new, empty bucket; its name. */
  createBucket(): Promise<string>;
  /** What a server needs to keep its blobs in `bucket`, under `prefix`. */
  env(bucket: string, prefix?: string): Record<string, string>;
  /** The keys in `bucket` under `prefix`, in order. */
  keys(bucket: string, prefix?: string): Promise<string[]>;
  /** Kills the server (SIGKILL), cutting the requests in flight: the store is down. */
  stop(): Promise<void>;
  /** Starts it again on the same port and folder, with everything stored before. */
  start(): Promise<void>;
  /** Stops it and removes its folder. */
  close(): Promise<void>;
}

const SERVER_PROCESS = fileURLToPath(new URL('./s3rver-process.mjs', import.meta.url));

/** Starts s3rver on `port` (0: a free one) in `directory`; resolves with the process and its port. */
async function launch(port: number, directory: string): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['--openssl-legacy-provider', SERVER_PROCESS, String(port), directory], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [line] = (await Promise.race([
    once(createInterface({ input: child.stdout as NodeJS.ReadableStream }), 'line'),
    once(child, 'exit').then(([code]) => Promise.reject(new Error(`s3rver exited with ${code} before listening`))),
  ])) as [string];
  child.stdout?.destroy();
  child.unref();
  return { child, port: Number(line) };
}

/**
 * An S3-compatible server for tests: `s3rver` (a test double with a file backend) on a free port
 * of 127.0.0.1, in a temp folder, in a process of its own (which never keeps the test process alive).
 */
export async function startS3(): Promise<TestS3> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-s3-'));
  let { child, port } = await launch(0, directory);
  let running = true;
  const endpoint = `http://127.0.0.1:${port}`;
  // The tests' own calls (buckets, listings) retry as the SDK does by default: a kept-alive socket
  // s3rver closed while idle (its keep-alive timeout passes on a loaded machine) is a reset, not a finding.
  const admin = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, maxAttempts: 3 });
  const stop = async () => {
    if (!running) return;
    running = false;
    const exited = once(child, 'exit');
    // Waited for, the process keeps this one alive until it is gone.
    child.ref();
    child.kill('SIGKILL');
    await exited;
  };
  return {
    endpoint,
    directory,
    kill: () => child.kill('SIGKILL'),
    async createBucket() {
      const bucket = `attest-${randomBytes(5).toString('hex')}`;
      await admin.send(new CreateBucketCommand({ Bucket: bucket }));
      return bucket;
    },
    env: (bucket, prefix = '') => ({
      ATTEST_BLOB_URL: `s3://${bucket}/${prefix}`,
      ATTEST_S3_ENDPOINT: endpoint,
      ...S3_CREDENTIALS,
    }),
    async keys(bucket, prefix = '') {
      const keys: string[] = [];
      for await (const page of paginateListObjectsV2({ client: admin }, { Bucket: bucket, Prefix: prefix })) {
        for (const object of page.Contents ?? []) if (object.Key) keys.push(object.Key);
      }
      return keys;
    },
    stop,
    async start() {
      if (running) return;
      ({ child, port } = await launch(port, directory));
      running = true;
    },
    async close() {
      await stop();
      admin.destroy();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}

let shared: Promise<TestS3> | undefined;

/** One S3 server for this test process, started on first use and removed at exit. */
export function sharedS3(): Promise<TestS3> {
  shared ??= startS3().then((s3) => {
    process.once('exit', () => {
      s3.kill();
      fs.rmSync(s3.directory, { recursive: true, force: true });
    });
    return s3;
  });
  return shared;
}

/**
 * What `startTestServer` needs for the blob store a dialect's run uses: on PostgreSQL, the scaled
 * mode, a fresh bucket of this process's S3 server; on SQLite, nothing (the data folder).
 */
export async function blobEnv(dialect: Dialect): Promise<Record<string, string>> {
  if (dialect !== 'postgres') return {};
  const s3 = await sharedS3();
  return s3.env(await s3.createBucket(), 'attest');
}

export interface FaultyProxy {
  /** Where clients reach the store through the proxy. */
  endpoint: string;
  /** How each request that reached the proxy was answered, in order. */
  answers: ('forwarded' | 'refused' | 'stalled' | 'truncated' | 'chunked' | 'delayed' | 'served')[];
  /** The PUTs forwarded, in order: their path and query, the SHA-256 their signature claims for the body, and the body's own. */
  puts: { url: string; claimed: string | undefined; sha256: string }[];
  /** The next `count` requests get 503 SlowDown, as a throttling or failing store answers. */
  refuse(count: number): void;
  /** While on, requests get no answer at all (a store that hangs). */
  stall(on: boolean): void;
  /** While on, a GET gets its headers and half its body, then the connection drops. */
  truncate(on: boolean): void;
  /** While on, a GET's answer comes chunked, without Content-Length (as some stores and proxies send it). */
  chunk(on: boolean): void;
  /** Requests that `which` picks are answered `ms` late (a store busy copying or storing a large part); 0 ends it. */
  delay(ms: number, which?: (request: http.IncomingMessage) => boolean): void;
  /** Requests that `which` picks are answered 200 with `xml` by the proxy itself (a store answering oddly); undefined ends it. */
  serve(xml: string | undefined, which?: (request: http.IncomingMessage) => boolean): void;
  close(): Promise<void>;
}

/**
 * A tiny HTTP proxy in front of an S3 server that injects the faults s3rver cannot: 503s,
 * silence, bodies cut short. Requests pass through unchanged (their signature covers the host
 * the client addressed, which is the proxy's).
 */
export async function faultyProxy(target: string): Promise<FaultyProxy> {
  const upstream = new URL(target);
  let refusals = 0;
  let stalling = false;
  let truncating = false;
  let chunking = false;
  let delay = { ms: 0, which: (_request: http.IncomingMessage) => true };
  let served: { xml: string | undefined; which: (request: http.IncomingMessage) => boolean } = { xml: undefined, which: () => true };
  const answers: FaultyProxy['answers'] = [];
  const puts: FaultyProxy['puts'] = [];
  const server = http.createServer((request, response) => {
    if (stalling) {
      answers.push('stalled');
      request.resume();
      return;
    }
    if (refusals > 0) {
      refusals--;
      answers.push('refused');
      request.resume();
      request.on('end', () => {
        response.writeHead(503, { 'content-type': 'application/xml' });
        response.end(
          '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Reduce your request rate.</Message></Error>',
        );
      });
      return;
    }
    if (served.xml !== undefined && served.which(request)) {
      const { xml } = served;
      answers.push('served');
      request.resume();
      request.on('end', () => {
        response.writeHead(200, { 'content-type': 'application/xml' });
        response.end(xml);
      });
      return;
    }
    const cut = truncating && request.method === 'GET';
    const chunked = chunking && request.method === 'GET';
    const late = delay.ms > 0 && delay.which(request) ? delay.ms : 0;
    answers.push(cut ? 'truncated' : chunked ? 'chunked' : late ? 'delayed' : 'forwarded');
    const relay = (answer: http.IncomingMessage) => {
      const headers = { ...answer.headers };
      if (chunked) delete headers['content-length'];
      response.writeHead(answer.statusCode ?? 502, headers);
      const length = Number(answer.headers['content-length'] ?? 0);
      if (!cut || length < 2) {
        answer.pipe(response);
        return;
      }
      let sent = 0;
      answer.on('data', (chunk: Buffer) => {
        const room = Math.floor(length / 2) - sent;
        if (room > 0) response.write(chunk.subarray(0, room));
        sent += chunk.length;
        if (sent >= length / 2) {
          answer.destroy();
          response.socket?.destroy();
        }
      });
    };
    const forward = http.request(
      { host: upstream.hostname, port: upstream.port, method: request.method, path: request.url, headers: request.headers },
      (answer) => {
        if (late) setTimeout(() => relay(answer), late);
        else relay(answer);
      },
    );
    forward.on('error', () => response.socket?.destroy());
    if (request.method === 'PUT') {
      const hash = createHash('sha256');
      request.on('data', (chunk: Buffer) => hash.update(chunk));
      request.on('end', () => {
        const claimed = request.headers['x-amz-content-sha256'];
        puts.push({ url: request.url ?? '', claimed: typeof claimed === 'string' ? claimed : undefined, sha256: hash.digest('hex') });
      });
    }
    request.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    answers,
    puts,
    refuse: (count) => {
      refusals = count;
    },
    stall: (on) => {
      stalling = on;
    },
    truncate: (on) => {
      truncating = on;
    },
    chunk: (on) => {
      chunking = on;
    },
    delay: (ms, which = () => true) => {
      delay = { ms, which };
    },
    serve: (xml, which = () => true) => {
      served = { xml, which };
    },
    async close() {
      const closing = new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
      await closing;
    },
  };
}

/**
 * What unfinished uploads left behind in a test server's blob store: the temp files of its data
 * folder, or the temp objects under its bucket's prefix. Empty after every upload, refused or not.
 */
export async function leftoverUploads(server: Pick<TestServer, 'config' | 'dataDir'>): Promise<string[]> {
  const { blobUrl, s3Endpoint } = server.config;
  if (!blobUrl) return filesUnder(path.join(server.dataDir, 'tmp'));
  const { bucket, prefix } = parseBlobUrl(blobUrl);
  const client = new S3Client({ endpoint: s3Endpoint, region: 'us-east-1', forcePathStyle: true, maxAttempts: 1 });
  try {
    const keys: string[] = [];
    for await (const page of paginateListObjectsV2({ client }, { Bucket: bucket, Prefix: `${prefix ? `${prefix}/` : ''}tmp/` })) {
      for (const object of page.Contents ?? []) if (object.Key) keys.push(object.Key);
    }
    return keys;
  } finally {
    client.destroy();
  }
}

/**
 * Changes what a test server stores under `sha` behind its back, in its data folder or its bucket:
 * `bytes` replace the blob's (a damaged copy), none remove it. For tests of what the server does then.
 */
export async function tamperWithBlob(server: Pick<TestServer, 'config' | 'dataDir'>, sha: string, bytes?: Buffer): Promise<void> {
  const { blobUrl, s3Endpoint } = server.config;
  if (!blobUrl) {
    const file = blobFile(server.dataDir, sha);
    if (bytes) fs.writeFileSync(file, bytes);
    else fs.rmSync(file);
    return;
  }
  const { bucket, prefix } = parseBlobUrl(blobUrl);
  const key = `${prefix ? `${prefix}/` : ''}blobs/${sha.slice(0, 2)}/${sha.slice(2, 4)}/${sha}`;
  const client = new S3Client({ endpoint: s3Endpoint, region: 'us-east-1', forcePathStyle: true, maxAttempts: 1 });
  try {
    await client.send(
      bytes ? new PutObjectCommand({ Bucket: bucket, Key: key, Body: bytes }) : new DeleteObjectCommand({ Bucket: bucket, Key: key }),
    );
  } finally {
    client.destroy();
  }
}
