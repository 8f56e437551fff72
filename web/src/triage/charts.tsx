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
 * A line chart over labelled points (days, or jobs in the order they ran): one x position per
 * label, the label under it. `format` writes a value on the y axis.
 */
export function LineChart({
  label,
  labels,
  series,
  format,
  range,
  testId,
}: {
  label: string;
  labels: string[];
  series: ChartSeries[];
  format: (value: number) => string;
  range?: [number, number];
  testId?: string;
}) {
  const ref = usePlot(
    (width) => ({
      options: {
        width,
        height: 220,
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: false }, y: range ? { range: () => range } : { auto: true } },
        axes: [
          {
            stroke: COLOURS.muted,
            grid: { show: false },
            incrs: [1, 2, 5, 10, 20, 50],
            values: (_plot, splits) => splits.map((i) => (Number.isInteger(i) ? (labels[i] ?? '') : '')),
          },
          {
            stroke: COLOURS.muted,
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
      },
      data: [labels.map((_, i) => i), ...series.map((s) => s.values)] as uPlot.AlignedData,
    }),
    [JSON.stringify({ labels, series, range })],
  );
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
