import { sql } from 'kysely';
import type { Executor } from '../types.ts';

// What the instances of one service share through their PostgreSQL database, beside its tables:
// its name and its notification channels (SCALE-3). PostgreSQL only.

/** The database's name, which every instance of the service shares and another service does not. */
export async function databaseName(executor: Executor): Promise<string> {
  const { rows } = await sql<{ name: string }>`SELECT current_database() AS name`.execute(executor);
  return rows[0]?.name as string;
}

/** Sends `payload` on `channel` to every connection listening on it, at once (outside a transaction). */
export async function notify(executor: Executor, channel: string, payload: string): Promise<void> {
  await sql`SELECT pg_notify(${channel}, ${payload})`.execute(executor);
}
