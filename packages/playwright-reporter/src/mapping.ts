/**
 * The rules that turn Playwright's results into Attest runs, steps, cells and artifacts. The live
 * reporter (this package) and the server's JSON-report import (`src/import/playwright.ts`) both use
 * these functions, so a run streamed live and the same run imported from `report.json` look the
 * same. Pure, dependency-free and typed structurally: the server imports this file without
 * depending on `@playwright/test`, and nothing here imports from the server.
 */

export type Verdict = 'passed' | 'failed' | 'broken' | 'skipped';
export type FinalStepStatus = 'passed' | 'failed' | 'broken' | 'skipped';
export type ArtifactKind = 'screenshot' | 'video' | 'trace' | 'log' | 'file' | 'visual-diff';

/** Joins a test's title path, as Playwright's own reporters do. */
export const TITLE_SEPARATOR = ' › ';
/** Attest's limits: a run name, a step title, a text cell or step error (API `NAME_MAX`, `STEP_TITLE_MAX`, `TEXT_MAX`). */
export const NAME_MAX = 256;
export const STEP_TITLE_MAX = 1024;
/** Attest's deepest step nesting (API `STEP_DEPTH_MAX`), and its longest test full name (`TEST_FULL_NAME_MAX`). */
export const STEP_DEPTH_MAX = 10;
export const FULL_NAME_MAX = 2000;
export const TEXT_MAX = 64 * 1024;

/**
 * A result's status → the attempt's verdict. Each attempt (retry) is a run of its own with its own
 * verdict; the latest run of a test in the job is the test's final verdict, so a flaky test ends
 * `passed` with a `failed` run before it.
 */
export function verdictOf(status: string): Verdict {
  switch (status) {
    case 'passed':
      return 'passed';
    case 'skipped':
      return 'skipped';
    case 'interrupted':
      return 'broken';
    default:
      // `failed`, `timedOut`, and anything a later Playwright adds: a test that did not pass.
      return 'failed';
  }
}

/**
 * A finished step: passed without an error; with one, failed, unless the error is the test
 * skipping itself (`test.skip()` inside a step throws through every step around it, and the result
 * is already `skipped` when those steps end, live as in the report).
 */
export function stepStatusOf(hasError: boolean, resultStatus?: string): FinalStepStatus {
  if (!hasError) return 'passed';
  return resultStatus === 'skipped' ? 'skipped' : 'failed';
}

/**
 * The test's identity in the project: file › describe… › title, with the project name first when
 * the configuration has several projects (the same test in two browsers is two tests).
 * `titles` is the path below the project: [file, ...describes, title].
 */
export function fullNameOf(titles: readonly string[], projectName: string, severalProjects: boolean): string {
  const path = titles.filter((title) => title !== '');
  return clip((severalProjects && projectName ? [projectName, ...path] : path).join(TITLE_SEPARATOR), FULL_NAME_MAX);
}

/**
 * The run's name: the test's own title, whatever the attempt (TRIAGE-14). A retry is the same test
 * again; its attempt is the run's `attempt`, so no list names a test by its last attempt.
 */
export function runNameOf(title: string): string {
  return clip(title, NAME_MAX);
}

/** Cuts text the API would refuse as too long, saying so (a cut stays within `max` UTF-16 units). */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const note = `… [${text.length - max} characters cut]`;
  return text.slice(0, Math.max(0, max - note.length - 8)) + note;
}

// ESC/CSI colour and cursor sequences, as chalk and Playwright's expect write them. Built from a
// string, where the escape characters are spelled out, not written raw into a literal.
// biome-ignore lint/complexity/useRegexLiterals: a literal would hold control characters.
const ANSI = new RegExp(
  '[\\u001b\\u009b][[\\]()#;?]*(?:(?:(?:[a-zA-Z\\d]*(?:;[a-zA-Z\\d]*)*)?\\u0007)|(?:(?:\\d{1,4}(?:;\\d{0,4})*)?[\\dA-PR-TZcf-ntqry=><~]))',
  'g',
);

export function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

/** What Playwright's `TestError` carries (the JSON report's step and result `error`). */
export interface ErrorLike {
  message?: string;
  stack?: string;
  value?: string;
  snippet?: string;
  location?: unknown;
  cause?: ErrorLike;
}

/**
 * One error as the JSON report's `result.errors[i].message` writes it (Playwright's `formatError`):
 * the message from the stack, the code snippet, then the stack frames, then the cause. The live
 * reporter gets raw errors and formats them here, so its `error` cell matches an import's.
 */
