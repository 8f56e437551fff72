// Frozen in time with migration 2026-12-02-0027-failure-targets, which alone uses it: a copy of the
// normaliser's target rules (src/server/failures) as they were that day, so that what the migration
// did never changes with them. Never edited once shipped; no application imports.

/** The target of one failure as the normaliser of this migration's day reads it (no project roots: recording gives none). */
export function targetOfFailure(message: string, trace: string | null): string | null {
  const raw = stripAnsi(boundedText(message, LIMITS.messageChars));
  let messageLines = raw.split(/\r?\n/);
  let frameLines = trace ? stripAnsi(boundedText(trace, LIMITS.traceHeadChars, LIMITS.traceTailChars)).split(/\r?\n/) : [];
  const python = pythonStatement(messageLines);
  if (python) {
    messageLines = python.statement;
    if (frameLines.length === 0) frameLines = python.traceback;
  }
  const head = statementLines(messageLines, []).join('\n');
  return targetOf(raw, head, [], frameLines.join('\n'));
}

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

const stripAnsi = (text: string): string => text.replace(ANSI, '');

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
function templatePath(path: string): string {
  const bare = path.replace(/[?#].*$/, '');
  return bare
    .split('/')
    .map((segment) => templateSegment(segment))
    .join('/');
}

const LOOPBACK = new Set(['127.0.0.1', '0.0.0.0']);
const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;

/** A host as it groups: loopback and names stay, any other IPv4 address is `<ip>` (CI containers get new ones). */
const templateHost = (host: string): string => (IPV4.test(host) && !LOOPBACK.has(host) ? '<ip>' : host.toLowerCase());

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
function withoutRoots(text: string, roots: readonly string[]): string {
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
function placeholders(line: string, roots: readonly string[] = []): string {
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

function withoutReceived(line: string): string {
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
interface Frame {
  file: string;
  function: string;
}

/** A parsed frame with the language it came from (Python prints its innermost frame last). */
interface ParsedFrame extends Frame {
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
function parseFrame(line: string): ParsedFrame | undefined {
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

// ---- a copy of the target rules of src/server/failures/signature.ts ----

const LOCATOR_LINE = /^\s*Locator:\s*(.+?)\s*$/m;
const WAITING_FOR =
  /waiting for ((?:locator|getBy\w+|get_by_\w+|frameLocator|page\.\w+|internal:\w+)\(.*?\)(?:\.\w+\(.*?\))*)(?:\s+to be \w+)?\s*$/m;
const WAITING_FOR_SELECTOR = /waiting for selector "(.+?)"(?:\s+to be \w+)?\s*$/m;
const SELENIUM_SELECTOR = /"method":\s*"([^"]+)",\s*"selector":\s*"((?:[^"\\]|\\.)*)"/;
const SELENIUM_BY = /located by (By\.\w+: .+?)(?: \(tried for|\)?\s*$)/m;
/** A URL (already a template, so `<port>` and `<id>` are part of it) on the first line or an `Expected` line: not one a hint links to. */
const URL_IN_TEXT = /^(?:.*?\bExpected[^:\n]*:.*?|[^\n]*?)\b([a-z][a-z0-9+.-]*:\/\/(?:[^\s'"`<>)\]]|<\w+>)+)/im;
const NODE_ADDRESS = /\b(?:connect|read|write|getaddrinfo) E[A-Z_]+ (\S+)/;
const PYTHON_POOL = /host='([^']+)', port=(\d+)\): Max retries exceeded with url: (\S+)/;
const DOTNET_HOST = /\(([\w.-]+:(?:\d+|<port>))\)/;

const bounded = (text: string) => (text.length > 200 ? `${text.slice(0, 199)}…` : text);

/** The locator or selector a text names: Playwright's `Locator:` line or first `waiting for …`, Selenium's selector, Python's pool URL. */
function locatorIn(text: string, roots: readonly string[]): string | null {
  const locator = LOCATOR_LINE.exec(text)?.[1] ?? WAITING_FOR.exec(text)?.[1] ?? WAITING_FOR_SELECTOR.exec(text)?.[1];
  if (locator !== undefined) return bounded(placeholders(locator, roots));
  const selenium = SELENIUM_SELECTOR.exec(text);
  if (selenium) return bounded(placeholders(`${selenium[1]} ${selenium[2]}`, roots));
  const by = SELENIUM_BY.exec(text);
  if (by) return bounded(placeholders(by[1] as string, roots));
  const pool = PYTHON_POOL.exec(text);
  if (pool) return bounded(`${templateHost(pool[1] as string)}:<port>${templatePath(pool[3] as string)}`);
  return null;
}

/**
 * The locator (Playwright's `Locator:` line or the first `waiting for …` of its call log,
 * Selenium's selector) of the message, else of the trace (a JUnit `message` attribute holds only
 * the first line; the call log is in the body), or else the first URL or network address of the
 * message's statement, normalised like the message. URLs are not read from a trace: its frames
 * name the pages the code was served from, not what the test acted on.
 */
function targetOf(raw: string, head: string, roots: readonly string[], trace = ''): string | null {
  const locator = locatorIn(raw, roots) ?? (trace === '' ? null : locatorIn(trace, roots));
  if (locator !== null) return locator;
  const firstAndExpected = head
    .split('\n')
    .filter((line, i) => i === 0 || /^Expected\b/.test(line))
    .join('\n');
  const url = URL_IN_TEXT.exec(firstAndExpected)?.[1];
  if (url) return bounded(url.replace(/[.,;:!]+$/, ''));
  const address = NODE_ADDRESS.exec(head)?.[1] ?? DOTNET_HOST.exec(head)?.[1];
  return address === undefined ? null : bounded(address);
}

// ---- a copy of the statement rules of src/server/failures/normalise.ts ----

/** What the normaliser looks at, and what it keeps. */
const LIMITS = {
  /** Characters of the message read, from its start (the statement of a failure comes first). */
  messageChars: 8192,
  /** Characters of the trace read from its start, and from its end (Python prints the innermost frame last). */
  traceHeadChars: 16_384,
  traceTailChars: 4096,
  /** Lines of the message kept, and characters of each. */
  messageLines: 12,
  lineChars: 500,
  /**
   * Characters of each line read, from its start, before its placeholders are made: some placeholder
   * rules take time that grows with the square of a line's length, so a line is cut first. Twice what
   * is kept, so that what the placeholders shorten (ids, URLs, paths) still fills `lineChars` with the
   * same text on every run, whatever the lengths of the values that varied.
   */
  lineReadChars: 1000,
  /** Project frames kept: enough to tell two callers of one helper apart, few enough to survive refactors below them. */
  frames: 3,
  titleLines: 3,
  titleChars: 300,
} as const;

/** Lines after which the message holds no more of the failure's statement: call logs, stacks, chained causes. */
const STOP =
  /^\s*(?:Call log:|=+ logs =+|Traceback \(most recent call last\)|Caused by:|--- End of |During handling of the above exception)/;
/** Lines that are source excerpts, carets, positions or the received side of a diff. */
const SKIP = /^\s*>?\s*\d+\s*\|.*$|^\s*\|\s*[\^~]|^\s*[-~\s]*\^+[-~\s]*$|^\s*[↓↑]\s*(?:\(pos \d+\))?\s*$|^\s*\+(?:\s|$)|^\s*\+\s*where\b/;
const PYTEST_PREFIX = /^E(?:\s+|$)/;
const PYTHON_EXCEPTION = /^[\w.]+(?:Error|Exception|Exit|Interrupt|Warning|Failure|Failed)\b/;

/** The part of a long text that is read: its head, and for a trace also its tail. */
function boundedText(text: string, head: number, tail = 0): string {
  if (text.length <= head + tail) return text;
  return tail === 0 ? text.slice(0, head) : `${text.slice(0, head)}\n${text.slice(text.length - tail)}`;
}

/** A Python traceback printed as the message states its failure at the end: the message is the exception line on. */
function pythonStatement(lines: string[]): { statement: string[]; traceback: string[] } | undefined {
  const first = lines.findIndex((line) => line.trim() !== '');
  if (first < 0 || !/^Traceback \(most recent call last\):/.test(lines[first] as string)) return undefined;
  let at = -1;
  for (let i = lines.length - 1; i > first; i--) {
    if (PYTHON_EXCEPTION.test(lines[i] as string)) {
      at = i;
      break;
    }
  }
  if (at < 0) return undefined;
  return { statement: lines.slice(at), traceback: lines.slice(first, at) };
}

/** The lines of the message that state the failure, each with its received values and dynamic parts replaced. */
function statementLines(lines: readonly string[], roots: readonly string[]): string[] {
  const kept: string[] = [];
  for (const raw of lines) {
    if (STOP.test(raw) || parseFrame(raw)) break;
    const unprefixed = raw.slice(0, LIMITS.lineReadChars).replace(PYTEST_PREFIX, '');
    if (SKIP.test(unprefixed)) continue;
    const line = placeholders(withoutReceived(unprefixed), roots).replace(/\s+/g, ' ').trim();
    if (line === '') continue;
    kept.push(line.length > LIMITS.lineChars ? line.slice(0, LIMITS.lineChars) : line);
    // pytest explains its assertion after the line below, restating the operands' values.
    if (kept.length === LIMITS.messageLines || /^(?:AssertionError: )?assert\b/.test(line)) break;
  }
  return kept;
}
