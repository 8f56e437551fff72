import { Type } from 'typebox';

// Run states live apart from runs.ts so the results contract can use them and runs.ts can embed
// the results body (one-call finished runs) without an import cycle.

export const RunStatus = Type.Union([Type.Literal('queued'), Type.Literal('running'), Type.Literal('completed'), Type.Literal('aborted')]);
export const Verdict = Type.Union([Type.Literal('passed'), Type.Literal('failed'), Type.Literal('broken'), Type.Literal('skipped')]);
