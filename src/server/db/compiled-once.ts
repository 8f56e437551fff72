import type { Compilable, CompiledQuery } from 'kysely';
import { dialectOf } from './dialect.ts';
import type { Dialect, Executor } from './types.ts';

/**
 * A one-row read that a hot path runs on every request, built and compiled once per dialect and
 * then run with each call's values. On the device read, Kysely's builder and compiler cost about as
 * much CPU as SQLite's lookup itself (docs/performance.md); the SQL and the driver are unchanged.
 * `build` gets placeholder values for its parameters and must pass each one to the query as a value.
 */
export function compiledOnce<P extends string[], R>(
  build: (executor: Executor, ...params: P) => Compilable<R>,
): (executor: Executor, ...params: P) => Promise<R | undefined> {
  const compiled = new Map<Dialect, { query: CompiledQuery<R>; slots: (number | undefined)[] }>();
  return async (executor, ...params) => {
    const dialect = dialectOf(executor);
    let entry = compiled.get(dialect);
    if (!entry) {
      const placeholders = params.map((_, i) => `\u0000compiled-once-${i}\u0000`) as P;
      const query = build(executor, ...placeholders).compile();
      // Which call value goes into each parameter; any other parameter (a LIMIT) stays as compiled.
      const slots = query.parameters.map((value) => {
        const index = placeholders.indexOf(value as string);
        return index < 0 ? undefined : index;
      });
      if (placeholders.some((_, i) => !slots.includes(i))) throw new Error('compiledOnce: every parameter must be a query value');
      entry = { query, slots };
      compiled.set(dialect, entry);
    }
    const { query, slots } = entry;
    const parameters = query.parameters.map((value, i) => {
      const slot = slots[i];
      return slot === undefined ? value : params[slot];
    });
    const result = await executor.executeQuery<R>({ ...query, parameters });
    return result.rows[0];
  };
}
