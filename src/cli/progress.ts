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
