import { invalid } from '../../errors.ts';

/**
 * A job's or run's `ciUrl` as stored: the contract already holds it to http(s) and printable
 * ASCII; here it must also parse as a URL with a host, since the web pages render it as a link
 * (JOB-3). Undefined is none.
 */
export function checkedCiUrl(value: string | undefined, pointer: string): string | null {
  if (value === undefined) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid(pointer, 'must be an absolute http(s) URL');
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '')
    throw invalid(pointer, 'must be an absolute http(s) URL');
  return value;
}