export function formatError(error: ErrorLike): string {
  const message = error.message || error.value || '';
  if (!error.stack && !error.location) return stripAnsi(message);
  const lines = error.stack?.split('\n') ?? [];
  let firstFrame = lines.findIndex((line) => line.startsWith('    at '));
  if (firstFrame === -1) firstFrame = lines.length;
  const tokens = [error.stack ? lines.slice(0, firstFrame).join('\n') || message : message];
  if (error.snippet) tokens.push('', error.snippet);
  const frames = lines.slice(firstFrame);
  if (frames.length) tokens.push(frames.join('\n'));
  if (error.cause) tokens.push(`[cause]: ${formatError(error.cause)}`);
  return stripAnsi(tokens.join('\n'));
}

/** A step's error as Attest shows it: the message alone (the run's `error` cell has the stack). */
export function stepErrorOf(error: ErrorLike | undefined): string | undefined {
  if (!error) return undefined;
  return clip(stripAnsi(error.message || error.value || 'failed'), TEXT_MAX);
}

/** The run-level `error` cell: every error of the attempt, formatted, one after the other. */
export function errorCellText(formatted: readonly string[]): string | undefined {
  const text = formatted.map(stripAnsi).join('\n\n');
  return text ? clip(text, TEXT_MAX) : undefined;
}

/** The JSON report's stdio item (`{ text }` or `{ buffer }` base64), or the live `string | Buffer`. */
export type StdioItem = string | Uint8Array | { text?: string; buffer?: string };

/** A `stdout`/`stderr` cell's text: every chunk in order, decoded as UTF-8, ANSI stripped. */
export function stdioText(items: readonly StdioItem[]): string | undefined {
  const decoder = new TextDecoder();
  const text = items
    .map((item) => {
      if (typeof item === 'string') return item;
      if (item instanceof Uint8Array) return decoder.decode(item);
      if (typeof item.text === 'string') return item.text;
      return typeof item.buffer === 'string' ? decoder.decode(base64Bytes(item.buffer)) : '';
    })
    .join('');
  return text ? clip(stripAnsi(text), TEXT_MAX) : undefined;
}

