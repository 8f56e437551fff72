/**
 * What an artifact's name may tell about its type, and the names a download proposes. The bytes
 * decide the type wherever they can (file-type's signatures); text has no signature, so for the
 * common text kinds the name's extension says what the bytes could not.
 */

/** Text kinds a test run commonly leaves, by extension: the byte sniffer cannot tell them apart. */
const TEXT_TYPES: Record<string, string> = {
  log: 'text/plain',
  txt: 'text/plain',
  text: 'text/plain',
  json: 'application/json',
  xml: 'application/xml',
  html: 'text/html',
  htm: 'text/html',
  csv: 'text/csv',
  md: 'text/markdown',
  markdown: 'text/markdown',
};

const extensionOf = (name: string): string | undefined => {
  const dot = name.lastIndexOf('.');
  return dot > 0 && dot < name.length - 1 ? name.slice(dot + 1).toLowerCase() : undefined;
};

/**
 * The type an artifact is stored with: the one detected from its bytes, or, when the bytes matched
 * no signature, the text type its name's extension names (anything else stays
 * `application/octet-stream`). Only raster images are ever shown inline, so a name cannot make
 * anything render: `.html` is stored as text/html and still downloaded as an attachment.
 */
export function artifactType(detected: string, name: string): string {
  if (detected !== 'application/octet-stream') return detected;
  const extension = extensionOf(name);
  return (extension !== undefined && TEXT_TYPES[extension]) || detected;
}

/** The extensions each raster type is saved under; the first is the one added. */
const IMAGE_EXTENSIONS: Record<string, string[]> = {
  'image/png': ['png'],
  'image/jpeg': ['jpg', 'jpeg', 'jpe'],
  'image/gif': ['gif'],
  'image/webp': ['webp'],
};

/**
 * The name an inline image is offered under: its own name when its extension matches the type, else
 * the name with its last extension replaced by the type's (`poly.html` served as a GIF becomes
 * `poly.gif`), so a saved file never opens as something other than what was served.
 */
export function imageFileName(name: string, contentType: string): string {
  const extensions = IMAGE_EXTENSIONS[contentType];
  if (!extensions) return name;
  const extension = extensionOf(name);
  if (extension !== undefined && extensions.includes(extension)) return name;
  const stem = extension === undefined ? name : name.slice(0, name.length - extension.length - 1);
  return `${stem}.${extensions[0]}`;
}

/**
 * The plain `filename=` fallback of Content-Disposition (RFC 6266), for clients that ignore
 * `filename*=` (`curl -OJ`): printable ASCII only, accents dropped (é → e), anything else `_`, and
 * no quote, backslash or percent sign that a client could misread.
 */
export function asciiFileName(name: string): string {
  const ascii = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^\x20-\x7e]/g, '_')
    .replace(/["\\%]/g, '_')
    .trim();
  return ascii === '' || /^[._]*$/.test(ascii) ? 'download' : ascii;
}

/** Longest stored artifact name, in UTF-8 bytes (FILE-4). */
const NAME_MAX_BYTES = 255;

/**
 * An artifact name as metadata only (FILE-4): control characters (CR and LF included), bidi
 * overrides, `/`, `\` and NUL removed, cut to 255 UTF-8 bytes on a character boundary. It never
 * names a file on disk; it only reaches a `Content-Disposition`, encoded.
 */
export function sanitizeArtifactName(name: string): string {
  const cleaned = name.replace(/[\p{Cc}\u202a-\u202e\u2066-\u2069/\\]/gu, '').trim();
  let bytes = 0;
  let result = '';
  for (const char of cleaned) {
    bytes += Buffer.byteLength(char, 'utf8');
    if (bytes > NAME_MAX_BYTES) break;
    result += char;
  }
  return result;
}
