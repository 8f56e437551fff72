// Baseline of F7: a plain parallel download of a run's images, nothing else: `concurrency` fetches
// at once, each image written to a file. usage: node parallel-download.mjs <url> <key> <out> <ids.json> <concurrency>
import fs from 'node:fs';
import path from 'node:path';

const [base, key, out, idsFile, concurrency] = process.argv.slice(2);
const ids = JSON.parse(fs.readFileSync(idsFile, 'utf8'));
fs.mkdirSync(out, { recursive: true });
let next = 0;
await Promise.all(
  Array.from({ length: Number(concurrency) }, async () => {
    while (next < ids.length) {
      const id = ids[next++];
      const response = await fetch(`${base}/api/v1/images/${id}`, { headers: { 'service.api-token': key } });
      if (!response.ok) throw new Error(`image ${id}: ${response.status}`);
      fs.writeFileSync(path.join(out, `${id}.png`), Buffer.from(await response.arrayBuffer()));
    }
  }),
);
