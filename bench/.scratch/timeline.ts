import pg from 'pg';
import { startTestServer } from '../../test/helpers/server.ts';
function junit(round: string, cases: number): Buffer {
  const out: string[] = [];
  for (let c = 0; c < cases; c++) {
    const failure = c % 7 === 0 ? `<failure message="expected 200 (${c % 13})" type="AssertionError">at x</failure>` : '';
    out.push(`<testcase classname="com.example.r${round}.Suite" name="case ${c}" time="0.012">${failure}<system-out>case ${c} ran</system-out></testcase>`);
  }
  return Buffer.from(`<?xml version="1.0"?><testsuites><testsuite name="s${round}" tests="${cases}">${out.join('')}</testsuite></testsuites>`);
}
let t0 = 0; let rec = false;
const events: string[] = [];
const origQuery = pg.Client.prototype.query as any;
(pg.Client.prototype as any).query = function (this: unknown, ...args: any[]) {
  const text: string = typeof args[0] === 'string' ? args[0] : args[0]?.text ?? '?';
  const s = performance.now();
  const r = origQuery.apply(this, args);
  if (rec && r?.then) r.then(() => events.push(`${(s - t0).toFixed(1).padStart(7)} +${(performance.now() - s).toFixed(1).padStart(5)}  ${text.replace(/\s+/g, ' ').slice(0, 110)}`), () => {});
  return r;
};
const server = await startTestServer(process.argv[2] as 'postgres');
const headers = { 'service.api-token': server.admin.key, 'content-type': 'application/json', accept: 'application/json' };
const project = (await (await fetch(`${server.url}/api/v1/projects`, { method: 'POST', headers, body: JSON.stringify({ key: 'PRF', name: 'p' }) })).json()) as { id: string };
async function imp() {
  const start = performance.now();
  const r = await fetch(`${server.url}/api/v1/projects/${project.id}/imports`, { method: 'POST', headers: { ...headers, 'content-type': 'application/xml' }, body: junit('a', 20) });
  const acc = (await r.json()) as { id: string };
  events.push(`${(performance.now() - t0).toFixed(1).padStart(7)} POST answered`);
  for (;;) {
    const x = (await (await fetch(`${server.url}/api/v1/projects/${project.id}/imports/${acc.id}`, { headers })).json()) as { status: string };
    if (x.status === 'completed') break;
    await new Promise((res) => setTimeout(res, 5));
  }
  return performance.now() - start;
}
for (let i = 0; i < 5; i++) await imp();
const times: number[] = [];
for (let i = 0; i < 10; i++) times.push(await imp());
t0 = performance.now(); rec = true;
const ms = await imp(); rec = false;
console.log('ms per import', times.map((x) => x.toFixed(0)).join(' '), 'last', ms.toFixed(0));
console.log(events.filter((e) => !e.includes('from "imports" where "id"')).join('\n'));
await server.close(); process.exit(0);
