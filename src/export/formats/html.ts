import MarkdownIt from 'markdown-it';
import type { ImageEntry, Step } from '../bundle.ts';
import { type Chunk, type ExportFile, type ExportInput, elapsedMs, imagesByStep, type StepNode, stepTree } from '../files.ts';
import { REPORT_STYLE } from './html-style.ts';

/**
 * One self-contained HTML file, readable offline: the run's facts, a timeline of its steps (SVG),
 * the step tree with statuses and durations, text cells (Markdown rendered with raw HTML escaped),
 * every screenshot inline beside its step (full size on click, without script) and visual diffs
 * side by side. The page allows no script and loads nothing: its Content-Security-Policy permits
 * only its own style and `data:` images. Written as a stream, one image in memory at a time.
 */
export function htmlFiles(input: ExportInput): ExportFile[] {
  return [{ path: 'report.html', type: 'text/html; charset=utf-8', chunks: () => htmlReport(input) }];
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

async function figure(input: ExportInput, image: ImageEntry, id: string): Promise<string> {
  const data = Buffer.from(await input.bytes(image)).toString('base64');
  const src = `data:${image.contentType};base64,${data}`;
  const caption = `${escapeHtml(image.artifactName)}${image.role === 'screenshot' ? '' : ` · ${image.role}`}`;
  return (
    `<figure class="shot" id="${id}"><a href="#${id}" title="Full size"><img src="${src}" width="${image.width}" height="${image.height}" alt="${caption}"></a>` +
    `<a class="close" href="#_" title="Close">×</a><figcaption>${caption} <span class="dim">${image.width}×${image.height}</span></figcaption></figure>`
  );
}

/** A step's (or the run's) images: screenshots in a row, each visual diff as baseline | actual | diff. */
async function* gallery(input: ExportInput, images: readonly ImageEntry[], counter: { next: number }): AsyncIterable<Chunk> {
  if (images.length === 0) return;
  yield '<div class="gallery">';
  let diff: string[] = [];
  for (const [index, image] of images.entries()) {
    const html = await figure(input, image, `img-${counter.next++}`);
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

export async function* htmlReport(input: ExportInput): AsyncIterable<Chunk> {
  const { run } = input.answers;
  const results = input.answers.results.value;
  const roots = stepTree(results.steps);
  const byStep = imagesByStep(input.images);
  const counts = new Map<string, number>();
  for (const step of results.steps) counts.set(step.status, (counts.get(step.status) ?? 0) + 1);
  const facts: [string, string | null][] = [
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
    ['Project id', run.projectId],
  ];
  yield '<!doctype html><html lang="en"><head><meta charset="utf-8">';
  yield `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">`;
  yield '<meta name="viewport" content="width=device-width, initial-scale=1">';
  yield `<title>${escapeHtml(run.name)} · Attest</title><style>${REPORT_STYLE}</style></head><body>`;
  yield `<header><h1><span class="badge ${run.verdict ?? run.status}">${escapeHtml(run.verdict ?? run.status)}</span> ${escapeHtml(run.name)}</h1>`;
  yield `<dl class="facts">${facts
    .filter(([, value]) => value)
    .map(([name, value]) => `<div><dt>${name}</dt><dd>${escapeHtml(String(value))}</dd></div>`)
    .join('')}</dl>`;
  yield `<p class="counts">${results.steps.length} steps: ${[...counts]
    .map(([status, count]) => `<span class="pill ${status}">${count} ${status}</span>`)
    .join(' ')} · ${input.images.length} images</p></header><main>`;
  // The timeline starts at the earliest moment known: a reporter's step times may precede the run's own start.
  const starts = [run.startedAt, ...results.steps.map((step) => step.startedAt)].filter((t): t is string => t !== null).map(Date.parse);
  yield timeline(roots, starts.length ? Math.min(...starts) : undefined);
  const counter = { next: 1 };
  if (results.cells.length || byStep.get(null)?.length) {
    yield `<section><h2>Run</h2>${results.cells.map(cellHtml).join('')}`;
    yield* gallery(input, byStep.get(null) ?? [], counter);
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
    yield* gallery(input, byStep.get(step.id) ?? [], counter);
    if (node.children.length) {
      yield '<ol class="steps">';
      for (const child of node.children) yield* visit(child);
      yield '</ol>';
    }
    yield '</details></li>';
  };
  for (const root of roots) yield* visit(root);
  yield `</ol></section></main><footer>Exported by ${escapeHtml(input.exporter)} on ${new Date().toISOString()}</footer></body></html>\n`;
}
