import cliProgress from 'cli-progress';

/** A progress bar on stderr (silent when stderr is not a terminal, so scripts get clean output). */
export function progressBar(label: string) {
  const bar = new cliProgress.SingleBar(
    { format: `${label} [{bar}] {percentage}% | {value}/{total}`, stream: process.stderr, hideCursor: true, clearOnComplete: false },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update(done: number, total: number) {
      if (!started) {
        bar.start(total, 0);
        started = true;
      }
      bar.setTotal(total);
      bar.update(done);
    },
    stop() {
      if (started) bar.stop();
    },
  };
}

/**
 * Progress as the output can take it: a bar on a terminal, a plain line at each quarter for a log
 * (CI), nothing for `--json`.
 */
export function progressOf(label: string, mode: 'bar' | 'lines' | 'none', unit = '') {
  if (mode === 'bar') return progressBar(label);
  if (mode === 'none') return { update(_done: number, _total: number) {}, stop() {} };
  let shown = -1;
  return {
    update(done: number, total: number) {
      const quarter = total === 0 ? 4 : Math.floor((done / total) * 4);
      if (quarter === shown) return;
      shown = quarter;
      process.stderr.write(`${label}: ${done}/${total}${unit}\n`);
    },
    stop() {},
  };
}
