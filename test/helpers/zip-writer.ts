import { Readable } from 'node:stream';
import zlib from 'node:zlib';

// ZIP archives built with zlib's own deflate (fast enough for hundreds of megabytes, where fflate's
// JavaScript deflate takes seconds), with the sizes of the central directory open to a lie: the
// hostile archives of the import tests declare what they want.

export interface DeflatedEntry {
  name: string;
  /** The raw deflate stream. */
  data: Buffer;
  crc32: number;
  /** What the data really expands to. */
  size: number;
}

/** Deflates an entry's content, given as chunks, without holding the expanded bytes whole. */
export async function deflateEntry(
  name: string,
  chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>,
  level = 1,
): Promise<DeflatedEntry> {
  let crc32 = 0;
  let size = 0;
  const counted = (async function* () {
    for await (const chunk of chunks) {
      crc32 = zlib.crc32(chunk, crc32);
      size += chunk.byteLength;
      yield chunk;
    }
  })();
  const out: Buffer[] = [];
  for await (const piece of Readable.from(counted).pipe(zlib.createDeflateRaw({ level }))) out.push(piece as Buffer);
  return { name, data: Buffer.concat(out), crc32, size };
}

/**
 * A ZIP of deflated entries. `declare` gives an entry's uncompressed size as its headers state it
 * (the real one by default): a lying archive.
 */
export function zipOf(entries: readonly (DeflatedEntry & { declare?: number })[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const declared = entry.declare ?? entry.size;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(8, 8); // deflate
    local.writeUInt32LE(0, 10); // time and date
    local.writeUInt32LE(entry.crc32, 14);
    local.writeUInt32LE(entry.data.length, 18);
    local.writeUInt32LE(declared, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4); // made by
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(0, 12);
    central.writeUInt32LE(entry.crc32, 16);
    central.writeUInt32LE(entry.data.length, 20);
    central.writeUInt32LE(declared, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, entry.data);
    centrals.push(central, name);
    offset += local.length + name.length + entry.data.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}
