import { runShard } from './shards.ts';

await runShard(3, 3);
