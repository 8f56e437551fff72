// `npm run bench:capacity`: what the scaled topology of docs/deployment.md serves on this machine.
// Two instances (`node dist/server/main.js`) on one PostgreSQL database and one bucket of s3rver,
// behind nginx configured as the document says, against one instance reached directly. On a
// two-core machine the servers share CPU 0 and the load generators CPU 1 (taskset), so the figures
// say what one core of instances serves in the scaled mode and what nginx and the second instance
// cost, not how far more machines scale. Printed as a Markdown table; nothing is written.
import { execFileSync } from 'node:child_process';
import pg from 'pg';
import { documentedUpstreamBlocks } from '../test/helpers/nginx.ts';
import { startS3 } from '../test/helpers/s3.ts';
import { Api, type Attest, startAttest, startNginx, stepsOf, tempFolders } from './attest.ts';
import { closedLoop, png } from './figures.ts';
import { hasCommand, median, PINNED, pinSelf, wrk } from './lib.ts';

if (!hasCommand('wrk') || !hasCommand('nginx')) {
  console.error('npm run bench:capacity needs wrk and nginx: apt-get install -y wrk nginx-light');
  process.exit(1);
}
pinSelf();
const SECONDS = 5;
const REPETITIONS = 3;
const temp = tempFolders();
execFileSync('npm', ['run', 'build', '--silent'], { stdio: 'ignore' });

const postgresUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const admin = new pg.Client({ connectionString: postgresUrl });
await admin.connect();
const name = `attest_capacity_${process.pid}`;
await admin.query(`CREATE DATABASE ${name}`);
const databaseUrl = Object.assign(new URL(postgresUrl), { pathname: `/${name}` }).toString();
const s3 = await startS3();
const env = s3.env(await s3.createBucket(), 'attest');

const rows: string[] = [];
try {
  const one = await startAttest({ dataDir: temp('attest-capacity-1-'), databaseUrl, env });
  const two = await startAttest({ dataDir: temp('attest-capacity-2-'), databaseUrl, env, key: one.key });
  const nginx = await balancer([one, two]);
  const api = new Api(one.url, one.key);
  const headers = { 'service.api-token': one.key };

  const deviceId = `CAPACITY-${Date.now()}`;
  await api.call('POST', '/device/devices', { id: deviceId, name: 'Pixel 8', platform: 'android', osVersion: '14', model: 'Pixel 8' });
  const project = await api.project();
  const run = await api.call<{ id: string }>('POST', '/testmgmt/testruns', { projectId: project.id, name: 'capacity' });
  await api.call('POST', `/testmgmt/testruns/${run.id}/results`, { steps: stepsOf(1000, 2, 60) });
  await api.call('PATCH', `/testmgmt/testruns/${run.id}`, { status: 'completed', verdict: 'passed' });

  for (const [what, route] of [
    ['device read', `/api/v1/device/devices/${deviceId}`],
    ['results of a completed 1,000-step run', `/api/v1/testmgmt/testruns/${run.id}/results`],
  ] as const) {
    const direct: number[] = [];
    const balanced: number[] = [];
    const p99: number[] = [];
    await wrk(`${one.url}${route}`, { headers, seconds: 1 });
    await wrk(`${nginx.url}${route}`, { headers, seconds: 1 });
    for (let i = 0; i < REPETITIONS; i++) {
      direct.push((await wrk(`${one.url}${route}`, { headers, seconds: SECONDS })).rps);
      const through = await wrk(`${nginx.url}${route}`, { headers, seconds: SECONDS });
      balanced.push(through.rps);
      p99.push(through.p99Ms);
    }
    rows.push(row(what, 'req/s', direct, balanced, `p99 through nginx ${median(p99).toFixed(1)} ms`));
  }

  const shots = await Promise.all(Array.from({ length: 32 }, () => png(35)));
  const uploads = (base: Attest | { url: string; key: string }) => {
    const client = new Api(base.url, one.key);
    return async () => {
      const target = await client.call<{ id: string }>('POST', '/testmgmt/testruns', { projectId: project.id, name: 'uploads' });
      return (c: number, n: number) =>
        client.upload(
          project.id,
          { testRunId: target.id, kind: 'screenshot', name: `s-${c}-${n}.png` },
          shots[(n * 4 + c) % shots.length] as Buffer,
          'image/png',
        );
    };
  };
  const direct: number[] = [];
  const balanced: number[] = [];
  await closedLoop(4, 2, await uploads(one)());
  for (let i = 0; i < REPETITIONS; i++) {
    direct.push(await closedLoop(4, SECONDS, await uploads(one)()));
    balanced.push(await closedLoop(4, SECONDS, await uploads({ url: nginx.url, key: one.key })()));
  }
  rows.push(row('35 KB screenshot uploads, 4 clients', 'uploads/s', direct, balanced, 'blobs in the bucket, rows in PostgreSQL'));

  await nginx.stop();
  await Promise.all([one.stop(), two.stop()]);
} finally {
  await s3.close();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}

console.log(
  [
    `Measured ${new Date().toISOString()} on ${PINNED ? 'servers (both instances, nginx) on CPU 0, wrk and the Node clients on CPU 1' : 'unpinned cores'}; ${REPETITIONS} × ${SECONDS} s per sample, interleaved; PostgreSQL and s3rver on this machine.`,
    '',
    '| What | Unit | One instance, direct | Two instances behind nginx | Notes |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n'),
);
process.exit(0);

function row(what: string, unit: string, direct: number[], balanced: number[], notes: string): string {
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  return `| ${what} | ${unit} | ${fmt(median(direct))} | ${fmt(median(balanced))} | ${notes} |`;
}

/** nginx with docs/deployment.md's upstream and server blocks in front of `instances`. */
function balancer(instances: Attest[]): Promise<{ url: string; stop: () => Promise<void> }> {
  return startNginx(
    temp('attest-capacity-nginx-'),
    (port) =>
      documentedUpstreamBlocks(
        port,
        instances.map((i) => i.url),
      ),
    '/health',
  );
}
