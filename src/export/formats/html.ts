import { createHash } from 'node:crypto';
import MarkdownIt from 'markdown-it';
import type { AttachmentEntry, ImageEntry, Step } from '../bundle.ts';
import { cellsNotRepeating, ERROR_CELLS, errorsShownOnce } from '../errors-once.ts';
import { type Chunk, type ExportFile, elapsedMs, imagesByStep, type RunPart, type StepNode, stepTree } from '../files.ts';
import { countsOf, type Report, type ReportTest } from '../report.ts';
import { REPORT_STYLE } from './html-style.ts';

/**
 * One self-contained HTML file, readable offline. A run: its facts, a timeline of its steps (SVG),
 * the step tree with statuses and durations, each error once (errorsShownOnce), text cells (Markdown
 * rendered with raw HTML escaped), every screenshot inline beside its step (full size on click,
 * without script) and visual diffs side by side, and its other files (text ones folded). A job: its
 * facts and counts, a table of its tests (retries folded, the final attempt deciding), then each
 * test's final attempt as above (folded when it passed or was skipped), its earlier attempts folded
 * under it. A filter by status and a search by name narrow the tests (a run's: its steps). The page
 * loads nothing: its Content-Security-Policy permits its own style, `data:` images and the one
 * script of the filter, by its hash. Written as a stream, one image in memory at a time.
 */
export function htmlFiles(report: Report): ExportFile[] {
  return [{ path: 'report.html', type: 'text/html; charset=utf-8', chunks: () => htmlReport(report) }];
}

// Raw HTML in Markdown is shown as text; markdown-it's link check refuses javascript:, vbscript:, file: and data: links.
const markdown = new MarkdownIt({ html: false, linkify: false, typographer: false });

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

const STATUS_MARK: Record<string, string> = { passed: '✔', failed: '✘', broken: '!', skipped: '–', running: '…' };

function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

function cellHtml(cell: Step['cells'][number]): string {
  const pre = ERROR_CELLS.has(cell.name) ? '<pre class="error">' : '<pre>';
  const body =
    cell.mediaType === 'text/markdown' ? `<div class="md">${markdown.render(cell.text)}</div>` : `${pre}${escapeHtml(cell.text)}</pre>`;
  return `<div class="cell"><div class="cell-name">${escapeHtml(cell.name)}</div>${body}</div>`;
}

async function figure(report: Report, part: RunPart, image: ImageEntry, id: string): Promise<string> {
  const data = Buffer.from(await report.bytes(image, part.folder)).toString('base64');
  const src = `data:${image.contentType};base64,${data}`;
  const caption = `${escapeHtml(image.artifactName)}${image.role === 'screenshot' ? '' : ` · ${image.role}`}`;
  return (
    `<figure class="shot" id="${id}"><a href="#${id}" title="Full size"><img src="${src}" width="${image.width}" height="${image.height}" alt="${caption}"></a>` +
    `<a class="close" href="#_" title="Close">×</a><figcaption>${caption} <span class="dim">${image.width}×${image.height}</span></figcaption></figure>`
  );
}

/** A step's (or the run's) images: screenshots in a row, each visual diff as baseline | actual | diff. */
async function* gallery(report: Report, part: RunPart, images: readonly ImageEntry[], counter: { next: number }): AsyncIterable<Chunk> {
  if (images.length === 0) return;
  yield '<div class="gallery">';
  let diff: string[] = [];
  for (const [index, image] of images.entries()) {
    const html = await figure(report, part, image, `img-${counter.next++}`);
    if (image.kind !== 'visual-diff') {
      yield html;
      continue;
    }
    diff.push(html);
    const last = images[index + 1]?.artifactId !== image.artifactId;
    if (last) {
      yield `<div class="diff">${diff.join('')}</div>`;
      diff = [];
    }
  }
  yield '</div>';
}

/** The timeline: one bar per top-level step, placed by start time and length, coloured by status. */
function timeline(roots: readonly StepNode[], runStart: number | undefined): string {
  const timed = roots.filter((node) => node.step.durationMs !== null);
  if (timed.length === 0) return '';
  let cursor = 0;
  const bars = timed.map((node) => {
    const started = node.step.startedAt && runStart !== undefined ? Date.parse(node.step.startedAt) - runStart : cursor;
    const start = Math.max(0, Number.isFinite(started) ? started : cursor);
    cursor = start + (node.step.durationMs ?? 0);
    return { node, start, end: cursor };
  });
  const total = Math.max(1, ...bars.map((bar) => bar.end));
  const width = 1000;
  const rowHeight = 14;
  const rects = bars
    .map(({ node, start, end }, row) => {
      const x = (start / total) * width;
      const w = Math.max(1.5, ((end - start) / total) * width);
      return `<rect class="bar ${node.step.status}" x="${x.toFixed(1)}" y="${row * rowHeight}" width="${w.toFixed(1)}" height="${rowHeight - 3}"><title>${escapeHtml(`${node.number}. ${node.step.title} · ${duration(node.step.durationMs)}`)}</title></rect>`;
    })
    .join('');
  const height = bars.length * rowHeight;
  return (
    `<section><h2>Timeline <span class="dim">${duration(total)}</span></h2>` +
    `<svg class="timeline" viewBox="0 0 ${width} ${height}" preserveAspectRatio="none" style="height:${Math.min(320, Math.max(24, height))}px" role="img" aria-label="Step timeline">${rects}</svg></section>`
  );
}

