import type { ApiError } from '../../src/client/index.ts';

/** An `assert.rejects` predicate: the call failed with this status and problem code. */
export const isProblem = (status: number, code: string) => (e: ApiError) => e.status === status && e.code === code;

/** The JSON pointer of the first field a 400 names. */
export const firstPointer = (e: ApiError) => (e.problem.errors as { pointer: string }[] | undefined)?.[0]?.pointer;
