// Frozen on 2026-12-02, with migrations 2026-12-02-0027-failure-targets and
// 2026-12-02-0029-merge-equal-groups, which re-fingerprint stored failures by these rules: never
// edited, so that what those migrations did never changes (see ./README.md). Until a rule changes,
// the live normaliser (../) uses these files too.

/**
 * The rules that turn the parts of an error message that change from run to run into placeholders,
 * each one a function of the text alone. Order matters: URLs first (their numbers become path
 * placeholders, their query goes), then paths, ids, times and durations, addresses, hex, and
 * finally any number left.
 */

const ESC = String.fromCharCode(27);
const BEL = String.fromCharCode(7);
/** CSI sequences (colours, cursor moves), OSC sequences (hyperlinks, titles) and two-byte escapes. */
const ANSI = new RegExp(`${ESC}\\[[0-9;?]*[ -/]*[@-~]|${ESC}\\][^${BEL}${ESC}]*(?:${BEL}|${ESC}\\\\)|${ESC}[@-Z\\\\-_]`, 'g');

export const stripAnsi = (text: string): string => text.replace(ANSI, '');

const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
const HEX_ONLY = /^(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}$|^(?=[0-9A-F]*\d)(?=[0-9A-F]*[A-F])[0-9A-F]{8,}$/;

/** One URL path segment: a number, UUID or hex id is a placeholder, anything else stays. */
function templateSegment(segment: string): string {
  if (/^\d+$/.test(segment)) return '<id>';
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(segment)) return '<uuid>';
  if (HEX_ONLY.test(segment)) return '<hex>';
  return segment;
}

