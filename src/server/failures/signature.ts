/**
 * The coarse signature of a failure: what kind of failure (category), the step or matcher that
 * failed (action), and what it acted on (target). Read from the normalised message, with the raw
 * (ANSI-free, bounded) text for the locator and the trace for Java's assertion method.
 */

import { isLibraryFrame, parseFrame } from './frames.ts';

// Today's rules are the ones frozen on 2026-12-02 (./rules-2026-12-02/, which migrations 0027 and
// 0029 re-fingerprinted by): to change one, copy its file here first and change the copy; the
// frozen file stays as it is.
export { targetOf } from './rules-2026-12-02/targets.ts';

/**
 * - `network`: a service could not be reached (refused, reset, DNS, socket hang up, `net::ERR_*`);
 *   checked first, since a refused connection often surfaces inside another error.
 * - `assertion`: an expectation the test states did not hold (`expect(…)`, `assert…`, `Assert.…`),
 *   including Playwright's retrying matchers that ran out of time: the page was not as expected.
 * - `element`: the element to act on was missing, ambiguous or not interactable (Selenium's
 *   `NoSuchElementException`, Playwright's strict mode violation).
 * - `timeout`: a step, hook or the test itself ran out of time.
 * - `crash`: the code threw a runtime error (`TypeError`, `NullPointerException`, a closed browser).
 * - `other`: none of these.
 */
export type FailureCategory = 'network' | 'assertion' | 'element' | 'timeout' | 'crash' | 'other';

export interface FailureSignature {
  category: FailureCategory;
  /** The matcher, assertion method or step: `toHaveText`, `click`, `assertEquals`, `Assert.Equal`, `connect`; null when none is named. */
  action: string | null;
  /** The locator or URL template acted on, normalised; null when none is named. */
  target: string | null;
}

const NETWORK =
  /\b(?:ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|EPIPE)\b|socket hang up|net::ERR_|NS_ERROR_(?:CONNECTION_REFUSED|NET_|UNKNOWN_HOST)|Connection refused|\w*ConnectionError\b|ConnectException|UnknownHostException|NoRouteToHostException|actively refused|HttpRequestException|ReadTimeout|ConnectTimeout|Max retries exceeded|Could not resolve host|Name or service not known/i;
const ASSERTION =
  /\bexpect\(|\bAssert\.\w+|\bassert(?:\w*\(|\s)|Assertion(?:Failed)?Error|ComparisonFailure|AssertFailedException|EqualException|MultipleFailuresError|\bexpected:?\s?<|\bbut was\b|\bexpected .+ to (?:not )?(?:be|equal|deeply|strictly|have|include|contain|match|throw)\b/i;
const ELEMENT =
  /NoSuchElementException|StaleElementReferenceException|ElementNotInteractableException|ElementClickInterceptedException|ElementNotVisibleException|InvalidSelectorException|strict mode violation|Unable to locate element|no such element/i;
const TIMEOUT = /\btimed? ?out\b|\btimeout|deadline exceeded/i;
const CRASH =
  /(?:^|[\s.:(])(?!Assertion)[A-Z]\w*(?:Error|Exception)\b|Segmentation fault|SIGSEGV|SIGABRT|has been closed|crashed|Cannot read propert|is not a function|is not defined|panicked/;

export function categoryOf(text: string): FailureCategory {
  if (NETWORK.test(text)) return 'network';
  if (ASSERTION.test(text)) return 'assertion';
  if (ELEMENT.test(text)) return 'element';
  if (TIMEOUT.test(text)) return 'timeout';
  if (CRASH.test(text)) return 'crash';
  return 'other';
}

const EXPECT_MATCHER = /\bexpect\((?:[^()]|\([^()]*\))*\)\.(?:resolves\.|rejects\.)?((?:not\.)?\w+)\(/;
const PLAYWRIGHT_CALL =
  /\b(?:page|locator|frame|frameLocator|elementHandle|browserContext|browser|browserType|apiRequestContext|request|keyboard|mouse|touchscreen)\.(\w+):/i;
const DOTNET_ASSERT = /\bAssert\.(\w+)(?:\(\))?(?: failed| Failure|\()/;
const CHAI_VERB =
  /\bexpected .+? to (not )?(be called with arguments|have been called with|be called|deeply equal|strictly equal|have length|have property|be|equal|include|contain|match|throw)\b/;
const CHAI_MATCHER: Record<string, string> = {
  'be called with arguments': 'toHaveBeenCalledWith',
  'have been called with': 'toHaveBeenCalledWith',
  'be called': 'toHaveBeenCalled',
  'deeply equal': 'toEqual',
  'strictly equal': 'toStrictEqual',
  'have length': 'toHaveLength',
  'have property': 'toHaveProperty',
  be: 'toBe',
  equal: 'toEqual',
  include: 'toContain',
  contain: 'toContain',
  match: 'toMatch',
  throw: 'toThrow',
};
const PYTEST_OPERATOR = /^(?:AssertionError:\s*)?assert\b(?:.*?\s(==|!=|<=|>=|not in|in|is not|is|<|>)\s)?/;
const HOOK = /while (?:running|setting up|tearing down) "?(\w+)"? hook|\bin "(\w+)" hook\b/i;
const TEST_TIMEOUT = /\bTest timeout of\b|Exceeded timeout of .* for a (?:test|hook)|\bTest timed out in\b|^Failed: Timeout\b/im;
const NODE_SYSCALL = /\b(connect|read|write|getaddrinfo|listen|bind|querySrv|queryA) (E[A-Z_]+)\b(?: (\S+))?/;
const EXCEPTION_NAME = /(?:^|[\s.:(])((?!Assertion)[A-Z]\w*(?:Error|Exception))\b/;

/** Java's assertion method: the last `assert…`/`fail…` frame of the framework before the first project frame. */
function javaAssertion(traceLines: readonly string[]): string | null {
  let found: string | null = null;
  for (const line of traceLines) {
    const frame = parseFrame(line);
    if (frame?.language !== 'java') continue;
    if (!isLibraryFrame(frame)) break;
    const method = /\.((?:assert|fail)\w*)$/.exec(frame.function);
    if (method) found = method[1] as string;
  }
  return found;
}

export function actionOf(category: FailureCategory, head: string, traceLines: readonly string[]): string | null {
  const firstLine = head.split('\n', 1)[0] as string;
  const expectMatcher = EXPECT_MATCHER.exec(head) ?? PLAYWRIGHT_CALL.exec(head);
  if (expectMatcher) return expectMatcher[1] as string;
  const dotnet = DOTNET_ASSERT.exec(head);
  if (dotnet) return `Assert.${dotnet[1]}`;
  const chai = CHAI_VERB.exec(head);
  if (chai) return `${chai[1] ? 'not.' : ''}${CHAI_MATCHER[chai[2] as string]}`;
  const pytest = PYTEST_OPERATOR.exec(firstLine);
  if (pytest) return pytest[1] ? `assert ${pytest[1]}` : 'assert';
  if (category === 'assertion') return javaAssertion(traceLines) ?? exceptionName(head);
  if (category === 'timeout') {
    const hook = HOOK.exec(head);
    if (hook) return (hook[1] ?? hook[2]) as string;
    if (TEST_TIMEOUT.test(head)) return 'test';
  }
  if (category === 'network') {
    const syscall = NODE_SYSCALL.exec(head);
    if (syscall) return syscall[1] as string;
    if (/Max retries exceeded/.test(head)) return 'request';
  }
  return exceptionName(head);
}

const exceptionName = (text: string): string | null => EXCEPTION_NAME.exec(text)?.[1] ?? null;
