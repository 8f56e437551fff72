// Profiling aid (not a figure): N failed runs as F11 sends them, against one server started from
// dist with BENCH_NODE_ARGS (for example --cpu-prof). Prints the server CPU per run.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Api, startAttest } from './attest.ts';
import { cpuMs } from './lib.ts';
import { failureOf } from './suite.ts';

const runs = Number(process.argv[2] ?? 1000);
const server = await startAttest({ dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'attest-profile-')) });
const api = new Api(server.url, server.key);
const project = await api.project();
let n = 0;
const one = async (i: number) => {
  const { message, stack } = failureOf(i % 60, i, i);
  const run = await api.call<{ id: string }>('POST', '/testmgmt/testruns', {
    projectId: project.id,
    name: `case ${i % 200}`,
    testName: `com.example.live.Suite${i % 10} › case ${i % 200}`,
  });
  await api.call('POST', `/testmgmt/testruns/${run.id}/results`, {
    steps: [
      { key: 's1', title: 'submit the form', status: 'failed', durationMs: 40, error: message, cells: [{ name: 'trace', text: stack }] },
    ],
  });
  await api.call('PATCH', `/testmgmt/testruns/${run.id}`, { status: 'completed', verdict: 'failed' });
};
for (let i = 0; i < 200; i++) await one(n++);
const before = cpuMs(server.pid);
const started = performance.now();
await Promise.all(
  Array.from({ length: 4 }, async () => {
    while (n < runs + 200) await one(n++);
  }),
);
console.log(
  `${runs} failed runs: ${((cpuMs(server.pid) - before) / runs).toFixed(2)} ms server CPU per run, ${(runs / ((performance.now() - started) / 1000)).toFixed(0)} runs/s`,
);
await server.stop();