export function base64Bytes(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

const RASTER = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/**
 * What an attachment becomes. Only raster images are screenshots (Attest refuses anything else as
 * an image, SVG included); a trace is Playwright's `trace` zip; text is a log.
 */
export function attachmentKind(name: string, contentType: string | undefined): ArtifactKind {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (RASTER.has(type)) return 'screenshot';
  if (type.startsWith('video/')) return 'video';
  if (name === 'trace' && type === 'application/zip') return 'trace';
  if (type.startsWith('text/')) return 'log';
  return 'file';
}

/** The name Playwright gives the screenshots `screenshot: 'on' | 'only-on-failure'` takes at the end of a test. */
export const FAILURE_SCREENSHOT = 'screenshot';

/**
 * THE PLACEMENT RULE (the same for the live reporter and the import):
 *
 * 1. Playwright 1.65's JSON report does not say which step an attachment was attached in (steps
 *    carry only title, duration, error and child steps), so neither side uses step-level
 *    attachment information: the live reporter ignores `TestStep.attachments` on purpose.
 * 2. An attachment named `screenshot` (the automatic end-of-test screenshot) goes to the innermost
 *    failed step: the deepest failed `test.step`, the last one in tree order when several are
 *    equally deep; that is where the failure it shows happened.
 * 3. Everything else, and a `screenshot` of an attempt without a failed step, belongs to the run.
 */
export function attachmentStep<S>(name: string, steps: readonly S[], tree: StepTree<S>): S | undefined {
  return name === FAILURE_SCREENSHOT ? innermostFailed(steps, tree) : undefined;
}

export interface StepTree<S> {
  children(step: S): readonly S[];
  failed(step: S): boolean;
}

/** The deepest failed step, the last in tree order among equally deep ones. */
export function innermostFailed<S>(steps: readonly S[], tree: StepTree<S>): S | undefined {
  let best: { step: S; depth: number } | undefined;
  const visit = (list: readonly S[], depth: number) => {
    for (const step of list) {
      if (tree.failed(step) && (!best || depth >= best.depth)) best = { step, depth };
      visit(tree.children(step), depth + 1);
    }
  };
  visit(steps, 1);
  return best?.step;
}

/** Which image of a visual comparison an attachment is: Playwright names them `<snapshot>-expected.png`, `-actual`, `-diff`. */
const COMPARISON = /^(.+)-(expected|actual|diff)(\.[A-Za-z0-9]+)$/;

/** A failed `toHaveScreenshot`: one visual diff named by its snapshot (`badge.png`), with its three images. */
export interface VisualDiff<A> {
  name: string;
  baseline: A;
  actual: A;
  diff: A;
}

export type AttachmentGroup<A> = { attachment: A } | { visualDiff: VisualDiff<A> };

/**
 * A result's attachments, each complete comparison triple (`<name>-expected`, `-actual` and `-diff`,
 * all raster images of one snapshot) taken together as one visual diff, in the place of its first
 * image; everything else as it was. An incomplete triple (a missing baseline writes only `-actual`)
 * stays three plain screenshots, since a visual diff needs all three.
 */
export function groupVisualDiffs<A extends { name: string; contentType?: string }>(attachments: readonly A[]): AttachmentGroup<A>[] {
  const triples = new Map<string, Partial<Record<'expected' | 'actual' | 'diff', A>>>();
  for (const attachment of attachments) {
    const match = COMPARISON.exec(attachment.name);
    if (!match || attachmentKind(attachment.name, attachment.contentType) !== 'screenshot') continue;
    const snapshot = `${match[1]}${match[3]}`;
    const triple = triples.get(snapshot) ?? {};
    const role = match[2] as 'expected' | 'actual' | 'diff';
    // The same snapshot compared twice in one attempt (a retried expect.poll): the last comparison wins.
    triple[role] = attachment;
    triples.set(snapshot, triple);
  }
  const groups: AttachmentGroup<A>[] = [];
  const placed = new Set<string>();
  for (const attachment of attachments) {
    const match = COMPARISON.exec(attachment.name);
    const snapshot = match ? `${match[1]}${match[3]}` : undefined;
    const triple = snapshot === undefined ? undefined : triples.get(snapshot);
    if (snapshot !== undefined && triple?.expected && triple.actual && triple.diff) {
      if (!placed.has(snapshot)) {
        placed.add(snapshot);
        groups.push({ visualDiff: { name: snapshot, baseline: triple.expected, actual: triple.actual, diff: triple.diff } });
      }
      continue;
    }
    groups.push({ attachment });
  }
  return groups;
}

export interface ErrorStepTree<S> extends StepTree<S> {
  /** The step's error message (`stepErrorOf`), if it has one. */
  error(step: S): string | undefined;
}

/**
 * Where a visual diff goes: the step that made the failing `toHaveScreenshot`. Attest keeps only
 * `test.step`s (what the JSON report keeps; the assertion's own `expect` step is not among them), so
 * that is the deepest failed step whose error is this comparison's: one naming the snapshot
 * (`Snapshot: badge.png`), else, for an unnamed snapshot, one from `toHaveScreenshot`; the last in
 * tree order among equally deep ones. A comparison made outside every step goes to the run.
 */
export function visualDiffStep<S>(snapshot: string, steps: readonly S[], tree: ErrorStepTree<S>): S | undefined {
  const named = (step: S) => tree.failed(step) && (tree.error(step) ?? '').includes(`Snapshot: ${snapshot}`);
  const comparison = (step: S) => tree.failed(step) && (tree.error(step) ?? '').includes('toHaveScreenshot');
  return (
    innermostFailed(steps, { children: tree.children, failed: named }) ??
    innermostFailed(steps, { children: tree.children, failed: comparison })
  );
}

/** Text types whose attachments Playwright names without an extension (`error-context` is Markdown). */
const TEXT_EXTENSIONS: Record<string, string> = {
  'text/markdown': 'md',
  'text/plain': 'txt',
  'application/json': 'json',
  'text/html': 'html',
  'text/csv': 'csv',
  'application/xml': 'xml',
};

/**
 * The artifact's name: the attachment's, with the extension of its text type added when it has
 * none (`error-context` → `error-context.md`), so Attest, which takes the type of text from the
 * name, stores it as `text/markdown` and a download opens as what it is.
 */
export function artifactNameOf(name: string, contentType: string | undefined): string {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  const extension = TEXT_EXTENSIONS[type];
  if (!extension || /\.[A-Za-z0-9]{1,8}$/.test(name)) return name;
  return `${name}.${extension}`;
}

/** What Playwright records of a skip: `test.skip(condition, 'reason')` and `test.fixme(…)` leave an annotation. */
export interface AnnotationLike {
  type?: unknown;
  description?: unknown;
}

/**
 * A skipped attempt's reason, as the JUnit import keeps a `<skipped message>`: the descriptions of
 * its `skip` and `fixme` annotations, one a line (a `fixme` says so); none for a skip without reason.
 */
export function skipReasonOf(status: string, annotations: readonly AnnotationLike[]): string | undefined {
  if (status !== 'skipped') return undefined;
  const reasons = annotations
    .filter((a) => (a.type === 'skip' || a.type === 'fixme') && typeof a.description === 'string' && a.description.trim() !== '')
    .map((a) => (a.type === 'fixme' ? `fixme: ${(a.description as string).trim()}` : (a.description as string).trim()));
  const text = [...new Set(reasons)].join('\n');
  return text ? clip(text, TEXT_MAX) : undefined;
}
