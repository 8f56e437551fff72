import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Result as AxeResult } from 'axe-core';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { v1 } from '../../src/client/index.ts';
import type { TestServer } from './server.ts';

/** Debian's Chromium (`apt-get install -y chromium`); never a browser a tool downloads. */
export const CHROMIUM_PATH = process.env.ATTEST_TEST_CHROMIUM ?? '/usr/bin/chromium';

/**
 * Whether the browser suites run: always in CI (CI=true), where a missing Chromium fails the run,
 * else when Chromium is installed, with a visible message when it is not.
 */
export function browserAvailable(): boolean {
  if (existsSync(CHROMIUM_PATH)) return true;
  if (process.env.CI === 'true') {
    throw new Error(`CI=true but there is no Chromium at ${CHROMIUM_PATH}; .ci/run installs it with apt-get.`);
  }
  process.stdout.write(`\n# SKIPPED: browser suite (no Chromium at ${CHROMIUM_PATH}; apt-get install -y chromium)\n`);
  return false;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

/**
 * Writes an HTML report to a file of its own (in a new folder named from `folderPrefix`), opens it in
 * Chromium from file:// and hands the loaded page to `check`; the browser is closed after. `problems`
 * gathers every console error and page error, and with `requests: 'local only'` every request that is
 * not for a file: or data: URL; the test asserts on it.
 */
export async function openReport(
  html: Uint8Array,
  folderPrefix: string,
  check: (page: Page, problems: string[]) => Promise<void>,
  options: { requests?: 'local only' } = {},
): Promise<void> {
  const file = path.join(mkdtempSync(path.join(tmpdir(), folderPrefix)), 'report.html');
  writeFileSync(file, html);
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('console', (message) => message.type() === 'error' && problems.push(message.text()));
    page.on('pageerror', (error) => problems.push(error.message));
    if (options.requests === 'local only') {
      page.on(
        'request',
        (request) => !request.url().startsWith('file:') && !request.url().startsWith('data:') && problems.push(`request ${request.url()}`),
      );
    }
    await page.goto(`file://${file}`, { waitUntil: 'load' });
    await check(page, problems);
  } finally {
    await browser.close();
  }
}

/** axe-core's browser build, read once, injected into pages to check them. */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** One accessibility violation as axe-core reports it, cut to what a failure message needs. */
export interface AxeViolation {
  id: string;
  impact: string;
  help: string;
  /** The CSS selectors of the offending elements, with axe's summary of what to fix for the first few. */
  nodes: string[];
}

/**
 * Runs axe-core (WCAG 2.0-2.2 A and AA, and axe's best practices) on the page as it is now, and
 * returns its violations of impact `serious` or `critical`. The page's Content-Security-Policy
 * allows no inline script, so axe is not added as a <script> tag (`addScriptTag({ content })` is
 * refused by `script-src 'self'`): it is evaluated through the DevTools protocol, which the
 * policy does not govern, and the page's own policy stays on for the rest of the test.
 */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(AXE_SOURCE);
  const violations = (await page.evaluate(`(async () => {
    const results = await window.axe.run(document, { resultTypes: ['violations'] });
    return results.violations;
  })()`)) as AxeResult[];
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({
      id: v.id,
      impact: v.impact ?? '',
      help: v.help,
      nodes: v.nodes.slice(0, 5).map((n) => `${n.target.join(' ')}: ${n.failureSummary ?? ''}`.replace(/\s+/g, ' ')),
    }));
}

/**
 * What axe-core saw over a suite: every view it checked, and the serious or critical violations
 * it found, by view, for the suite's last test to assert on (UI-5).
 */
export interface AxeRecord {
  checked: Set<string>;
  found: Map<string, AxeViolation[]>;
  /** Runs axe-core on `page` as it is now, as the view named `view`. */
  check(page: Page, view: string): Promise<void>;
}

export function axeRecord(): AxeRecord {
  const checked = new Set<string>();
  const found = new Map<string, AxeViolation[]>();
  return {
    checked,
    found,
    async check(page, view) {
      checked.add(view);
      const violations = await seriousAxeViolations(page);
      if (violations.length > 0) found.set(view, violations);
    },
  };
}

/** What a watched context records: console and page errors, and (with `scripts`) each script's gzip size by URL. */
export interface Watch {
  consoleErrors: string[];
  scripts?: Map<string, number>;
}

/**
 * A desktop-sized context that records what a suite checks at its end: every console error and
 * page error in `consoleErrors`, and (with `scripts`) the gzip size of each script it loads.
 */
