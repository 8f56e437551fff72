// `node --import tsx bench/scale/cli.ts --runs 1000000 --data-dir DIR [--database-url URL] [--seed 33]`:
// fills an empty data folder (SQLite) or an empty PostgreSQL database with the scale data set
// (generate.ts), with a progress bar, and prints what it made. `npm run bench -- --scale` calls
// the generator itself, and keeps what it makes (cache.ts).
import { parseArgs } from 'node:util';
import cliProgress from 'cli-progress';
import { generateScale } from './generate.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '10000' },
    'data-dir': { type: 'string' },
    'database-url': { type: 'string' },
    seed: { type: 'string', default: '33' },
  },
});
if (!values['data-dir']) {
  console.error('--data-dir is required');
  process.exit(2);
}
const runs = Number(values.runs);
const bar = new cliProgress.SingleBar(
  { format: 'scale [{bar}] {value}/{total} runs, {eta_formatted} left', hideCursor: true, etaBuffer: 10 },
  cliProgress.Presets.shades_classic,
);
bar.start(runs, 0);
const meta = await generateScale({
  runs,
  seed: Number(values.seed),
  dataDir: values['data-dir'],
  ...(values['database-url'] ? { databaseUrl: values['database-url'] } : {}),
  progress: (done) => bar.update(done),
});
bar.stop();
console.log(JSON.stringify(meta, null, 2));
