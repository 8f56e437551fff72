import { randomUUID } from 'node:crypto';

/**
 * Notifications between the instances of one service (SCALE-3): an instance publishes a small JSON
 * payload under a topic, and every other instance's subscribers of that topic get it. An instance
 * never hears its own notifications (it acts on its own news itself): each carries the id of the
 * instance that sent it, and the echo is dropped.
 *
 * Delivery is at most once: a notification sent while an instance's connection was down is lost
 * to it. So `onConnected` listeners run on every (re)connection, and whoever keeps anything
 * another instance may change forgets it there (the change relay forgets every kept answer; a
 * task runner looks for work).
 */
export interface NotificationBus {
  /** This instance's id, carried by everything it publishes. */
  readonly origin: string;
  /** Sends `payload` (JSON, under `MAX_NOTIFICATION_BYTES` with its envelope) to the other instances' subscribers of `topic`. */
  publish(topic: string, payload: unknown): Promise<void>;
  /** Listens to `topic`; the answer stops listening. */
  subscribe(topic: string, listener: (payload: unknown) => void): () => void;
  /** Runs `listener` on every (re)connection: notifications may have been missed before it. */
  onConnected(listener: () => void): void;
  /** Starts listening (the server; a command that only publishes never does). */
  start(): Promise<void>;
  /** Stops listening, after the notifications being sent are out. */
  close(): Promise<void>;
}

/** PostgreSQL refuses a NOTIFY payload of 8000 bytes or more. */
export const MAX_NOTIFICATION_BYTES = 7999;

/** A notification as it travels: origin, topic, payload. */
interface Envelope {
  o: string;
  t: string;
  p: unknown;
}

/** The text of a notification; a payload too large for PostgreSQL is a programming error, refused on every database alike. */
export function encodeNotification(origin: string, topic: string, payload: unknown): string {
  const text = JSON.stringify({ o: origin, t: topic, p: payload } satisfies Envelope);
  if (Buffer.byteLength(text) > MAX_NOTIFICATION_BYTES) {
    throw new RangeError(`a notification on ${topic} takes ${Buffer.byteLength(text)} bytes; at most ${MAX_NOTIFICATION_BYTES} travel`);
  }
  return text;
}

/** The envelope of a notification's text, or undefined for anything else (another program's on the channel). */
export function decodeNotification(text: string | undefined): Envelope | undefined {
  try {
    const envelope = JSON.parse(text ?? '') as Partial<Envelope> | null;
    return typeof envelope?.o === 'string' && typeof envelope.t === 'string' ? (envelope as Envelope) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The bus of an instance that has no others (SQLite: one process owns the data folder, DUR-3):
 * publishing checks the payload as PostgreSQL would and reaches nobody; it is connected from the start.
 */
export class SingleInstanceBus implements NotificationBus {
  readonly origin = randomUUID();

  async publish(topic: string, payload: unknown): Promise<void> {
    encodeNotification(this.origin, topic, payload);
  }

  subscribe(): () => void {
    return () => {};
  }

  onConnected(): void {}

  async start(): Promise<void> {}

  async close(): Promise<void> {}
}
