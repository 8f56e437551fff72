import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** Lower-case hex SHA-256 of some bytes: the key blobs are stored under. */
export const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** Where the local blob store keeps a blob (FILE-4): `blobs/aa/bb/<sha256>` in the data folder. */
export const blobFile = (dataDir: string, sha: string): string => path.join(dataDir, 'blobs', sha.slice(0, 2), sha.slice(2, 4), sha);

/** SHA-256 of a file, streamed. */
export function sha256OfFile(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    fs.createReadStream(file)
      .on('data', (chunk) => hash.update(chunk))
      .on('end', () => resolve(hash.digest('hex')))
      .on('error', reject);
  });
}
