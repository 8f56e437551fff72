// Frozen on 2026-12-02, with migrations 2026-12-02-0027-failure-targets and
// 2026-12-02-0029-merge-equal-groups, which re-fingerprint stored failures by these rules: never
// edited, so that what those migrations did never changes (see ./README.md). Until a rule changes,
// the live normaliser (../) uses these files too.

/**
 * The target of a failure: the locator or selector it acted on, else the URL template or address it
 * could not reach. Read from the raw (ANSI-free, bounded) message, the normalised head and the trace.
 */

import { placeholders, templateHost, templatePath } from './placeholders.ts';

const LOCATOR_LINE = /^\s*Locator:\s*(.+?)\s*$/m;
const WAITING_FOR =
  /waiting for ((?:locator|getBy\w+|get_by_\w+|frameLocator|page\.\w+|internal:\w+)\(.*?\)(?:\.\w+\(.*?\))*)(?:\s+to be \w+)?\s*$/m;
const WAITING_FOR_SELECTOR = /waiting for selector "(.+?)"(?:\s+to be \w+)?\s*$/m;
const SELENIUM_SELECTOR = /"method":\s*"([^"]+)",\s*"selector":\s*"((?:[^"\\]|\\.)*)"/;
const SELENIUM_BY = /located by (By\.\w+: .+?)(?: \(tried for|\)?\s*$)/m;
/** A URL (already a template, so `<port>` and `<id>` are part of it) on the first line or an `Expected` line: not one a hint links to. */
const URL_IN_TEXT = /^(?:.*?\bExpected[^:\n]*:.*?|[^\n]*?)\b([a-z][a-z0-9+.-]*:\/\/(?:[^\s'"`<>)\]]|<\w+>)+)/im;
const NODE_ADDRESS = /\b(?:connect|read|write|getaddrinfo) E[A-Z_]+ (\S+)/;
const PYTHON_POOL = /host='([^']+)', port=(\d+)\): Max retries exceeded with url: (\S+)/;
const DOTNET_HOST = /\(([\w.-]+:(?:\d+|<port>))\)/;

const bounded = (text: string) => (text.length > 200 ? `${text.slice(0, 199)}…` : text);

/** The locator or selector a text names: Playwright's `Locator:` line or first `waiting for …`, Selenium's selector, Python's pool URL. */
function locatorIn(text: string, roots: readonly string[]): string | null {
  const locator = LOCATOR_LINE.exec(text)?.[1] ?? WAITING_FOR.exec(text)?.[1] ?? WAITING_FOR_SELECTOR.exec(text)?.[1];
  if (locator !== undefined) return bounded(placeholders(locator, roots));
  const selenium = SELENIUM_SELECTOR.exec(text);
  if (selenium) return bounded(placeholders(`${selenium[1]} ${selenium[2]}`, roots));
  const by = SELENIUM_BY.exec(text);
  if (by) return bounded(placeholders(by[1] as string, roots));
  const pool = PYTHON_POOL.exec(text);
  if (pool) return bounded(`${templateHost(pool[1] as string)}:<port>${templatePath(pool[3] as string)}`);
  return null;
}

/**
 * The locator (Playwright's `Locator:` line or the first `waiting for …` of its call log,
 * Selenium's selector) of the message, else of the trace (a JUnit `message` attribute holds only
 * the first line; the call log is in the body), or else the first URL or network address of the
 * message's statement, normalised like the message. URLs are not read from a trace: its frames
 * name the pages the code was served from, not what the test acted on.
 */
export function targetOf(raw: string, head: string, roots: readonly string[], trace = ''): string | null {
  const locator = locatorIn(raw, roots) ?? (trace === '' ? null : locatorIn(trace, roots));
  if (locator !== null) return locator;
  const firstAndExpected = head
    .split('\n')
    .filter((line, i) => i === 0 || /^Expected\b/.test(line))
    .join('\n');
  const url = URL_IN_TEXT.exec(firstAndExpected)?.[1];
  if (url) return bounded(url.replace(/[.,;:!]+$/, ''));
  const address = NODE_ADDRESS.exec(head)?.[1] ?? DOTNET_HOST.exec(head)?.[1];
  return address === undefined ? null : bounded(address);
}
