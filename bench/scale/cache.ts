import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { generateScale, type ScaleMeta } from './generate.ts';

// The scale data sets, made once and kept (like F10's seed): keyed by the generator's own code,
// bench/suite.ts (its messages) and the migrations (the schema), and by the number of runs.
// SQLite: a data folder under bench/.cache/, copied for each run. PostgreSQL: a template database
// `attest_scale_<runs>_<hash>` and its blob folder under bench/.cache/; each run makes its copy
// with CREATE DATABASE … TEMPLATE and drops it after.

const META = 'scale-meta.json';
let copies = 0;

export function scaleHash(): string {
  const hash = createHash('sha256');
  const files = [
    'bench/scale/generate.ts',
    'bench/prng.ts',
    'bench/suite.ts',
    ...fs
      .readdirSync('src/server/db/migrations')
      .sort()
      .map((f) => path.join('src/server/db/migrations', f)),
  ];
  for (const file of files) hash.update(file).update(fs.readFileSync(file));
  return hash.digest('hex').slice(0, 10);
}

const urlOf = (base: string, database: string) => {
  const url = new URL(base);
  url.pathname = `/${database}`;
  return url.toString();
};

export interface ScaleCopy {
  meta: ScaleMeta;
  dataDir: string;
  databaseUrl?: string;
  drop(): Promise<void>;
}

/** A working copy of the `runs` set on `dialect`, generated first when it is not kept yet. */
export async function scaleCopy(
  dialect: 'sqlite' | 'postgres',
  runs: number,
  temp: (prefix: string) => string,
  options: { postgresUrl?: string; progress?: (done: number) => void } = {},
): Promise<ScaleCopy> {
  const name = `scale_${runs}_${scaleHash()}`;
  const cache = path.join('bench/.cache', dialect === 'sqlite' ? name : `pg_${name}`);
  fs.mkdirSync('bench/.cache', { recursive: true });
  const postgresUrl = options.postgresUrl ?? process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const template = `attest_${name}`;
  const admin = dialect === 'postgres' ? new pg.Client({ connectionString: postgresUrl }) : undefined;
  await admin?.connect();
  try {
    const exists = admin ? (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [template])).rowCount === 1 : true;
    if (!fs.existsSync(path.join(cache, META)) || !exists) {
      // Older sets of this size (another generator or schema) are only disk space now.
      const prefix = dialect === 'sqlite' ? `scale_${runs}_` : `pg_scale_${runs}_`;
      for (const old of fs.readdirSync('bench/.cache').filter((f) => f.startsWith(prefix)))
        fs.rmSync(path.join('bench/.cache', old), { recursive: true, force: true });
      const building = `${cache}.building`;
      fs.rmSync(building, { recursive: true, force: true });
      let databaseUrl: string | undefined;
      if (admin) {
        const old = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [
          `attest_scale_${runs}_%`,
        ]);
        for (const { datname } of old.rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
        await admin.query(`CREATE DATABASE ${template}_building`);
        databaseUrl = urlOf(postgresUrl, `${template}_building`);
      }
      const meta = await generateScale({ runs, dataDir: building, ...(databaseUrl ? { databaseUrl } : {}), progress: options.progress });
      // The lock file is the server's; a copy gets its own.
      fs.rmSync(path.join(building, 'attest.lock'), { force: true });
      fs.writeFileSync(path.join(building, META), JSON.stringify(meta, null, 2));
      if (admin) await admin.query(`ALTER DATABASE ${template}_building RENAME TO ${template}`);
      fs.renameSync(building, cache);
    }
    const meta = JSON.parse(fs.readFileSync(path.join(cache, META), 'utf8')) as ScaleMeta;
    const dataDir = temp(`attest-scale-${dialect}-`);
    fs.cpSync(cache, dataDir, { recursive: true });
    if (!admin) return { meta, dataDir, drop: async () => {} };
    const copy = `attest_scale_run_${runs}_${process.pid}_${++copies}`;
    await admin.query(`DROP DATABASE IF EXISTS ${copy} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${copy} TEMPLATE ${template}`);
    return {
      meta,
      dataDir,
      databaseUrl: urlOf(postgresUrl, copy),
      drop: async () => {
        const client = new pg.Client({ connectionString: postgresUrl });
        await client.connect();
        await client.query(`DROP DATABASE IF EXISTS ${copy} WITH (FORCE)`);
        await client.end();
      },
    };
  } finally {
    await admin?.end();
  }
}
