/**
 * Stack frames of Node (V8), Vitest, Java and Kotlin, .NET and Python, read line by line; which of
 * them belong to the project (not a dependency, the runtime or the test framework); and project
 * paths made relative, so the same test on a laptop and on CI has the same frames.
 */

// Today's rules are the ones frozen on 2026-12-02 (./rules-2026-12-02/, which migrations 0027 and
// 0029 re-fingerprinted by): to change one, copy its file here first and change the copy; the
// frozen file stays as it is.
export * from './rules-2026-12-02/frames.ts';
