import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type ApiError, v1 } from '../../src/client/index.ts';
import { sweepIssueLinks } from '../../src/server/services/integrations/issue-links.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, unique } from '../helpers/factories.ts';
import { MERGE_REQUEST_IID, PULL_NUMBER, type RecordedRequest, type StandIn, startStandIn } from '../helpers/forge-stand-in.ts';
import { failedGroup as failedGroupOf } from '../helpers/records.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// Integrations (FORGE-1 to FORGE-7, docs/integrations.md) against a local stand-in for the GitHub,
// GitLab and Jira APIs that records every request: check runs created, updated and completed with
// the head SHA, conclusion and annotations; one pull-request comment edited across jobs; GitLab
// statuses and one merge-request note; issues filed on Jira and GitHub, their links refreshed.

const PUBLIC_URL = 'https://attest.example.test';
const GITHUB_TOKEN = 'ghp_stand_in_secret_token_1234';
const GITLAB_TOKEN = 'glpat-stand-in-secret-5678';
const JIRA_TOKEN = 'jira-api-token-secret-9012';
const TRACE = [
  'Error: expected the cart to hold 2 items, got 1',
  '    at expectCount (/home/runner/work/shop/shop/node_modules/expect/build/index.js:10:5)',
  '    at Object.<anonymous> (/home/runner/work/shop/shop/tests/cart.spec.ts:42:7)',
].join('\n');
const WAIT = { timeoutMs: 20_000, intervalMs: 50 };

const rejectsWith = (call: Promise<unknown>, status: number, code?: string) =>
  assert.rejects(call, (e: ApiError) => {
    assert.equal(e.status, status, JSON.stringify(e));
    if (code) assert.equal(e.code, code);
    return true;
  });

