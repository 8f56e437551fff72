import pg from 'pg';
const c = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
await c.connect();
await c.query('CREATE TEMP TABLE IF NOT EXISTS x (a int)');
await c.query('CREATE TABLE IF NOT EXISTS pgimport_scratch_fsync (a int)');
for (const mode of ['on', 'off', 'on', 'off']) {
  const t = performance.now();
  for (let i = 0; i < 200; i++) {
    await c.query('BEGIN');
    if (mode === 'off') await c.query("SET LOCAL synchronous_commit = off");
    await c.query('INSERT INTO pgimport_scratch_fsync VALUES (1)');
    await c.query('COMMIT');
  }
  console.log(mode, ((performance.now() - t) / 200).toFixed(2), 'ms per tx');
}
const t = performance.now();
for (let i = 0; i < 200; i++) await c.query('SELECT 1');
console.log('round trip', ((performance.now() - t) / 200).toFixed(3), 'ms');
await c.query('DROP TABLE pgimport_scratch_fsync');
await c.end();
