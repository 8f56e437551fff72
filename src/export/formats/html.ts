import MarkdownIt from 'markdown-it';
import type { AttachmentEntry, ImageEntry, Step } from '../bundle.ts';
import { type Chunk, type ExportFile, elapsedMs, imagesByStep, type RunPart, type StepNode, stepTree } from '../files.ts';
import { countsOf, failureOf, type Report, type ReportTest } from '../report.ts';
import { REPORT_STYLE } from './html-style.ts';

/**
 * One self-contained HTML file, readable offline. A run: its facts, a timeline of its steps (SVG),
 * the step tree with statuses and durations, text cells (Markdown rendered with raw HTML escaped),
 * every screenshot inline beside its step (full size on click, without script) and visual diffs
 * side by side, and its other files (text ones shown). A job: its facts and counts, a table of its
 * tests (retries folded, the final attempt deciding), then each test's final attempt as above, its
 * earlier attempts folded under it. The page allows no script and loads nothing: its
 * Content-Security-Policy permits only its own style and `data:` images. Written as a stream, one
 * image in memory at a time.
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
  const body =
    cell.mediaType === 'text/markdown' ? `<div class="md">${markdown.render(cell.text)}</div>` : `<pre>${escapeHtml(cell.text)}</pre>`;
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
      const text = new TextDecoder('utf-8', { fatal: false }).decode(await report.attachmentBytes(file, part.folder));
      yield `<pre>${escapeHtml(text)}</pre>`;
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

/** One run: its timeline, its own cells, images and files, then the step tree. */
async function* runBody(report: Report, part: RunPart, counter: { next: number }): AsyncIterable<Chunk> {
  const { run } = part.answers;
  const results = part.answers.results.value;
  const roots = stepTree(results.steps);
  const byStep = imagesByStep(part.images);
  const filesByStep = new Map<string | null, AttachmentEntry[]>();
  for (const file of part.attachments) filesByStep.set(file.stepId, [...(filesByStep.get(file.stepId) ?? []), file]);
  // The timeline starts at the earliest moment known: a reporter's step times may precede the run's own start.
  const starts = [run.startedAt, ...results.steps.map((step) => step.startedAt)].filter((t): t is string => t !== null).map(Date.parse);
  yield timeline(roots, starts.length ? Math.min(...starts) : undefined);
  if (results.cells.length || byStep.get(null)?.length || filesByStep.get(null)?.length) {
    yield `<section><h2>Run</h2>${results.cells.map(cellHtml).join('')}`;
    yield* gallery(report, part, byStep.get(null) ?? [], counter);
    yield* fileList(report, part, filesByStep.get(null) ?? []);
    yield '</section>';
  }
  yield '<section><h2>Steps</h2><ol class="steps">';
  const visit = async function* (node: StepNode): AsyncIterable<Chunk> {
    const { step } = node;
    const open = step.status !== 'passed' || node.depth === 0 ? ' open' : '';
    yield `<li class="step ${step.status}"><details${open}><summary><span class="mark ${step.status}" title="${step.status}">${STATUS_MARK[step.status] ?? '?'}</span>`;
    yield ` <span class="num">${node.number}.</span> ${escapeHtml(step.title)} <span class="dim">${duration(step.durationMs)}</span></summary>`;
    if (step.error) yield `<pre class="error">${escapeHtml(step.error)}</pre>`;
    yield step.cells.map(cellHtml).join('');
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

const head = (title: string) =>
  '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
  `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">` +
  '<meta name="viewport" content="width=device-width, initial-scale=1">' +
  `<title>${escapeHtml(title)} · Attest</title><style>${REPORT_STYLE}</style></head><body>`;

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
    yield* runBody(report, part, counter);
  } else {
    yield* jobHeader(report);
    for (const [index, test] of report.tests.entries()) yield* testSection(report, test, index, counter);
  }
  yield `</main><footer>Exported by ${escapeHtml(report.exporter)} on ${new Date().toISOString()}</footer></body></html>\n`;
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
  yield '<section><h2>Tests</h2><table class="tests"><thead><tr><th>Test</th><th>Suite</th><th>Verdict</th><th>Attempts</th></tr></thead><tbody>';
  for (const [index, test] of report.tests.entries()) {
    const verdict = verdictOf(test);
    yield `<tr class="${verdict}"><td><a href="#test-${index + 1}">${escapeHtml(test.name)}</a></td><td>${escapeHtml(test.classname)}</td>`;
    yield `<td><span class="pill ${verdict}">${escapeHtml(verdict)}</span></td><td>${test.attempts.length}</td></tr>`;
  }
  yield '</tbody></table></section>';
}

async function* testSection(report: Report, test: ReportTest, index: number, counter: { next: number }): AsyncIterable<Chunk> {
  const verdict = verdictOf(test);
  const failure = failureOf(test.final);
  yield `<section class="test" id="test-${index + 1}"><h2><span class="badge ${verdict}">${escapeHtml(verdict)}</span> ${escapeHtml(test.name)} <span class="dim">${escapeHtml(test.classname)}</span></h2>`;
  yield factList(runFacts(test.final));
  if (failure) yield `<pre class="error">${escapeHtml(failure.detail)}</pre>`;
  yield* runBody(report, test.final, counter);
  for (const [n, part] of test.attempts.slice(0, -1).entries()) {
    const earlier = part.answers.run.verdict ?? part.answers.run.status;
    yield `<details class="attempt"><summary>Attempt ${n + 1} of ${test.attempts.length}: <span class="pill ${earlier}">${escapeHtml(earlier)}</span></summary>`;
    yield factList(runFacts(part));
    yield* runBody(report, part, counter);
    yield '</details>';
  }
  yield '</section>';
}
