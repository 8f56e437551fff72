import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { hearConnectionErrors } from './pg-pool.ts';
import type { Database, DB } from './types.ts';

/**
 * PostgreSQL: two connections of the background task runner's own (SCALE-5), for claiming tasks
 * and renewing leases. A lease renewal must never wait behind the request pool: a burst of
 * uploads holding all ten connections would otherwise let a healthy import's lease run out and
 * another instance start it again. The idle runner's poll is not a request's statement either,
 * so it stays out of the handle's statement count. Connections open on first use and close with
 * `destroy()`. The task's own work (an import's batches) runs on the main pool as any other write.
 *
 * A connection that cannot open in 2 s, a statement that runs 5 s (PostgreSQL cancels it) or gets
 * no answer in 6 s (a database that stopped answering) fails: the runner logs it and looks again
 * at its next poll, a lease it could not renew runs out, and stopping the runner never hangs.
 */
export function openLeaseConnections(databaseUrl: string, onConnectionLost: (error: Error) => void): DB {
  return openOwnConnections(databaseUrl, 2, onConnectionLost);
}

/**
 * A few PostgreSQL connections of a part's own, off the request pool, with the bounds above (2 s
 * to open, 5 s to run, 6 s to be answered): the task runner's two, and the shared limits' three
 * (`cluster/pg-shared-counts.ts`), so a flood of failed keys never waits for the request pool.
 */
export function openOwnConnections(databaseUrl: string, max: number, onConnectionLost: (error: Error) => void): DB {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    connectionTimeoutMillis: 2000,
    statement_timeout: 5000,
    query_timeout: 6000,
  });
  // Without a listener a connection's error is an uncaught exception that ends the process.
  hearConnectionErrors(pool, onConnectionLost);
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}
