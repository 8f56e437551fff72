import { createHook } from 'node:async_hooks';

/** The one tick object kept for the life of the process; never read, only held. */
let keptTickObject: object | undefined;

/**
 * Keeps one of Node's own `process.nextTick` queue entries alive for the life of the process, so
 * that the hidden classes (V8 maps) of those entries never die.
 *
 * Node 20 builds each entry as an object literal: two symbol-keyed async ids, `callback`, `args`.
 * Between ticks no entry is alive, so a full garbage collection that runs while the queue is empty
 * collects the maps of that literal; the next `nextTick` builds new ones, and after a few such
 * collections the literal's property definitions in `nextTick` are megamorphic for good. Each
 * `nextTick` then costs about 0.5 µs instead of 0.03–0.08 µs (measured in a bare Node process with
 * idle full collections), and Node calls it several times per HTTP request (the end of the request
 * stream, the socket write, the response's finish). A server goes there during start-up (route
 * and schema compilation runs full collections) or at its first idle collection: in Attest the
 * runtime call behind it was 7.5% of a conditional image read's CPU (docs/performance.md).
 *
 * Holding one entry keeps its map, and through its back pointers every map of the literal, alive:
 * the definitions stay monomorphic. The entry is caught with an `init` hook that is enabled for one
 * `nextTick` call and disabled at once, so no hook runs afterwards. Idempotent.
 */
export function keepTickObjectShape(): void {
  if (keptTickObject) return;
  const hook = createHook({
    init(_asyncId, type, _triggerAsyncId, resource) {
      if (type === 'TickObject' && keptTickObject === undefined) keptTickObject = resource;
    },
  });
  hook.enable();
  try {
    process.nextTick(() => {});
  } finally {
    hook.disable();
  }
}

/** Whether a tick object is held (tests). */
export const tickObjectKept = (): boolean => keptTickObject !== undefined;
