import pg from 'pg';
import { startTestServer } from '../../test/helpers/server.ts';
const STACK = Array.from({ length: 12 }, (_, i) => `    at com.example.Frame${i}.call(Frame${i}.java:${40 + i})`).join('\n');
function junit(round: string, cases: number): Buffer {
  const out: string[] = [];
  for (let c = 0; c < cases; c++) {
    const failure = c % 7 === 0 ? `<failure message="expected 200 (${c % 13})" type="AssertionError">${STACK}</failure>` : '';
    out.push(`<testcase classname="com.example.r${round}.Suite${Math.floor(c / 100)}" name="case ${c}" time="0.012">${failure}<system-out>case ${c} ran</system-out></testcase>`);
  }
  return Buffer.from(`<?xml version="1.0"?><testsuites><testsuite name="s${round}" tests="${cases}">${out.join('')}</testsuite></testsuites>`);
}
const server = await startTestServer('postgres');
const headers = { 'service.api-token': server.admin.key, 'content-type': 'application/json', accept: 'application/json' };
const project = (await (await fetch(`${server.url}/api/v1/projects`, { method: 'POST', headers, body: JSON.stringify({ key: 'PRF', name: 'p' }) })).json()) as { id: string };
async function imp(round: string) {
  const r = await fetch(`${server.url}/api/v1/projects/${project.id}/imports`, { method: 'POST', headers: { ...headers, 'content-type': 'application/xml' }, body: junit(round, 5000) });
  const acc = (await r.json()) as { id: string };
  for (;;) {
    const rec = (await (await fetch(`${server.url}/api/v1/projects/${project.id}/imports/${acc.id}`, { headers })).json()) as { status: string; jobId: string };
    if (rec.status === 'completed') return rec.jobId;
    await new Promise((res) => setTimeout(res, 50));
  }
}
const jobId = await imp('a');
await imp('a');
const c = new pg.Client({ connectionString: server.config.databaseUrl });
await c.connect();
if (process.env.ANALYZE) await c.query('ANALYZE');
const cols = (await c.query(`select string_agg(column_name, ', ' order by ordinal_position) s from information_schema.columns where table_name='test_runs' and is_generated = 'NEVER'`)).rows[0].s as string;
const sel = cols.split(', ').map((k) => (k === 'id' ? `gen_random_uuid()::text` : k === 'idempotency_key' ? `'x' || id` : k)).join(', ');
const plans: string[] = [];
if (process.env.NESTED) for (const q of ["LOAD 'auto_explain'", 'SET auto_explain.log_min_duration = 0', 'SET auto_explain.log_nested_statements = on', 'SET auto_explain.log_analyze = on']) await c.query(q);
for (let i = 0; i < 3; i++) {
  await c.query('BEGIN');
  const r = await c.query(`EXPLAIN (ANALYZE, BUFFERS off) INSERT INTO test_runs (${cols}) SELECT ${sel} FROM test_runs WHERE job_id = $1 ORDER BY id LIMIT 250 OFFSET ${i * 250}`, [jobId]);
  plans.push(r.rows.map((x) => x['QUERY PLAN']).join('\n'));
  await c.query('ROLLBACK');
}
console.log(plans.at(-1));
await c.end(); await server.close(); process.exit(0);
