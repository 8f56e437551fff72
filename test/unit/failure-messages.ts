/**
 * The table of the failure normaliser (TRIAGE-1): error messages in the shape their frameworks
 * print them (Playwright, Jest, Vitest, JUnit/Java with Selenium, pytest, .NET with xUnit, NUnit
 * and MSTest, Node's network errors), with the dynamic parts varied between entries of one group.
 * Entries with the same `group` must share a fingerprint; entries of different groups must not.
 */

import type { FailureCategory } from '../../src/server/failures/normalise.ts';

export interface TableEntry {
  framework: 'playwright' | 'jest' | 'vitest' | 'junit' | 'pytest' | 'dotnet' | 'node';
  group: string;
  message: string;
  trace?: string;
  projectRoots?: string[];
  signature?: { category: FailureCategory; action: string | null; target: string | null };
}

const pwHasText = (received: string, timeout: number, line: number, root: string) =>
  `Error: expect(locator).toHaveText(expected) failed\n\nLocator: getByRole('heading', { name: 'Greeting' })\nExpected string: "Welcome, Alice"\nReceived string: "${received}"\nTimeout: ${timeout}ms\n\nCall log:\n  - Expect "toHaveText" with timeout ${timeout}ms\n  - waiting for getByRole('heading', { name: 'Greeting' })\n    9 × locator resolved to <h1 class="hero__title">${received}</h1>\n      - unexpected value "${received}"\n\n\n  ${line - 1} | test('greets', async ({ page }) => {\n> ${line} |   await expect(page.getByRole('heading', { name: 'Greeting' })).toHaveText('Welcome, Alice');\n     |                                                                    ^\n    at ${root}/tests/home.spec.ts:${line}:68`;

const pwVisible = (locator: string, timeout: number, line: number) =>
  `Error: expect(locator).toBeVisible() failed\n\nLocator:  ${locator}\nExpected: visible\nError: element(s) not found\nTimeout:  ${timeout}ms\n\nCall log:\n  - Expect "toBeVisible" with timeout ${timeout}ms\n  - waiting for ${locator}\n\n    at /home/runner/work/shop/shop/tests/editor.spec.ts:${line}:41`;

const jestToBe = (expected: number, received: number, line: number) =>
  `expect(received).toBe(expected) // Object.is equality\n\nExpected: ${expected}\nReceived: ${received}\n\n  ${line - 1} |   const cart = new Cart();\n> ${line} |   expect(cart.total()).toBe(${expected});\n     |                        ^\n\n    at Object.<anonymous> (/home/ci/shop/src/cart.test.ts:${line}:24)`;

const junitEquals = (expected: number, actual: number, line: number, method: string) => ({
  message: `org.opentest4j.AssertionFailedError: expected: <${expected}> but was: <${actual}>`,
  trace: `org.opentest4j.AssertionFailedError: expected: <${expected}> but was: <${actual}>\n\tat org.junit.jupiter.api.AssertionFailureBuilder.build(AssertionFailureBuilder.java:151)\n\tat org.junit.jupiter.api.AssertionFailureBuilder.buildAndThrow(AssertionFailureBuilder.java:132)\n\tat org.junit.jupiter.api.AssertEquals.failNotEqual(AssertEquals.java:197)\n\tat org.junit.jupiter.api.AssertEquals.assertEquals(AssertEquals.java:150)\n\tat org.junit.jupiter.api.Assertions.assertEquals(Assertions.java:528)\n\tat com.acme.shop.api.OrderApiTest.${method}(OrderApiTest.java:${line})\n\tat java.base/jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)\n\tat java.base/jdk.internal.reflect.NativeMethodAccessorImpl.invoke(NativeMethodAccessorImpl.java:62)\n\tat java.base/java.lang.reflect.Method.invoke(Method.java:566)\n\tat org.junit.platform.commons.util.ReflectionUtils.invokeMethod(ReflectionUtils.java:727)`,
});

const seleniumNoSuch = (chrome: string, session: string, selector: string) => ({
  message: `org.openqa.selenium.NoSuchElementException: no such element: Unable to locate element: {"method":"css selector","selector":"${selector}"}\n  (Session info: chrome=${chrome})\nFor documentation on this error, please visit: https://www.selenium.dev/documentation/webdriver/troubleshooting/errors#no-such-element-exception\nBuild info: version: '4.20.0', revision: '866c76ca80'\nSystem info: os.name: 'Linux', os.arch: 'amd64', os.version: '6.5.0-1018-azure', java.version: '17.0.11'\nDriver info: org.openqa.selenium.chrome.ChromeDriver\nSession ID: ${session}`,
  trace: `org.openqa.selenium.NoSuchElementException: no such element\n\tat java.base/jdk.internal.reflect.NativeConstructorAccessorImpl.newInstance0(Native Method)\n\tat org.openqa.selenium.remote.ErrorCodec.decode(ErrorCodec.java:167)\n\tat org.openqa.selenium.remote.RemoteWebDriver.findElement(RemoteWebDriver.java:350)\n\tat com.acme.shop.pages.LoginPage.open(LoginPage.java:31)\n\tat com.acme.shop.LoginTest.logsIn(LoginTest.java:22)`,
});

