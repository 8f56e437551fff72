import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
// uPlot's own sheet, bundled as a file: the policy allows no <style> tag (docs/web.md). uPlot sets
// its geometry through the DOM's style properties, which the policy allows.
import 'uplot/dist/uPlot.min.css';
import './triage.css';

// The dashboard's and the failures pages' charts, drawn by uPlot on a canvas. A canvas says nothing
// to a screen reader: each chart is an image named by what it shows, and its numbers are in a table
// beside it (a visible one, or a <details> under it).

/** The status colours of styles.css: a canvas cannot read CSS variables. */
export const COLOURS = { passed: '#1a7d44', failed: '#c62f2f', accent: '#2754c5', muted: '#5d6875', line: '#d9dee4' };

/** The font the axes write their values in (uPlot's own, named so labels can be measured in it). */
const AXIS_FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans", sans-serif';
/** The characters an x-axis label keeps; the table beside the chart has the whole name. */
const LABEL_CHARS = 16;
/** The room between two labels on the x axis, in CSS pixels. */
const LABEL_GAP = 16;

/** A label as the x axis writes it: a long job name cut, with an ellipsis. */
export const axisLabel = (label: string) => (label.length > LABEL_CHARS ? `${label.slice(0, LABEL_CHARS - 1)}…` : label);

/**
 * The words every label shares at its start and at its end (jobs named `Nightly build 12 of the
 * checkout suite`), cut off so the axis writes what tells the points apart (`12`); `common` says
 * what was cut, for the axis's title. Labels without such words (days) stay as they are.
 */
export function distinctLabels(labels: readonly string[]): { labels: string[]; common: string | undefined } {
  if (labels.length < 2) return { labels: [...labels], common: undefined };
  const words = labels.map((label) => label.split(' '));
  const shortest = Math.min(...words.map((w) => w.length));
  let head = 0;
  while (head < shortest - 1 && words.every((w) => w[head] === words[0]?.[head])) head++;
  let tail = 0;
  while (tail < shortest - 1 - head && words.every((w) => w[w.length - 1 - tail] === words[0]?.[(words[0]?.length ?? 0) - 1 - tail]))
    tail++;
  if (head === 0 && tail === 0) return { labels: [...labels], common: undefined };
  const first = words[0] as string[];
  const common = [...first.slice(0, head), '…', ...first.slice(first.length - tail)].join(' ');
  return { labels: words.map((w) => w.slice(head, w.length - tail).join(' ')), common };
}

let measuring: CanvasRenderingContext2D | null | undefined;
/** How wide a text is in the axis font, in CSS pixels (about 7 px a character where a canvas cannot say). */
function textWidth(text: string): number {
  measuring ??= document.createElement('canvas').getContext('2d');
  if (!measuring) return text.length * 7;
  measuring.font = AXIS_FONT;
  return measuring.measureText(text).width;
}

export interface ChartSeries {
  label: string;
  values: (number | null)[];
  colour: string;
}

/** A uPlot chart in a div, remade when its options or data change and destroyed with the component. */
function usePlot(make: (width: number) => { options: uPlot.Options; data: uPlot.AlignedData }, deps: unknown[]) {
  const ref = useRef<HTMLDivElement>(null);
  // The caller names what the chart is drawn from (`deps`).
  useEffect(() => {
    const element = ref.current;
    if (!element) return;
    const { options, data } = make(element.clientWidth || 600);
    const plot = new uPlot(options, data, element);
    const observer =
      typeof ResizeObserver === 'undefined'
        ? undefined
        : new ResizeObserver(() => {
            const width = element.clientWidth;
            if (width > 0 && width !== plot.width) plot.setSize({ width, height: plot.height });
          });
    observer?.observe(element);
    return () => {
      observer?.disconnect();
      plot.destroy();
    };
  }, deps);
  return ref;
}

/**
 * The x axis of a line chart: as many labels as fit side by side, each cut and apart by the widest,
 * the words all share said once under it. `drawn` reads the labels it wrote last.
 */
