import { runShard } from './shards.ts';

await runShard(1, 3);
