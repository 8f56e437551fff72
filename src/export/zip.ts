import { Zip, ZipDeflate, ZipPassThrough } from 'fflate';
import { type ExportFile, utf8 } from './files.ts';

/** Types that are compressed already: stored as they are, not deflated again. */
const STORED = /^(image\/|video\/|application\/(zip|gzip))/;

/**
 * The files as one ZIP archive, streamed: each file's chunks are read only when the archive gets
 * to it, and the archive's bytes are yielded as they are made, so memory holds about one file.
 */
export async function* zipOf(files: readonly ExportFile[]): AsyncIterable<Uint8Array> {
  const ready: Uint8Array[] = [];
  let failure: Error | null = null;
  let finished = false;
  const zip = new Zip((error, chunk, final) => {
    if (error) failure = error;
    else ready.push(chunk);
    if (final) finished = true;
  });
  for (const file of files) {
    const entry = STORED.test(file.type) ? new ZipPassThrough(file.path) : new ZipDeflate(file.path, { level: 6 });
    zip.add(entry);
    for await (const chunk of utf8(file.chunks())) {
      entry.push(chunk);
      yield* ready.splice(0);
      if (failure) throw failure;
    }
    entry.push(new Uint8Array(0), true);
    yield* ready.splice(0);
  }
  zip.end();
  yield* ready.splice(0);
  if (failure) throw failure;
  if (!finished) throw new Error('the archive did not finish');
}
