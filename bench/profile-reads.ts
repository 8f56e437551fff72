// Profiling aid (not a figure): F1's device read or F2's 1,000-step results read, loaded by wrk
// against this build (BENCH_DIST, else dist) and, with `--against DIR[,DIR…]`, other build folders too,
// their samples interleaved (A, B, A, B…) so both see the same busy neighbours.
//   node --import tsx bench/profile-reads.ts device|results [--against DIR] [--rounds 5] [--seconds 2] [--connections 8]
// prints each server's median requests/s, its CPU per request and the requests it served (to scale
// a profile's self times to a request); BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR" profiles
// both servers, each profile written when its server stops.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startAttest } from './attest.ts';
import { prepareReads } from './figures.ts';
import { median, pinSelf, wrk } from './lib.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    against: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '2' },
    connections: { type: 'string', default: '8' },
  },
});
const read = positionals[0] === 'results' ? 'results' : 'device';
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);
const connections = Number(values.connections);
pinSelf();

const builds = [process.env.BENCH_DIST ?? 'dist', ...(values.against?.split(',') ?? [])];
const servers = [];
for (const dist of builds) {
  const server = await startAttest({ dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'attest-profile-')), dist });
  const set = await prepareReads(server);
  const url =
    read === 'device'
      ? `${server.url}/api/v1/device/devices/${set.deviceId}`
      : `${server.url}/api/v1/testmgmt/testruns/${set.runId}/results`;
  servers.push({ dist, server, url, headers: { 'service.api-token': server.key }, rps: [] as number[], cpu: [] as number[], requests: 0 });
}
// Warm-up (the JIT, the caches); its requests count too, since a profile holds them.
for (const s of servers) s.requests += (await wrk(s.url, { headers: s.headers, seconds: 2, connections })).requests;
for (let round = 0; round < rounds; round++) {
  for (const s of servers) {
    const load = await wrk(s.url, { headers: s.headers, seconds, connections, serverPid: s.server.pid });
    if (load.non2xx > 0 || load.errors > 0) throw new Error(`${s.url}: ${load.non2xx} non-2xx, ${load.errors} socket errors`);
    s.rps.push(load.rps);
    s.cpu.push(load.cpuUsPerRequest ?? Number.NaN);
    s.requests += load.requests;
  }
}
for (const s of servers) {
  console.log(
    `${read} ${s.dist}: ${median(s.rps).toFixed(0)} req/s (${s.rps.map((r) => r.toFixed(0)).join(' ')}), server CPU ${median(s.cpu).toFixed(1)} µs/request, ${s.requests} requests`,
  );
  await s.server.stop();
  fs.rmSync(s.server.dataDir, { recursive: true, force: true });
}