/** A URL path without its query and fragment, each id segment a placeholder: `/users/42?x=1` → `/users/<id>`. */
export function templatePath(path: string): string {
  const bare = path.replace(/[?#].*$/, '');
  return bare
    .split('/')
    .map((segment) => templateSegment(segment))
    .join('/');
}

const LOOPBACK = new Set(['127.0.0.1', '0.0.0.0']);
const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;

/** A host as it groups: loopback and names stay, any other IPv4 address is `<ip>` (CI containers get new ones). */
export const templateHost = (host: string): string => (IPV4.test(host) && !LOOPBACK.has(host) ? '<ip>' : host.toLowerCase());

const URL = /\b([a-z][a-z0-9+.-]*):\/\/([^\s/'"`<>)\]]+)([^\s'"`<>)\]]*)/gi;

/** `scheme://host:<port>/path/<id>`: credentials, port number, query and fragment dropped. */
function templateUrl(_match: string, scheme: string, authority: string, rest: string): string {
  const hostPort = authority.replace(/^[^@]*@/, '');
  const port = /:(\d+)$/.exec(hostPort);
  const host = port ? hostPort.slice(0, port.index) : hostPort;
  const path = rest.replace(/[.,;:!]+$/, '');
  const trailing = rest.slice(path.length);
  return `${scheme.toLowerCase()}://${templateHost(host)}${port ? ':<port>' : ''}${templatePath(path)}${trailing}`;
}

const PATH_STOP = `[^\\s'"\`<>),;\\]]`;
/** Temporary folders of Linux, macOS and Windows, and what follows them up to the end of the path. */
const TEMP_PATH = new RegExp(
  `(?:/private/var/folders|/var/folders|/var/tmp|/tmp|[A-Za-z]:\\\\Users\\\\[^\\\\\\s]+\\\\AppData\\\\Local\\\\Temp|[A-Za-z]:\\\\Windows\\\\Temp|[A-Za-z]:/Users/[^/\\s]+/AppData/Local/Temp)(?:[\\\\/]${PATH_STOP}*)?`,
  'gi',
);

/**
 * A temporary path is `<tmp>`, keeping its file name when it has one without digits
 * (`/tmp/x-8f3a/avatar.png` → `<tmp>/avatar.png`); generated names (`tmp4F2A.tmp`) go too.
 */
function templateTempPath(path: string): string {
  const name = /[\\/]([^\\/\d]+\.[A-Za-z]{1,8})$/.exec(path);
  return name ? `<tmp>/${name[1]}` : '<tmp>';
}

/** Home folders, whose user name differs between machines: `/Users/alice/`, `/home/ci/`, `C:\Users\build\`. */
const HOME = /(?:\/Users|\/home)\/[^/\s'"`]+\/|[A-Za-z]:[\\/]Users[\\/][^\\/\s'"`]+[\\/]/g;

const ISO_TIME = /\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b/g;
const HTTP_DATE = /\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2}(?: GMT)?\b/g;
const CLOCK_TIME = /\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b/g;
const SLASH_DATE = /\b\d{1,2}\/\d{1,2}\/\d{4}\b/g;
const DURATION = /(?<![\w.])[>~]?\d+(?:\.\d+)?\s?(?:ms|milliseconds?|µs|us|ns|s|secs?|seconds?|m|mins?|minutes?|h|hours?)(?![\w])/gi;
const IP_PORT = /(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?::(\d{1,5}))?(?![\w.])/g;
const HOST_PORT = /\b(localhost|[a-z0-9-]+(?:\.[a-z0-9-]+)+):(\d{2,5})\b/gi;
/** Host-like names that are really file names with a line number: `cart.spec.ts:42`. */
const CODE_FILE = /\.(?:[cm]?[jt]sx?|py|java|kt|cs|rb|go|php|scala|swift|vue|svelte|feature)$/i;
const HEX_PREFIXED = /\b0x[0-9a-f]+\b/gi;
const IDENTITY_HASH = /@[0-9a-f]{4,}\b/g;
const HEX_WORD = /\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b|\b(?=[0-9A-F]*\d)(?=[0-9A-F]*[A-F])[0-9A-F]{8,}\b/g;
/** Any number left; a dotted quad left by `IP_PORT` is a loopback address, which stays. */
const NUMBER = /(?<![\w.])(?!\d{1,3}(?:\.\d{1,3}){3}(?![\w.]))\d+(?:[.,]\d+)*(?!\w)/g;

/** Removes the given project folders from paths (normalised to `/`, with a trailing slash). */
export function withoutRoots(text: string, roots: readonly string[]): string {
  let out = text;
  for (const root of roots) {
    if (root.length < 2) continue;
    const slashed = root.replace(/\\/g, '/').replace(/\/?$/, '/');
    const back = slashed.replace(/\//g, '\\');
    out = out.split(slashed).join('').split(back).join('');
  }
  return out;
}

/** Every placeholder rule, in order, on one line of already ANSI-free text. */
export function placeholders(line: string, roots: readonly string[] = []): string {
  return withoutRoots(line, roots)
    .replace(URL, templateUrl)
    .replace(TEMP_PATH, templateTempPath)
    .replace(HOME, '~/')
    .replace(UUID, '<uuid>')
    .replace(HTTP_DATE, '<time>')
    .replace(ISO_TIME, '<time>')
    .replace(CLOCK_TIME, '<time>')
    .replace(SLASH_DATE, '<time>')
    .replace(DURATION, '<duration>')
    .replace(IP_PORT, (_m, ip: string, port?: string) => `${templateHost(ip)}${port ? ':<port>' : ''}`)
    .replace(HOST_PORT, (m, host: string) => (CODE_FILE.test(host) ? m : `${host.toLowerCase()}:<port>`))
    .replace(HEX_PREFIXED, '<hex>')
    .replace(IDENTITY_HASH, '@<hex>')
    .replace(HEX_WORD, '<hex>')
    .replace(NUMBER, '<n>');
}

/**
 * Values a failure reports about what the system did, which vary with what went wrong rather than
 * with the assertion: the received or actual side of a comparison. The expected side is what the
 * test states, so it stays (its numbers and ids still become placeholders).
 */
const RECEIVED_LINE =
  /^(\s*(?:Received(?: string| value| array| object| number| length| pattern| promise| type)?(?: [\w ]+?)?|Actual(?: value)?|But was|but: was|but was|Got|Unexpected value)\s*:)\s*\S.*$/i;
const BUT_WAS_INLINE = /(\bbut (?:was|found|got)\s*:?\s*)(<.*>|\[.*\]|".*"|'.*'|\S+)\.?$/i;
const MSTEST_ACTUAL = /(\bActual:\s*)<[^>]*>/;
/** Chai and Vitest: `expected 'Error 500' to be 'Welcome'`: the actual comes first. */
const CHAI = /(\bexpected\s+)(.+?)(\s+to\s+(?:not\s+)?(?:be|equal|deeply|strictly|have|include|contain|match|throw|satisfy|deep)\b)/i;
/** pytest's rewritten assertion: `assert 'Error 500' == 'Welcome'`: the left operand is the value the code produced. */
const PYTEST_ASSERT = /^((?:AssertionError:\s*)?assert\s+)(.+?)(\s+(?:==|!=|<=|>=|<|>|not in|in|is not|is)\s+.+)$/;

export function withoutReceived(line: string): string {
  if (RECEIVED_LINE.test(line)) return line.replace(RECEIVED_LINE, '$1 <value>');
  return line
    .replace(MSTEST_ACTUAL, '$1<value>')
    .replace(BUT_WAS_INLINE, '$1<value>')
    .replace(CHAI, '$1<value>$3')
    .replace(PYTEST_ASSERT, '$1<value>$3');
}