/** Text files up to this size are shown in the report; larger ones, and binary ones, are named with their path in the bundle. */
const INLINE_TEXT_BYTES = 64 * 1024;
const isText = (type: string) => /^(text\/|application\/(json|xml)\b)/.test(type);

async function* fileList(report: Report, part: RunPart, files: readonly AttachmentEntry[]): AsyncIterable<Chunk> {
  if (files.length === 0) return;
  yield '<ul class="files">';
  for (const file of files) {
    yield `<li><span class="cell-name">${escapeHtml(file.kind)}</span> ${escapeHtml(file.name)} <span class="dim">${escapeHtml(file.contentType)} · ${file.size} bytes · ${escapeHtml(part.folder + file.path)}</span>`;
    if (isText(file.contentType) && file.size <= INLINE_TEXT_BYTES) {
      // Folded: an error context (Playwright's ARIA snapshot of the page) or a log runs to hundreds of lines.
      const text = new TextDecoder('utf-8', { fatal: false }).decode(await report.attachmentBytes(file, part.folder));
      const lines = text.split('\n').length;
      yield `<details class="file-text"><summary>Show ${escapeHtml(file.name)} (${lines} line${lines === 1 ? '' : 's'})</summary><pre>${escapeHtml(text)}</pre></details>`;
    }
    yield '</li>';
  }
  yield '</ul>';
}

function runFacts(part: RunPart): [string, string | null][] {
  const { run } = part.answers;
  return [
    ['Verdict', run.verdict],
    ['Status', run.status],
    ['Started', run.startedAt],
    ['Finished', run.finishedAt],
    ['Duration', duration(elapsedMs(run.startedAt, run.finishedAt))],
    ['Environment', run.environment],
    ['Branch', run.branch],
    ['Build', run.build],
    ['Commit', run.commit],
    ['Device', run.deviceId],
    ['Run id', run.id],
  ];
}

const factList = (facts: [string, string | null][]) =>
  `<dl class="facts">${facts
    .filter(([, value]) => value)
    .map(([name, value]) => `<div><dt>${name}</dt><dd>${escapeHtml(String(value))}</dd></div>`)
    .join('')}</dl>`;

/** The statuses in a step and under it, and its titles: what the report's filter matches a step by. */
function filterKeys(node: StepNode): { statuses: Set<string>; names: string[] } {
  const statuses = new Set<string>([node.step.status]);
  const names = [node.step.title];
  for (const child of node.children) {
    const below = filterKeys(child);
    for (const status of below.statuses) statuses.add(status);
    names.push(...below.names);
  }
  return { statuses, names };
}

/** The attributes the filter reads: every status in it, and the text its search looks in (lower case). */
const filterAttributes = (statuses: Iterable<string>, names: readonly string[]) =>
  ` data-status="${escapeHtml([...statuses].join(' '))}" data-name="${escapeHtml(names.join('\n').toLowerCase())}"`;

