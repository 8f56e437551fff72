import { ApiError } from '../../src/client/index.ts';
import { api } from './session.ts';

/** Bytes sent of bytes to send, as an upload goes. */
export type UploadProgress = (sent: number, total: number) => void;

/**
 * One POST of a body the browser sends itself (a multipart form, a file), with upload progress:
 * `fetch` reports none for a request body, XMLHttpRequest does. The same address, key header and
 * problem answers as the typed client's calls; an answer other than 2xx rejects with an ApiError,
 * a lost connection with a plain Error.
 */
export function postWithProgress<T>(
  path: string,
  body: FormData | Blob,
  onProgress: UploadProgress,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: T }> {
  const client = api();
  // The browser sets a form's content type itself (with its boundary).
  const sent = client.headers(headers);
  if (body instanceof FormData || !headers['content-type']) delete sent['content-type'];
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open('POST', client.url(path));
    for (const [name, value] of Object.entries(sent)) request.setRequestHeader(name, value);
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(event.loaded, event.total);
    };
    request.onerror = () => reject(new Error('The connection was lost before the server answered; nothing shows it arrived.'));
    request.ontimeout = request.onerror;
    request.onload = () => {
      let parsed: unknown;
      try {
        parsed = request.responseText ? JSON.parse(request.responseText) : undefined;
      } catch {
        parsed = undefined;
      }
      if (request.status >= 200 && request.status < 300) {
        resolve({ status: request.status, body: parsed as T });
        return;
      }
      const problem = (parsed ?? { title: request.statusText }) as Record<string, unknown>;
      reject(new ApiError(request.status, String(problem.code ?? `HTTP_${request.status}`), problem));
    };
    request.send(body);
  });
}

/**
 * A fingerprint of bytes for an idempotency key: the same file gives the same key, so a second
 * upload of it (a retry, a paste again after a reload) is answered with the stored artifact. SHA-256
 * where Web Crypto is there (a secure context: https or localhost); else two FNV-1a hashes with the
 * length, which is plenty to tell a step's screenshots apart (the server compares the bytes anyway).
 */
export async function fingerprint(bytes: ArrayBuffer): Promise<string> {
  if (globalThis.crypto?.subtle) {
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
    return Array.from(digest.subarray(0, 16), (b) => b.toString(16).padStart(2, '0')).join('');
  }
  const view = new Uint8Array(bytes);
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (const byte of view) {
    a = Math.imul(a ^ byte, 0x01000193) >>> 0;
    b = Math.imul(b ^ byte, 0x01000193) >>> 0;
  }
  return `${a.toString(16)}${b.toString(16)}-${view.length}`;
}
