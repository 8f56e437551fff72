import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ListeningConnection } from '../db/pg-listener.ts';
import { notify } from '../db/repositories/instances.ts';
import type { DB } from '../db/types.ts';
import { decodeNotification, encodeNotification, type NotificationBus } from './notification-bus.ts';

/** The one channel every instance of a database listens on; topics travel in the payload. */
export const CHANNEL = 'attest_notifications';
/** The first wait before listening again after the connection broke; doubled each failed try, up to the longest. */
const FIRST_RETRY_MS = 100;
const LONGEST_RETRY_MS = 5000;
/** How often the listening connection is asked to answer, and how long it may take: a half-open connection hears nothing. */
const HEARTBEAT_MS = 10_000;
const HEARTBEAT_TIMEOUT_MS = 5000;
/** Tries of one publication: its connection may have just broken. */
const PUBLISH_ATTEMPTS = 3;

/** The logger the bus writes to (pino's shape). */
export interface BusLog {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
}

/**
 * The bus on PostgreSQL `LISTEN/NOTIFY` (SCALE-3): no broker, only the database the instances
 * already share. Each instance listens on one dedicated connection of its own (a pooled one would
 * lose its LISTEN when handed back); when that connection breaks it listens again with growing
 * waits, and every (re)connection runs the `onConnected` listeners, since notifications sent
 * meanwhile are lost. A heartbeat query finds a connection that died without a word.
 *
 * Notifications are sent with `pg_notify` by whoever calls `publish` after its write has committed
 * (a NOTIFY inside a transaction would wait for the commit; one outside it goes at once, so a change
 * is never announced before it can be read). They go on the listening connection, which nothing
 * else queues on: on the request pool a revocation would wait behind every request when the pool is
 * saturated, past the second SCALE-3 allows. Only while that connection is being made again (or
 * never made: a command that only publishes) do they take a connection of the pool.
 */
export class PgNotificationBus implements NotificationBus {
  readonly origin = randomUUID();
  readonly #listeners = new Map<string, Set<(payload: unknown) => void>>();
  readonly #connected: (() => void)[] = [];
  readonly #sending = new Set<Promise<void>>();
  #client: ListeningConnection | undefined;
  #retryMs = FIRST_RETRY_MS;
  #retry: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(
    private readonly databaseUrl: string,
    private readonly db: DB,
    private readonly log: BusLog,
  ) {}

  async publish(topic: string, payload: unknown): Promise<void> {
    const text = encodeNotification(this.origin, topic, payload);
    const sending = this.#send(text).finally(() => this.#sending.delete(sending));
    this.#sending.add(sending);
    await sending;
  }

  async #send(text: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const client = this.#client;
        if (client) await client.notify(CHANNEL, text);
        else await notify(this.db, CHANNEL, text);
        return;
      } catch (error) {
        if (attempt >= PUBLISH_ATTEMPTS) throw error;
        await sleep(100 * attempt);
      }
    }
  }

  subscribe(topic: string, listener: (payload: unknown) => void): () => void {
    let listeners = this.#listeners.get(topic);
    if (!listeners) {
      listeners = new Set();
      this.#listeners.set(topic, listeners);
    }
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  onConnected(listener: () => void): void {
    this.#connected.push(listener);
  }

  /** Listens; fails when the first connection does (the server does not start without it). */
  async start(): Promise<void> {
    await this.#listen();
    this.#heartbeat = setInterval(() => void this.#checkConnection(), HEARTBEAT_MS);
    this.#heartbeat.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    clearInterval(this.#heartbeat);
    await Promise.allSettled([...this.#sending]);
    const client = this.#client;
    this.#client = undefined;
    await client?.end();
  }

  /** The backend process of the listening connection (an administrator, or a test, may end it). */
  get listenerPid(): number | undefined {
    return this.#client?.processID;
  }

  async #listen(): Promise<void> {
    let opened: ListeningConnection | undefined;
    const client = await ListeningConnection.open(this.databaseUrl, `attest notifications ${this.origin}`, CHANNEL, {
      onNotification: (payload) => this.#deliver(payload),
      onLost: (error) => {
        if (opened !== undefined) this.#lost(opened, error);
      },
    });
    opened = client;
    if (this.#closed) {
      await client.end();
      return;
    }
    this.#client = client;
    this.#retryMs = FIRST_RETRY_MS;
    for (const listener of this.#connected) listener();
  }

  #deliver(text: string | undefined): void {
    const envelope = decodeNotification(text);
    if (envelope === undefined || envelope.o === this.origin) return;
    for (const listener of this.#listeners.get(envelope.t) ?? []) {
      try {
        listener(envelope.p);
      } catch (error) {
        this.log.error({ err: error, topic: envelope.t }, 'a notification listener failed');
      }
    }
  }

  /** The listening connection broke (or never answered): listen again on a new one. */
  #lost(client: ListeningConnection, error?: Error): void {
    if (client !== this.#client) return;
    this.#client = undefined;
    void client.end();
    if (this.#closed) return;
    this.log.warn(
      { err: error },
      'the connection listening for other instances broke; listening again, and forgetting what they may have changed',
    );
    this.#listenLater();
  }

  #listenLater(): void {
    const wait = this.#retryMs;
    this.#retryMs = Math.min(wait * 2, LONGEST_RETRY_MS);
    this.#retry = setTimeout(() => {
      this.#listen().catch((error: unknown) => {
        this.log.warn({ err: error, retryInMs: this.#retryMs }, 'cannot listen for other instances yet');
        if (!this.#closed) this.#listenLater();
      });
    }, wait);
    this.#retry.unref();
  }

  async #checkConnection(): Promise<void> {
    const client = this.#client;
    if (client === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    const silent = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer in ${HEARTBEAT_TIMEOUT_MS} ms`)), HEARTBEAT_TIMEOUT_MS);
    });
    try {
      await Promise.race([client.ping(), silent]);
    } catch (error) {
      this.#lost(client, error as Error);
    } finally {
      clearTimeout(timer);
    }
  }
}