const pytestEq = (received: string, expected: string, line: number) => ({
  message: `AssertionError: assert '${received}' == '${expected}'\n  \n  - ${expected}\n  + ${received}`,
  trace: `client = <FlaskClient <Flask 'shop'>>\n\n    def test_home(client):\n        response = client.get("/")\n>       assert response.text == "${expected}"\nE       AssertionError: assert '${received}' == '${expected}'\nE         \nE         - ${expected}\nE         + ${received}\n\ntests/test_home.py:${line}: AssertionError`,
});

const pyRequests = (port: number, user: number, address: string, line: number) => ({
  message: `requests.exceptions.ConnectionError: HTTPConnectionPool(host='localhost', port=${port}): Max retries exceeded with url: /api/users/${user} (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at ${address}>: Failed to establish a new connection: [Errno 111] Connection refused'))`,
  trace: `Traceback (most recent call last):\n  File "/home/runner/work/shop/shop/tests/test_users.py", line ${line}, in test_get_user\n    response = api.get_user(${user})\n  File "/home/runner/work/shop/shop/shop/client.py", line 18, in get_user\n    return requests.get(f"{self.base}/api/users/{user_id}")\n  File "/opt/hostedtoolcache/Python/3.12.3/x64/lib/python3.12/site-packages/requests/api.py", line 73, in get\n    return request("get", url, params=params, **kwargs)\n  File "/opt/hostedtoolcache/Python/3.12.3/x64/lib/python3.12/site-packages/requests/adapters.py", line 519, in send\n    raise ConnectionError(e, request=request)`,
});

const xunitEqual = (expected: number, actual: number, file: string) => ({
  message: `Assert.Equal() Failure: Values differ\nExpected: ${expected}\nActual:   ${actual}`,
  trace: `   at Shop.Tests.CartTests.Total_sums_items() in ${file}:line ${40 + actual}\n   at System.RuntimeMethodHandle.InvokeMethod(Object target, Void** arguments, Signature sig, Boolean isConstructor)\n   at System.Reflection.MethodBaseInvoker.InvokeWithNoArgs(Object obj, BindingFlags invokeAttr)`,
});

const dotnetNre = (root: string, line: number) => ({
  message: 'System.NullReferenceException : Object reference not set to an instance of an object.',
  trace: `   at Shop.Checkout.Pay(Order order) in ${root}\\Shop\\Checkout.cs:line ${line}\n   at Shop.Tests.CheckoutTests.<Pays>d__3.MoveNext() in ${root}\\Shop.Tests\\CheckoutTests.cs:line ${line - 13}\n--- End of stack trace from previous location ---\n   at Xunit.Sdk.TestInvoker\`1.<>c__DisplayClass48_0.<<InvokeTestMethodAsync>b__1>d.MoveNext() in /_/src/xunit.execution/Sdk/Frameworks/Runners/TestInvoker.cs:line 276`,
});

const nodeRefused = (port: number, line: number) => ({
  message: `Error: connect ECONNREFUSED 127.0.0.1:${port}`,
  trace: `Error: connect ECONNREFUSED 127.0.0.1:${port}\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)\n    at async Pool.connect (/home/runner/work/shop/shop/node_modules/pg-pool/index.js:45:11)\n    at async seedDatabase (/home/runner/work/shop/shop/test/helpers/db.ts:${line}:3)`,
});

