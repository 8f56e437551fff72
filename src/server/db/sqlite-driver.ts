import type SQLite from 'better-sqlite3';
import {
  CompiledQuery,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  type QueryResult,
  SelectQueryNode,
  SqliteAdapter,
  SqliteDialect,
  type TransactionSettings,
} from 'kysely';

/** How many prepared statements the connection keeps; the application sends far fewer distinct SQL texts. */
export const STATEMENT_CACHE_SIZE = 300;

export interface CachingSqliteOptions {
  database: SQLite.Database;
  /** Bound of the statement cache (least recently used statements go first). */
  cacheSize?: number;
  /** Called after a statement that committed: an autocommit write, or the end of the outer transaction. */
  onCommit?: () => void;
  /**
   * Called before each statement the connection runs (transaction control included), as Kysely's
   * query log would be: counted here, the log's wrapper of two more async calls and two clock
   * reads around every statement is not needed (docs/performance.md).
   */
  onStatement?: () => void;
}

/** A prepared statement, and for a reader the function that turns its raw rows into objects. */
export interface CachedStatement {
  statement: SQLite.Statement;
  /** Set for statements that return rows: they run in raw mode, and this builds each row's object. */
  toObject?: (values: unknown[]) => unknown;
}

/**
 * Prepared statements by SQL text, least recently used first out. A Map keeps insertion order, so
 * moving a hit to the end and evicting the first key is the whole LRU. better-sqlite3 finalises an
 * evicted statement when it is garbage-collected.
 */
export class StatementCache {
  private readonly statements = new Map<string, CachedStatement>();

  constructor(
    private readonly database: SQLite.Database,
    readonly capacity: number,
  ) {}

  get size(): number {
    return this.statements.size;
  }

  /** The cached statement for `sql`, if any, without preparing it or counting a use (tests). */
  peek(sql: string): CachedStatement | undefined {
    return this.statements.get(sql);
  }

  /** The SQL texts held, least recently used first (tests). */
  texts(): string[] {
    return [...this.statements.keys()];
  }

  /**
   * Forgets every statement: after a schema change (ALTER, CREATE, DROP) a reader prepared before it
   * may return other columns, or the same ones in another order, than its row function was made for.
   */
  clear(): void {
    this.statements.clear();
  }

  /** The statement for `sql`, prepared on first use. A text that fails to prepare throws and is not kept. */
  get(sql: string): CachedStatement {
    const cached = this.statements.get(sql);
    if (cached) {
      this.statements.delete(sql);
      this.statements.set(sql, cached);
      return cached;
    }
    const entry = prepared(this.database.prepare(sql));
    if (this.statements.size >= this.capacity) {
      const oldest = this.statements.keys().next().value as string;
      this.statements.delete(oldest);
    }
    this.statements.set(sql, entry);
    return entry;
  }
}

/**
 * A reader runs in raw mode (rows as arrays) and its rows become objects through a function made
 * for its columns: one object literal, so every row of a statement gets the same shape at once.
 * better-sqlite3's own objects are built a property at a time from C++, each column name made
 * anew: a 22-column row took 9.2 µs that way against 4.5 µs here (docs/performance.md). Duplicate
 * column names keep the last value, as better-sqlite3's objects do. A column named `__proto__`
 * would set the literal's prototype, so such a statement keeps better-sqlite3's objects.
 */
function prepared(statement: SQLite.Statement): CachedStatement {
  if (!statement.reader) return { statement };
  const names = statement.columns().map((column) => column.name);
  if (names.includes('__proto__')) return { statement };
  const fields = names.map((name, i) => `${JSON.stringify(name)}: values[${i}]`);
  const toObject = new Function('values', `return { ${fields.join(', ')} };`) as (values: unknown[]) => unknown;
  return { statement: statement.raw(true), toObject };
}

