import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

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
  // The form's bytes, sent with node:http rather than fetch: a server that refuses an upload part
  // way answers at once and closes the connection (LOAD-4), and a client still sending then gets
  // EPIPE. fetch gives up on the whole exchange at that; node:http has the answer by then, as curl does.
  const request = new Request('http://upload.invalid/', { method: 'POST', body: form });
  const bytes = Buffer.from(await request.arrayBuffer());
  const answer = await new Promise<{ status: number; headers: Headers; text: string }>((resolve, reject) => {
    const sending = http.request(`${baseUrl}/api/v1/projects/${projectId}/artifact`, {
      method: 'POST',
      headers: {
        accept: 'application/json',
        'service.api-token': apiKey,
        'content-type': request.headers.get('content-type') ?? '',
        'content-length': String(bytes.length),
        ...headers,
      },
    });
    sending.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const received = new Headers();
        for (const [name, value] of Object.entries(response.headers)) {
          for (const one of Array.isArray(value) ? value : [value ?? '']) received.append(name, one);
        }
        resolve({ status: response.statusCode ?? 0, headers: received, text: Buffer.concat(chunks).toString('utf8') });
      });
    });
    // A write that fails after the answer came is the early refusal above; without an answer it is a failure.
    sending.on('error', (error) => setTimeout(() => reject(error), 1000));
    sending.end(bytes);
  });
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(answer.text) as Record<string, unknown>;
  } catch {
    body = { text: answer.text };
  }
  return { status: answer.status, headers: answer.headers, body };
}

/** Every file under `dir` (relative paths), for "nothing was stored" checks. */
export function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) => fs.statSync(path.join(dir, f)).isFile()).sort();
}
