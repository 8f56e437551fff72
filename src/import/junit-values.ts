/**
 * The small value readers the JUnit parser needs: durations, timestamps, output text, attachment
 * references. Each tolerates the dialects' quirks and answers undefined rather than throwing.
 */

import type { ImportedAttachment, ImportedCell } from './model.ts';

/** Cells longer than this are cut: a runaway log must not become a multi-megabyte row. */
export const MAX_CELL_CHARS = 1_000_000;

/**
 * Seconds as written in `time` → whole milliseconds. Surefire groups thousands with commas
 * (`1,234.5`); a lone decimal comma (`0,5`, some locales) is read as a decimal point.
 */
export function secondsToMs(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  let text = raw.trim();
  if (text.includes(',')) {
    if (/^[1-9]\d{0,2}(?:,\d{3})+(?:\.\d*)?$/.test(text)) text = text.replaceAll(',', '');
    else if (/^\d+,\d+$/.test(text)) text = text.replace(',', '.');
    else return undefined;
  }
  if (!/^(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i.test(text)) return undefined;
  const ms = Math.round(Number(text) * 1000);
  return Number.isFinite(ms) ? ms : undefined;
}

const TIMESTAMP = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})(:\d{2})?(?:[.,](\d+))?\s*(Z|[+-]\d{2}:?\d{2})?$/i;

/** An ISO-like timestamp → ISO with `Z`. No zone (Surefire-era Ant, pytest, jest-junit) is taken as UTC. */
export function normaliseTimestamp(raw: string | undefined): string | undefined {
  const match = raw ? TIMESTAMP.exec(raw.trim()) : null;
  if (!match) return undefined;
  const [, date, hoursMinutes, seconds = ':00', fraction = '', zone = 'Z'] = match;
  const millis = fraction.padEnd(3, '0').slice(0, 3);
  const offset = zone.toUpperCase() === 'Z' ? 'Z' : `${zone.slice(0, 3)}:${zone.slice(-2)}`;
  const ms = Date.parse(`${date}T${hoursMinutes}${seconds}.${millis}${offset}`);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

// pytest's junit_logging writes a banner per captured stream even when the stream is empty.
const PYTEST_BANNER = /^-{3,} Captured (?:Log|Out|Err) -{3,}$/;

/** Output text as worth showing: pytest's empty sections dropped, blank edges trimmed. */
export function cleanOutput(text: string): string {
  // Without a banner or a CR, splitting and joining again gives the same text: kept as it is, so a
  // long output stays a view on its document instead of a copy beside it (IMP-7).
  if (!text.includes('\r') && !text.includes(' Captured ')) return trimBlankEdges(text);
  const kept: string[] = [];
  let section: string[] = [];
  const flush = () => {
    const [banner, ...body] = section;
    if (banner === undefined) return;
    if (!PYTEST_BANNER.test(banner) || body.some((line) => line.trim() !== '')) kept.push(...section);
    section = [];
  };
  for (const line of text.split(/\r?\n/)) {
    if (PYTEST_BANNER.test(line)) flush();
    section.push(line);
  }
  flush();
  return trimBlankEdges(kept.join('\n'));
}

/** Leading blank lines and trailing whitespace go; the first line's indentation stays (stack traces). */
export function trimBlankEdges(text: string): string {
  return text.replace(/^(?:[ \t]*\r?\n)+/, '').trimEnd();
}

const ATTACHMENT_LINE = /^[ \t]*\[\[ATTACHMENT\|([^\]\r\n]+)\]\][ \t]*$/;

/** The Jenkins `[[ATTACHMENT|path]]` lines of an output, and the output without them. */
export function takeAttachmentLines(text: string): { text: string; paths: string[] } {
  const paths: string[] = [];
  // Nothing to take out and no CR to drop: the same text (not a copy of it).
  if (!text.includes('\r') && !text.includes('[[ATTACHMENT|')) return { text, paths };
  const lines = text.split(/\r?\n/).filter((line) => {
    const match = ATTACHMENT_LINE.exec(line);
    if (match) paths.push((match[1] as string).trim());
    return !match;
  });
  return { text: lines.join('\n'), paths };
}

const KIND_BY_EXTENSION: Record<string, ImportedAttachment['kind']> = {
  png: 'screenshot',
  jpg: 'screenshot',
  jpeg: 'screenshot',
  gif: 'screenshot',
  webp: 'screenshot',
  mp4: 'video',
  webm: 'video',
  txt: 'log',
  log: 'log',
};

/** An attachment named by path; its kind follows the extension (a `.zip` named like a trace is a trace). */
export function attachmentFor(path: string): ImportedAttachment {
  const name = path.split(/[\\/]/).pop() || path;
  const extension = name.includes('.') ? (name.split('.').pop() as string).toLowerCase() : '';
  const kind = extension === 'zip' && /trace/i.test(name) ? 'trace' : (KIND_BY_EXTENSION[extension] ?? 'file');
  return { name, path, kind };
}

/** A cell, or nothing for empty text; text beyond MAX_CELL_CHARS is cut with a note saying so. */
export function cell(name: string, text: string): ImportedCell[] {
  if (text.trim() === '') return [];
  if (text.length <= MAX_CELL_CHARS) return [{ name, text }];
  const cut = text.length - MAX_CELL_CHARS;
  return [{ name, text: `${text.slice(0, MAX_CELL_CHARS)}\n… [truncated: ${cut} more characters not imported]` }];
}

/** The first non-blank line, trimmed: a failure's message when the element has no `message`. */
export function firstLine(text: string): string | undefined {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .find((line) => line !== '');
}
