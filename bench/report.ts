import fs from 'node:fs';

// Writes what a run measured: JSON (every sample), a Markdown table, an SVG chart of the ratios,
// and the table and chart into docs/performance.md between its markers.

export interface Figure {
  id: string;
  title: string;
  dialect: 'sqlite' | 'postgres' | '-';
  unit: string;
  /** Median of Attest's samples, and of the baseline's (absent for absolute figures). */
  attest: number;
  baseline?: number;
  baselineName?: string;
  ratio?: number;
  /**
   * For figures in time (ms, s), where less is better: the ratio is then the baseline's median over
   * Attest's, so that 1 still means as fast as the baseline and more is better, as in every row.
   */
  lowerIsBetter?: boolean;
  /** The figure's bar: a ratio at least `minRatio`, or a value at most `maxValue`. */
  minRatio?: number;
  maxValue?: number;
  pass?: boolean;
  samples: { attest: number[]; baseline?: number[] };
  notes?: string;
}

export function judge(figure: Figure): Figure {
  if (figure.baseline !== undefined && figure.baseline > 0 && figure.attest > 0)
    figure.ratio = figure.lowerIsBetter ? figure.baseline / figure.attest : figure.attest / figure.baseline;
  if (figure.minRatio !== undefined && figure.ratio !== undefined) figure.pass = figure.ratio >= figure.minRatio;
  // A figure with both bars (the S figures' list pages: flat, and fast) must hold both.
  if (figure.maxValue !== undefined) figure.pass = (figure.pass ?? true) && figure.attest <= figure.maxValue;
  return figure;
}

const fmt = (n: number | undefined, digits = 0) =>
  n === undefined || Number.isNaN(n) ? '—' : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

export function markdown(figures: Figure[], machine: Record<string, unknown>): string {
  const rows = figures.map((f) => {
    const bar = [f.minRatio !== undefined ? `≥ ${f.minRatio}` : '', f.maxValue !== undefined ? `≤ ${fmt(f.maxValue)} ${f.unit}` : '']
      .filter(Boolean)
      .join(', ');
    const verdict = f.pass === undefined ? '' : f.pass ? 'holds' : '**misses**';
    return `| ${f.id} | ${f.title} | ${f.dialect} | ${fmt(f.attest, f.attest < 10 ? 2 : 0)} ${f.unit} | ${f.baseline === undefined ? '—' : `${fmt(f.baseline, f.baseline < 10 ? 2 : 0)} (${f.baselineName})`} | ${fmt(f.ratio, 2)} | ${bar} | ${verdict} |`;
  });
  return [
    `Measured ${machine.date} on ${machine.cpu} (${machine.cores} cores), Node.js ${machine.node}, commit ${machine.commit}, ${machine.mode}; ${machine.pinning}; ${machine.settings}.`,
    '',
    '| Figure | What | Database | Attest | Baseline | Ratio | Bar | |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Horizontal bars of the ratios (capped at 1.5), with each figure's bar marked. */
export function svg(figures: Figure[]): string {
  const rated = figures.filter((f) => f.ratio !== undefined);
  const rowHeight = 22;
  const left = 520;
  const width = 300;
  const scale = (ratio: number) => Math.min(ratio, 1.5) * (width / 1.5);
  const height = rated.length * rowHeight + 40;
  const parts = rated.map((f, i) => {
    const y = 20 + i * rowHeight;
    const colour = f.pass === false ? '#d9534f' : f.pass ? '#3c8d40' : '#6c757d';
    const mark =
      f.minRatio === undefined
        ? ''
        : `<line x1="${left + scale(f.minRatio)}" x2="${left + scale(f.minRatio)}" y1="${y - 2}" y2="${y + 16}" stroke="#000" stroke-width="2"/>`;
    return [
      `<text x="${left - 8}" y="${y + 12}" text-anchor="end">${escapeXml(`${f.id} ${f.title} (${f.dialect})`)}</text>`,
      `<rect x="${left}" y="${y}" width="${scale(f.ratio as number).toFixed(1)}" height="14" fill="${colour}"/>`,
      mark,
      `<text x="${left + scale(f.ratio as number) + 6}" y="${y + 12}">${fmt(f.ratio, 2)}</text>`,
    ].join('');
  });
  const axis = [0, 0.5, 1, 1.5]
    .map(
      (t) =>
        `<line x1="${left + scale(t)}" x2="${left + scale(t)}" y1="14" y2="${height - 20}" stroke="#ccc"/><text x="${left + scale(t)}" y="${height - 6}" text-anchor="middle">${t}</text>`,
    )
    .join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${left + width + 60}" height="${height}" font-family="sans-serif" font-size="12"><title>Attest to baseline ratios</title><rect width="100%" height="100%" fill="#fff"/>${axis}${parts.join('')}</svg>\n`;
}

/**
 * Writes a run's results; `section` names another table (the `--scale` run writes `scale`:
 * results/scale.{json,md} and docs/performance.md between the scale markers).
 */
export function write(figures: Figure[], machine: Record<string, unknown>, options: { updateDocs: boolean; section?: string }): void {
  if (options.section) {
    const table = markdown(figures, machine);
    fs.mkdirSync('bench/results/history', { recursive: true });
    const json = `${JSON.stringify({ machine, figures }, null, 2)}\n`;
    fs.writeFileSync(`bench/results/${options.section}.json`, json);
    fs.writeFileSync(`bench/results/${options.section}.md`, table);
    fs.writeFileSync(`bench/results/history/${options.section}-${String(machine.date).replace(/[:.]/g, '-')}.json`, json);
    if (!options.updateDocs) return;
    const doc = fs.readFileSync('docs/performance.md', 'utf8');
    const start = `<!-- ${options.section}:start -->`;
    const end = `<!-- ${options.section}:end -->`;
    const from = doc.indexOf(start);
    const to = doc.indexOf(end);
    if (from < 0 || to < 0) throw new Error(`docs/performance.md lacks the ${options.section} markers`);
    fs.writeFileSync('docs/performance.md', `${doc.slice(0, from + start.length)}\n${table}\n${doc.slice(to)}`);
    return;
  }
  fs.mkdirSync('bench/results/history', { recursive: true });
  const stamp = String(machine.date).replace(/[:.]/g, '-');
  const json = `${JSON.stringify({ machine, figures }, null, 2)}\n`;
  const table = markdown(figures, machine);
  const chart = svg(figures);
  fs.writeFileSync('bench/results/latest.json', json);
  fs.writeFileSync('bench/results/latest.md', table);
  fs.writeFileSync('bench/results/latest.svg', chart);
  fs.writeFileSync(`bench/results/history/${stamp}.json`, json);
  if (!options.updateDocs) return;
  const doc = fs.readFileSync('docs/performance.md', 'utf8');
  const start = '<!-- bench:start -->';
  const end = '<!-- bench:end -->';
  const from = doc.indexOf(start);
  const to = doc.indexOf(end);
  if (from < 0 || to < 0) throw new Error('docs/performance.md lacks the bench markers');
  fs.writeFileSync('docs/performance.md', `${doc.slice(0, from + start.length)}\n${table}\n${doc.slice(to)}`);
}