/** One run: its timeline, its own cells, images and files, then the step tree. */
async function* runBody(report: Report, part: RunPart, counter: { next: number }, filterable = false): AsyncIterable<Chunk> {
  const { run } = part.answers;
  const results = part.answers.results.value;
  const roots = stepTree(results.steps);
  const errors = errorsShownOnce(roots, results.cells);
  const byStep = imagesByStep(part.images);
  const filesByStep = new Map<string | null, AttachmentEntry[]>();
  for (const file of part.attachments) filesByStep.set(file.stepId, [...(filesByStep.get(file.stepId) ?? []), file]);
  // The timeline starts at the earliest moment known: a reporter's step times may precede the run's own start.
  const starts = [run.startedAt, ...results.steps.map((step) => step.startedAt)].filter((t): t is string => t !== null).map(Date.parse);
  yield timeline(roots, starts.length ? Math.min(...starts) : undefined);
  if (errors.runCells.length || byStep.get(null)?.length || filesByStep.get(null)?.length) {
    yield `<section><h2>Run</h2>${errors.runCells.map(cellHtml).join('')}`;
    yield* gallery(report, part, byStep.get(null) ?? [], counter);
    yield* fileList(report, part, filesByStep.get(null) ?? []);
    yield '</section>';
  }
  yield '<section><h2>Steps</h2><ol class="steps">';
  const visit = async function* (node: StepNode): AsyncIterable<Chunk> {
    const { step } = node;
    const open = step.status !== 'passed' || node.depth === 0 ? ' open' : '';
    const keys = node.depth === 0 && filterable ? filterKeys(node) : undefined;
    yield `<li class="step ${step.status}"${keys ? filterAttributes(keys.statuses, keys.names) : ''}><details${open}><summary><span class="mark ${step.status}" title="${step.status}">${STATUS_MARK[step.status] ?? '?'}</span>`;
    yield ` <span class="num">${node.number}.</span> ${escapeHtml(step.title)} <span class="dim">${duration(step.durationMs)}</span></summary>`;
    const error = errors.shown.get(step.id);
    const below = errors.shownBelow.get(step.id);
    if (error) yield `<pre class="error">${escapeHtml(error)}</pre>`;
    else if (below) yield `<p class="dim error-below">Its error is shown under ${below.number}. ${escapeHtml(below.step.title)}.</p>`;
    yield cellsNotRepeating(step).map(cellHtml).join('');
    yield* gallery(report, part, byStep.get(step.id) ?? [], counter);
    yield* fileList(report, part, filesByStep.get(step.id) ?? []);
    if (node.children.length) {
      yield '<ol class="steps">';
      for (const child of node.children) yield* visit(child);
      yield '</ol>';
    }
    yield '</details></li>';
  };
  for (const root of roots) yield* visit(root);
  yield '</ol></section>';
}

/**
 * The filter's script: shows the items (`data-status`, `data-name`) that hold the status chosen and
 * whose names hold the text searched, and says how many. Inline, allowed by its hash alone: the page
 * stays one file that loads nothing, and no other script (one in a Markdown cell is text anyway)
 * could run.
 */
export const FILTER_SCRIPT = `(() => {
  const form = document.getElementById('filter');
  if (!form) return;
  const items = [...document.querySelectorAll('[data-status]')];
  const count = document.getElementById('filter-count');
  const apply = () => {
    const status = form.elements.status.value;
    const words = form.elements.q.value.trim().toLowerCase();
    let shown = 0;
    for (const item of items) {
      const match = (!status || item.dataset.status.split(' ').includes(status)) && (!words || item.dataset.name.includes(words));
      item.hidden = !match;
      if (match && item.tagName !== 'SECTION') shown++;
    }
    if (count) count.textContent = form.dataset.what.replace('{n}', String(shown));
  };
  form.addEventListener('input', apply);
  form.addEventListener('submit', (event) => event.preventDefault());
  form.hidden = false;
  apply();
})();`;
const FILTER_HASH = createHash('sha256').update(FILTER_SCRIPT).digest('base64');

const head = (title: string) =>
  '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
  `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-${FILTER_HASH}'">` +
  '<meta name="viewport" content="width=device-width, initial-scale=1">' +
  `<title>${escapeHtml(title)} · Attest</title><style>${REPORT_STYLE}</style></head><body>`;

const STATUSES = ['passed', 'failed', 'broken', 'skipped'];

/** The filter by status and the search by name, above what they narrow; hidden until its script runs. */
function filterForm(what: string, statuses: ReadonlySet<string>, total: number): string {
  const options = STATUSES.filter((status) => statuses.has(status))
    .map((status) => `<option value="${status}">${status}</option>`)
    .join('');
  return (
    `<form id="filter" class="filter" role="search" aria-label="Filter the ${what}s" data-what="{n} of ${total} ${what}s shown" hidden>` +
    `<label>Status <select name="status"><option value="">any</option>${options}</select></label> ` +
    `<label>Name <input type="search" name="q" placeholder="part of a name" autocomplete="off"></label> ` +
    '<output id="filter-count" aria-live="polite"></output></form>'
  );
}

