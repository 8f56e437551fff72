import { runShard } from './shards.ts';

await runShard(2, 3);