/**
 * A statement whose LIMIT is a bound parameter costs SQLite several microseconds more on every run
 * than the same statement with the number written in (measured: a one-row primary-key read 3.8 µs
 * against 9.9 µs, the image read's three-table join 4.7 µs against 20 µs; OFFSET ? costs nothing).
 * Kysely binds every `.limit(n)`, so a query whose text ends in `limit ?` (or `limit ? offset ?`)
 * runs with the limit inlined when it is a non-negative safe integer; anything else runs as sent.
 * Each distinct limit is its own cached statement: page sizes are few.
 */
export function inlineLimit(sql: string, parameters: readonly unknown[]): { sql: string; parameters: readonly unknown[] } {
  const withOffset = sql.endsWith(' limit ? offset ?');
  if (!withOffset && !sql.endsWith(' limit ?')) return { sql, parameters };
  const at = parameters.length - (withOffset ? 2 : 1);
  const limit = parameters[at];
  const n = typeof limit === 'bigint' ? limit : typeof limit === 'number' && Number.isSafeInteger(limit) ? BigInt(limit) : undefined;
  if (n === undefined || n < 0n) return { sql, parameters };
  const head = sql.slice(0, sql.length - (withOffset ? ' limit ? offset ?'.length : ' limit ?'.length));
  const rest = parameters.slice(0, at);
  if (withOffset) rest.push(parameters[at + 1]);
  return { sql: `${head} limit ${n}${withOffset ? ' offset ?' : ''}`, parameters: rest };
}

/**
 * Marks a compiled single-row INSERT that is to run once for each row of values in one go
 * (`insertRows` on SQLite): one statement prepared once, run in a loop, instead of Kysely building
 * and SQLite preparing a statement of thousands of value groups. Within a transaction the rows
 * join it; outside one they commit together.
 */
export const EACH_ROW = Symbol('attest.sqlite.eachRow');
export type EachRowQuery = CompiledQuery & { [EACH_ROW]: readonly (readonly unknown[])[] };

const SCHEMA_CHANGE = /^\s*(alter|create|drop)\s/i;

class CachingSqliteConnection implements DatabaseConnection {
  constructor(
    private readonly database: SQLite.Database,
    readonly statements: StatementCache,
    private readonly onCommit: () => void,
    private readonly onStatement: () => void,
  ) {}

  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    this.onStatement();
    const eachRow = (compiledQuery as Partial<EachRowQuery>)[EACH_ROW];
    if (eachRow) return Promise.resolve(this.runEachRow(compiledQuery.sql, eachRow));
    const { sql, parameters } = inlineLimit(compiledQuery.sql, compiledQuery.parameters);
    const { statement, toObject } = this.statements.get(sql);
    const wasInTransaction = this.database.inTransaction;
    let result: QueryResult<R>;
    if (toObject && sql.endsWith(' limit 1')) {
      // At most one row: `get` builds no result array.
      const values = statement.get(parameters as unknown[]) as unknown[] | undefined;
      result = { rows: values === undefined ? [] : [toObject(values) as R] };
    } else if (toObject) {
      const rows = statement.all(parameters as unknown[]) as unknown[][];
      result = { rows: rows.map(toObject) as R[] };
    } else if (statement.reader) {
      result = { rows: statement.all(parameters as unknown[]) as R[] };
    } else {
      const { changes, lastInsertRowid } = statement.run(parameters as unknown[]);
      // A schema change (a migration, or a test migrating a live database down and up): statements
      // prepared before it are prepared again, so no reader maps its columns by the old layout.
      if (SCHEMA_CHANGE.test(sql)) this.statements.clear();
      result = {
        numAffectedRows: changes !== undefined && changes !== null ? BigInt(changes) : undefined,
        insertId: lastInsertRowid !== undefined && lastInsertRowid !== null ? BigInt(lastInsertRowid) : undefined,
        rows: [],
      };
    }
    // A commit: a transaction just ended (COMMIT, or RELEASE of the outer savepoint; a ROLLBACK is
    // counted too, which costs one needless sync at most), or a statement that may write ran
    // outside any (an autocommit write; `readonly` rather than `reader`, since INSERT … RETURNING
    // is a reader that writes).
    if (!this.database.inTransaction && (wasInTransaction || !statement.readonly)) this.onCommit();
    return Promise.resolve(result);
  }

  private runEachRow<R>(sql: string, rows: readonly (readonly unknown[])[]): QueryResult<R> {
    const { statement } = this.statements.get(sql);
    let changes = 0;
    const runAll = () => {
      for (const values of rows) changes += statement.run(values as unknown[]).changes;
    };
    if (this.database.inTransaction) {
      runAll();
    } else {
      this.database.transaction(runAll)();
      this.onCommit();
    }
    return { numAffectedRows: BigInt(changes), rows: [] };
  }

  async *streamQuery<R>(compiledQuery: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(compiledQuery.query)) throw new Error('Sqlite driver only supports streaming of select queries');
    this.onStatement();
    // Prepared apart from the cache: an open iterator keeps its statement busy until it ends.
    const statement = this.database.prepare(compiledQuery.sql);
    for (const row of statement.iterate(compiledQuery.parameters as unknown[])) yield { rows: [row as R] };
  }
}

