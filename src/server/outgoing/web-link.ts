// Addresses that come from servers outside Attest (an issue's `html_url` from GitHub, a stored
// `issueUrl`) and are shown to people as links (FORGE-10): never trusted as given. A link is an
// absolute http(s) URL of printable ASCII with a host, 10 to 2048 characters long: the bounds of
// the contract's `issueUrl` (src/api/v1/failures.ts), so a link accepted here always serialises.

const SHAPE = /^https?:\/\/[!-~]+$/i;
export const WEB_LINK_MIN = 10;
export const WEB_LINK_MAX = 2048;

/** Why `value` is not a link to show, or undefined when it is one. */
export function webLinkProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return 'it is not text';
  if (value.length < WEB_LINK_MIN || value.length > WEB_LINK_MAX) return `it is not ${WEB_LINK_MIN} to ${WEB_LINK_MAX} characters long`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'it is not an absolute URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `its scheme is ${url.protocol.slice(0, 20)}, not http or https`;
  if (!SHAPE.test(value)) return 'it holds characters other than printable ASCII';
  if (url.hostname === '') return 'it has no host';
  return undefined;
}

/** `value` when it is a link to show (see webLinkProblem), else null: a stored value from an older version is dropped, never answered. */
export const webLinkOrNull = (value: string | null | undefined): string | null =>
  value !== null && value !== undefined && webLinkProblem(value) === undefined ? value : null;
