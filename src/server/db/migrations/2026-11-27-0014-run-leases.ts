import { type Kysely, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// Runners claim queued runs under a lease (SCALE-6). The lease columns are as old as the table
// (`test_runs.lease_owner`, the runner's name, and `lease_expires_at`); this adds the indexes of
// the two queries that use them, both partial, so each holds only the rows its query looks for:
// - `test_runs_claim`: a project's queued runs, oldest first: a claim takes the first it may serve.
// - `test_runs_lease_expiry`: leased runs by status and the end of their lease: the sweep that
//   returns the running ones whose lease ended to the queue. Only a claimed run that is still
//   running has a lease; finishing it or returning it to the queue ends the lease.
// SQLite uses a partial index only when the query repeats its condition with the same constant (a
// bound parameter does not count), so the claim writes `status = 'queued'` as a literal; any
// comparison of `lease_expires_at` implies IS NOT NULL on both databases. `status` leads the
// second index because SQLite, without statistics, prefers an equality on `test_runs_queue
// (status, created_at)` to a range on `lease_expires_at` alone.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await sql`CREATE INDEX test_runs_claim ON test_runs (project_id, created_at, id) WHERE status = 'queued'`.execute(db);
  await sql`CREATE INDEX test_runs_lease_expiry ON test_runs (status, lease_expires_at) WHERE lease_expires_at IS NOT NULL`.execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('test_runs_lease_expiry').ifExists().execute();
  await db.schema.dropIndex('test_runs_claim').ifExists().execute();
}
