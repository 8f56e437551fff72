import pg from 'pg';

/** What a listening connection reports: each notification's payload, and its own end (`error` when it broke with one). */
export interface ListenerEvents {
  onNotification(payload: string | undefined): void;
  onLost(error?: Error): void;
}

/**
 * One dedicated PostgreSQL connection listening on a notification channel (SCALE-3). It is a
 * driver-level connection, not a Kysely pool, because `LISTEN` belongs to one connection: a pooled
 * one would lose it when handed back. So its three statements live here, beside the pools, and
 * not in `repositories/`: `LISTEN`, `pg_notify` on this connection (which nothing else queues on),
 * and the heartbeat `SELECT 1`. What to do when it breaks (listen again, forget what was kept) is
 * the caller's (`cluster/pg-notification-bus.ts`).
 */
export class ListeningConnection {
  private constructor(private readonly client: pg.Client) {}

  /** Connects and listens on `channel`; fails when either does, leaving nothing open. */
  static async open(databaseUrl: string, applicationName: string, channel: string, events: ListenerEvents): Promise<ListeningConnection> {
    const client = new pg.Client({ connectionString: databaseUrl, application_name: applicationName, keepAlive: true });
    client.on('notification', (message) => events.onNotification(message.payload));
    client.on('error', (error) => events.onLost(error));
    client.on('end', () => events.onLost());
    try {
      await client.connect();
      await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    return new ListeningConnection(client);
  }

  /** Sends `payload` on `channel` through this connection. */
  async notify(channel: string, payload: string): Promise<void> {
    await this.client.query('SELECT pg_notify($1, $2)', [channel, payload]);
  }

  /** Asks the connection to answer (a half-open connection hears nothing and answers nothing). */
  async ping(): Promise<void> {
    await this.client.query('SELECT 1');
  }

  /** The backend process of the connection (an administrator, or a test, may end it). */
  get processID(): number | undefined {
    return (this.client as pg.Client & { processID?: number }).processID;
  }

  async end(): Promise<void> {
    await this.client.end().catch(() => {});
  }
}