// Transaction control, compiled once: every transaction runs two of them.
const BEGIN = CompiledQuery.raw('begin');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');

/** Kysely's own SQLite driver, except that statements are prepared once and reused, and commits are reported. */
class CachingSqliteDriver implements Driver {
  private readonly connection: CachingSqliteConnection;
  readonly statements: StatementCache;
  /** One connection: a caller waits until the one before it released it (Kysely's own mutex, as a promise chain). */
  private queue: Promise<void> = Promise.resolve();
  private release: (() => void) | undefined;

  constructor(private readonly options: CachingSqliteOptions) {
    this.statements = new StatementCache(options.database, options.cacheSize ?? STATEMENT_CACHE_SIZE);
    const none = () => {};
    this.connection = new CachingSqliteConnection(options.database, this.statements, options.onCommit ?? none, options.onStatement ?? none);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    const previous = this.queue;
    let release!: () => void;
    this.queue = new Promise<void>((resolve) => {
      release = resolve;
    });
    await previous;
    this.release = release;
    return this.connection;
  }

  async beginTransaction(connection: DatabaseConnection, _settings: TransactionSettings): Promise<void> {
    await connection.executeQuery(BEGIN);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(COMMIT);
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(ROLLBACK);
  }

  async savepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`savepoint ${quoteIdentifier(name)}`));
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`rollback to ${quoteIdentifier(name)}`));
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`release ${quoteIdentifier(name)}`));
  }

  async releaseConnection(): Promise<void> {
    const release = this.release;
    this.release = undefined;
    release?.();
  }

  async destroy(): Promise<void> {
    this.options.database.close();
  }
}

const quoteIdentifier = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Kysely's SQLite adapter, except that it says SQLite's DDL is transactional, which it is: the
 * Migrator then applies all pending migrations and records them in one transaction. Without it a
 * crash inside a migration (one that rebuilds a table between its DROP and its RENAME) would leave
 * the schema half changed, the data gone, or a migration that cannot run again.
 */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

/** SqliteDialect with the statement-caching driver and transactional migrations; the compiler and introspector stay Kysely's. */
export class CachingSqliteDialect extends SqliteDialect {
  /** The driver made last (one Kysely instance per dialect): its statement cache is what tests inspect. */
  private driver: CachingSqliteDriver | undefined;

  constructor(private readonly options: CachingSqliteOptions) {
    super({ database: options.database });
  }

  override createDriver(): Driver {
    this.driver = new CachingSqliteDriver(this.options);
    return this.driver;
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }

  /** The statement cache of the driver made last (tests: what SQL texts ran, and how). */
  get statements(): StatementCache | undefined {
    return this.driver?.statements;
  }
}
