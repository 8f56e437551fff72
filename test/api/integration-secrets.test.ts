import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { type ApiError, v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, unique } from '../helpers/factories.ts';
import { type StandIn, startStandIn } from '../helpers/forge-stand-in.ts';
import { type RawResponse, rawRequest } from '../helpers/http.ts';
import { firstError, firstPointer } from '../helpers/problems.ts';
import { failedGroup as failedGroupOf } from '../helpers/records.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// The audit's findings on integrations, against real listeners standing in for Jira and GitHub
// (and for an attacker's host), which record every header they receive:
// - a manager moving an integration to a host of their own took its stored token with it (FORGE-8);
// - a Jira echoing `Authorization: Basic …` put email:token, base64-encoded, in a tester's 502 (FORGE-9);
// - a tracker's `javascript:` issue address was stored and broke every failures page (FORGE-10);
// - integration URLs accepted mapped, NAT64, unspecified and shared addresses at save (FORGE-7, HOOK-5).

const JIRA_EMAIL = 'qa@example.test';
const JIRA_TOKEN = 'jira-secret-token-4f7a9c2e';
const GITHUB_TOKEN = 'ghp_moved_secret_token_5b8d1e3f';
const WAIT = { timeoutMs: 20_000, intervalMs: 50 };

interface Seen {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A listener that records every request (headers included) and answers as `respond` says (404 by default). */
interface Upstream {
  url: string;
  seen: Seen[];
  respond: (seen: Seen) => { status: number; body?: unknown; headers?: Record<string, string> };
  close(): Promise<void>;
}

async function startUpstream(): Promise<Upstream> {
  const upstream: Upstream = {
    url: '',
    seen: [],
    respond: () => ({ status: 404, body: { message: 'Not Found' } }),
    close: async () => {},
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const seen = {
        method: req.method ?? '',
        path: new URL(req.url ?? '/', 'http://x').pathname,
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      };
      upstream.seen.push(seen);
      const answer = upstream.respond(seen);
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      res.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  upstream.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  upstream.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return upstream;
}

/**
 * Every form of a secret that must never show: as given and base64-encoded, alone and (Jira Cloud)
 * in the email:token pair; of the pair's base64 only what encodes the token, since the e-mail
 * address is no secret.
 */
const formsOf = (token: string, email?: string) => {
  const forms = [token, Buffer.from(token).toString('base64').replace(/=+$/, '')];
  if (email)
    forms.push(
      Buffer.from(`${email}:${token}`)
        .toString('base64')
        .replace(/=+$/, '')
        .slice(Math.ceil(((email.length + 1) * 4) / 3) + 1),
    );
  return forms;
};

/** Whether `text` shows any of the forms, or any 10 characters in a row of one (a form cut short at a length limit). */
function leaks(text: string, forms: string[]): string | undefined {
  for (const form of forms) {
    for (let i = 0; i + 10 <= form.length; i++) if (text.includes(form.slice(i, i + 10))) return form;
  }
  return undefined;
}

const refused = async (call: Promise<unknown>, status: number, code: string): Promise<ApiError> => {
  try {
    await call;
  } catch (error) {
    const e = error as ApiError;
    assert.equal(e.status, status, `${e.status} ${e.code}: ${String(e.problem?.detail)}`);
    assert.equal(e.code, code);
    return e;
  }
  assert.fail('the call succeeded');
};

for (const dialect of DIALECTS) {
  describe(`[${dialect}] integration secrets and tracker answers`, () => {
    let server: TestServer;
    let standIn: StandIn;
    let attacker: Upstream;
    let echo: Upstream;
    let projectId: string;
    let manager: TestUser;
    let tester: TestUser;

    before(async () => {
      standIn = await startStandIn();
      attacker = await startUpstream();
      echo = await startUpstream();
      server = await startTestServer(dialect, {
        ATTEST_INTEGRATIONS_ALLOW_PRIVATE: 'true',
        ATTEST_PUBLIC_URL: 'https://attest.example.test',
      });
      projectId = (await createProject(server, 'Secrets')).id;
      manager = await createUser(server, ['manager'], { projects: [projectId] });
      tester = await createUser(server, ['tester'], { projects: [projectId] });
    });
    after(async () => {
      await server.close();
      await Promise.all([standIn.close(), attacker.close(), echo.close()]);
    });

    /** A new project the manager and the tester are members of. */
    async function memberProject(name: string): Promise<string> {
      const id = (await createProject(server, name)).id;
      for (const user of [manager, tester])
        await server.admin.client.call(v1.projects.addMember, { params: { projectId: id, email: user.email } });
      return id;
    }

    const failedGroup = (project: string) => failedGroupOf(tester.client, project);

    const checkOf = (jobId: string) =>
      waitFor(
        async () => {
          const row = await server.app.attest.db.selectFrom('forge_checks').selectAll().where('job_id', '=', jobId).executeTakeFirst();
          return row?.last_error ? row : undefined;
        },
        { ...WAIT, message: 'the refused sync to be recorded' },
      );

    describe('a stored secret stays with the URL it was given for (FORGE-8)', () => {
      test('moving the Jira tracker to another host without its token is refused, for a manager and an admin alike, and nothing changes', async () => {
        const put = (body: Record<string, unknown>, client = manager.client) =>
          client.call(v1.integrations.putIssueTracker, { params: { projectId }, body: body as never });
        await put({ kind: 'jira', baseUrl: standIn.url, email: JIRA_EMAIL, token: JIRA_TOKEN, projectKey: 'SHOP' });
        for (const body of [
          { kind: 'jira', baseUrl: attacker.url, projectKey: 'SHOP' },
          { kind: 'jira', baseUrl: `${standIn.url}/elsewhere`, projectKey: 'SHOP' },
          { kind: 'jira', baseUrl: standIn.url.replace('http:', 'https:'), projectKey: 'SHOP' },
          { kind: 'github', baseUrl: attacker.url, repository: 'acme/shop' },
          { kind: 'github', repository: 'acme/shop' },
        ]) {
          for (const client of [manager.client, server.admin.client]) {
            const e = await refused(put(body, client), 400, 'INVALID_INPUT');
            assert.equal(firstPointer(e), '/body/token', JSON.stringify(body));
            assert.match(String(firstError(e)?.message), /required when the integration moves .*never sent anywhere else/);
          }
        }
        const kept = await manager.client.call(v1.integrations.getIssueTracker, { params: { projectId } });
        assert.equal(kept.tracker?.baseUrl, standIn.url);
        assert.equal(kept.tracker?.kind, 'jira');

        // The same place written differently, and other fields, keep the token.
        await put({
          kind: 'jira',
          baseUrl: `${standIn.url.toUpperCase().replace('HTTP', 'http')}/`,
          projectKey: 'SHOP',
          issueType: 'Task',
        });
        const { groupId } = await failedGroup(projectId);
        const link = await tester.client.call(v1.integrations.createFailureGroupIssue, { params: { projectId, groupId }, body: {} });
        assert.match(link.key, /^SHOP-\d+$/);
        const filed = standIn.requests.filter((r) => r.method === 'POST' && r.path === '/rest/api/3/issue').at(-1);
        assert.equal(filed?.headers.authorization, `Basic ${Buffer.from(`${JIRA_EMAIL}:${JIRA_TOKEN}`).toString('base64')}`);
        assert.equal(attacker.seen.length, 0, 'the other host never heard from Attest');

        // Moved with a token given in the same request: allowed, and the audit entry says where from.
        const other = 'attacker-own-token-1234';
        await put({ kind: 'jira', baseUrl: attacker.url, email: JIRA_EMAIL, token: other, projectKey: 'SHOP' });
        const audit = await server.admin.client.call(v1.users.listAuditLog, {
          query: { action: 'issue-tracker.set', targetId: projectId },
        });
        const details = audit.items.map((i) => i.details as Record<string, unknown>);
        assert.equal(details.length, 3, 'the refused requests left no entry');
        const moved = details.find((d) => d.baseUrl === attacker.url);
        assert.deepEqual(moved?.movedFrom, { kind: 'jira', baseUrl: standIn.url });
        assert.equal(moved?.tokenChanged, true);
        assert.ok(!details.some((d, i) => i > 0 && d.movedFrom && d.baseUrl !== attacker.url), 'the slash and case change is no move');
        attacker.respond = () => ({ status: 503, body: { message: 'down' } });
        await refused(
          tester.client.call(v1.integrations.createFailureGroupIssue, { params: { projectId, groupId }, body: {} }),
          502,
          'UPSTREAM_FAILED',
        );
        // The issue it was asked to file; whatever else reaches that host, none carries the first token.
        const filedThere = attacker.seen.filter((r) => r.method === 'POST' && r.path === '/rest/api/3/issue');
        assert.equal(filedThere.length, 1, JSON.stringify(attacker.seen.map((r) => `${r.method} ${r.path}`)));
        assert.equal(leaks(JSON.stringify(attacker.seen), formsOf(JIRA_TOKEN, JIRA_EMAIL)), undefined, 'only the token given for it');
        assert.equal(filedThere[0]?.headers.authorization, `Basic ${Buffer.from(`${JIRA_EMAIL}:${other}`).toString('base64')}`);
      });

      test('moving a code host (its API URL or its kind) without its token, or a GitHub App without its private key, is refused; checks go where the secret was given', async () => {
        const forgeProject = await memberProject('Forge moves');
        const heard = attacker.seen.length;
        const put = (body: Record<string, unknown>) =>
          manager.client.call(v1.integrations.putForgeSettings, { params: { projectId: forgeProject }, body: body as never });
        await put({ kind: 'github', apiUrl: standIn.url, token: GITHUB_TOKEN });
        for (const body of [
          { kind: 'github', apiUrl: attacker.url },
          { kind: 'github', apiUrl: `${standIn.url}/api/v3` },
          { kind: 'gitlab', apiUrl: standIn.url },
          { kind: 'github' },
        ]) {
          assert.equal(firstPointer(await refused(put(body), 400, 'INVALID_INPUT')), '/body/token', JSON.stringify(body));
        }
        const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
        const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
        const app = { kind: 'github', auth: 'app', appId: '4242', installationId: '99' };
        await put({ ...app, apiUrl: standIn.url, privateKey: pem });
        const e = await refused(put({ ...app, apiUrl: attacker.url }), 400, 'INVALID_INPUT');
        assert.equal(firstPointer(e), '/body/privateKey');
        await put({ ...app, apiUrl: standIn.url, checkName: 'Same place' });
        const settings = await manager.client.call(v1.integrations.getForgeSettings, { params: { projectId: forgeProject } });
        assert.equal(settings.forge?.apiUrl, standIn.url);
        assert.equal(settings.forge?.checkName, 'Same place');

        const commit = `move${unique('')}`;
        await tester.client.call(v1.jobs.createJob, { body: { projectId: forgeProject, testIds: [], commit, repository: 'acme/shop' } });
        const created = await waitFor(
          () => standIn.requests.find((r) => r.path.endsWith('/check-runs') && (r.body as { head_sha?: string }).head_sha === commit),
          { ...WAIT, message: 'the check run at the host the key was given for' },
        );
        assert.equal(created.headers.authorization, 'token ghs_installation_token');
        assert.equal(attacker.seen.length, heard, 'the other host never heard from Attest');
      });
    });

    describe('credentials masked in every error (FORGE-9)', () => {
      test('a Jira echoing the Authorization header: the 502 detail and the log hold neither the token nor its base64 forms', async () => {
        const jiraProject = await memberProject('Echoing Jira');
        const bearerProject = await memberProject('Echoing Jira PAT');
        await manager.client.call(v1.integrations.putIssueTracker, {
          params: { projectId: jiraProject },
          body: { kind: 'jira', baseUrl: echo.url, email: JIRA_EMAIL, token: JIRA_TOKEN, projectKey: 'SHOP' },
        });
        await manager.client.call(v1.integrations.putIssueTracker, {
          params: { projectId: bearerProject },
          body: { kind: 'jira', baseUrl: echo.url, token: JIRA_TOKEN, projectKey: 'SHOP' },
        });
        const forms = formsOf(JIRA_TOKEN, JIRA_EMAIL);
        // At the start of the answer, and placed across the 300 characters of it that the detail quotes.
        for (const padding of [0, 255, 262, 270]) {
          echo.respond = (seen) => ({
            status: 401,
            body: { pad: 'p'.repeat(padding), errorMessages: ['Unauthorized'], echo: { authorization: seen.headers.authorization } },
          });
          for (const project of [jiraProject, bearerProject]) {
            const { groupId } = await failedGroup(project);
            const e = await refused(
              tester.client.call(v1.integrations.createFailureGroupIssue, { params: { projectId: project, groupId }, body: {} }),
              502,
              'UPSTREAM_FAILED',
            );
            const detail = String(e.problem.detail);
            assert.match(detail, /answered 401/);
            assert.equal(leaks(detail, [...forms, echo.seen.at(-1)?.headers.authorization as string]), undefined, `${padding}: ${detail}`);
          }
        }
        assert.ok(
          echo.seen.some((s) => s.headers.authorization === `Basic ${Buffer.from(`${JIRA_EMAIL}:${JIRA_TOKEN}`).toString('base64')}`),
          'Jira Cloud got basic authentication',
        );
        assert.ok(
          echo.seen.some((s) => s.headers.authorization === `Bearer ${JIRA_TOKEN}`),
          'Server got the bearer token',
        );
        assert.equal(leaks(server.logs.join(''), forms), undefined, 'no log line holds it');
      });

      test('a GitHub App host echoing the JWT, then the installation token: the recorded error and the log hold neither', async () => {
        const appProject = await memberProject('Echoing App');
        const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
        const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
        await manager.client.call(v1.integrations.putForgeSettings, {
          params: { projectId: appProject },
          body: { kind: 'github', apiUrl: echo.url, auth: 'app', appId: '4242', installationId: '99', privateKey: pem },
        });
        const installationToken = `ghs_${unique('')}${unique('')}`;
        const sent: string[] = [];
        for (const stage of ['jwt', 'installation'] as const) {
          echo.respond = (seen) => {
            if (seen.path === '/app/installations/99/access_tokens') {
              if (stage === 'jwt') return { status: 401, body: { message: `A JWT could not be decoded: ${seen.headers.authorization}` } };
              return { status: 201, body: { token: installationToken } };
            }
            return { status: 403, body: { message: `Resource not accessible by ${seen.headers.authorization}`, headers: seen.headers } };
          };
          const job = await tester.client.call(v1.jobs.createJob, {
            body: { projectId: appProject, testIds: [], commit: `app${unique('')}`, repository: 'acme/shop' },
          });
          const check = await checkOf(job.id);
          const credential = String(echo.seen.at(-1)?.headers.authorization).replace(/^(bearer|token) /i, '');
          sent.push(credential);
          assert.match(credential, stage === 'jwt' ? /^eyJ/ : /^ghs_/);
          assert.match(String(check.last_error), stage === 'jwt' ? /401/ : /403/);
          assert.equal(leaks(String(check.last_error), [credential, pem.slice(40, 80)]), undefined, `${stage}: ${check.last_error}`);
        }
        await server.app.attest.background.idle();
        assert.equal(leaks(server.logs.join(''), [...sent, pem.slice(40, 80)]), undefined, 'no log line holds them');
      });
    });

    describe('issue addresses from trackers (FORGE-10)', () => {
      /** The pages that show a group's issue address, each asserted 200 and free of the bad address, by name. */
      async function pagesOf(project: string, groupId: string, runId: string, jobId?: string) {
        const paths: Record<string, string> = {
          list: `/api/v1/projects/${project}/failures`,
          group: `/api/v1/projects/${project}/failures/${groupId}`,
          runFailures: `/api/v1/testmgmt/testruns/${runId}/failures`,
          runJunit: `/api/v1/testmgmt/testruns/${runId}/export?format=junit`,
          dashboard: `/api/v1/projects/${project}/dashboard`,
          links: `/api/v1/projects/${project}/issue-links?failureGroupId=${groupId}`,
          ...(jobId
            ? { jobJunit: `/api/v1/testmgmt/jobs/${jobId}/export?format=junit`, comparison: `/api/v1/testmgmt/jobs/${jobId}/comparison` }
            : {}),
        };
        const answers: Record<string, RawResponse> = {};
        for (const [name, path] of Object.entries(paths)) {
          const answer = await rawRequest({ base: server.url, path }, { headers: { 'service.api-token': tester.key } });
          assert.equal(answer.status, 200, `${path}: ${answer.text.slice(0, 300)}`);
          assert.ok(!/javascript:|data:text/i.test(answer.text), `${path} answers the bad address: ${answer.text.slice(0, 300)}`);
          answers[name] = answer;
        }
        const items = (name: string) => (answers[name]?.json.items ?? []) as Record<string, unknown>[];
        return { answers, items };
      }

      test('a GitHub Issues html_url of javascript: or data: is refused with the reason, nothing is stored, and the failures pages stay 200', async () => {
        const ghProject = await memberProject('Hostile tracker');
        await manager.client.call(v1.integrations.putIssueTracker, {
          params: { projectId: ghProject },
          body: { kind: 'github', baseUrl: echo.url, repository: 'acme/shop', token: GITHUB_TOKEN },
        });
        const { groupId, runId } = await failedGroup(ghProject);
        for (const [address, scheme] of [
          ['javascript:alert(document.cookie)', 'javascript:'],
          ['data:text/html,<script>alert(1)</script>', 'data:'],
        ] as const) {
          echo.respond = (seen) =>
            seen.method === 'POST' && seen.path === '/repos/acme/shop/issues'
              ? { status: 201, body: { number: 41, html_url: address, title: 'Checkout fails', state: 'open' } }
              : { status: 404, body: { message: 'Not Found' } };
          for (const call of [
            () => tester.client.call(v1.integrations.createFailureGroupIssue, { params: { projectId: ghProject, groupId }, body: {} }),
            () => tester.client.call(v1.integrations.createRunIssue, { params: { testRunId: runId }, body: {} }),
          ]) {
            const e = await refused(call(), 502, 'UPSTREAM_FAILED');
            assert.match(String(e.problem.detail), new RegExp(`GitHub filed #41 but .*scheme is ${scheme}.*stored no link`));
          }
        }
        const links = await tester.client.call(v1.integrations.listIssueLinks, { params: { projectId: ghProject } });
        assert.equal(links.items.length, 0, 'no link stored');
        const { answers } = await pagesOf(ghProject, groupId, runId);
        assert.equal(answers.group?.json.issueUrl, null);
        assert.equal(
          await server.app.attest.db.selectFrom('issue_links').select('id').where('project_id', '=', ghProject).executeTakeFirst(),
          undefined,
        );
      });

      test('rows an older version stored with a javascript: address: every failures page and export answers 200, without it', async () => {
        const oldProject = await memberProject('Stored by an older version');
        const testId = (
          await tester.client.call(v1.tests.createTest, {
            body: { projectId: oldProject, name: `pays ${unique()}`, steps: [{ action: 'pay', expected: 'paid' }] },
          })
        ).id;
        const job = await tester.client.call(v1.jobs.createJob, { body: { projectId: oldProject, name: 'nightly', testIds: [testId] } });
        const [run] = (await tester.client.call(v1.runs.listRuns, { query: { jobId: job.id } })).items;
        const runId = run?.id as string;
        await tester.client.call(v1.runs.updateRun, { params: { testRunId: runId }, body: { status: 'running' } });
        await tester.client.call(v1.results.appendResults, {
          params: { testRunId: runId },
          body: { steps: [{ title: 'pay', status: 'failed', error: `declined ${unique()}` }] },
        });
        await tester.client.call(v1.runs.updateRun, { params: { testRunId: runId }, body: { status: 'completed', verdict: 'failed' } });
        const groupId = (await tester.client.call(v1.runs.getRun, { params: { testRunId: runId } })).failureGroupId as string;
        const db = server.app.attest.db;
        await db.updateTable('failure_groups').set({ issue_url: 'javascript:alert(document.cookie)' }).where('id', '=', groupId).execute();
        const link = (url: string, key: string) => ({
          id: crypto.randomUUID(),
          project_id: oldProject,
          failure_group_id: groupId,
          run_id: null,
          tracker: 'github' as const,
          key,
          url,
          title: 'Checkout fails',
          status: 'open',
          refreshed_at: null,
          created_at: new Date().toISOString(),
          created_by: null,
        });
        await db
          .insertInto('issue_links')
          .values([link('javascript:alert(1)', '#1'), link('https://github.com/acme/shop/issues/2', '#2')])
          .execute();

        const { answers, items } = await pagesOf(oldProject, groupId, runId, job.id);
        assert.equal(items('list')[0]?.issueUrl, null);
        assert.equal(answers.group?.json.issueUrl, null);
        assert.equal(items('runFailures')[0]?.issueUrl, null);
        for (const xml of [answers.runJunit?.text, answers.jobJunit?.text]) assert.match(String(xml), /<testsuite/);
        assert.deepEqual(
          items('links').map((l) => l.key),
          ['#2'],
          'the link with no address to open is left out',
        );
      });
    });
  });

  describe(`[${dialect}] integration URLs refused at save as webhooks' are (FORGE-7, HOOK-5)`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server.close());

    test("the audit's mapped, compatible, NAT64, 6to4, unspecified and shared addresses are refused by both, and nothing is stored", async () => {
      const projectId = (await createProject(server, 'Strict')).id;
      const admin = server.admin.client;
      for (const host of [
        '[::ffff:127.0.0.1]',
        '[::ffff:7f00:1]',
        '[::]',
        '0.0.0.0',
        '100.64.0.1',
        '[64:ff9b::7f00:1]',
        '[::127.0.0.1]',
        '[2002:7f00:1::]',
        '[2002:a9fe:a9fe::]',
        '169.254.169.254',
      ]) {
        const url = `http://${host}:8080/api`;
        const calls = [
          [
            '/body/apiUrl',
            () =>
              admin.call(v1.integrations.putForgeSettings, {
                params: { projectId },
                body: { kind: 'github', apiUrl: url, token: 'x1234' },
              }),
          ],
          [
            '/body/baseUrl',
            () =>
              admin.call(v1.integrations.putIssueTracker, {
                params: { projectId },
                body: { kind: 'jira', baseUrl: url, projectKey: 'SHOP', token: 'x1234' },
              }),
          ],
          [
            '/body/url',
            () => admin.call(v1.webhooks.createWebhook, { params: { projectId }, body: { name: 'hook', url, events: ['run.completed'] } }),
          ],
        ] as const;
        for (const [pointer, call] of calls) {
          const e = await refused(call(), 400, 'INVALID_INPUT');
          assert.equal(firstPointer(e), pointer, `${host} ${pointer}`);
          assert.match(
            String(firstError(e)?.message),
            /loopback, link-local or private address, or another special-purpose one; an admin may allow these with ATTEST_(INTEGRATIONS|WEBHOOK)_ALLOW_PRIVATE/,
          );
        }
      }
      const userinfo = await refused(
        admin.call(v1.integrations.putIssueTracker, {
          params: { projectId },
          body: { kind: 'jira', baseUrl: 'https://qa:secret@acme.atlassian.net', projectKey: 'SHOP', token: 'x1234' },
        }),
        400,
        'INVALID_INPUT',
      );
      assert.match(String(firstError(userinfo)?.message), /user name or password/);
      assert.equal((await admin.call(v1.integrations.getForgeSettings, { params: { projectId } })).forge, null);
      assert.equal((await admin.call(v1.integrations.getIssueTracker, { params: { projectId } })).tracker, null);
      assert.equal((await admin.call(v1.webhooks.listWebhooks, { params: { projectId } })).items.length, 0);
    });
  });
}
