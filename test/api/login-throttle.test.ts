import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { LoginThrottle } from '../../src/server/security/login-throttle.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createUser, unique } from '../helpers/factories.ts';
import { login, type RawResponse } from '../helpers/http.ts';
import { assertProblem } from '../helpers/problems.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// Password logins throttled per account across addresses (SEC-2d) and per address (SEC-2b), without
// letting a stranger lock the owner out: the audit's 300 guesses from 300 addresses, the backoff
// and its cap, and the clients an account signed in from keeping their way in.

/** The n-th of many loopback addresses in a block of 127/8 of the test's own (all of it is local). */
const addressOf = (block: number, n: number) => `127.${block}.${Math.floor(n / 250)}.${(n % 250) + 1}`;

const retryAfterOf = (answer: RawResponse) => Number(answer.headers['retry-after']);

async function userWithPassword(server: TestServer) {
  const user = await createUser(server, ['viewer']);
  const password = `pw-${unique()}-long-enough`;
  await server.admin.client.call(v1.users.setUserPassword, { params: { email: user.email }, body: { password } });
  return { ...user, password };
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] POST /auth/login throttling per account (SEC-2d)`, () => {
    let server: TestServer;
    before(async () => {
      // The shipped address budget: one guess per address never reaches it.
      server = await startTestServer(dialect, { ATTEST_AUTH_FAILURES_PER_MINUTE: '30' });
    });
    after(() => server.close());

    test('300 wrong passwords for one account from 300 addresses end in 429 with Retry-After; the right one waits too', async () => {
      const user = await userWithPassword(server);
      const statuses: number[] = [];
      let last: RawResponse | undefined;
      for (let i = 0; i < 300; i++) {
        last = await login(server, addressOf(10, i), user.email, `wrong-${i}-password`);
        statuses.push(last.status);
      }
      const free = LoginThrottle.FREE_FAILURES;
      assert.deepEqual(statuses.slice(0, free), Array(free).fill(401), 'the first failures are plain 401s');
      assert.deepEqual(statuses.slice(free), Array(300 - free).fill(429), 'every later guess is throttled, whatever its address');
      assertProblem(last as RawResponse, 429, 'RATE_LIMITED');
      const wait = retryAfterOf(last as RawResponse);
      assert.ok(Number.isInteger(wait) && wait >= 1 && wait <= 60, `Retry-After ${wait}`);

      // A throttled answer says nothing about the password: the right one is refused the same way.
      const right = await login(server, addressOf(10, 300), user.email, user.password);
      assertProblem(right, 429, 'RATE_LIMITED');
      server.clock.advance(retryAfterOf(right) * 1000);
      assert.equal((await login(server, addressOf(10, 301), user.email, user.password)).status, 200, 'after the wait it signs in');
      // The success cleared the count: the next failure is a plain 401 again.
      assert.equal((await login(server, addressOf(10, 302), user.email, 'wrong again, sorry')).status, 401);
    });

    test('three bursts of 200 concurrent wrong passwords, 62 s apart: only what the budget allows is checked, the rest 429', async () => {
      const user = await userWithPassword(server);
      // Signed in once from its own address beforehand: that client keeps its way in (SEC-2d).
      const home = addressOf(41, 0);
      assert.equal((await login(server, home, user.email, user.password)).status, 200);
      const checked: number[] = [];
      for (let burst = 0; burst < 3; burst++) {
        const answers = await Promise.all(
          Array.from({ length: 200 }, (_, i) => login(server, addressOf(11, burst * 200 + i), user.email, `wrong-${burst}-${i}-guess`)),
        );
        assert.ok(
          answers.every((a) => a.status === 401 || a.status === 429),
          JSON.stringify(answers.map((a) => a.status)),
        );
        checked.push(answers.filter((a) => a.status === 401).length);
        server.clock.advance(62_000);
      }
      // Counted before checked: the free failures in the first burst, then one per burst once its wait is over.
      assert.deepEqual(checked, [LoginThrottle.FREE_FAILURES, 1, 1]);
      assert.equal((await login(server, home, user.email, user.password)).status, 200, 'the owner still signs in from home');
    });

    test("200 concurrent wrong logins for as many e-mails from one address: the address's budget of 30 is checked, no more (SEC-2b)", async () => {
      const address = addressOf(40, 0);
      const answers = await Promise.all(
        Array.from({ length: 200 }, (_, i) => login(server, address, `sprayed-${i}-${unique()}@example.test`, 'a wrong password here')),
      );
      assert.equal(answers.filter((a) => a.status === 401).length, 30);
      assert.equal(answers.filter((a) => a.status === 429).length, 170);
      server.clock.advance(61_000);
    });

    test('the wait doubles with each failure after the free ones and stops at a minute', async () => {
      const user = await userWithPassword(server);
      for (let i = 0; i < LoginThrottle.FREE_FAILURES; i++) {
        assert.equal((await login(server, addressOf(11, i), user.email, 'not the password')).status, 401);
      }
      const waits: number[] = [];
      for (let i = 0; i < 10; i++) {
        const refused = await login(server, addressOf(11, 100 + i), user.email, 'not the password');
        assertProblem(refused, 429, 'RATE_LIMITED');
        waits.push(retryAfterOf(refused));
        server.clock.advance(retryAfterOf(refused) * 1000);
        // The wait is over: this guess is checked, fails, and sets the next, longer wait.
        assert.equal((await login(server, addressOf(11, 200 + i), user.email, 'not the password')).status, 401);
      }
      assert.deepEqual(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60, 60]);
    });

    test('an address the owner signed in from keeps its way in while strangers guess from everywhere else', async () => {
      const user = await userWithPassword(server);
      const home = addressOf(12, 0);
      assert.equal((await login(server, home, user.email, user.password)).status, 200);
      for (let i = 1; i <= 100; i++) await login(server, addressOf(12, i), user.email, `guess-${i}-password`);
      assertProblem(await login(server, addressOf(12, 101), user.email, user.password), 429, 'RATE_LIMITED');
      assert.equal((await login(server, home, user.email, user.password)).status, 200, 'the owner is not locked out');
      assert.equal((await login(server, addressOf(12, 102), user.email, 'one more guess')).status, 401, 'and the success reset the count');
    });

    test("the known address's pass ends after a few failures of its own, so it is no way around the throttle", async () => {
      const user = await userWithPassword(server);
      const shared = addressOf(13, 0);
      assert.equal((await login(server, shared, user.email, user.password)).status, 200);
      for (let i = 1; i <= 10; i++) await login(server, addressOf(13, i), user.email, `guess-${i}-password`);
      for (let i = 0; i < LoginThrottle.KNOWN_FAILURES; i++) {
        assert.equal((await login(server, shared, user.email, `from inside ${i}`)).status, 401, `known-address guess ${i + 1} is checked`);
      }
      assertProblem(await login(server, shared, user.email, 'from inside, again'), 429, 'RATE_LIMITED');
      assertProblem(await login(server, shared, user.email, user.password), 429, 'RATE_LIMITED');
    });

    test('an unknown e-mail is throttled exactly like a real account, so a 429 does not tell which e-mails exist', async () => {
      const user = await userWithPassword(server);
      const answers = async (email: string, block: number) => {
        const statuses: number[] = [];
        for (let i = 0; i < 8; i++) statuses.push((await login(server, addressOf(block, i), email, 'not the password')).status);
        return statuses;
      };
      const real = await answers(user.email, 14);
      assert.deepEqual(await answers(`nobody-${unique()}@example.test`, 15), real);
      assert.equal(real.at(-1), 429);
    });
  });

  describe(`[${dialect}] POST /auth/login throttling per address (SEC-2b, SEC-2d)`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect, { ATTEST_AUTH_FAILURES_PER_MINUTE: '10' });
    });
    after(() => server.close());

    test("one attacker's failures at a shared address do not lock out a person who signs in there, but do stop the attacker", async () => {
      const user = await userWithPassword(server);
      const office = addressOf(20, 0);
      assert.equal((await login(server, office, user.email, user.password)).status, 200, 'signed in there yesterday');
      // Password spraying from the same NAT: one guess per account, so no account's own throttle starts.
      for (let i = 1; i <= 10; i++) {
        assert.equal((await login(server, office, `colleague-${i}-${unique()}@example.test`, 'Summer2026!!')).status, 401);
      }
      assertProblem(await login(server, office, `colleague-11-${unique()}@example.test`, 'Summer2026!!'), 429, 'RATE_LIMITED');
      assert.equal((await login(server, office, user.email, user.password)).status, 200, 'the right password from the same address');
      assertProblem(await login(server, office, `colleague-12-${unique()}@example.test`, 'Summer2026!!'), 429, 'RATE_LIMITED');
      // Someone who never signed in from there waits out the address's minute (a first sign-in behind a NAT under attack).
      const newcomer = await userWithPassword(server);
      assertProblem(await login(server, office, newcomer.email, newcomer.password), 429, 'RATE_LIMITED');
      assert.equal((await login(server, addressOf(20, 1), newcomer.email, newcomer.password)).status, 200, 'elsewhere at once');
    });
  });
}
