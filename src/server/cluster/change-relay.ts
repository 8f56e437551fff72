import type { Change, Changes } from '../changes.ts';
import { encodeNotification, type NotificationBus } from './notification-bus.ts';

/** The topic committed changes travel on. */
export const CHANGES_TOPIC = 'changes';

/** The logger the relay reports failures to (pino's shape). */
interface RelayLog {
  error(object: object, message: string): void;
}

/**
 * Makes `changes` one stream across the instances (SCALE-3): every change a service here emits
 * after its commit is published, and a change published by another instance is emitted here as
 * `fromPeer`, so the same listeners forget the same kept answers, and it is not published again.
 * When the bus (re)connects, changes may have been missed meanwhile: `changes-missed` makes every
 * keeper forget everything.
 */
export function relayChanges(changes: Changes, bus: NotificationBus, log: RelayLog): void {
  changes.on((change, fromPeer) => {
    if (fromPeer || change.kind === 'changes-missed') return;
    bus.publish(CHANGES_TOPIC, fitted(bus.origin, change)).catch((error: unknown) => {
      // The other instances keep what this change made stale until their safety net (the
      // credentials' time to live, the next change, a reconnection) catches it.
      log.error({ err: error, change: change.kind }, 'could not tell the other instances of a change');
    });
  });
  bus.subscribe(CHANGES_TOPIC, (payload) => {
    if (isChange(payload)) changes.emit(payload, true);
  });
  bus.onConnected(() => changes.emit({ kind: 'changes-missed' }, true));
}

/** The change, or, when its ids would not fit in one notification, the same change for everyone. */
function fitted(origin: string, change: Change): Change {
  if (change.kind !== 'access-changed') return change;
  try {
    encodeNotification(origin, CHANGES_TOPIC, change);
    return change;
  } catch {
    return { kind: 'access-changed' };
  }
}

/**
 * Whether a payload is a change this version can act on. An instance of another version (a rolling
 * upgrade) may send a kind this one does not know: the listeners ignore it, as a kind they do not keep.
 */
function isChange(payload: unknown): payload is Change {
  return typeof payload === 'object' && payload !== null && typeof (payload as { kind?: unknown }).kind === 'string';
}
