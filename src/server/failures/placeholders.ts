/**
 * The rules that turn the parts of an error message that change from run to run into placeholders,
 * each one a function of the text alone. Order matters: URLs first (their numbers become path
 * placeholders, their query goes), then paths, ids, times and durations, addresses, hex, and
 * finally any number left.
 */

// Today's rules are the ones frozen on 2026-12-02 (./rules-2026-12-02/, which migrations 0027 and
// 0029 re-fingerprinted by): to change one, copy its file here first and change the copy; the
// frozen file stays as it is.
export * from './rules-2026-12-02/placeholders.ts';