for (const dialect of DIALECTS) {
  describe(`[${dialect}] integrations`, () => {
    let server: TestServer;
    let standIn: StandIn;
    let projectId: string;
    let manager: TestUser;
    let tester: TestUser;
    let viewer: TestUser;

    before(async () => {
      standIn = await startStandIn();
      server = await startTestServer(dialect, { ATTEST_INTEGRATIONS_ALLOW_PRIVATE: 'true', ATTEST_PUBLIC_URL: PUBLIC_URL });
      projectId = (await createProject(server, 'Shop')).id;
      manager = await createUser(server, ['manager'], { projects: [projectId] });
      tester = await createUser(server, ['tester'], { projects: [projectId] });
      viewer = await createUser(server, ['viewer'], { projects: [projectId] });
    });
    after(async () => {
      await server.close();
      await standIn.close();
    });

    const requestsTo = (method: string, pattern: RegExp) => standIn.requests.filter((r) => r.method === method && pattern.test(r.path));

    /** A job of two tests on the commit; answers the job and its two runs. */
    async function jobOnCommit(project: string, commit: string, repository: string | undefined, client = tester.client) {
      const testIds: string[] = [];
      for (const name of ['adds an item to the cart', 'checks out']) {
        const created = await client.call(v1.tests.createTest, {
          body: { projectId: project, name: `${name} ${unique()}`, steps: [{ action: 'open the shop', expected: 'it shows' }] },
        });
        testIds.push(created.id);
      }
      const job = await client.call(v1.jobs.createJob, {
        body: { projectId: project, name: 'Pull request checks', testIds, commit, ...(repository ? { repository } : {}) },
      });
      const runs = await client.call(v1.runs.listRuns, { query: { jobId: job.id } });
      return { job, runs: runs.items };
    }

    /** Starts the runs, fails the first (with a trace) and the second (a message alone), or passes both. */
    async function runJob(runs: { id: string }[], outcome: 'failed' | 'passed', client = tester.client) {
      for (const [i, run] of runs.entries()) {
        await client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'running' } });
        if (outcome === 'failed') {
          await client.call(v1.results.appendResults, {
            params: { testRunId: run.id },
            body: { steps: [{ title: 'check the cart', status: 'failed', error: i === 0 ? TRACE : `the page broke ${unique()}` }] },
          });
        }
        await client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'completed', verdict: outcome } });
      }
    }

    describe('PUT, GET and DELETE /projects/{projectId}/integrations/forge', () => {
      test('stores a token that no answer returns, says only that it is set, and is for managers (FORGE-1)', async () => {
        const put = await manager.client.call(v1.integrations.putForgeSettings, {
          params: { projectId },
          body: { kind: 'github', apiUrl: standIn.url, token: GITHUB_TOKEN, pullRequestComment: true },
        });
        assert.equal(put.forge?.tokenSet, true);
        assert.equal(put.forge?.apiUrl, standIn.url);
        const got = await manager.client.call(v1.integrations.getForgeSettings, { params: { projectId } });
        assert.deepEqual(got, put);
        assert.ok(!JSON.stringify(got).includes(GITHUB_TOKEN), 'the token is never answered');
        // Changed without the token: the stored one is kept.
        const renamed = await manager.client.call(v1.integrations.putForgeSettings, {
          params: { projectId },
          body: { kind: 'github', apiUrl: standIn.url, checkName: 'Attest e2e', pullRequestComment: true },
        });
        assert.equal(renamed.forge?.tokenSet, true);
        assert.equal(renamed.forge?.checkName, 'Attest e2e');
        await rejectsWith(tester.client.call(v1.integrations.getForgeSettings, { params: { projectId } }), 403, 'FORBIDDEN');
        await rejectsWith(
          tester.client.call(v1.integrations.putForgeSettings, { params: { projectId }, body: { kind: 'github', token: 'x' } }),
          403,
        );
        const audit = await server.admin.client.call(v1.users.listAuditLog, { query: { action: 'forge.set', targetId: projectId } });
        assert.equal(audit.items.length, 2);
        assert.ok(!JSON.stringify(audit).includes(GITHUB_TOKEN), 'the audit entry holds no secret');
      });

      test('refuses a token method without a token, a GitHub App without its parts, and an app on GitLab, changing nothing', async () => {
        const other = (await createProject(server, 'Empty')).id;
        const admin = server.admin.client;
        await rejectsWith(
          admin.call(v1.integrations.putForgeSettings, { params: { projectId: other }, body: { kind: 'github' } }),
          400,
          'INVALID_INPUT',
        );
        await rejectsWith(
          admin.call(v1.integrations.putForgeSettings, {
            params: { projectId: other },
            body: { kind: 'github', auth: 'app', appId: '12' },
          }),
          400,
        );
        await rejectsWith(
          admin.call(v1.integrations.putForgeSettings, { params: { projectId: other }, body: { kind: 'gitlab', auth: 'app', token: 'x' } }),
          400,
        );
        assert.equal((await admin.call(v1.integrations.getForgeSettings, { params: { projectId: other } })).forge, null);
      });
    });

    describe('a job with a commit and a repository on GitHub (FORGE-2, FORGE-3)', () => {
      test('gets a check run created with its head SHA, updated as it runs, and completed with its conclusion and annotations', async () => {
        const commit = `c0ffee${unique('')}`;
        const { job, runs } = await jobOnCommit(projectId, commit, 'acme/shop');
        const created = await waitFor(
          () => requestsTo('POST', /^\/repos\/acme\/shop\/check-runs$/).find((r) => (r.body as { head_sha: string }).head_sha === commit),
          { ...WAIT, message: 'the check run to be created' },
        );
        const body = created.body as Record<string, unknown>;
        assert.equal(body.status, 'queued');
        assert.equal(body.name, 'Attest e2e');
        assert.equal(body.external_id, job.id);
        assert.equal(body.details_url, `${PUBLIC_URL}/jobs/${job.id}`);
        assert.equal(created.headers.authorization, `token ${GITHUB_TOKEN}`);
        const checkRunId = [...standIn.checkRuns.values()].find((c) => c.head_sha === commit)?.id as number;

        await runJob(runs, 'failed');
        const completed = await waitFor(
          () => {
            const run = standIn.checkRuns.get(checkRunId);
            return run?.status === 'completed' ? run : undefined;
          },
          { ...WAIT, message: 'the check run to be completed' },
        );
        const updates = requestsTo('PATCH', new RegExp(`/check-runs/${checkRunId}$`));
        assert.ok(updates.length >= 1, 'updated');
        assert.ok(
          updates.every((u) => u.headers.authorization === `token ${GITHUB_TOKEN}`),
          'every update authenticated with the token',
        );
        assert.equal(completed.conclusion, 'failure');
        const output = completed.output as { title: string; summary: string; annotations: Record<string, unknown>[] };
        assert.match(output.title, /2 of 2 tests failed/);
        assert.equal(output.annotations.length, 2);
        const located = output.annotations.find((a) => a.path === 'tests/cart.spec.ts');
        assert.ok(located, `an annotation at the trace's file: ${JSON.stringify(output.annotations)}`);
        assert.equal(located.start_line, 42);
        assert.equal(located.annotation_level, 'failure');
        assert.match(String(located.message), /expected the cart to hold/);
        const named = output.annotations.find((a) => a !== located);
        assert.equal(named?.path, runs[1]?.name, 'a failure without a location is annotated under its test name');
        assert.equal(named?.start_line, 1);
        // The job was started before it completed: an update said in_progress, unless the runs were quicker than the debounce.
        const statuses = updates.map((u) => (u.body as { status: string }).status);
        assert.equal(statuses.at(-1), 'completed');
        assert.equal(requestsTo('POST', /\/check-runs$/).filter((r) => (r.body as { head_sha: string }).head_sha === commit).length, 1);
      });

      test('keeps one pull-request comment, edited by the next job on the same pull request, never a second (FORGE-4)', async () => {
        const commit = `feed${unique('')}`;
        const first = await jobOnCommit(projectId, commit, 'acme/shop');
        await runJob(first.runs, 'failed');
        await waitFor(() => standIn.comments.length === 1, { ...WAIT, message: 'the comment to be posted' });
        assert.match(standIn.comments[0]?.body ?? '', new RegExp(`<!-- attest:project:${projectId} -->`));
        assert.match(standIn.comments[0]?.body ?? '', /❌/);

        const second = await jobOnCommit(projectId, commit, 'acme/shop');
        await runJob(second.runs, 'passed');
        await waitFor(() => standIn.comments[0]?.body.includes('✅'), { ...WAIT, message: 'the comment to be edited' });
        assert.equal(standIn.comments.length, 1, 'still one comment');
        assert.equal(requestsTo('POST', new RegExp(`/issues/${PULL_NUMBER}/comments$`)).length, 1, 'posted once');
        assert.ok(requestsTo('PATCH', /\/issues\/comments\/\d+$/).length >= 1, 'edited');
      });

      test('a job without a repository, or in a project without a code host, sends nothing', async () => {
        const before = standIn.requests.length;
        const { job, runs } = await jobOnCommit(projectId, 'abc1234', undefined);
        await runJob(runs, 'passed');
        const other = (await createProject(server, 'No host')).id;
        await server.admin.client.call(v1.projects.addMember, { params: { projectId: other, email: tester.email } });
        const elsewhere = await jobOnCommit(other, 'abc1234', 'acme/shop');
        await runJob(elsewhere.runs, 'passed');
        await server.app.attest.background.idle();
        assert.equal(standIn.requests.length, before, 'no call');
        assert.equal((await viewer.client.call(v1.jobs.getJob, { params: { jobId: job.id } })).repository, null);
        assert.equal((await tester.client.call(v1.jobs.getJob, { params: { jobId: elsewhere.job.id } })).repository, 'acme/shop');
      });

      test('a refused call is recorded with the secret masked and retried by the background runner, never in the request', async () => {
        standIn.failNext(1, 502);
        const commit = `bad${unique('')}`;
        const { job } = await jobOnCommit(projectId, commit, 'acme/shop');
        const db = server.app.attest.db;
        const check = await waitFor(
          async () => {
            const row = await db.selectFrom('forge_checks').selectAll().where('job_id', '=', job.id).executeTakeFirst();
            return row?.last_error ? row : undefined;
          },
          { ...WAIT, message: 'the failure to be recorded' },
        );
        assert.match(check.last_error ?? '', /502/);
        assert.equal(check.check_run_id, null);
        // The check records the failure inside the sync; the runner releases the task with its backoff after.
        const task = await waitFor(
          async () => {
            const row = await db.selectFrom('tasks').selectAll().where('key', '=', `forge-sync:${job.id}`).executeTakeFirst();
            return row?.lease_owner === null ? row : undefined;
          },
          { ...WAIT, message: 'the sync to be queued again for a retry' },
        );
        assert.equal(task.attempts, 1);
        assert.ok(new Date(task.run_at).getTime() > Date.now(), 'retried later, with backoff');
        assert.ok(!server.logs.join('').includes(GITHUB_TOKEN), 'no log line holds the token');
      });

      test('authenticates as a GitHub App installation: a JWT buys the installation token the check run is made with', async () => {
        const appProject = (await createProject(server, 'App')).id;
        await server.admin.client.call(v1.projects.addMember, { params: { projectId: appProject, email: tester.email } });
        const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
        const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
        const put = await server.admin.client.call(v1.integrations.putForgeSettings, {
          params: { projectId: appProject },
          body: { kind: 'github', apiUrl: standIn.url, auth: 'app', appId: '4242', installationId: '99', privateKey: pem },
        });
        assert.equal(put.forge?.privateKeySet, true);
        assert.ok(!JSON.stringify(put).includes('PRIVATE KEY'));
        const commit = `app${unique('')}`;
        await jobOnCommit(appProject, commit, 'acme/shop');
        const created = await waitFor(
          () => requestsTo('POST', /\/check-runs$/).find((r) => (r.body as { head_sha: string }).head_sha === commit),
          { ...WAIT, message: 'the check run' },
        );
        assert.equal(created.headers.authorization, 'token ghs_installation_token');
        const exchange = requestsTo('POST', /^\/app\/installations\/99\/access_tokens$/).at(-1) as RecordedRequest;
        const jwt = String(exchange.headers.authorization).replace(/^bearer /i, '');
        const claims = JSON.parse(Buffer.from(jwt.split('.')[1] as string, 'base64url').toString()) as { iss: string };
        assert.equal(claims.iss, '4242');
      });
    });

    describe('a job on GitLab (FORGE-2, FORGE-4)', () => {
      test('sets commit statuses from pending to failed and keeps one merge-request note', async () => {
        const labProject = (await createProject(server, 'Lab')).id;
        await server.admin.client.call(v1.projects.addMember, { params: { projectId: labProject, email: tester.email } });
        await server.admin.client.call(v1.integrations.putForgeSettings, {
          params: { projectId: labProject },
          body: { kind: 'gitlab', apiUrl: `${standIn.url}/api/v4`, token: GITLAB_TOKEN, pullRequestComment: true },
        });
        const before = standIn.comments.length;
        const commit = `1ab${unique('')}`;
        const statusPath = new RegExp(`^/api/v4/projects/group%2Fshop/statuses/${commit}$`);
        const first = await jobOnCommit(labProject, commit, 'group/shop');
        await waitFor(() => requestsTo('POST', statusPath).length >= 1, { ...WAIT, message: 'the pending status' });
        const pending = requestsTo('POST', statusPath)[0] as RecordedRequest;
        assert.equal((pending.body as { state: string }).state, 'pending');
        assert.equal(pending.headers['private-token'], GITLAB_TOKEN);
        await runJob(first.runs, 'failed');
        await waitFor(() => requestsTo('POST', statusPath).some((r) => (r.body as { state: string }).state === 'failed'), {
          ...WAIT,
          message: 'the failed status',
        });
        await waitFor(() => standIn.comments.length === before + 1, { ...WAIT, message: 'the note' });
        const second = await jobOnCommit(labProject, commit, 'group/shop');
        await runJob(second.runs, 'passed');
        await waitFor(() => requestsTo('POST', statusPath).some((r) => (r.body as { state: string }).state === 'success'), {
          ...WAIT,
          message: 'the success status',
        });
        await waitFor(() => requestsTo('PUT', new RegExp(`/merge_requests/${MERGE_REQUEST_IID}/notes/\\d+$`)).length === 1, WAIT);
        assert.equal(standIn.comments.length, before + 1, 'one note, edited');
        assert.ok(!server.logs.join('').includes(GITLAB_TOKEN));
      });
    });

    describe('issue links (FORGE-5, FORGE-6)', () => {
      const failedGroup = (project: string) => failedGroupOf(tester.client, project);

      test('files a Jira issue for an error group with the failure, the steps and links, and stores its key as the issueUrl', async () => {
        await rejectsWith(
          tester.client.call(v1.integrations.createFailureGroupIssue, {
            params: { projectId, groupId: (await failedGroup(projectId)).groupId },
            body: {},
          }),
          409,
          'STATE_CONFLICT',
        );
        const put = await manager.client.call(v1.integrations.putIssueTracker, {
          params: { projectId },
          body: { kind: 'jira', baseUrl: standIn.url, email: 'qa@example.test', token: JIRA_TOKEN, projectKey: 'SHOP' },
        });
        assert.equal(put.tracker?.tokenSet, true);
        assert.ok(!JSON.stringify(put).includes(JIRA_TOKEN));
        assert.equal((await viewer.client.call(v1.integrations.getIssueTracker, { params: { projectId } })).tracker?.kind, 'jira');

        const { groupId } = await failedGroup(projectId);
        const link = await tester.client.call(v1.integrations.createFailureGroupIssue, { params: { projectId, groupId }, body: {} });
        assert.match(link.key, /^SHOP-\d+$/);
        assert.equal(link.url, `${standIn.url}/browse/${link.key}`);
        const filed = requestsTo('POST', /^\/rest\/api\/3\/issue$/).at(-1) as RecordedRequest;
        assert.equal(filed.headers.authorization, `Basic ${Buffer.from(`qa@example.test:${JIRA_TOKEN}`).toString('base64')}`);
        const fields = (filed.body as { fields: Record<string, unknown> }).fields;
        assert.deepEqual(fields.project, { key: 'SHOP' });
        assert.deepEqual(fields.issuetype, { name: 'Bug' });
        const description = JSON.stringify(fields.description);
        assert.match(description, /payment declined/);
        assert.match(description, /✗ pay/);
        assert.ok(description.includes(`${PUBLIC_URL}/projects/`), 'links back to Attest');
        const group = await viewer.client.call(v1.failures.getFailureGroup, { params: { projectId, groupId } });
        assert.equal(group.issueUrl, link.url);

        // Jira answers a new issue without its status: read in the background at once.
        const refreshed = await waitFor(
          async () => {
            const list = await viewer.client.call(v1.integrations.listIssueLinks, {
              params: { projectId },
              query: { failureGroupId: groupId },
            });
            return list.items[0]?.status ? list.items[0] : undefined;
          },
          { ...WAIT, message: 'the status to be read' },
        );
        assert.equal(refreshed.status, 'To Do');

        // Later, the issue moves on in Jira; the refresh reads its title and status again.
        const issue = standIn.issues.get(link.key);
        if (issue) Object.assign(issue, { status: 'Done', title: 'Payment provider declines test cards' });
        server.clock.advance(2 * 3600_000);
        await sweepIssueLinks(server.app.attest);
        const again = await waitFor(
          async () => {
            const list = await viewer.client.call(v1.integrations.listIssueLinks, {
              params: { projectId },
              query: { failureGroupId: groupId },
            });
            return list.items[0]?.status === 'Done' ? list.items[0] : undefined;
          },
          { ...WAIT, message: 'the new status' },
        );
        assert.equal(again.title, 'Payment provider declines test cards');
        assert.ok(!server.logs.join('').includes(JIRA_TOKEN));
      });

      test('files a GitHub issue for a run; a tracker that refuses answers 502 and stores nothing', async () => {
        const ghProject = (await createProject(server, 'Issues')).id;
        await server.admin.client.call(v1.projects.addMember, { params: { projectId: ghProject, email: tester.email } });
        await server.admin.client.call(v1.integrations.putIssueTracker, {
          params: { projectId: ghProject },
          body: { kind: 'github', baseUrl: standIn.url, repository: 'acme/shop', token: GITHUB_TOKEN },
        });
        const { runId } = await failedGroup(ghProject);
        standIn.failNext(1, 503);
        await rejectsWith(
          tester.client.call(v1.integrations.createRunIssue, { params: { testRunId: runId }, body: {} }),
          502,
          'UPSTREAM_FAILED',
        );
        assert.equal(
          (await tester.client.call(v1.integrations.listIssueLinks, { params: { projectId: ghProject }, query: { testRunId: runId } }))
            .items.length,
          0,
        );
        const link = await tester.client.call(v1.integrations.createRunIssue, {
          params: { testRunId: runId },
          body: { title: 'Checkout fails' },
        });
        assert.match(link.key, /^#\d+$/);
        assert.equal(link.status, 'open');
        assert.equal(link.title, 'Checkout fails');
        const filed = requestsTo('POST', /^\/repos\/acme\/shop\/issues$/).at(-1) as RecordedRequest;
        assert.equal(filed.headers.authorization, `token ${GITHUB_TOKEN}`);
        assert.match(String((filed.body as { body: string }).body), new RegExp(`${PUBLIC_URL}/runs/${runId}`));
        const listed = await tester.client.call(v1.integrations.listIssueLinks, {
          params: { projectId: ghProject },
          query: { testRunId: runId },
        });
        assert.deepEqual(listed.items, [link]);
      });
    });
  });

  describe(`[${dialect}] integrations without private addresses allowed (FORGE-7)`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server.close());

    test('an API URL on loopback or a private network is refused with the field, and nothing is stored', async () => {
      const projectId = (await createProject(server, 'Closed')).id;
      for (const apiUrl of ['http://127.0.0.1:8080', 'http://localhost:3000', 'http://10.1.2.3', 'http://[::1]:80']) {
        await rejectsWith(
          server.admin.client.call(v1.integrations.putForgeSettings, {
            params: { projectId },
            body: { kind: 'github', apiUrl, token: 'x1234' },
          }),
          400,
          'INVALID_INPUT',
        );
      }
      await rejectsWith(
        server.admin.client.call(v1.integrations.putIssueTracker, {
          params: { projectId },
          body: { kind: 'jira', baseUrl: 'http://192.168.1.20', projectKey: 'SHOP', token: 'x1234' },
        }),
        400,
      );
      assert.equal((await server.admin.client.call(v1.integrations.getForgeSettings, { params: { projectId } })).forge, null);
    });

    test('a code host saved while private addresses were allowed is not called once they no longer are', async () => {
      const standIn = await startStandIn();
      try {
        const projectId = (await createProject(server, 'Was open')).id;
        // As an instance that allowed private addresses when the manager saved it left it in the database.
        await server.app.attest.db
          .insertInto('forge_settings')
          .values({
            project_id: projectId,
            kind: 'github',
            api_url: standIn.url,
            auth: 'token',
            token: GITHUB_TOKEN,
            app_id: null,
            private_key: null,
            installation_id: null,
            check_name: 'Attest',
            pull_request_comment: 0,
            enabled: 1,
            updated_at: new Date().toISOString(),
            updated_by: null,
          })
          .execute();
        const job = await server.admin.client.call(v1.jobs.createJob, {
          body: { projectId, testIds: [], commit: 'abc1234', repository: 'acme/shop' },
        });
        const check = await waitFor(
          async () => {
            const row = await server.app.attest.db.selectFrom('forge_checks').selectAll().where('job_id', '=', job.id).executeTakeFirst();
            return row?.last_error ? row : undefined;
          },
          { ...WAIT, message: 'the refusal to be recorded' },
        );
        assert.match(check.last_error ?? '', /loopback, link-local or private address.*ATTEST_INTEGRATIONS_ALLOW_PRIVATE/);
        assert.equal(standIn.requests.length, 0, 'the stand-in was never called');
      } finally {
        await standIn.close();
      }
    });
  });
}
