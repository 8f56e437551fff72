import { createHash } from 'node:crypto';

// One project's test suite, imported again and again (F10's 100,000 runs, F11's repeated import):
// 5,000 tests (50 suites × 100 cases, the same names in every import, so tests build histories),
// about one in ten failing in each import. A failure's cause is one of 60 (12 kinds of message ×
// 5 targets), and its message and stack vary from one import to the next the way real ones do:
// ports, ids, UUIDs, durations, counts, timestamps and line numbers, so the failures of one cause
// fall into one error group only if the normaliser does its work.
//
// Which tests fail in import `k` (deterministic):
// - 4% always (i % 25 == 0): broken tests;
// - 4% half of the time, at random per import (i % 25 == 7): flaky tests;
// - 2% from some import on (i % 25 == 13): regressions, new failures in a comparison;
// - 2% until some import (i % 25 == 19): fixed tests;
// - `outage`: one more in ten fail with one network error (an incident of one group).

export const SUITES = 50;
export const CASES = 100;
export const TESTS = SUITES * CASES;
export const CAUSES = 60;

const TARGETS = ['checkout', 'cart', 'login', 'search', 'profile'] as const;
const capital = (word: string) => word[0]?.toUpperCase() + word.slice(1);

/** A number from 0 to 1 fixed by its inputs. */
function unit(...parts: (string | number)[]): number {
  return createHash('sha256').update(parts.join(':')).digest().readUInt32BE(0) / 2 ** 32;
}

/** What varies between two imports of the same failure. */
interface Varying {
  port: number;
  id: number;
  ms: number;
  uuid: string;
  hex: string;
  count: number;
  at: string;
  line: number;
}

function varying(k: number, i: number): Varying {
  const r = (salt: string) => unit(k, i, salt);
  const hex = createHash('sha256').update(`${k}:${i}`).digest('hex');
  return {
    port: 30000 + Math.floor(r('port') * 30000),
    id: 1000 + Math.floor(r('id') * 900000),
    ms: 100 + Math.floor(r('ms') * 29000),
    uuid: `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`,
    hex: hex.slice(32, 64),
    count: 2 + Math.floor(r('count') * 40),
    at: new Date(Date.UTC(2026, 10, 1) + Math.floor(r('at') * 2.6e9)).toISOString(),
    line: 20 + Math.floor(r('line') * 300),
  };
}

/** The 12 kinds of message; `t` is the target ('checkout'…). */
const KINDS: ((t: string, v: Varying) => string)[] = [
  (t, v) => `expected 200 but was 500 from POST http://127.0.0.1:${v.port}/api/${t}/${v.id}`,
  (t, v) => `TimeoutError: locator.click: Timeout ${v.ms}ms exceeded.\nCall log:\n  - waiting for locator('#${t}-submit')`,
  (t, v) => `expected: <${t.toUpperCase()}_CONFIRMED> but was: <${t.toUpperCase()}_PENDING> for order ${v.uuid}`,
  (t, v) => `java.net.SocketTimeoutException: Read timed out after ${v.ms} ms (${t}-service.internal:${v.port})`,
  (t, v) =>
    `java.lang.NullPointerException: Cannot invoke "com.example.shop.${capital(t)}Item.getPrice()" because the return value of "java.util.Map.get(Object)" is null (order ${v.id})`,
  (t, v) =>
    `org.openqa.selenium.NoSuchElementException: no such element: Unable to locate element: {"method":"css selector","selector":"#${t}-total"} (session ${v.hex})`,
  (t, v) => `expected list of ${t} rows to have size 10 but had ${v.count}`,
  (t, v) => `HTTP 503 Service Unavailable from https://${t}.staging.example.com:${v.port}/v2/${t}/${v.id}/state`,
  (t, v) => `java.lang.IllegalStateException: ${capital(t)} cache was not warmed at ${v.at} (took ${v.ms} ms)`,
  (t, v) => `org.opentest4j.AssertionFailedError: ${t} total ==> expected: <${v.count}.00> but was: <${v.count + 1}.50>`,
  (t, v) => `java.io.FileNotFoundException: /tmp/junit${v.id}/${t}-export-${v.hex}.csv (No such file or directory)`,
  (t, v) => `redis.clients.jedis.exceptions.JedisConnectionException: Failed to connect to ${t}-cache:${v.port} after ${v.count} attempts`,
];

