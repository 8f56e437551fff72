// Frozen in time with migration 2026-12-02-0029-merge-equal-groups, which alone uses it (through
// its `…-rules.ts`): a copy of the normaliser's placeholders and frames (src/server/failures) as
// they were that day, so that what the migration did never changes with them. Never edited once
// shipped; no application imports. Kept apart from the rules only for the 400-line bound of a file.

// ---- a copy of src/server/failures/placeholders.ts ----

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

// ---- a copy of src/server/failures/frames.ts ----

/**
 * Stack frames of Node (V8), Vitest, Java and Kotlin, .NET and Python, read line by line; which of
 * them belong to the project (not a dependency, the runtime or the test framework); and project
 * paths made relative, so the same test on a laptop and on CI has the same frames.
 */

/** A frame as it groups: a relative file and a function, never a line or column. */
export interface Frame {
  file: string;
  function: string;
}

/** A parsed frame with the language it came from (Python prints its innermost frame last). */
export interface ParsedFrame extends Frame {
  language: 'js' | 'java' | 'dotnet' | 'python';
}

const DOTNET_WITH_FILE = /^\s*at (.+?\)) in (.+?):line \d+\s*$/;
const JAVA = /^\s*at (?:[\w.$-]+\/)*([\w.$<>-]+)\((?:([\w$-]+\.(?:java|kt|scala|groovy|clj))(?::\d+)?|Native Method|Unknown Source)\)\s*$/;
const V8_CALL = /^\s*at (?:async )?(.+?) \((.+)\)\s*$/;
const V8_BARE = /^\s*at (?:async )?((?:file:\/\/|\/|[A-Za-z]:[\\/]|node:|\.{0,2}[\w@.-]+\/)\S*?)\s*$/;
const DOTNET_BARE = /^\s*at ((?:[\w`<>$]+\.)+[\w`<>$]+)\((.*)\)\s*$/;
const PYTHON = /^\s*File "(.+)", line \d+(?:, in (.+))?\s*$/;
const PYTEST = /^((?:[A-Za-z]:)?[^\s:]+\.py):\d+:(?: in (\S+)|\s+\w+)?\s*$/;
const VITEST = /^\s*❯ (?:(\S+) )?(\S+?):\d+(?::\d+)?\s*$/;

/** The location of a V8 frame without `:line:column`, or undefined when it names no file. */
function v8Location(location: string): string | undefined {
  const eval_ = /^eval at .*?\((.+)\)/.exec(location);
  const bare = (eval_ ? (eval_[1] as string) : location).replace(/:\d+(?::\d+)?$/, '');
  return bare === '<anonymous>' || bare === 'native' ? undefined : bare;
}

/** One line of a stack trace as a frame, or undefined when it is not one. */
export function parseFrame(line: string): ParsedFrame | undefined {
  let m = DOTNET_WITH_FILE.exec(line);
  if (m) return { language: 'dotnet', function: dotnetFunction(m[1] as string), file: m[2] as string };
  m = JAVA.exec(line);
  if (m) return { language: 'java', function: m[1] as string, file: m[2] ?? '' };
  m = V8_CALL.exec(line);
  if (m) {
    const file = v8Location(m[2] as string);
    if (file !== undefined || !/\(/.test(m[1] as string)) return { language: 'js', function: m[1] as string, file: file ?? '' };
  }
  m = V8_BARE.exec(line);
  if (m) return { language: 'js', function: '', file: (v8Location(m[1] as string) ?? '') as string };
  m = DOTNET_BARE.exec(line);
  if (m) return { language: 'dotnet', function: dotnetFunction(`${m[1]}(`), file: '' };
  m = PYTHON.exec(line);
  if (m) return { language: 'python', function: m[2] ?? '', file: m[1] as string };
  m = PYTEST.exec(line);
  if (m) return { language: 'python', function: m[2] ?? '', file: m[1] as string };
  m = VITEST.exec(line);
  if (m) return { language: 'js', function: m[1] ?? '', file: m[2] as string };
  return undefined;
}

/** `Shop.CartTests.<AddsItem>d__4.MoveNext()` → `Shop.CartTests.AddsItem`: the compiler's state machine is not a name. */
function dotnetFunction(call: string): string {
  const name = call.slice(0, call.indexOf('('));
  return name.replace(/\.<(\w+)>[\w$]*?(?:__\d+)?\.MoveNext$/, '.$1').replace(/\.<(\w+)>[\w$]*__\d+$/, '.$1');
}

/** Paths that are never the project's own code. */
const LIBRARY_PATH =
  /(?:^|[\\/])(?:node_modules|site-packages|dist-packages|_pytest|pluggy|\.pnpm|\.yarn)[\\/]|^node:|^internal[\\/]|^<frozen |[\\/]lib[\\/]python\d[\d.]*[\\/]|^\[native code\]$/;
/** Namespaces of runtimes, test frameworks and drivers (Java, Kotlin, .NET). */
const LIBRARY_FUNCTION =
  /^(?:java|javax|jdk|sun|com\.sun|kotlin|kotlinx|scala|org\.junit|junit|org\.opentest4j|org\.testng|org\.assertj|org\.hamcrest|org\.mockito|org\.apache\.maven|org\.gradle|worker\.org\.gradle|org\.openqa\.selenium|org\.springframework|io\.quarkus\.test|com\.intellij|System|Microsoft|NUnit|Xunit|xunit|FluentAssertions|Castle|Moq|OpenQA\.Selenium)\./;
const LIBRARY_JS_FUNCTION = /^(?:process\.processTicksAndRejections|processTicksAndRejections|new Promise|Promise\.\w+|runMicrotasks)\b/;

/** Whether a frame belongs to a dependency, the runtime or the test framework. */
export function isLibraryFrame(frame: ParsedFrame): boolean {
  if (frame.language === 'java' || frame.language === 'dotnet') return LIBRARY_FUNCTION.test(frame.function);
  if (frame.file === '') return true;
  return LIBRARY_PATH.test(frame.file.replace(/\\/g, '/')) || LIBRARY_JS_FUNCTION.test(frame.function);
}

/** Workspace folders of CI services: everything up to and including them is the machine's, not the project's. */
const CI_ROOTS = [
  /^\/home\/runner\/work\/[^/]+\/[^/]+\//,
  /^\/__w\/[^/]+\/[^/]+\//,
  /^[A-Za-z]:\/a\/[^/]+\/[^/]+\//,
  /^\/github\/workspace\//,
  /^\/builds\/[^/]+\/[^/]+\//,
  /^\/var\/lib\/jenkins\/workspace\/[^/]+\//,
  /^\/var\/jenkins_home\/workspace\/[^/]+\//,
  /^\/drone\/src\//,
  /^\/workspace\//,
];
/** Folder names a project's code usually starts at, for an absolute path no root matched. */
const PROJECT_FOLDERS = new Set(['src', 'test', 'tests', 'spec', 'specs', 'e2e', '__tests__', 'cypress', 'playwright', 'packages', 'apps']);

/**
 * A frame's file relative to the project: the given project roots first, then a CI service's
 * workspace, then (best effort) from the first folder a project's code usually starts at, else
 * the last two segments. Relative paths stay as they are.
 */
export function relativeFile(file: string, roots: readonly string[]): string {
  let path = file.replace(/^file:\/\//, '').replace(/\\/g, '/');
  if (/^\/[A-Za-z]:\//.test(path)) path = path.slice(1);
  for (const root of roots) {
    const slashed = root.replace(/\\/g, '/').replace(/\/?$/, '/');
    if (slashed.length > 1 && path.startsWith(slashed)) return path.slice(slashed.length);
  }
  for (const root of CI_ROOTS) {
    const m = root.exec(path);
    if (m) return path.slice(m[0].length);
  }
  if (!/^(?:\/|[A-Za-z]:\/)/.test(path)) return path.replace(/^\.\//, '');
  const segments = path.split('/').filter((s) => s !== '' && !/^[A-Za-z]:$/.test(s));
  const start = segments.findIndex((s) => PROJECT_FOLDERS.has(s));
  return (start >= 0 ? segments.slice(start) : segments.slice(-2)).join('/');
}

/**
 * The first `limit` project frames of the lines, innermost first. Only the first exception's
 * frames count (Java's `Caused by:` starts another one); Python's traces, which print the
 * innermost frame last, are reversed.
 */
export function projectFrames(lines: readonly string[], roots: readonly string[], limit: number): Frame[] {
  const parsed: ParsedFrame[] = [];
  for (const line of lines) {
    if (/^\s*Caused by:/.test(line)) break;
    const frame = parseFrame(line);
    if (frame) parsed.push(frame);
  }
  const ordered = parsed.some((f) => f.language === 'python') ? parsed.reverse() : parsed;
  const kept: Frame[] = [];
  for (const frame of ordered) {
    if (isLibraryFrame(frame)) continue;
    // A Java or .NET function is qualified by its namespace already: its file's name is enough, wherever the checkout is.
    const file = frame.language === 'dotnet' ? (frame.file.split(/[\\/]/).pop() as string) : relativeFile(frame.file, roots);
    const last = kept[kept.length - 1];
    if (last && last.file === file && last.function === frame.function) continue;
    kept.push({ file, function: frame.function });
    if (kept.length === limit) break;
  }
  return kept;
}
