import fs from 'node:fs';
import path from 'node:path';
import { type Config, loadConfig } from '../server/config.ts';
import { type AppContext, createContext, openBlobStore } from '../server/context.ts';
import { createDatabase, DataFolderBusyError } from '../server/db/database.ts';
import { CliError } from './output.ts';

/**
 * Refuses an embedded instance whose data folder does not exist or holds no database: opening it
 * would create an empty one and report on that. PostgreSQL instances keep their records elsewhere.
 */
export function requireDatabase(config: Config): void {
  if (config.databaseUrl) return;
  const dir = config.dataDir;
  if (!fs.existsSync(dir)) {
    throw new CliError(`the data folder ${dir} does not exist; set ATTEST_DATA_DIR to the folder the server uses`);
  }
  if (!fs.existsSync(path.join(dir, 'attest.db'))) {
    throw new CliError(`${dir} holds no Attest database (no attest.db); set ATTEST_DATA_DIR to the folder the server uses`);
  }
}

/**
 * Opens the configured instance exclusively, as the server does. `whileRunning` says what to do
 * instead when a server holds the data folder (for example the online command that does the same).
 */
export async function openInstance(whileRunning: string) {
  // A maintenance command's statements (a sweep of years of runs, a full verify) may outlast a request's limit.
  const config = { ...loadConfig(), databaseStatementTimeoutMs: 0 };
  requireDatabase(config);
  const database = await createDatabase(config).catch((error: unknown) => {
    if (error instanceof DataFolderBusyError) {
      throw new CliError(`${error.message} A running server holds it: stop the server first, ${whileRunning}.`);
    }
    throw error;
  });
  const blobs = await openBlobStore(config, database, { crashPoint: () => {} });
  return { config, database, blobs };
}

/**
 * Runs `work` with the services' context, for a command that reuses them outside the server (no
 * requests, no logs), then closes the context's link to the other instances: what the command
 * changed is announced to running servers (SCALE-3) before the command closes the database.
 */
export async function withCommandContext<T>(
  instance: Awaited<ReturnType<typeof openInstance>>,
  work: (ctx: AppContext) => Promise<T>,
): Promise<T> {
  const ctx = await createContext(instance.config, { database: instance.database, blobs: instance.blobs });
  try {
    return await work(ctx);
  } finally {
    await ctx.cluster.close();
  }
}