export async function watchedContext(browser: Browser, watch: Watch): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  context.on('console', (message) => {
    if (message.type() === 'error') watch.consoleErrors.push(`${message.text()} (${message.location().url})`);
  });
  context.on('weberror', (error) => watch.consoleErrors.push(error.error().message));
  const { scripts } = watch;
  if (scripts) {
    context.on('response', (response) => {
      if (!response.url().includes('/assets/') || !response.url().endsWith('.js')) return;
      response.body().then(
        (body) => scripts.set(response.url(), gzipSync(body).length),
        () => undefined,
      );
    });
  }
  return context;
}

/** Fills the login page the tab shows (after a deep link, say) and signs in; where it lands is the caller's to await. */
export async function submitLogin(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** Signs in through the login page and waits for the projects page. */
export async function signIn(page: Page, baseUrl: string, email: string, password: string): Promise<void> {
  await page.goto(`${baseUrl}/login`);
  await submitLogin(page, email, password);
  await page.waitForURL((url) => url.pathname === '/');
}

/** The browser a suite launched, its watched context and the tab it opened there. */
export interface WatchedPage {
  browser: Browser;
  context: BrowserContext;
  page: Page;
}

/**
 * Launches Chromium and opens a tab in a watched context (`watchedContext`) for `admin.server`'s
 * first admin: gives the admin `admin.password` for the login page and, with `signIn`, signs the
 * tab in with it (it is left on the projects page); without, the suite signs in where it tests
 * the login page. The suite closes `browser` after; it is closed here if opening fails.
 */
export async function openWatchedPage(
  watch: Watch,
  admin: { server: TestServer; password: string; signIn: boolean },
): Promise<WatchedPage> {
  const { server, password } = admin;
  await server.admin.client.call(v1.users.setUserPassword, { params: { email: server.admin.email }, body: { password } });
  const browser = await launchChromium();
  try {
    const context = await watchedContext(browser, watch);
    const page = await context.newPage();
    if (admin.signIn) await signIn(page, server.url, server.admin.email, password);
    return { browser, context, page };
  } catch (error) {
    await browser.close();
    throw error;
  }
}

/** A file as a page receives it from the clipboard or a drag: its name, type and bytes. */
export interface PageFile {
  name: string;
  type: string;
  bytes: Uint8Array;
}

/** The script that builds a DataTransfer holding `file` in the page, as `data`. */
function dataTransferOf(file: PageFile): string {
  return `const data = new DataTransfer();
    const bytes = Uint8Array.from(atob(${JSON.stringify(Buffer.from(file.bytes).toString('base64'))}), (c) => c.charCodeAt(0));
    data.items.add(new File([bytes], ${JSON.stringify(file.name)}, { type: ${JSON.stringify(file.type)} }));`;
}

/**
 * Pastes `file` into the page as Ctrl/⌘+V would: headless Chromium keeps the real clipboard to
 * itself, so the paste event carries the file as a paste would.
 */
export async function pasteFile(page: Page, file: PageFile): Promise<void> {
  await page.evaluate(`(() => {
    ${dataTransferOf(file)}
    document.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  })()`);
}

/** Drops `file` on the element `selector` names, as a drag from the desktop would (a dragover, then the drop). */
export async function dropFile(page: Page, selector: string, file: PageFile): Promise<void> {
  await page.evaluate(`(() => {
    ${dataTransferOf(file)}
    const zone = document.querySelector(${JSON.stringify(selector)});
    zone.dispatchEvent(new DragEvent('dragover', { dataTransfer: data, bubbles: true, cancelable: true }));
    zone.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
  })()`);
}

/**
 * What a field's description says (the elements its `aria-describedby` names), as a screen reader
 * reads it with the field: where the forms put the API's problem about it. Empty when there is none.
 */
export async function descriptionOf(field: Locator): Promise<string> {
  return field.evaluate((element) => {
    // The test's TypeScript has no DOM types: the few members used, named.
    const el = element as unknown as {
      getAttribute(name: string): string | null;
      ownerDocument: { getElementById(id: string): { textContent: string | null } | null };
    };
    return (el.getAttribute('aria-describedby') ?? '')
      .split(/\s+/)
      .filter(Boolean)
      .map((id) => el.ownerDocument.getElementById(id)?.textContent ?? '')
      .join(' ')
      .trim();
  });
}

/**
 * A Gherkin feature with one syntax error, on line 5 (`Whem`), and the same feature fixed: what a
 * person types in the test editor to see the server's error at its line. Two steps once fixed
 * (`Then` is the expected result of the step before it).
 */
export const FEATURE_WITH_A_TYPO = `@checkout
Feature: Pay by card
  Scenario: A card payment
    Given a cart with one book
    Whem I pay by card
    Then the order is paid
`;
export const FEATURE_FIXED = FEATURE_WITH_A_TYPO.replace('Whem', 'When');

/** In the page: whether an <img> has loaded and decoded to real pixels. */
export const rendered = (node: unknown) => {
  const img = node as { complete: boolean; naturalWidth: number };
  return img.complete && img.naturalWidth > 0;
};