export const TABLE: TableEntry[] = [
  // Playwright: expect failures, action timeouts, navigation, test timeouts.
  ...[
    ['Error 500', 5000, 13, '/home/runner/work/shop/shop'],
    ['Error 502', 10000, 14, '/Users/alice/code/shop'],
    ['Loading…', 5000, 13, '/builds/acme/shop'],
  ].map(([received, timeout, line, root]) => ({
    framework: 'playwright' as const,
    group: 'pw toHaveText greeting',
    message: `\u001b[31m${pwHasText(received as string, timeout as number, line as number, root as string)}\u001b[39m`,
    signature: { category: 'assertion' as const, action: 'toHaveText', target: "getByRole('heading', { name: 'Greeting' })" },
  })),
  {
    framework: 'playwright',
    group: 'pw toHaveText greeting, other expected text',
    message: pwHasText('Error 500', 5000, 13, '/home/runner/work/shop/shop').replace(/Welcome, Alice/g, 'Welcome back, Alice'),
  },
  {
    framework: 'playwright',
    group: 'pw toHaveText banner',
    message: pwHasText('Error 500', 5000, 13, '/home/runner/work/shop/shop').replace(
      /getByRole\('heading', \{ name: 'Greeting' \}\)/g,
      "getByTestId('banner')",
    ),
    signature: { category: 'assertion', action: 'toHaveText', target: "getByTestId('banner')" },
  },
  ...[
    [5000, 21],
    [15000, 23],
  ].map(([timeout, line]) => ({
    framework: 'playwright' as const,
    group: 'pw toBeVisible save',
    message: pwVisible("getByRole('button', { name: 'Save' })", timeout as number, line as number),
    signature: { category: 'assertion' as const, action: 'toBeVisible', target: "getByRole('button', { name: 'Save' })" },
  })),
  ...[42, 97].map((row) => ({
    framework: 'playwright' as const,
    group: 'pw toBeVisible row',
    message: pwVisible(`locator('#row-${row}')`, 5000, 30),
    signature: { category: 'assertion' as const, action: 'toBeVisible', target: "locator('#row-<n>')" },
  })),
  ...[3000, 41234].map((port) => ({
    framework: 'playwright' as const,
    group: 'pw toHaveURL dashboard',
    message: `Error: expect(page).toHaveURL(expected) failed\n\nExpected string: "http://localhost:${port}/dashboard"\nReceived string: "http://localhost:${port}/login?next=%2Fdashboard&t=${port * 7}"\nTimeout: 5000ms\n\nCall log:\n  - Expect "toHaveURL" with timeout 5000ms\n    9 × unexpected value "http://localhost:${port}/login?next=%2Fdashboard"\n\n    at /home/runner/work/shop/shop/tests/auth.spec.ts:18:22`,
    signature: { category: 'assertion' as const, action: 'toHaveURL', target: 'http://localhost:<port>/dashboard' },
  })),
  ...[
    [1532, '0.01'],
    [20877, '0.12'],
  ].map(([pixels, ratio]) => ({
    framework: 'playwright' as const,
    group: 'pw toHaveScreenshot home',
    message: `Error: expect(page).toHaveScreenshot(expected) failed\n\n  ${pixels} pixels (ratio ${ratio} of all image pixels) are different.\n\n  Snapshot: home.png\n\nCall log:\n  - Expect "toHaveScreenshot(home.png)" with timeout 5000ms\n    - verifying given screenshot expectation\n  - taking page screenshot\n\n    at /home/runner/work/shop/shop/tests/visual.spec.ts:9:24`,
    signature: { category: 'assertion' as const, action: 'toHaveScreenshot', target: null },
  })),
  ...[
    [30000, 41],
    [15000, 44],
  ].map(([timeout, line]) => ({
    framework: 'playwright' as const,
    group: 'pw click checkout timeout',
    message: `Error: locator.click: Timeout ${timeout}ms exceeded.\nCall log:\n  - waiting for getByRole('button', { name: 'Checkout' })\n\n  ${line} |   await page.getByRole('button', { name: 'Checkout' }).click();`,
    trace: `Error: locator.click: Timeout ${timeout}ms exceeded.\n    at CartPage.checkout (/home/runner/work/shop/shop/tests/pages/cart.ts:${line}:58)\n    at /home/runner/work/shop/shop/tests/cart.spec.ts:${(line as number) + 11}:14`,
    signature: { category: 'timeout' as const, action: 'click', target: "getByRole('button', { name: 'Checkout' })" },
  })),
  {
    framework: 'playwright',
    group: 'pw click pay timeout',
    message: "Error: locator.click: Timeout 30000ms exceeded.\nCall log:\n  - waiting for getByRole('button', { name: 'Pay now' })\n",
    trace:
      'Error: locator.click: Timeout 30000ms exceeded.\n    at CartPage.pay (/home/runner/work/shop/shop/tests/pages/cart.ts:61:58)\n    at /home/runner/work/shop/shop/tests/cart.spec.ts:52:14',
    signature: { category: 'timeout', action: 'click', target: "getByRole('button', { name: 'Pay now' })" },
  },
  // Playwright's JUnit report: the `message` attribute holds the first line, the body the call log
  // and the stack. Two locators timing out on one line of one spec are two causes; one locator on
  // other lines, runs and ports is one.
  ...[
    ["getByRole('button', { name: 'Pay now' })", 12, 3000, 'pw junit click pay now'],
    ["getByRole('button', { name: 'Pay now' })", 19, 41234, 'pw junit click pay now'],
    ["getByRole('link', { name: 'Checkout' })", 12, 3000, 'pw junit click checkout link'],
    ["getByRole('link', { name: 'Checkout' })", 27, 39011, 'pw junit click checkout link'],
  ].map(([locator, line, port, group]) => ({
    framework: 'playwright' as const,
    group: group as string,
    message: 'Error: locator.click: Test timeout of 30000ms exceeded.',
    trace: `Error: locator.click: Test timeout of 30000ms exceeded.\nCall log:\n  - waiting for ${locator}\n    - navigated to "http://localhost:${port}/checkout?run=${(port as number) * 31}"\n\n  ${line} |   await page.${locator}.click();\n\n    at /home/runner/work/shop/shop/tests/checkout.spec.ts:${line}:50`,
    signature: { category: 'timeout' as const, action: 'click', target: locator as string },
  })),
  {
    framework: 'playwright',
    group: 'pw toBeEnabled save',
    message: pwVisible("getByRole('button', { name: 'Save' })", 5000, 21)
      .replace(/toBeVisible/g, 'toBeEnabled')
      .replace('Expected: visible', 'Expected: enabled'),
    signature: { category: 'assertion', action: 'toBeEnabled', target: "getByRole('button', { name: 'Save' })" },
  },
  ...[
    [3000, 1234],
    [36089, 98],
  ].map(([port, order]) => ({
    framework: 'playwright' as const,
    group: 'pw goto refused orders',
    message: `Error: page.goto: net::ERR_CONNECTION_REFUSED at http://localhost:${port}/orders/${order}\nCall log:\n  - navigating to "http://localhost:${port}/orders/${order}", waiting until "load"\n`,
    trace: `    at /home/runner/work/shop/shop/tests/orders.spec.ts:${(order as number) % 50}:14`,
    signature: { category: 'network' as const, action: 'goto', target: 'http://localhost:<port>/orders/<id>' },
  })),
  ...[30000, 60000].map((timeout) => ({
    framework: 'playwright' as const,
    group: 'pw test timeout',
    message: `Test timeout of ${timeout}ms exceeded.`,
    trace: `    at /home/runner/work/shop/shop/tests/checkout.spec.ts:${timeout / 1000}:5`,
    signature: { category: 'timeout' as const, action: 'test', target: null },
  })),
  ...[
    ['1 installed, 1 enabled', 300000],
    ['2 installed, 2 enabled', 60000],
  ].map(([expected, timeout]) => ({
    framework: 'playwright' as const,
    group: 'pw toHaveText older format',
    message: `Error: Timed out ${timeout}ms waiting for expect(locator).toHaveText(expected)\n\nLocator: locator('id=dictionaries')\nExpected string: "Dictionaries (${expected})"\nReceived string: "Dictionaries (0 installed, 0 enabled)"\nCall log:\n  - expect.toHaveText with timeout ${timeout}ms\n  - waiting for locator('id=dictionaries')`,
    signature: { category: 'assertion' as const, action: 'toHaveText', target: "locator('id=dictionaries')" },
  })),
  {
    framework: 'playwright',
    group: 'pw strict mode',
    message:
      "Error: locator.click: Error: strict mode violation: getByRole('link', { name: 'Details' }) resolved to 2 elements:\n    1) <a href=\"/orders/1\">Details</a> aka getByRole('link', { name: 'Details' }).first()\n    2) <a href=\"/orders/2\">Details</a> aka getByRole('link', { name: 'Details' }).nth(1)\n\nCall log:\n  - waiting for getByRole('link', { name: 'Details' })\n",
    signature: { category: 'element', action: 'click', target: "getByRole('link', { name: 'Details' })" },
  },
  {
    framework: 'playwright',
    group: 'pw browser closed',
    message: 'Error: page.fill: Target page, context or browser has been closed',
    trace:
      'Error: page.fill: Target page, context or browser has been closed\n    at /home/runner/work/shop/shop/tests/signup.spec.ts:12:16',
    signature: { category: 'crash', action: 'fill', target: null },
  },
  // Jest
  ...[
    [3, 4, 12],
    [3, 7, 14],
  ].map(([expected, received, line]) => ({
    framework: 'jest' as const,
    group: 'jest toBe cart total',
    message: jestToBe(expected as number, received as number, line as number),
    signature: { category: 'assertion' as const, action: 'toBe', target: null },
  })),
  ...['Bob', 'Carol'].map((name, i) => ({
    framework: 'jest' as const,
    group: 'jest toEqual user',
    message: `expect(received).toEqual(expected) // deep equality\n\n- Expected  - 1\n+ Received  + ${i + 1}\n\n  Object {\n    "id": ${41 + i},\n-   "name": "Alice",\n+   "name": "${name}",\n  }`,
    trace: `    at Object.toEqual (/home/runner/work/api/api/src/users/users.test.ts:${30 + i}:18)\n    at processTicksAndRejections (node:internal/process/task_queues:95:5)`,
    signature: { category: 'assertion' as const, action: 'toEqual', target: null },
  })),
  ...['bob', 'carol'].map((user, i) => ({
    framework: 'jest' as const,
    group: 'jest toHaveBeenCalledWith',
    message: `expect(jest.fn()).toHaveBeenCalledWith(...expected)\n\nExpected: "alice", {"notify": true}\nReceived: "${user}", {"notify": false}\n\nNumber of calls: ${i + 1}`,
    trace: `    at Object.<anonymous> (/home/runner/work/api/api/src/mail/mailer.test.ts:${55 + i}:26)`,
    signature: { category: 'assertion' as const, action: 'toHaveBeenCalledWith', target: null },
  })),
  ...[5000, 10000].map((timeout) => ({
    framework: 'jest' as const,
    group: 'jest test timeout',
    message: `thrown: "Exceeded timeout of ${timeout} ms for a test.\nAdd a timeout value to this test to increase the timeout, if this is a long-running test. See https://jestjs.io/docs/api#testname-fn-timeout."`,
    trace: `    at test (/home/runner/work/api/api/src/sync.test.ts:${timeout / 1000}:3)\n    at Object.<anonymous> (/home/runner/work/api/api/node_modules/jest-circus/build/index.js:12:5)`,
    signature: { category: 'timeout' as const, action: 'test', target: null },
  })),
  ...[18, 19].map((line) => ({
    framework: 'jest' as const,
    group: 'jest TypeError in formatName',
    message: "TypeError: Cannot read properties of undefined (reading 'name')",
    trace: `TypeError: Cannot read properties of undefined (reading 'name')\n    at formatName (/home/runner/work/api/api/src/users/format.ts:${line}:21)\n    at Object.<anonymous> (/home/runner/work/api/api/src/users/format.test.ts:${line + 20}:12)\n    at Promise.then.completed (/home/runner/work/api/api/node_modules/jest-circus/build/utils.js:298:28)`,
    signature: { category: 'crash' as const, action: 'TypeError', target: null },
  })),
  {
    framework: 'jest',
    group: 'jest TypeError in orderTotal',
    message: "TypeError: Cannot read properties of undefined (reading 'name')",
    trace:
      "TypeError: Cannot read properties of undefined (reading 'name')\n    at orderTotal (/home/runner/work/api/api/src/orders/total.ts:7:30)\n    at Object.<anonymous> (/home/runner/work/api/api/src/orders/total.test.ts:11:12)",
  },
  // Vitest
  ...[5, 7].map((received) => ({
    framework: 'vitest' as const,
    group: 'vitest toBe sum',
    message: `AssertionError: expected ${received} to be 4 // Object.is equality\n\n- Expected\n+ Received\n\n- 4\n+ ${received}\n\n ❯ src/sum.test.ts:${received + 1}:17`,
    signature: { category: 'assertion' as const, action: 'toBe', target: null },
  })),
  ...['failed', 'broken'].map((status) => ({
    framework: 'vitest' as const,
    group: 'vitest toEqual status',
    message: `AssertionError: expected { status: '${status}', id: 12 } to deeply equal { status: 'passed', id: 12 }\n\n- Expected\n+ Received\n\n  Object {\n    "id": 12,\n-   "status": "passed",\n+   "status": "${status}",\n  }\n\n ❯ src/runs.test.ts:40:25`,
    signature: { category: 'assertion' as const, action: 'toEqual', target: null },
  })),
  ...['bob', 'dave'].map((user) => ({
    framework: 'vitest' as const,
    group: 'vitest called with',
    message: `AssertionError: expected "spy" to be called with arguments: [ 'alice' ]\n\nReceived: \n\n  1st spy call:\n\n  Array [\n-   "alice",\n+   "${user}",\n  ]\n\n\nNumber of calls: 1\n\n ❯ src/notify.test.ts:22:19`,
    signature: { category: 'assertion' as const, action: 'toHaveBeenCalledWith', target: null },
  })),
  ...[5000, 20000].map((timeout) => ({
    framework: 'vitest' as const,
    group: 'vitest test timeout',
    message: `Error: Test timed out in ${timeout}ms.\nIf this is a long-running test, pass a timeout value as the last argument or configure it globally with "testTimeout".`,
    trace: ' ❯ src/import.test.ts:88:3',
    signature: { category: 'timeout' as const, action: 'test', target: null },
  })),
  // JUnit 5 / JUnit 4 / Java / Selenium
  ...[
    [200, 500, 55],
    [201, 503, 57],
  ].map(([expected, actual, line]) => ({
    framework: 'junit' as const,
    group: 'junit assertEquals createsOrder',
    ...junitEquals(expected as number, actual as number, line as number, 'createsOrder'),
    signature: { category: 'assertion' as const, action: 'assertEquals', target: null },
  })),
  { framework: 'junit', group: 'junit assertEquals cancelsOrder', ...junitEquals(200, 500, 80, 'cancelsOrder') },
  ...['Error', 'Oops'].map((actual, i) => ({
    framework: 'junit' as const,
    group: 'junit4 ComparisonFailure greeting',
    message: `org.junit.ComparisonFailure: expected:<[Welcome]> but was:<[${actual}]>`,
    trace: `org.junit.ComparisonFailure: expected:<[Welcome]> but was:<[${actual}]>\n\tat org.junit.Assert.assertEquals(Assert.java:115)\n\tat org.junit.Assert.assertEquals(Assert.java:144)\n\tat com.acme.web.HomeTest.greets(HomeTest.java:${21 + i})\n\tat sun.reflect.NativeMethodAccessorImpl.invoke0(Native Method)`,
    signature: { category: 'assertion' as const, action: 'assertEquals', target: null },
  })),
  ...[88, 91].map((line) => ({
    framework: 'junit' as const,
    group: 'java NullPointerException in pay',
    message: 'java.lang.NullPointerException: Cannot invoke "com.acme.shop.Cart.total()" because "cart" is null',
    trace: `java.lang.NullPointerException: Cannot invoke "com.acme.shop.Cart.total()" because "cart" is null\n\tat com.acme.shop.CheckoutService.pay(CheckoutService.java:${line})\n\tat com.acme.shop.CheckoutServiceTest.paysTheCart(CheckoutServiceTest.java:${line - 48})\n\tat java.base/java.util.ArrayList.forEach(ArrayList.java:1511)\nCaused by: java.lang.IllegalStateException: unrelated\n\tat com.acme.shop.Other.thing(Other.java:3)`,
    signature: { category: 'crash' as const, action: 'NullPointerException', target: null },
  })),
  ...[
    ['124.0.6367.91', '6a2b3c4d5e6f708192a3b4c5d6e7f809'],
    ['125.0.6422.60', 'f0e1d2c3b4a5968778695a4b3c2d1e0f'],
  ].map(([chrome, session]) => ({
    framework: 'junit' as const,
    group: 'selenium no such element login',
    ...seleniumNoSuch(chrome as string, session as string, '#login'),
    signature: { category: 'element' as const, action: 'NoSuchElementException', target: 'css selector #login' },
  })),
  {
    framework: 'junit',
    group: 'selenium no such element logout',
    ...seleniumNoSuch('124.0.6367.91', 'ab12cd34ef56ab12cd34ef56ab12cd34', '#logout'),
  },
  ...[10, 15].map((seconds) => ({
    framework: 'junit' as const,
    group: 'selenium wait checkout',
    message: `org.openqa.selenium.TimeoutException: Expected condition failed: waiting for visibility of element located by By.id: checkout (tried for ${seconds} second(s) with 500 milliseconds interval)`,
    trace: `org.openqa.selenium.TimeoutException: Expected condition failed\n\tat org.openqa.selenium.support.ui.WebDriverWait.timeoutException(WebDriverWait.java:84)\n\tat org.openqa.selenium.support.ui.FluentWait.until(FluentWait.java:228)\n\tat com.acme.shop.pages.CartPage.checkout(CartPage.java:${seconds + 30})`,
    signature: { category: 'timeout' as const, action: 'TimeoutException', target: 'By.id: checkout' },
  })),
  // pytest
  ...[
    ['Error 500', 12],
    ['Error 502', 14],
  ].map(([received, line]) => ({
    framework: 'pytest' as const,
    group: 'pytest greeting',
    ...pytestEq(received as string, 'Welcome, Alice', line as number),
    signature: { category: 'assertion' as const, action: 'assert ==', target: null },
  })),
  { framework: 'pytest', group: 'pytest greeting, other expected text', ...pytestEq('Error 500', 'Welcome, Bob', 12) },
  ...[500, 502].map((status) => ({
    framework: 'pytest' as const,
    group: 'pytest status code',
    message: `assert ${status} == 200\n +  where ${status} = <Response [${status}]>.status_code`,
    trace: `tests/test_orders.py:${status - 470}: in test_create_order\n    assert response.status_code == 200\nE   assert ${status} == 200\nE    +  where ${status} = <Response [${status}]>.status_code`,
    signature: { category: 'assertion' as const, action: 'assert ==', target: null },
  })),
  ...[
    [8000, 42, '0x7f3a2c1b9d90', 31],
    [8001, 97, '0x7f11d0e2a4c0', 33],
  ].map(([port, user, address, line]) => ({
    framework: 'pytest' as const,
    group: 'pytest requests refused',
    ...pyRequests(port as number, user as number, address as string, line as number),
    signature: { category: 'network' as const, action: 'request', target: 'localhost:<port>/api/users/<id>' },
  })),
  ...['/home/ci/proj', '/home/runner/work/proj/proj'].map((root, i) => ({
    framework: 'pytest' as const,
    group: 'python KeyError in load',
    message: `Traceback (most recent call last):\n  File "${root}/tests/test_users.py", line ${20 + i}, in test_load\n    load(record)\n  File "${root}/app/users.py", line ${12 + i}, in load\n    return data['email']\n           ~~~~^^^^^^^^^\nKeyError: 'email'`,
    signature: { category: 'crash' as const, action: 'KeyError', target: null },
  })),
  // .NET: xUnit, NUnit, MSTest
  ...[
    [5, 4, '/home/runner/work/shop/shop/Shop.Tests/CartTests.cs'],
    [5, 3, 'C:\\Users\\build\\src\\shop\\Shop.Tests\\CartTests.cs'],
  ].map(([expected, actual, file]) => ({
    framework: 'dotnet' as const,
    group: 'xunit Equal cart total',
    ...xunitEqual(expected as number, actual as number, file as string),
    signature: { category: 'assertion' as const, action: 'Assert.Equal', target: null },
  })),
  ...[
    ['Error 500', 0],
    ['Welcome, Alicia', 12],
  ].map(([actual, pos]) => ({
    framework: 'dotnet' as const,
    group: 'xunit Equal strings greeting',
    message: `Assert.Equal() Failure: Strings differ\n           ↓ (pos ${pos})\nExpected: "Welcome, Alice"\nActual:   "${actual}"\n           ↑ (pos ${pos})`,
    trace: `   at Shop.Tests.HomeTests.Greets() in /home/runner/work/shop/shop/Shop.Tests/HomeTests.cs:line ${17 + (pos as number)}`,
    signature: { category: 'assertion' as const, action: 'Assert.Equal', target: null },
  })),
  ...[4, 6].map((actual) => ({
    framework: 'dotnet' as const,
    group: 'nunit That cart count',
    message: `  Assert.That(cart.Count, Is.EqualTo(5))\n  Expected: 5\n  But was:  ${actual}\n`,
    trace: `   at Shop.Tests.CartCountTests.Counts_items() in D:\\a\\shop\\shop\\Shop.Tests\\CartCountTests.cs:line ${30 + actual}\n   at NUnit.Framework.Internal.Commands.TestMethodCommand.Execute(TestExecutionContext context)`,
    signature: { category: 'assertion' as const, action: 'Assert.That', target: null },
  })),
  ...[
    ['C:\\Users\\ci\\source\\repos\\Shop', 31],
    ['C:\\Users\\dev\\source\\repos\\Shop', 35],
  ].map(([root, line]) => ({
    framework: 'dotnet' as const,
    group: 'dotnet NullReferenceException in Pay',
    ...dotnetNre(root as string, line as number),
    signature: { category: 'crash' as const, action: 'NullReferenceException', target: null },
  })),
  ...[4, 9].map((actual) => ({
    framework: 'dotnet' as const,
    group: 'mstest AreEqual',
    message: `Assert.AreEqual failed. Expected:<5>. Actual:<${actual}>.`,
    trace: `   at Shop.Tests.StockTests.Reserves() in C:\\agent\\_work\\3\\s\\Shop.Tests\\StockTests.cs:line ${actual * 3}`,
    signature: { category: 'assertion' as const, action: 'Assert.AreEqual', target: null },
  })),
  ...['tmp4F2A.tmp', 'tmpB771.tmp'].map((name) => ({
    framework: 'dotnet' as const,
    group: 'dotnet file in temp folder',
    message: `System.IO.FileNotFoundException : Could not find file 'C:\\Users\\runneradmin\\AppData\\Local\\Temp\\${name}'.`,
    trace: '   at Shop.Tests.ExportTests.Writes() in D:\\a\\shop\\shop\\Shop.Tests\\ExportTests.cs:line 12',
  })),
  ...[5000, 5001].map((port) => ({
    framework: 'dotnet' as const,
    group: 'dotnet HttpRequestException refused',
    message: `System.Net.Http.HttpRequestException : No connection could be made because the target machine actively refused it. (localhost:${port})`,
    trace: `   at Shop.Tests.ApiTests.Health() in D:\\a\\shop\\shop\\Shop.Tests\\ApiTests.cs:line ${port - 4990}`,
    signature: { category: 'network' as const, action: 'HttpRequestException', target: 'localhost:<port>' },
  })),
  // Node network errors
  ...[
    [5432, 14],
    [5433, 16],
  ].map(([port, line]) => ({
    framework: 'node' as const,
    group: 'node ECONNREFUSED database',
    ...nodeRefused(port as number, line as number),
    signature: { category: 'network' as const, action: 'connect', target: '127.0.0.1:<port>' },
  })),
  ...['10.0.3.17', '10.0.4.21'].map((ip) => ({
    framework: 'node' as const,
    group: 'node ETIMEDOUT upstream',
    message: `Error: connect ETIMEDOUT ${ip}:443`,
    trace: `Error: connect ETIMEDOUT ${ip}:443\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)\n    at async fetchRates (/home/runner/work/api/api/src/rates.ts:9:5)`,
    signature: { category: 'network' as const, action: 'connect', target: '<ip>:<port>' },
  })),
  ...[33, 35].map((line) => ({
    framework: 'node' as const,
    group: 'node socket hang up',
    message: 'Error: socket hang up',
    trace: `Error: socket hang up\n    at connResetException (node:internal/errors:720:14)\n    at Socket.socketOnEnd (node:_http_client:525:23)\n    at uploadReport (/home/runner/work/api/api/src/upload.ts:${line}:11)`,
    signature: { category: 'network' as const, action: null, target: null },
  })),
  ...[12, 13].map((line) => ({
    framework: 'node' as const,
    group: 'node ENOTFOUND staging',
    message: 'Error: getaddrinfo ENOTFOUND api.staging.example.test',
    trace: `Error: getaddrinfo ENOTFOUND api.staging.example.test\n    at GetAddrInfoReqWrap.onlookup [as oncomplete] (node:dns:107:26)\n    at async ping (/home/runner/work/api/api/src/health.ts:${line}:3)`,
    signature: { category: 'network' as const, action: 'getaddrinfo', target: 'api.staging.example.test' },
  })),
  {
    framework: 'node',
    group: 'node ENOTFOUND production',
    message: 'Error: getaddrinfo ENOTFOUND api.example.test',
    trace: 'Error: getaddrinfo ENOTFOUND api.example.test\n    at async ping (/home/runner/work/api/api/src/health.ts:12:3)',
  },
  ...['/tmp/attest-upload-8f3a2c/report.json', '/var/folders/xy/k2_9bz1n4g/T/attest-upload-1b7e/report.json'].map((path) => ({
    framework: 'node' as const,
    group: 'node ENOENT report in temp folder',
    message: `Error: ENOENT: no such file or directory, open '${path}'`,
    trace: `Error: ENOENT: no such file or directory, open '${path}'\n    at async open (node:internal/fs/promises:639:25)\n    at async readReport (/home/runner/work/api/api/src/report.ts:20:16)`,
    signature: { category: 'other' as const, action: null, target: null },
  })),
  ...[
    ['7f3a9c2e-1b4d-4e8a-9f00-3c2d1e0b9a77', '2024-05-01T12:34:56.789Z'],
    ['0b9e4c11-52aa-4d0e-8c3f-6a7b8c9d0e1f', '2025-01-17T08:02:11Z'],
  ].map(([id, at]) => ({
    framework: 'node' as const,
    group: 'node order expired',
    message: `Error: Order ${id} expired at ${at}`,
    trace: `Error: Order ${id} expired at ${at}\n    at assertOpen (/home/runner/work/api/api/src/orders/state.ts:44:11)`,
    signature: { category: 'other' as const, action: null, target: null },
  })),
];
