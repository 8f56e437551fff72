import { ApiError } from '../../src/client/index.ts';

/**
 * The API's words about each field of a refused form: a 400's `errors` (`/body/name`,
 * `/query/branch`, `/body/options/branch`) by the field's own name, the pointer's last segment, so a
 * form shows each problem next to its field. `form` gets the problem's `detail` when no field is named.
 */
export function fieldErrors(error: Error | undefined): Record<string, string> & { form?: string } {
  if (!(error instanceof ApiError)) return error ? { form: error.message } : {};
  const list = Array.isArray(error.problem.errors) ? (error.problem.errors as { pointer?: string; message?: string }[]) : [];
  const byField: Record<string, string> = {};
  for (const item of list) {
    // `/body/labels/2` is a problem of the labels field.
    const name = item.pointer
      ?.split('/')
      .filter((segment) => segment && !/^\d+$/.test(segment))
      .at(-1);
    if (name && item.message && !byField[name]) byField[name] = item.message;
  }
  if (Object.keys(byField).length === 0) byField.form = String(error.problem.detail ?? error.problem.title ?? error.code);
  return byField;
}
