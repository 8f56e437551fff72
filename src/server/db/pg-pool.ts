import type pg from 'pg';
import type { Config } from '../config.ts';

/**
 * Hears every error of a pool's connections, idle or in use (DUR-15). pg-pool listens to an idle
 * connection only: one that breaks while checked out (the database restarted, cut off, its proxy
 * gone) emits `error` with no listener after its query has already failed, and an unheard `error`
 * ends the process. The query's own rejection still reaches whoever ran it.
 */
export function hearConnectionErrors(pool: pg.Pool, onError: (error: Error) => void): void {
  pool.on('error', onError);
  pool.on('connect', (client) => client.on('error', onError));
}

/**
 * The request pool's bounds on a database that stops answering (DUR-15): a connection that cannot be
 * had (opened, or free in the pool) within `ATTEST_DB_CONNECT_TIMEOUT_MS`, a statement PostgreSQL runs
 * past `ATTEST_DB_STATEMENT_TIMEOUT_MS` (it cancels it) or that gets no answer a second after that
 * (a database cut off the network, which cannot even cancel) fails, and becomes a 503 with
 * Retry-After (`isDatabaseUnavailable`). TCP keepalive finds an idle connection whose peer is gone.
 * A statement timeout of 0 (the maintenance commands) leaves statements unbounded.
 */
export function poolLimits(config: Pick<Config, 'databaseConnectTimeoutMs' | 'databaseStatementTimeoutMs'>) {
  const statement = config.databaseStatementTimeoutMs;
  return {
    connectionTimeoutMillis: config.databaseConnectTimeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    ...(statement > 0 ? { statement_timeout: statement, query_timeout: statement + 1000 } : {}),
  };
}