export async function* htmlReport(report: Report): AsyncIterable<Chunk> {
  yield head(report.name);
  const counter = { next: 1 };
  if (report.kind === 'run') {
    const part = report.parts[0]!;
    const { run } = part.answers;
    const results = part.answers.results.value;
    const counts = new Map<string, number>();
    for (const step of results.steps) counts.set(step.status, (counts.get(step.status) ?? 0) + 1);
    yield `<header><h1><span class="badge ${run.verdict ?? run.status}">${escapeHtml(run.verdict ?? run.status)}</span> ${escapeHtml(run.name)}</h1>`;
    yield factList([...runFacts(part), ['Project id', run.projectId]]);
    yield `<p class="counts">${results.steps.length} steps: ${[...counts]
      .map(([status, count]) => `<span class="pill ${status}">${count} ${status}</span>`)
      .join(' ')} · ${part.images.length} images</p></header><main>`;
    yield filterForm('step', new Set(counts.keys()), stepTree(results.steps).length);
    yield* runBody(report, part, counter, true);
  } else {
    yield* jobHeader(report);
    for (const [index, test] of report.tests.entries()) yield* testSection(report, test, index, counter);
  }
  yield `</main><footer>Exported by ${escapeHtml(report.exporter)} on ${new Date().toISOString()}</footer>`;
  yield `<script>${FILTER_SCRIPT}</script></body></html>\n`;
}

const verdictOf = (test: ReportTest) => test.final.answers.run.verdict ?? test.final.answers.run.status;

async function* jobHeader(report: Report): AsyncIterable<Chunk> {
  const counts = countsOf(report);
  const overall = counts.errors ? 'broken' : counts.failures ? 'failed' : counts.passed ? 'passed' : 'skipped';
  yield `<header><h1><span class="badge ${overall}">${overall}</span> ${escapeHtml(report.name)}</h1>`;
  yield factList([
    ['Started', report.startedAt],
    ['Finished', report.finishedAt],
    ['Duration', duration(elapsedMs(report.startedAt, report.finishedAt))],
    ['Environment', report.labels.environment],
    ['Branch', report.labels.branch],
    ['Build', report.labels.build],
    ['Commit', report.labels.commit],
    ['Job id', report.id],
  ]);
  const pills = (
    [
      ['passed', counts.passed],
      ['failed', counts.failures],
      ['broken', counts.errors],
      ['skipped', counts.skipped],
    ] as const
  )
    .filter(([, count]) => count > 0)
    .map(([status, count]) => `<span class="pill ${status}">${count} ${status}</span>`);
  if (counts.flaky) pills.push(`<span class="pill running">${counts.flaky} flaky</span>`);
  yield `<p class="counts">${counts.tests} tests: ${pills.join(' ')} · ${report.parts.length} runs</p></header><main>`;
  yield `<section><h2>Tests</h2>${filterForm('test', new Set(report.tests.map(verdictOf)), report.tests.length)}`;
  yield '<table class="tests"><thead><tr><th>Test</th><th>Suite</th><th>Verdict</th><th>Attempts</th></tr></thead><tbody>';
  for (const [index, test] of report.tests.entries()) {
    const verdict = verdictOf(test);
    yield `<tr class="${verdict}"${testKeys(test)}><td><a href="#test-${index + 1}">${escapeHtml(test.name)}</a></td><td>${escapeHtml(test.classname)}</td>`;
    yield `<td><span class="pill ${verdict}">${escapeHtml(verdict)}</span></td><td>${test.attempts.length}</td></tr>`;
  }
  yield '</tbody></table></section>';
}

/** What the filter matches a test by: its verdict, and its name and suite. */
const testKeys = (test: ReportTest) => filterAttributes([verdictOf(test)], [test.name, test.classname]);

/**
 * A test of a job: its final attempt, open when it failed or broke (a passed or skipped one folded,
 * so failures are what the page is made of), its earlier attempts folded under it. Its error shows
 * once, where it happened (runBody), not again above its steps.
 */
async function* testSection(report: Report, test: ReportTest, index: number, counter: { next: number }): AsyncIterable<Chunk> {
  const verdict = verdictOf(test);
  const open = verdict === 'failed' || verdict === 'broken' ? ' open' : '';
  yield `<section class="test" id="test-${index + 1}"${testKeys(test)}><details class="test-body"${open}><summary><h2><span class="badge ${verdict}">${escapeHtml(verdict)}</span> ${escapeHtml(test.name)} <span class="dim">${escapeHtml(test.classname)}</span></h2></summary>`;
  yield factList(runFacts(test.final));
  yield* runBody(report, test.final, counter);
  for (const [n, part] of test.attempts.slice(0, -1).entries()) {
    const earlier = part.answers.run.verdict ?? part.answers.run.status;
    yield `<details class="attempt"><summary>Attempt ${n + 1} of ${test.attempts.length}: <span class="pill ${earlier}">${escapeHtml(earlier)}</span></summary>`;
    yield factList(runFacts(part));
    yield* runBody(report, part, counter);
    yield '</details>';
  }
  yield '</details></section>';
}
