/**
 * Turns the bytes of a JUnit XML file into a small element tree, refusing what is unsafe or not
 * XML. fast-xml-parser runs with entity processing off: it would otherwise expand declared
 * entities (the billion-laughs and external-entity attacks) and still not decode numeric character
 * references, so this module decodes exactly the five predefined entities and `&#…;` itself.
 */

import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { ImportInputError } from './model.ts';

export interface XmlElement {
  name: string;
  attrs: Map<string, string>;
  children: XmlElement[];
  /** The element's own text and CDATA, in document order (entities decoded, CDATA verbatim). */
  text: string;
}

/** Deeper than this is no report: the parser stops instead of recursing on hostile input. */
const MAX_ELEMENT_DEPTH = 100;

const DTD = /<!(?:DOCTYPE|ENTITY)/i;
const ROOTS = new Set(['testsuites', 'testsuite']);

/** fast-xml-parser's options; a parser is made per document, since one keeps the last document it read (60 MB after a 60 MB report). */
const PARSER_OPTIONS = {
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  processEntities: false,
  htmlEntities: false,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  cdataPropName: '#cdata',
  maxNestedTags: MAX_ELEMENT_DEPTH,
} as const;

/** Parses a JUnit report's bytes: a `<testsuites>` or `<testsuite>` root, or an ImportInputError. */
export function readJUnitXml(file: string, bytes: Uint8Array): XmlElement {
  return readJUnitDocument(file, { text: decodeXmlBytes(file, bytes) });
}

/**
 * A decoded JUnit report parsed, as `readJUnitXml`. The text is taken out of `document`, so that
 * once parsed nothing holds it (the caller keeps only the emptied holder).
 */
export function readJUnitDocument(file: string, document: { text?: string }): XmlElement {
  let text: string | undefined = document.text ?? '';
  document.text = undefined;
  const { skeleton, texts } = outline(text);
  // Looked for outside CDATA: there `<!DOCTYPE html>` is only text a failure quotes. (The outline
  // keeps all markup; only long texts and CDATA contents are out of it.)
  if (DTD.test(skeleton.includes('<![CDATA[') ? skeleton.replace(/<!\[CDATA\[[\s\S]*?\]\]>/g, '') : skeleton)) {
    throw new ImportInputError(
      file,
      'XML with a DTD or entity declarations is refused (a test report never needs one; entity expansion and external entities are attack vectors)',
    );
  }
  const verdict = XMLValidator.validate(text, { allowBooleanAttributes: false });
  if (verdict !== true) {
    const { msg, line, col } = verdict.err;
    const where = col === undefined ? `line ${line ?? 1}` : `line ${line}, column ${col}`;
    throw new ImportInputError(file, `is not well-formed XML: ${msg} (${where})`);
  }
  text = undefined;
  const root = toElements(parseOrdered(file, skeleton), texts).find((node) => node.name !== '');
  if (!root) throw new ImportInputError(file, 'has no root element');
  if (!ROOTS.has(root.name)) {
    throw new ImportInputError(file, `is not a JUnit XML report: its root element is <${root.name}>, not <testsuites> or <testsuite>`);
  }
  return root;
}

/** Texts and CDATA contents this long or longer are kept out of what the parser reads. */
const LONG_TEXT = 256;

/**
 * The document with each long text and CDATA content replaced by a marker, and what each marker
 * stands for (views on the document, not copies). The parser copies every text it reads, so a
 * report of long outputs would be in memory twice, 60 MB more for a 60 MB report; it reads the
 * outline instead, and the texts come back as the tree is built. Markup is found as XML defines it
 * (comments, CDATA, processing instructions, tags with quoted attribute values that may hold `>`);
 * on anything else the rest of the document is kept as it is, and the validator, which reads the
 * whole document, says what is wrong with it.
 */
function outline(text: string): { skeleton: string; texts: Map<string, string> } {
  const nonce = `\uE000${Math.random().toString(36).slice(2)}`;
  const texts = new Map<string, string>();
  const parts: string[] = [];
  let copied = 0;
  const cut = (start: number, end: number) => {
    if (end - start < LONG_TEXT) return;
    const marker = `${nonce}:${texts.size}\uE001`;
    parts.push(text.slice(copied, start), marker);
    texts.set(marker, text.slice(start, end));
    copied = end;
  };
  for (let at = text.indexOf('<'); at !== -1; ) {
    let end: number;
    if (text.startsWith('<!--', at)) end = text.indexOf('-->', at + 4) + 3;
    else if (text.startsWith('<![CDATA[', at)) {
      const close = text.indexOf(']]>', at + 9);
      if (close !== -1) cut(at + 9, close);
      end = close === -1 ? 2 : close + 3;
    } else if (text.startsWith('<?', at)) end = text.indexOf('?>', at + 2) + 2;
    else {
      let quote = 0;
      let i = at + 1;
      for (; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (quote !== 0) {
          if (c === quote) quote = 0;
        } else if (c === 0x22 || c === 0x27) quote = c;
        else if (c === 0x3e) break;
      }
      end = i < text.length ? i + 1 : 2;
    }
    if (end <= 2) break;
    const next = text.indexOf('<', end);
    cut(end, next === -1 ? text.length : next);
    at = next;
  }
  if (copied === 0) return { skeleton: text, texts };
  parts.push(text.slice(copied));
  return { skeleton: parts.join(''), texts };
}

