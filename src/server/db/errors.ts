/** True for a unique-constraint violation on either dialect (PostgreSQL 23505, SQLite CONSTRAINT_UNIQUE/PRIMARYKEY). */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  return (
    e.code === '23505' ||
    e.code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    e.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' ||
    /UNIQUE constraint failed/.test(e.message ?? '')
  );
}

/** True for a foreign-key violation on either dialect (PostgreSQL 23503, SQLite CONSTRAINT_FOREIGNKEY). */
export function isForeignKeyViolation(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  return e.code === '23503' || e.code === 'SQLITE_CONSTRAINT_FOREIGNKEY' || /FOREIGN KEY constraint failed/.test(e.message ?? '');
}

/** Node's socket errors for a peer that is gone, refuses, or is unreachable. */
const SOCKET_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * True when a statement failed because the database could not be reached or did not answer in time,
 * not because of the statement (DUR-15): a refused or broken connection, no connection within the
 * pool's time, no answer within the statement's, PostgreSQL shutting down or out of connections
 * (SQLSTATE class 08, 57P01–57P03, 53300), a statement it cancelled (57014), an SQLite file still
 * locked after its busy timeout. Such a failure is a 503
 * with Retry-After, and never counts as a failed authentication.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  if (typeof e !== 'object' || e === null) return false;
  const code = typeof e.code === 'string' ? e.code : '';
  if (SOCKET_ERRORS.has(code) || code === 'SQLITE_BUSY') return true;
  if (/^08...$/.test(code) || ['57P01', '57P02', '57P03', '53300', '57014'].includes(code)) return true;
  // pg's own errors carry no code: the pool's and the client's time limits, and a connection that ended.
  const message = typeof e.message === 'string' ? e.message : '';
  return /^(timeout exceeded when trying to connect|Query read timeout|Connection terminated|Client has encountered a connection error)/.test(
    message,
  );
}