function labelAxis(labels: string[]) {
  const distinct = distinctLabels(labels);
  const shown = distinct.labels.map(axisLabel);
  const widest = Math.max(0, ...shown.map(textWidth));
  let drawn: string[] = [];
  const axis: uPlot.Axis = {
    stroke: COLOURS.muted,
    font: AXIS_FONT,
    grid: { show: false },
    incrs: [1, 2, 5, 10, 20, 50, 100],
    space: Math.ceil(widest) + LABEL_GAP,
    // What every label shares, said once under the axis: "Nightly build … of the checkout suite".
    ...(distinct.common ? { label: distinct.common, labelSize: 20, labelFont: AXIS_FONT } : {}),
    values: (_plot, splits) => {
      const values = splits.map((i) => (Number.isInteger(i) ? (shown[i] ?? '') : ''));
      drawn = values.filter((value) => value !== '');
      return values;
    },
  };
  return { axis, widest, drawn: () => drawn };
}

interface LineChartData {
  labels: string[];
  series: ChartSeries[];
  format: (value: number) => string;
  range?: [number, number];
}

/** uPlot's options and data for a line chart `width` pixels wide. */
function lineChartPlot(width: number, { labels, series, format, range }: LineChartData) {
  const x = labelAxis(labels);
  return {
    options: {
      width,
      height: 220,
      // The labels the x axis wrote, for a test to check they fit (a canvas has no text to read).
      hooks: { draw: [(plot) => plot.root.parentElement?.setAttribute('data-x-labels', JSON.stringify(x.drawn()))] },
      // Room on the right for half of the last label, centred on its point.
      padding: [8, Math.ceil(x.widest / 2), 0, 0],
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: false }, y: range ? { range: () => range } : { auto: true } },
      axes: [
        x.axis,
        {
          stroke: COLOURS.muted,
          font: AXIS_FONT,
          grid: { stroke: COLOURS.line, width: 1 },
          size: 60,
          values: (_plot, splits) => splits.map(format),
        },
      ],
      series: [
        {},
        ...series.map((s) => ({
          label: s.label,
          stroke: s.colour,
          width: 2,
          points: { show: true, size: 6, fill: s.colour },
          spanGaps: false,
        })),
      ],
    } satisfies uPlot.Options,
    data: [labels.map((_, i) => i), ...series.map((s) => s.values)] as uPlot.AlignedData,
  };
}

/**
 * A line chart over labelled points (days, or jobs in the order they ran): one x position per
 * label. The x axis writes as many labels as fit side by side, each cut to a few characters and
 * apart by the widest of them (uPlot takes every 2nd, 5th, 10th… point as the width asks), so 20
 * job names never run into one another: the words all of them share are said once under the axis,
 * each point keeps what tells it apart, and the table beside the chart names every point. `format`
 * writes a value on the y axis.
 */
export function LineChart({
  label,
  labels,
  series,
  format,
  range,
  testId,
}: LineChartData & {
  label: string;
  testId?: string;
}) {
  const ref = usePlot((width) => lineChartPlot(width, { labels, series, format, range }), [JSON.stringify({ labels, series, range })]);
  return (
    <figure class="chart">
      <div ref={ref} class="chart-plot" role="img" aria-label={label} data-testid={testId} data-points={labels.length} />
      <figcaption class="chart-legend">
        {series.map((s) => (
          <span key={s.label}>
            <span class="chart-swatch" style={{ background: s.colour }} aria-hidden="true" />
            {s.label}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}

/** A sparkline: occurrences per day, no axes; its name says the numbers. */
export function Sparkline({ label, values, testId }: { label: string; values: number[]; testId?: string }) {
  const ref = usePlot(
    () => ({
      options: {
        width: 120,
        height: 28,
        legend: { show: false },
        cursor: { show: false },
        scales: { x: { time: false }, y: { range: (_plot, _min, max) => [0, Math.max(1, max)] } },
        axes: [{ show: false }, { show: false }],
        series: [{}, { stroke: COLOURS.failed, width: 1.5, fill: 'rgba(198, 47, 47, 0.12)', points: { show: false } }],
      },
      data: [values.map((_, i) => i), values] as uPlot.AlignedData,
    }),
    [values.join(',')],
  );
  return <div ref={ref} class="sparkline" role="img" aria-label={label} data-testid={testId} />;
}

/** A 0…1 rate as a percentage, or a dash. */
export const percent = (rate: number | null | undefined): string =>
  rate === null || rate === undefined ? '—' : `${(rate * 100).toFixed(rate === 1 || rate === 0 ? 0 : 1)}%`;