function parseOrdered(file: string, text: string): unknown[] {
  try {
    return new XMLParser(PARSER_OPTIONS).parse(text) as unknown[];
  } catch (error) {
    // The validator passed, so this is a limit (nesting depth) or a parser quirk: still bad input.
    const reason =
      (error as Error).message === 'Maximum nested tags exceeded'
        ? `nests elements more than ${MAX_ELEMENT_DEPTH} deep`
        : 'could not be parsed';
    throw new ImportInputError(file, `${reason} (${(error as Error).message})`);
  }
}

/**
 * fast-xml-parser's ordered output (`[{ tag: [...children], ':@': {attrs} }, { '#text': … }]`) as
 * XmlElements; text nodes become nameless elements. Each node is let go of once converted, so the
 * two trees of a large report are never whole in memory at once.
 */
function toElements(nodes: unknown[], texts: ReadonlyMap<string, string>): XmlElement[] {
  const out: XmlElement[] = [];
  for (let at = 0; at < nodes.length; at++) {
    const node = nodes[at];
    nodes[at] = undefined;
    if (typeof node !== 'object' || node === null) continue;
    const record = node as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      if (key === ':@') continue;
      out.push(toElement(key, record[key], record[':@'], texts));
    }
  }
  return out;
}

function toElement(key: string, value: unknown, rawAttrs: unknown, texts: ReadonlyMap<string, string>): XmlElement {
  if (key === '#text') {
    const raw = String(value);
    return { name: '', attrs: new Map(), children: [], text: decodeEntities(texts.get(raw) ?? raw) };
  }
  if (key === '#cdata') return { name: '', attrs: new Map(), children: [], text: cdataText(value, texts) };
  const children = toElements(Array.isArray(value) ? value : [], texts);
  const text = children
    .filter((child) => child.name === '')
    .map((child) => child.text)
    .join('');
  return { name: key, attrs: toAttrs(rawAttrs), children: children.filter((child) => child.name !== ''), text };
}

/** A CDATA section arrives as `[{ '#text': raw }]`: its text is literal, never entity-decoded. */
function cdataText(value: unknown, texts: ReadonlyMap<string, string>): string {
  if (!Array.isArray(value)) return '';
  return value
    .map((part) => {
      const raw = String((part as Record<string, unknown>)['#text'] ?? '');
      return texts.get(raw) ?? raw;
    })
    .join('');
}

/**
 * A string of its own. The parser's attribute values are slices of the whole document (V8 makes a
 * substring of 13 characters or more a view on its parent), so one test name kept in a report
 * would keep a 60 MB document alive with it.
 */
const own = (text: string): string => (text.length < 13 ? text : Buffer.from(text, 'utf8').toString('utf8'));

function toAttrs(raw: unknown): Map<string, string> {
  const attrs = new Map<string, string>();
  if (typeof raw !== 'object' || raw === null) return attrs;
  for (const [name, value] of Object.entries(raw)) attrs.set(name, own(decodeEntities(String(value))));
  return attrs;
}

const ENTITY = /&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|(amp|lt|gt|quot|apos));/g;
const PREDEFINED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** XML's own escapes only; anything else (`&nbsp;`, an undeclared `&foo;`) stays as written. */
export function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(ENTITY, (whole, dec: string | undefined, hex: string | undefined, named: string | undefined) => {
    if (named) return PREDEFINED[named] ?? whole;
    const code = dec !== undefined ? Number.parseInt(dec, 10) : Number.parseInt(hex as string, 16);
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

/** UTF-8 (BOM stripped), UTF-16 by its BOM, or the single-byte encoding the declaration names. */
export function decodeXmlBytes(file: string, bytes: Uint8Array): string {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return new TextDecoder('utf-16le').decode(bytes.subarray(2));
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return new TextDecoder('utf-16be').decode(bytes.subarray(2));
  const declared = declaredEncoding(bytes);
  const label = declared && !/^utf-?(8|16)$/i.test(declared) ? declared : 'utf-8';
  let text: string;
  try {
    text = new TextDecoder(label).decode(bytes);
  } catch {
    throw new ImportInputError(file, `declares the encoding "${declared}", which cannot be decoded`);
  }
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

function declaredEncoding(bytes: Uint8Array): string | undefined {
  const head = new TextDecoder('latin1').decode(bytes.subarray(0, 200));
  return /^(?:\uFEFF|ï»¿)?\s*<\?xml[^>]*?\bencoding\s*=\s*["']([A-Za-z0-9._-]+)["']/.exec(head)?.[1];
}

const PROLOG_ITEM = /^(?:\s+|<\?[\s\S]*?\?>|<!--[\s\S]*?-->|<!DOCTYPE[^[>]*(?:\[[\s\S]*?\])?\s*>)/i;

/** A cheap sniff on the first 4 KB: after the prolog, the first element is `<testsuites>` or `<testsuite>`. */
export function looksLikeJUnit(bytes: Uint8Array): boolean {
  let head: string;
  try {
    head = decodeXmlBytes('', bytes.subarray(0, 4096));
  } catch {
    return false;
  }
  for (let match = PROLOG_ITEM.exec(head); match; match = PROLOG_ITEM.exec(head)) head = head.slice(match[0].length);
  return /^<testsuites?(?=[\s/>])/.test(head);
}
