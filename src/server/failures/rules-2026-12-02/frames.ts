// Frozen on 2026-12-02, with migrations 2026-12-02-0027-failure-targets and
// 2026-12-02-0029-merge-equal-groups, which re-fingerprint stored failures by these rules: never
// edited, so that what those migrations did never changes (see ./README.md). Until a rule changes,
// the live normaliser (../) uses these files too.

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
