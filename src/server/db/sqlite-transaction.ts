import {
  type CompiledQuery,
  type ConnectionProvider,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type KyselyPlugin,
  type QueryExecutor,
  type QueryId,
  type QueryResult,
  type RootOperationNode,
  Transaction,
} from 'kysely';

/**
 * A transaction on SQLite's one connection, as Kysely's `db.transaction().execute(work)` runs it
 * (the driver's connection taken in turn, its BEGIN, `work`, its COMMIT, or its ROLLBACK and the
 * error passed on), but with the statements inside it sent straight to the connection. Kysely runs each statement of a
 * transaction through four executor and connection-provider layers of async calls, building two of
 * them anew for every statement: about a twentieth of a one-step results post's server CPU
 * (docs/performance.md). Queries are still built and compiled by Kysely, and `work` gets a real
 * Kysely `Transaction`.
 */
export async function runSqliteTransaction<DB, T>(
  driver: Driver,
  dialect: Dialect,
  db: Kysely<DB>,
  work: (trx: Transaction<DB>) => Promise<T>,
): Promise<T> {
  const base = db.getExecutor();
  // This executor does not transform results: a database with plugins keeps Kysely's transactions.
  if (base.plugins.length > 0) return db.transaction().execute(work);
  const connection = await driver.acquireConnection();
  const executor = new ConnectionExecutor(base, connection);
  try {
    await driver.beginTransaction(connection, {});
    try {
      const result = await work(new Transaction<DB>({ config: { dialect }, dialect, driver, executor }));
      executor.end('committed');
      await driver.commitTransaction(connection);
      return result;
    } catch (error) {
      executor.end('rolled back');
      await driver.rollbackTransaction(connection);
      throw error;
    }
  } finally {
    executor.end('rolled back');
    await driver.releaseConnection(connection);
  }
}

/**
 * The executor of one such transaction: statements go to its connection, everything else (the
 * adapter, compiling) to the database's own executor, which has no plugins. Once the transaction
 * has ended it refuses statements, as Kysely's transactions do.
 */
class ConnectionExecutor implements QueryExecutor {
  private ended: string | undefined;

  constructor(
    private readonly base: QueryExecutor,
    private readonly connection: DatabaseConnection,
  ) {}

  end(how: string): void {
    this.ended ??= how;
  }

  private assertOpen(): void {
    if (this.ended) throw new Error(`Transaction is already ${this.ended}`);
  }

  get adapter() {
    return this.base.adapter;
  }

  get plugins(): ReadonlyArray<KyselyPlugin> {
    return this.base.plugins;
  }

  transformQuery<N extends RootOperationNode>(node: N, queryId: QueryId): N {
    return this.base.transformQuery(node, queryId);
  }

  compileQuery<R = unknown>(node: RootOperationNode, queryId: QueryId): CompiledQuery<R> {
    return this.base.compileQuery(node, queryId);
  }

  executeQuery<R>(compiledQuery: CompiledQuery<R>): Promise<QueryResult<R>> {
    this.assertOpen();
    return this.connection.executeQuery(compiledQuery);
  }

  stream<R>(compiledQuery: CompiledQuery<R>, chunkSize: number): AsyncIterableIterator<QueryResult<R>> {
    this.assertOpen();
    return this.connection.streamQuery(compiledQuery, chunkSize);
  }

  provideConnection<T>(consumer: (connection: DatabaseConnection) => Promise<T>): Promise<T> {
    this.assertOpen();
    return consumer(this.connection);
  }

  withConnectionProvider(connectionProvider: ConnectionProvider): QueryExecutor {
    return this.base.withConnectionProvider(connectionProvider);
  }

  withPlugin(plugin: KyselyPlugin): QueryExecutor {
    return this.base.withConnectionProvider(this).withPlugin(plugin);
  }

  withPlugins(plugins: ReadonlyArray<KyselyPlugin>): QueryExecutor {
    return this.base.withConnectionProvider(this).withPlugins(plugins);
  }

  withPluginAtFront(plugin: KyselyPlugin): QueryExecutor {
    return this.base.withConnectionProvider(this).withPluginAtFront(plugin);
  }

  withoutPlugins(): QueryExecutor {
    return this;
  }
}
