import pg from 'pg';
import { startTestServer } from '../../test/helpers/server.ts';

const STACK = Array.from({ length: 12 }, (_, i) => `    at com.example.Frame${i}.call(Frame${i}.java:${40 + i})`).join('\n');
function junit(round: string, cases: number): Buffer {
  const out: string[] = [];
  for (let c = 0; c < cases; c++) {
    const failing = c % 7 === 0;
    const failure = failing ? `<failure message="expected 200 but was 500 (${c % 13})" type="AssertionError">${STACK}</failure>` : '';
    out.push(`<testcase classname="com.example.r${round}.Suite${Math.floor(c / 100)}" name="case ${c}" time="0.012">${failure}<system-out>case ${c} ran</system-out></testcase>`);
  }
  return Buffer.from(`<?xml version="1.0"?><testsuites><testsuite name="s${round}" tests="${cases}">${out.join('')}</testsuite></testsuites>`);
}

const stats = new Map<string, { n: number; ms: number }>();
let recording = false;
const origQuery = pg.Client.prototype.query as any;
(pg.Client.prototype as any).query = function (this: unknown, ...args: any[]) {
  const text: string = typeof args[0] === 'string' ? args[0] : args[0]?.text ?? '?';
  const started = performance.now();
  const result = origQuery.apply(this, args);
  if (recording && result && typeof result.then === 'function') {
    const key = text.replace(/\$\d+/g, '?').replace(/\(\?(, \?)*\)(, \(\?(, \?)*\))*/g, '(…)').replace(/in \(\?(, \?)*\)/gi, 'in (…)').slice(0, 160);
    result.then(() => {
      const s = stats.get(key) ?? { n: 0, ms: 0 };
      s.n++;
      s.ms += performance.now() - started;
      stats.set(key, s);
    }, () => {});
  }
  return result;
};

const dialect = (process.argv[2] ?? 'postgres') as 'postgres' | 'sqlite';
const cases = Number(process.argv[3] ?? 5000);
const server = await startTestServer(dialect);
const client = server.admin.client;
const headers = { 'service.api-token': server.admin.key, 'content-type': 'application/json', accept: 'application/json' };
const project = (await (await fetch(`${server.url}/api/v1/projects`, { method: 'POST', headers, body: JSON.stringify({ key: 'PRF', name: 'p' }) })).json()) as { id: string };
async function imp(round: string) {
  const t = performance.now();
  const r = await fetch(`${server.url}/api/v1/projects/${project.id}/imports`, { method: 'POST', headers: { ...headers, 'content-type': 'application/xml' }, body: junit(round, cases) });
  const acc = (await r.json()) as { id: string };
  for (;;) {
    const rec = (await (await fetch(`${server.url}/api/v1/projects/${project.id}/imports/${acc.id}`, { headers })).json()) as { status: string; error?: string };
    if (rec.status === 'completed') break;
    if (rec.status === 'failed') throw new Error(rec.error);
    await new Promise((res) => setTimeout(res, 20));
  }
  return performance.now() - t;
}
await imp('warm');
if (dialect === 'postgres' && (process.env.DROP || process.env.ANALYZE)) {
  const c = new pg.Client({ connectionString: server.config.databaseUrl });
  await c.connect();
  for (const t of (process.env.DROP ?? '').split(',').filter(Boolean)) await c.query(`DROP TRIGGER ${t} ON test_runs`);
  if (process.env.ANALYZE) await c.query('ANALYZE');
  await c.end();
}
recording = true;
const before = server.app.attest.database.stats.statements;
const ms = await imp('a');
recording = false;
const total = server.app.attest.database.stats.statements - before;
console.log(`${dialect}: ${cases} cases in ${ms.toFixed(0)} ms = ${(cases / ms * 1000).toFixed(0)} runs/s; statements ${total}`);
const rows = [...stats.entries()].sort((a, b) => b[1].ms - a[1].ms).slice(0, Number(process.env.TOP ?? 45));
for (const [k, s] of rows) console.log(`${String(s.n).padStart(6)} ${s.ms.toFixed(0).padStart(7)}ms  ${k}`);
void client;
await server.close();
process.exit(0);
