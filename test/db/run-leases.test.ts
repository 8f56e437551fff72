import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type RawBuilder, sql } from 'kysely';
import * as runLeases from '../../src/server/db/migrations/2026-11-27-0014-run-leases.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// Migration 0014 adds the indexes of runner claims (SCALE-6): a project's queued runs oldest
// first, for the claim's pick, and leased runs by the end of their lease, for the sweep that
// returns expired ones to the queue. The plans below are those queries' shapes (the claim writes
// its status as a literal, which SQLite needs to use a partial index). Its down migration drops them.

const CLAIM_PICK = sql`SELECT id FROM test_runs WHERE status = 'queued' AND project_id = ${'p'} ORDER BY created_at, id LIMIT 1`;
const LEASE_SWEEP = sql`UPDATE test_runs SET status = 'queued' WHERE status = ${'running'} AND lease_expires_at <= ${'2026-01-01'}`;

for (const dialect of DIALECTS) {
  describe(`[${dialect}] run lease indexes (migration 0014)`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server.close());

    /** The plan of `query` as one line; PostgreSQL is told to avoid scans, which an empty table would otherwise win. */
    async function plan(query: RawBuilder<unknown>): Promise<string> {
      const db = server.app.attest.db;
      if (dialect === 'sqlite') {
        const { rows } = await sql<{ detail: string }>`EXPLAIN QUERY PLAN ${query}`.execute(db);
        return rows.map((row) => row.detail).join('; ');
      }
      return db.transaction().execute(async (trx) => {
        await sql`SET LOCAL enable_seqscan = off`.execute(trx);
        const { rows } = await sql<{ 'QUERY PLAN': string }>`EXPLAIN ${query}`.execute(trx);
        return rows.map((row) => row['QUERY PLAN']).join('; ');
      });
    }

    test("down and up again: the claim's pick and the lease sweep search their partial indexes", async () => {
      const db = server.app.attest.db;
      await runLeases.down(db);
      assert.doesNotMatch(await plan(CLAIM_PICK), /test_runs_claim/);
      assert.doesNotMatch(await plan(LEASE_SWEEP), /test_runs_lease_expiry/);
      await runLeases.up(db);
      assert.match(await plan(CLAIM_PICK), /test_runs_claim/);
      assert.match(await plan(LEASE_SWEEP), /test_runs_lease_expiry/);
    });
  });
}