/** The message and Java stack of cause `cause` (0…59), as test `i` of import `k` reports it. */
export function failureOf(cause: number, k: number, i: number): { message: string; stack: string } {
  const target = TARGETS[cause % TARGETS.length] as string;
  const v = varying(k, i);
  const message = (KINDS[Math.floor(cause / TARGETS.length) % KINDS.length] as (t: string, v: Varying) => string)(target, v);
  const page = `${capital(target)}Page`;
  const frames = [
    `    at com.example.shop.${page}.submit(${page}.java:${v.line})`,
    `    at com.example.shop.${capital(target)}Steps.step${cause % 7}(${capital(target)}Steps.java:${v.line + 13})`,
    `    at java.base/jdk.internal.reflect.DirectMethodHandleAccessor.invoke(DirectMethodHandleAccessor.java:103)`,
    `    at org.junit.platform.commons.util.ReflectionUtils.invokeMethod(ReflectionUtils.java:728)`,
    `    at org.junit.jupiter.engine.execution.MethodInvocation.proceed(MethodInvocation.java:60)`,
  ];
  return { message, stack: `${message.split('\n')[0]}\n${frames.join('\n')}` };
}

/** Whether test `i` fails in import `k` of `imports`, and of which cause. */
export function failing(k: number, imports: number, i: number, outage: boolean): number | undefined {
  const cause = Math.floor(i / 25) % CAUSES;
  const slot = i % 25;
  const turn = Math.floor(i / 25) % imports;
  if (slot === 0) return cause;
  if (slot === 7 && unit('flaky', k, i) < 0.5) return cause;
  if (slot === 13 && k >= turn) return cause;
  if (slot === 19 && k < turn) return cause;
  if (outage && i % 10 === 3) return -1;
  return undefined;
}

const xmlEscaped = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

/**
 * Import `k` of `imports` as JUnit XML: its suites start at `startedAt`; `outage` adds one in ten
 * tests failing with one connection error.
 */
export function suiteReport(k: number, imports: number, startedAt: Date, outage = false): Buffer {
  const suites: string[] = [];
  let failures = 0;
  for (let s = 0; s < SUITES; s++) {
    const cases: string[] = [];
    for (let c = 0; c < CASES; c++) {
      const i = s * CASES + c;
      const cause = failing(k, imports, i, outage);
      let failure = '';
      if (cause !== undefined) {
        failures++;
        const { message, stack } =
          cause === -1
            ? {
                message: `java.net.ConnectException: Connection refused: db.staging.example.com/10.0.3.${k % 250}:${5432 + (k % 3)}`,
                stack: `java.net.ConnectException: Connection refused\n    at com.example.shop.db.Pool.connect(Pool.java:${40 + k})`,
              }
            : failureOf(cause, k, i);
        failure = `<failure message="${xmlEscaped(message)}" type="AssertionError">${xmlEscaped(stack)}</failure>`;
      }
      cases.push(
        `<testcase classname="com.example.shop.Suite${s}" name="case ${c}" time="0.${String((c * 7 + k) % 1000).padStart(3, '0')}">${failure}<system-out>case ${c} of suite ${s} ran</system-out></testcase>`,
      );
    }
    suites.push(
      `<testsuite name="com.example.shop.Suite${s}" tests="${CASES}" timestamp="${startedAt.toISOString().slice(0, 19)}">${cases.join('')}</testsuite>`,
    );
  }
  return Buffer.from(
    `<?xml version="1.0" encoding="UTF-8"?><testsuites name="shop nightly ${k}" failures="${failures}">${suites.join('')}</testsuites>`,
  );
}
