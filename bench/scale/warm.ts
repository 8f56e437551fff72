// `node --import tsx bench/scale/warm.ts [runs…]`: makes the kept scale sets (cache.ts) ahead of a
// bench run, SQLite then PostgreSQL, and prints how long each generation took.
import fs from 'node:fs';
import cliProgress from 'cli-progress';
import { tempFolders } from '../attest.ts';
import { scaleCopy } from './cache.ts';

const temp = tempFolders();
for (const runs of (process.argv.slice(2).length ? process.argv.slice(2) : ['10000', '1000000']).map(Number)) {
  for (const dialect of ['sqlite', 'postgres'] as const) {
    const bar = new cliProgress.SingleBar(
      { format: `${dialect} ${runs} [{bar}] {value}/{total} {eta_formatted}` },
      cliProgress.Presets.shades_classic,
    );
    bar.start(runs, 0);
    const copy = await scaleCopy(dialect, runs, temp, { progress: (done) => bar.update(done) });
    bar.stop();
    console.log(`${dialect} ${runs}: generated in ${copy.meta.seconds.toFixed(1)} s`);
    await copy.drop();
    fs.rmSync(copy.dataDir, { recursive: true, force: true });
  }
}
process.exit(0);
