import type pg from 'pg';

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
