import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createProject } from './factories.ts';
import { encodeForm, rawRequest } from './http.ts';
import { startRun } from './records.ts';
import type { TestServer } from './server.ts';

/** One file part of an upload. */
export interface FilePart {
  bytes: Uint8Array;
  /** The part's declared type; the server ignores it for decisions. */
  type?: string;
  filename?: string;
}

export interface UploadResult {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/**
 * POSTs a multipart upload the way a reporter does: the `metadata` JSON part first, then the file
 * parts, with the SPEC-1.3 key header and `Accept: application/json`.
 */
export async function upload(
  baseUrl: string,
  apiKey: string,
  projectId: string,
  metadata: Record<string, unknown> | string,
  files: Record<string, FilePart>,
  headers: Record<string, string> = {},
): Promise<UploadResult> {
  const form = new FormData();
  form.append('metadata', typeof metadata === 'string' ? metadata : JSON.stringify(metadata));
  for (const [name, file] of Object.entries(files)) {
    form.append(name, new Blob([file.bytes], { type: file.type ?? 'application/octet-stream' }), file.filename ?? `${name}.bin`);
  }
  // Sent with node:http rather than fetch: a server that refuses an upload part way answers at once
  // and closes the connection (LOAD-4), and a client still sending then gets EPIPE. fetch drops the
  // whole exchange at that; node:http has read the answer by then, as curl does.
  const { payload, contentType } = await encodeForm(form);
  const answer = await rawRequest(`${baseUrl}/api/v1/projects/${projectId}/artifact`, {
    method: 'POST',
    headers: {
      accept: 'application/json',
      'service.api-token': apiKey,
      'content-type': contentType,
      'content-length': payload.length,
      ...headers,
    },
    body: payload,
  });
  const received = new Headers();
  for (const [name, value] of Object.entries(answer.headers)) {
    for (const one of Array.isArray(value) ? value : [value ?? '']) received.append(name, one);
  }
  const json = /json/.test(answer.headers['content-type'] ?? '');
  return { status: answer.status, headers: received, body: json ? answer.json : { text: answer.text } };
}

/** One file part (`file`) uploaded by the server's admin: `upload` with the server's address and the admin's key. */
export function adminUpload(
  server: { url: string; admin: { key: string } },
  projectId: string,
  metadata: Record<string, unknown>,
  file: FilePart,
): Promise<UploadResult> {
  return upload(server.url, server.admin.key, projectId, metadata, { file });
}

/** A screenshot (`file`, named `name`) the admin uploads into a new run of a new project: one blob in the store, referenced. */
export async function adminScreenshot(server: TestServer, name: string, file: FilePart): Promise<UploadResult> {
  const project = await createProject(server);
  const run = await startRun(server.admin.client, project.id);
  return adminUpload(server, project.id, { testRunId: run.id, kind: 'screenshot', name }, file);
}

/**
 * Starts an upload of one screenshot part (`file`) but sends only the form up to the first
 * `headBytes` of the file, then waits for the answer without ever sending the rest. An answer
 * proves the server decided from the bytes it had (the image header) without waiting for, let alone
 * decoding, the whole image: a check that holds however slow the machine, where a stopwatch does not.
 */
export async function uploadHead(
  baseUrl: string,
  apiKey: string,
  projectId: string,
  metadata: Record<string, unknown>,
  file: Buffer,
  headBytes: number,
): Promise<{ status: number; body: Record<string, unknown>; unsent: number }> {
  const form = new FormData();
  form.append('metadata', JSON.stringify(metadata));
  form.append('file', new Blob([file], { type: 'image/png' }), String(metadata.name ?? 'file.png'));
  const { payload, contentType } = await encodeForm(form);
  const fileStart = payload.indexOf(file.subarray(0, 64));
  if (fileStart < 0 || headBytes >= file.length) throw new Error('uploadHead: the head must be a part of the file');
  const sent = payload.subarray(0, fileStart + headBytes);
  return new Promise((resolve, reject) => {
    const request = http.request(`${baseUrl}/api/v1/projects/${projectId}/artifact`, {
      method: 'POST',
      agent: false,
      headers: {
        accept: 'application/json',
        'service.api-token': apiKey,
        'content-type': contentType,
        'content-length': payload.length,
      },
    });
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        request.destroy();
        const text = Buffer.concat(chunks).toString('utf8');
        let body: Record<string, unknown> = { text };
        try {
          body = JSON.parse(text) as Record<string, unknown>;
        } catch {
          // not JSON: the assertions on `text` say what it was
        }
        resolve({ status: response.statusCode ?? 0, body, unsent: payload.length - sent.length });
      });
    });
    request.on('error', reject);
    request.write(sent); // and never the rest: the request stays open until the answer comes
  });
}

/** Every file under `dir` (relative paths), for "nothing was stored" checks. */
export function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) => fs.statSync(path.join(dir, f)).isFile()).sort();
}
