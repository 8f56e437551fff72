import { createHash } from 'node:crypto';

/** A part of a multipart upload as far as its digest goes (the `UploadPart` of artifacts.ts). */
interface Part {
  type: 'field' | 'file';
  name: string;
  stream?: AsyncIterable<Uint8Array>;
}

/**
 * The SHA-256 of each file part left in an upload, by part name, read to the end and kept nowhere:
 * what a retry of an upload is compared with before it replays. A part sent twice never matches.
 */
export async function digestParts(parts: AsyncIterator<Part>): Promise<Map<string, string>> {
  const digests = new Map<string, string>();
  for (let next = await parts.next(); !next.done; next = await parts.next()) {
    const { type, name, stream } = next.value;
    if (type !== 'file' || !stream) continue;
    const hash = createHash('sha256');
    for await (const chunk of stream) hash.update(chunk);
    digests.set(name, digests.has(name) ? 'sent twice' : hash.digest('hex'));
  }
  return digests;
}

/** The content digest of each file part an artifact was stored from: its file, or a visual diff's three images by role. */
export function storedDigests(artifact: {
  row: { kind: string; sha256: string };
  images: { role: string; sha256: string }[];
}): Map<string, string> {
  if (artifact.row.kind !== 'visual-diff') return new Map([['file', artifact.row.sha256]]);
  return new Map(artifact.images.map((image) => [image.role, image.sha256]));
}

/** Whether two uploads carried the same bytes in the same parts. */
export const sameDigests = (a: Map<string, string>, b: Map<string, string>): boolean =>
  a.size === b.size && [...a].every(([part, digest]) => b.get(part) === digest);
