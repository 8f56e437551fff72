import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import sharp from 'sharp';
import { ROLES, type Role } from '../../src/api/endpoint.ts';
import { v1Endpoints } from '../../src/api/v1/index.ts';
import { v1 } from '../../src/client/index.ts';
import { buildOpenApiDocument } from '../../src/server/openapi/document.ts';
import { APP_VERSION } from '../../src/server/version.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, unique } from '../helpers/factories.ts';
import { type StandIn, startStandIn } from '../helpers/forge-stand-in.ts';
import { encodeForm, rawRequest } from '../helpers/http.ts';
import { expandPath, minimalSample, type Operation, operationsOf } from '../helpers/schema-samples.ts';
import { databaseSettled, startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// T-MATRIX: the authorization matrix, generated from the OpenAPI document. For every
// operation × caller × target the expected status follows from the operation's `x-authz`:
//   no key → 401; role below x-authz.role → 403; a target that does not exist, or that the caller
//   may not see → 404; otherwise the call succeeds (2xx).
// Every refused call must leave the database exactly as it was.

/** The document the server serves (openapi.test.ts proves the two are equal). */
const DOCUMENT = buildOpenApiDocument(v1Endpoints, { version: 'v1', appVersion: APP_VERSION });
const OPERATIONS = operationsOf(DOCUMENT);

type CallerName = 'anonymous' | 'viewer' | 'tester' | 'manager' | 'admin' | 'outsider';
const CALLERS: { name: CallerName; role: Role; sendsKey: boolean }[] = [
  { name: 'anonymous', role: 'viewer', sendsKey: false },
  { name: 'viewer', role: 'viewer', sendsKey: true },
  { name: 'tester', role: 'tester', sendsKey: true },
  { name: 'manager', role: 'manager', sendsKey: true },
  { name: 'admin', role: 'admin', sendsKey: true },
  // A manager of another project: role enough for nearly everything, membership nowhere near the target.
  { name: 'outsider', role: 'manager', sendsKey: true },
];

/**
 * Where the addressed resource is: the caller's (in a project they are a member of, or themself),
 * someone else's, nowhere (the first addressed field names nothing), or a real parent with a child
 * that does not exist (for paths with two ids).
 */
type Target = 'other' | 'missing' | 'missing-child' | 'own';

interface Caller {
  name: CallerName;
  role: Role;
  sendsKey: boolean;
  email: string;
  key: string;
}

interface FixtureInput {
  server: TestServer;
  caller: Caller;
  /** Every caller of the matrix: all of them are members of an `own` project, which they then share. */
  everyone: Caller[];
  target: Target;
  /** The owner is the first addressed field of the operation; the others are its children. */
  owner: boolean;
  /** Values built so far for this call (a child reads its parent's, e.g. `values.projectId`). */
  values: Record<string, string>;
}

/**
 * How to make a value for one field name in each target situation. `hides` says what a caller who
 * may not see another's resource gets: `project` → 404 for non-members (admins see every project);
 * `self` → 404 for anyone but the user themself and admins; `omits` → the batch answers 200 and
 * lists the id under `missing`; `none` → nothing is hidden (the device lab is shared).
 */
interface Fixture {
  hides: 'project' | 'self' | 'omits' | 'none';
  /** Whether a required query or body field of this name addresses an existing resource (a body e-mail names a new user). */
  addressesInBody: boolean;
  build(input: FixtureInput): Promise<string>;
}

const admin = (server: TestServer) => server.admin.client;
const isMissing = (input: FixtureInput) =>
  (input.owner && input.target === 'missing') || (!input.owner && input.target === 'missing-child');

/** A fresh project; for the `own` target every caller is made a member. */
async function projectFor(input: FixtureInput): Promise<string> {
  const project = await createProject(input.server, `matrix ${input.target}`);
  if (input.target === 'own') {
    for (const { email } of input.everyone)
      await admin(input.server).call(v1.projects.addMember, { params: { projectId: project.id, email } });
  }
  return project.id;
}

/**
 * The project a project-owned resource goes in: the one already chosen for this call, else one made
 * for the target. Under a project that does not exist (`missing`), a child is made in a project of
 * the caller's, so the call mixes a missing parent with a real child.
 */
async function projectOf(input: FixtureInput): Promise<string> {
  const parentMissing = !input.owner && input.target === 'missing';
  if (input.values.projectId && !parentMissing) return input.values.projectId;
  return projectFor({ ...input, target: parentMissing ? 'own' : input.target });
}

async function newUser(server: TestServer, projectId?: string): Promise<string> {
  const email = `${unique('matrix-')}@example.test`;
  await admin(server).call(v1.users.createUser, { body: { email, name: 'Matrix target', roles: ['tester'] } });
  if (projectId) await admin(server).call(v1.projects.addMember, { params: { projectId, email } });
  return email;
}

/** Creates a resource through its contract operation (as the admin), from the minimal valid body plus `body`. */
async function createByOperation(server: TestServer, operationId: string, body: Record<string, unknown>): Promise<string> {
  const endpoint = v1Endpoints.find((e) => e.operationId === operationId);
  if (!endpoint) throw new Error(`fixture: ${operationId}, which creates this resource, is not in the contract`);
  const created: unknown = await admin(server).call(endpoint, {
    body: { ...(minimalSample(endpoint.body as never) as object), ...body } as never,
  });
  return (created as { id: string }).id;
}

/** A small PNG of its own: identical bytes are stored once and shared, which would blur who may see an image. */
async function uniquePng(): Promise<Buffer> {
  const [r, g, b, width, height] = [...randomBytes(5)] as [number, number, number, number, number];
  return sharp({ create: { width: 1 + (width % 24), height: 1 + (height % 24), channels: 3, background: { r, g, b } } })
    .png()
    .toBuffer();
}

async function screenshotUpload(testRunId: string): Promise<FormData> {
  const form = new FormData();
  form.append('metadata', JSON.stringify({ testRunId, kind: 'screenshot', name: 'matrix.png' }));
  form.append('file', new Blob([await uniquePng()], { type: 'image/png' }), 'matrix.png');
  return form;
}

/** Uploads a screenshot to a fresh run of the project (as the admin) and answers the artifact details. */
async function uploadScreenshot(server: TestServer, projectId: string): Promise<{ id: string; images: { id: string }[] }> {
  const testRunId = await createByOperation(server, 'createRun', { projectId, name: 'Matrix run' });
  const response = await fetch(`${server.url}/api/v1/projects/${projectId}/artifact`, {
    method: 'POST',
    headers: { 'service.api-token': server.admin.key, accept: 'application/json' },
    body: await screenshotUpload(testRunId),
  });
  const text = await response.text();
  assert.equal(response.status, 201, `fixture upload: ${text}`);
  return JSON.parse(text) as { id: string; images: { id: string }[] };
}

const artifactFixture = (hides: Fixture['hides']): Fixture => ({
  hides,
  addressesInBody: true,
  build: async (input) => (isMissing(input) ? randomUUID() : (await uploadScreenshot(input.server, await projectOf(input))).id),
});

/** The smallest JUnit report: what the matrix imports. */
const MATRIX_JUNIT = '<testsuite name="matrix"><testcase classname="matrix" name="passes"/></testsuite>';

/** One entry per field name that addresses a resource; add one when a route with a new kind of id appears. */
/** A new error group of the project (a run failed with a message of its own), or an unknown id. */
async function failureGroupOf(server: TestServer, projectId: string, missing: boolean): Promise<string> {
  if (missing) return randomUUID();
  const run = await admin(server).call(v1.runs.createRun, {
    body: {
      projectId,
      name: 'Matrix failure',
      verdict: 'failed',
      results: { steps: [{ title: 'check', status: 'failed', error: `matrix cause ${unique('c')}` }] },
    },
  });
  return (await admin(server).call(v1.runs.getRun, { params: { testRunId: run.id } })).failureGroupId as string;
}

/** Where the matrix's webhooks deliver: a receiver of its own on 127.0.0.1 that answers 204 (the matrix server allows private targets). */
let hookUrl = '';

/** A webhook (as the admin) in the project chosen for this call. */
async function webhookOf(input: FixtureInput): Promise<string> {
  const projectId = await projectOf(input);
  const body = { name: 'Matrix hook', url: hookUrl, events: ['run.completed' as const] };
  return (await admin(input.server).call(v1.webhooks.createWebhook, { params: { projectId }, body })).id;
}

const FIXTURES: Record<string, Fixture> = {
  projectId: {
    hides: 'project',
    addressesInBody: true,
    build: async (input) => (isMissing(input) ? randomUUID() : projectFor(input)),
  },
  email: {
    hides: 'self',
    addressesInBody: false,
    build: async (input) => {
      if (isMissing(input)) return `${unique('nobody-')}@example.test`;
      // In a project's path the e-mail names a member of that project; alone it names a user.
      if (input.values.projectId) return newUser(input.server, input.target === 'missing' ? undefined : input.values.projectId);
      return input.target === 'own' ? input.caller.email : newUser(input.server);
    },
  },
  keyId: {
    hides: 'self',
    addressesInBody: true,
    build: async (input) => {
      const email = input.values.email;
      if (isMissing(input) || !email || input.target === 'missing') return randomUUID();
      return (await admin(input.server).call(v1.users.createApiKey, { params: { email }, body: { name: 'matrix' } })).id;
    },
  },
  deviceId: {
    hides: 'none',
    addressesInBody: true,
    build: async (input) => {
      const id = unique('matrix-dev-');
      if (!isMissing(input))
        await admin(input.server).call(v1.devices.registerDevice, { body: { id, name: 'Matrix device', platform: 'web' } });
      return id;
    },
  },
  testId: {
    hides: 'project',
    addressesInBody: true,
    // Quarantined, so that releasing its quarantine (DELETE …/quarantine) has one to release.
    build: async (input) => {
      if (isMissing(input)) return randomUUID();
      const testId = await createByOperation(input.server, 'createTest', {
        projectId: await projectOf(input),
        name: 'Matrix test',
        steps: [{ action: 'open', expected: 'shown' }],
      });
      await admin(input.server).call(v1.tests.quarantineTest, { params: { testId }, body: { owner: 'matrix', reason: 'matrix' } });
      return testId;
    },
  },
  groupId: {
    hides: 'project',
    addressesInBody: true,
    // The error group of a failed run of the project.
    build: async (input) => failureGroupOf(input.server, await projectOf(input), isMissing(input)),
  },
  jobId: {
    hides: 'project',
    addressesInBody: true,
    // A reporter's launch (testIds []): every job operation applies to it, closing included (a job
    // with tests completes with its runs, and its close is a 409 by design, JOB-1).
    build: async (input) =>
      isMissing(input) ? randomUUID() : createByOperation(input.server, 'createJob', { projectId: await projectOf(input), testIds: [] }),
  },
  testRunId: {
    hides: 'project',
    addressesInBody: true,
    build: async (input) =>
      isMissing(input)
        ? randomUUID()
        : createByOperation(input.server, 'createRun', { projectId: await projectOf(input), name: 'Matrix run' }),
  },
  importId: {
    hides: 'project',
    addressesInBody: false,
    build: async (input) => {
      if (isMissing(input)) return randomUUID();
      const projectId = await projectOf(input);
      const client = admin(input.server);
      const importId = String((await client.importReport(projectId, { name: 'matrix.xml', bytes: Buffer.from(MATRIX_JUNIT) })).id);
      // Written in the background: done before the matrix compares the database around a refused call.
      await waitFor(async () => (await client.call(v1.imports.getImport, { params: { projectId, importId } })).status === 'completed');
      // Its task row goes just after the import reads completed: let that land before any comparison.
      await input.server.app.attest.background.idle();
      await databaseSettled(input.server);
      return importId;
    },
  },
  // A version of the test addressed before it (TCM-2): the first always exists; a missing one is far ahead.
  version: {
    hides: 'project',
    addressesInBody: false,
    build: async (input) => (isMissing(input) ? '999999' : '1'),
  },
  artifactId: artifactFixture('project'),
  // `GET /artifact/artifacts?ids=`: a batch read answers what it may and lists the rest as missing.
  ids: artifactFixture('omits'),
  webhookId: {
    hides: 'project',
    addressesInBody: false,
    build: async (input) => (isMissing(input) ? randomUUID() : webhookOf(input)),
  },
  // A delivery of the webhook (its test event), sent and logged before the matrix compares anything.
  deliveryId: {
    hides: 'project',
    addressesInBody: false,
    build: async (input) => {
      if (isMissing(input)) return randomUUID();
      // The webhook's own project: under a missing project, the child was made in one of the caller's.
      const webhookId = input.values.webhookId as string;
      const owner = await input.server.app.attest.db
        .selectFrom('webhooks')
        .select('project_id')
        .where('id', '=', webhookId)
        .executeTakeFirst();
      const params = { projectId: owner?.project_id as string, webhookId };
      await admin(input.server).call(v1.webhooks.testWebhook, { params });
      await input.server.app.attest.background.idle();
      const log = await waitFor(async () => {
        const page = await admin(input.server).call(v1.webhooks.listWebhookDeliveries, { params });
        return page.items[0]?.status === 'delivered' ? page : undefined;
      });
      return log.items[0]?.id as string;
    },
  },
  imageId: {
    hides: 'project',
    addressesInBody: true,
    build: async (input) =>
      isMissing(input) ? randomUUID() : ((await uploadScreenshot(input.server, await projectOf(input))).images[0]?.id as string),
  },
};

/** The stand-in for GitHub's API the matrix's issue trackers file to (started with the server). */
let trackerStandIn: StandIn | undefined;

/** A GitHub Issues tracker on the stand-in for the project (as the admin), so an allowed "Create issue" succeeds. */
async function withTracker(input: FixtureInput, projectId: string | undefined): Promise<Record<string, unknown>> {
  if (projectId && trackerStandIn) {
    await admin(input.server).call(v1.integrations.putIssueTracker, {
      params: { projectId },
      body: { kind: 'github', baseUrl: trackerStandIn.url, repository: 'acme/shop', token: 'matrix-token' },
    });
  }
  return {};
}

/** JSON body fields an operation needs beyond the minimal valid sample, so an allowed call really succeeds. */
const BODY_OVERRIDES: Record<string, (input: FixtureInput) => Promise<Record<string, unknown>> | Record<string, unknown>> = {
  createTest: () => ({ name: 'Matrix test', steps: [{ action: 'open the page', expected: 'it shows' }] }),
  createJob: async (input) => ({
    testIds: [
      input.target === 'missing'
        ? randomUUID()
        : await (FIXTURES.testId as Fixture).build({
            ...input,
            owner: false,
            target: 'own',
            values: { projectId: input.values.projectId as string },
          }),
    ],
  }),
  login: () => ({ email: LOGIN.email, password: LOGIN.password }),
  // Integrations (docs/integrations.md): a token method needs a token; issues need a tracker to file to.
  putForgeSettings: () => ({ kind: 'github', token: 'matrix-token' }),
  putIssueTracker: () => ({ kind: 'github', repository: 'acme/shop', token: 'matrix-token' }),
  createFailureGroupIssue: (input) => withTracker(input, input.target === 'missing' ? undefined : input.values.projectId),
  createRunIssue: async (input) => {
    const run = await input.server.app.attest.db
      .selectFrom('test_runs')
      .select('project_id')
      .where('id', '=', input.values.testRunId as string)
      .executeTakeFirst();
    return withTracker(input, run?.project_id);
  },
  createWebhook: () => ({ url: hookUrl, events: ['run.completed'] }),
  updateWebhook: () => ({ enabled: true }),
  // Bulk triage names groups of the addressed project: one made there (unknown under a missing project).
  triageFailureGroups: async (input) => ({
    groupIds: [await failureGroupOf(input.server, input.values.projectId as string, input.target === 'missing')],
    changes: { defectType: 'product_bug' },
  }),
  // A heartbeat renews the lease of the runner holding the run: the fixture run (created running)
  // is given that runner's lease, as a claim would, so an allowed heartbeat succeeds.
  heartbeatRun: async (input) => {
    const runner = 'matrix-runner';
    const leaseExpiresAt = new Date(input.server.clock().getTime() + 600_000).toISOString();
    await input.server.app.attest.db
      .updateTable('test_runs')
      .set({ lease_owner: runner, lease_expires_at: leaseExpiresAt })
      .where('id', '=', input.values.testRunId as string)
      .execute();
    return { runner };
  },
};

/** Request bodies of operations that do not take JSON. */
const FORM_BUILDERS: Record<string, (input: FixtureInput) => Promise<FormData>> = {
  importReport: async () => {
    const form = new FormData();
    form.append('file', new Blob([MATRIX_JUNIT]), 'matrix.xml');
    return form;
  },
  uploadArtifact: async (input) => {
    const testRunId =
      input.target === 'missing'
        ? randomUUID()
        : await (FIXTURES.testRunId as Fixture).build({
            ...input,
            owner: false,
            target: 'own',
            values: { projectId: input.values.projectId as string },
          });
    return screenshotUpload(testRunId);
  },
};

/**
 * What an operation needs done to its resources before it applies, beyond their fixtures: enabling
 * a test answers only for a disabled one (TRIAGE-13; otherwise a 409 by design).
 */
const PREPARE: Record<string, (input: FixtureInput) => Promise<void>> = {
  // A test of its own for each call (the shared fixture stays quarantined for the operations after it).
  enableTest: async (input) => {
    if (input.target !== 'own' && input.target !== 'other') return;
    const testId = await (FIXTURES.testId as Fixture).build({ ...input, owner: true });
    await admin(input.server).call(v1.lifecycle.disableTest, { params: { testId }, body: { reason: 'matrix' } });
    input.values.testId = testId;
  },
};

/** Query fields an operation needs beyond the minimal valid sample. */
const QUERY_OVERRIDES: Record<string, Record<string, unknown>> = {
  // The results of a run still running: without `partial` the answer is a 409 by design.
  getResults: { partial: true },
  exportRun: { partial: true },
};

const LOGIN = { email: `${unique('login-')}@example.test`, password: 'a password long enough' };

type Expected = '2xx' | 'omitted' | 401 | 403 | 404;

/**
 * Optional query fields that still address the resource an operation acts on: the run list takes
 * `projectId`, or `jobId` in its place (JOB-4); the matrix addresses it by the project.
 */
const OPTIONAL_ADDRESSES: Record<string, string[]> = { listRuns: ['projectId'] };

/** The fields of an operation that address resources, in order: path parameters, then required query and body fields. */
function addressedFields(op: Operation): { name: string; part: 'path' | 'query' | 'body' }[] {
  const fields: { name: string; part: 'path' | 'query' | 'body' }[] = op.pathParams.map((name) => ({ name, part: 'path' }));
  for (const [part, schema] of [
    ['query', op.query],
    ['body', op.body],
  ] as const) {
    const required = (schema?.required as string[] | undefined) ?? [];
    const names = part === 'query' ? [...required, ...(OPTIONAL_ADDRESSES[op.operationId] ?? [])] : required;
    for (const name of names) {
      if (FIXTURES[name]?.addressesInBody) fields.push({ name, part });
    }
  }
  return fields;
}

/**
 * Public operations that answer no caller on the matrix's server: it has no single sign-on
 * configured, so the sign-on steps are a 404 to everyone (test/api/sso.test.ts has them configured).
 */
// A signed image link the matrix cannot sign answers 401 to anyone (HOOK-14); a signed one is test/api/job-notifications.test.ts's.
const PUBLIC_REFUSALS: Record<string, 401 | 404> = { startSsoLogin: 404, finishSsoLogin: 404, getSignedImage: 401 };

function expectedStatus(op: Operation, caller: Caller, target: Target): Expected {
  const authz = op.authz as NonNullable<Operation['authz']>;
  if (authz.scope === 'public') return PUBLIC_REFUSALS[op.operationId] ?? '2xx';
  if (!caller.sendsKey) return 401;
  if (ROLES.indexOf(caller.role) < ROLES.indexOf(authz.role as Role)) return 403;
  const owner = addressedFields(op)[0];
  if (!owner) return '2xx';
  const hides = FIXTURES[owner.name]?.hides;
  const hidden = target === 'missing' || target === 'missing-child' || (target === 'other' && hides !== 'none' && caller.role !== 'admin');
  if (!hidden) return '2xx';
  return hides === 'omits' ? 'omitted' : 404;
}

function targetsOf(op: Operation): Target[] {
  const fields = addressedFields(op);
  if (fields.length === 0) return ['own'];
  // `own` last: an allowed call may delete or demote the caller (DELETE /users/{email} on oneself).
  return fields.length > 1 ? ['other', 'missing', 'missing-child', 'own'] : ['other', 'missing', 'own'];
}

async function tablesOf(server: TestServer): Promise<string[]> {
  const query =
    server.dialect === 'sqlite'
      ? sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`
      : sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables
          WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`;
  const { rows } = await query.execute(server.app.attest.db);
  return rows.map((r) => r.name).sort();
}

/**
 * A fingerprint that changes with any write. SQLite: the app's only connection counts every row it
 * inserted, updated or deleted (`total_changes()`). PostgreSQL: per table, the row count and the
 * newest row version (`xmin`: every insert and update writes a row version with a new transaction
 * id; a delete lowers the count). Both are exact and cheap. Key-use times are the one write an
 * authenticated call may make; callers' keys are used once before the matrix, and the frozen test
 * clock keeps that once-a-minute write from recurring.
 */
async function databaseFingerprint(server: TestServer, tables: string[]): Promise<string> {
  const db = server.app.attest.db;
  if (server.dialect === 'sqlite') return String((await sql<{ n: number }>`SELECT total_changes() AS n`.execute(db)).rows[0]?.n);
  const parts = tables.map(
    (table) =>
      sql`SELECT ${table}::text AS t, count(*)::text || '/' || coalesce(max(xmin::text::bigint), 0)::text AS h FROM ${sql.table(table)}`,
  );
  const { rows } = await sql<{ t: string; h: string }>`${sql.join(parts, sql` UNION ALL `)}`.execute(db);
  return rows.map((r) => `${r.t}:${r.h}`).join(',');
}

async function createCaller(server: TestServer, spec: (typeof CALLERS)[number]): Promise<Caller> {
  const email = `${unique(`${spec.name}-`)}@example.test`;
  await admin(server).call(v1.users.createUser, { body: { email, name: spec.name, roles: [spec.role] } });
  const created = await admin(server).call(v1.users.createApiKey, { params: { email }, body: { name: 'matrix' } });
  const key = created.key;
  if (spec.name === 'outsider') {
    const elsewhere = await createProject(server, 'outsider home');
    await admin(server).call(v1.projects.addMember, { params: { projectId: elsewhere.id, email } });
  }
  // The first use of a key records it; do it now so no later (refused) call writes anything. The
  // record is written after the answer: wait for it, or it may land inside the next comparison.
  await server.client(key).call(v1.meta.getMe);
  await waitFor(
    async () =>
      (await server.app.attest.db.selectFrom('api_keys').select('last_used_at').where('id', '=', created.id).executeTakeFirst())
        ?.last_used_at,
    { message: `the first use of ${spec.name}'s key to be recorded` },
  );
  return { ...spec, email, key };
}

/**
 * Fixture values for one operation shape (its addressed fields), target and caller. Values are
 * reused by later operations of the same shape: a refused call provably changed nothing, and an
 * allowed read neither; an allowed write may have (deleted the project...), so it drops them.
 */
class FixtureCache {
  private readonly entries = new Map<string, Record<string, string>>();

  private keyOf(op: Operation, caller: Caller, target: Target): string {
    // Resources are shared by every caller (all are members of an `own` project), except a user
    // addressing themself by e-mail.
    const self = addressedFields(op)[0]?.name === 'email' && (target === 'own' || target === 'missing-child');
    const whose = self ? caller.email : '*';
    return `${addressedFields(op)
      .map((f) => f.name)
      .join('/')}|${target}|${whose}`;
  }

  async values(op: Operation, input: FixtureInput): Promise<Record<string, string>> {
    const key = this.keyOf(op, input.caller, input.target);
    const cached = this.entries.get(key);
    if (cached) return { ...cached };
    const values: Record<string, string> = {};
    for (const [i, field] of addressedFields(op).entries()) {
      values[field.name] = await (FIXTURES[field.name] as Fixture).build({ ...input, owner: i === 0, values });
    }
    this.entries.set(key, values);
    return { ...values };
  }

  forget(op: Operation, caller: Caller, target: Target): void {
    this.entries.delete(this.keyOf(op, caller, target));
  }

  /** After a caller is replaced: shared projects do not have the new one as a member. */
  clear(): void {
    this.entries.clear();
  }
}

/** One request over a kept-alive connection (node:http: much cheaper per call than fetch, and the matrix makes hundreds). */
async function send(
  agent: http.Agent,
  url: string,
  method: string,
  headers: Record<string, string>,
  body: string | FormData | undefined,
): Promise<{ status: number; text: string }> {
  let payload: Buffer | undefined;
  const allHeaders = { ...headers };
  if (body instanceof FormData) {
    const form = await encodeForm(body);
    payload = form.payload;
    allHeaders['content-type'] = form.contentType;
  } else if (body !== undefined) {
    payload = Buffer.from(body);
  }
  if (payload) allHeaders['content-length'] = String(payload.length);
  const { status, text } = await rawRequest(url, { method, headers: allHeaders, body: payload, agent });
  return { status, text };
}

/** Whether the caller's key still works with the caller's role. */
async function stillCaller(server: TestServer, caller: Caller): Promise<boolean> {
  try {
    return (await server.client(caller.key).call(v1.meta.getMe)).role === caller.role;
  } catch {
    return false;
  }
}

function queryString(query: Record<string, unknown>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) search.set(name, Array.isArray(value) ? value.join(',') : String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] authorization matrix (from the OpenAPI document)`, () => {
    let server: TestServer;
    let receiver: http.Server;
    let tables: string[];
    const callers = new Map<CallerName, Caller>();
    const fixtures = new FixtureCache();
    const agent = new http.Agent({ keepAlive: true });
    before(async () => {
      // Durability is not under test here; NORMAL spares an fsync per commit in WAL mode.
      trackerStandIn = await startStandIn();
      receiver = http.createServer((request, response) => {
        request.resume();
        request.on('end', () => response.writeHead(204).end());
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/matrix`;
      server = await startTestServer(dialect, {
        ATTEST_SQLITE_SYNCHRONOUS: 'NORMAL',
        ATTEST_INTEGRATIONS_ALLOW_PRIVATE: 'true',
        ATTEST_WEBHOOK_ALLOW_PRIVATE: 'true',
        // The integrations' sweeps write their schedule: not between a refused call and its check.
        ATTEST_INTEGRATIONS_SWEEP_MINUTES: '0',
      });
      tables = await tablesOf(server);
      await admin(server).call(v1.users.createUser, { body: { email: LOGIN.email, name: 'Login', password: LOGIN.password } });
      for (const spec of CALLERS) callers.set(spec.name, await createCaller(server, spec));
    });
    after(async () => {
      // Kept-alive sockets would hold the server's close open until they time out.
      agent.destroy();
      await server.close();
      await trackerStandIn?.close();
      receiver.closeAllConnections();
      await new Promise((resolve) => receiver.close(resolve));
    });

    test('the change detector sees a write, and nothing else changes the database between calls', async () => {
      const first = await databaseFingerprint(server, tables);
      const project = await createProject(server, 'detector');
      assert.notEqual(await databaseFingerprint(server, tables), first, 'an insert');
      const second = await databaseFingerprint(server, tables);
      await admin(server).call(v1.projects.updateProject, { params: { projectId: project.id }, body: { name: 'detector 2' } });
      assert.notEqual(await databaseFingerprint(server, tables), second, 'an update');
      const third = await databaseFingerprint(server, tables);
      await admin(server).call(v1.projects.deleteProject, { params: { projectId: project.id } });
      assert.notEqual(await databaseFingerprint(server, tables), third, 'a delete');
      const quiet = await databaseFingerprint(server, tables);
      for (const caller of callers.values()) await server.client(caller.key).call(v1.meta.getMe);
      assert.equal(await databaseFingerprint(server, tables), quiet, 'reads by warmed-up callers write nothing');
    });

    test('the document has operations, and every one declares x-authz', () => {
      assert.ok(OPERATIONS.length >= 20);
      const without = OPERATIONS.filter((op) => !op.authz).map((op) => op.operationId);
      assert.deepEqual(without, [], 'operations without x-authz');
    });

    for (const op of OPERATIONS) {
      describe(`${op.method} ${op.path}`, () => {
        test(`answers every caller and target as x-authz ${JSON.stringify(op.authz)} says, and a refusal changes nothing`, async () => {
          assert.ok(op.authz, `${op.operationId} has no x-authz: every operation must declare who may call it`);
          const unknown = op.pathParams.filter((name) => !FIXTURES[name]);
          assert.deepEqual(
            unknown,
            [],
            `${op.operationId}: no fixture builder for the path parameter(s) ${unknown.join(', ')}; add an entry to FIXTURES`,
          );
          // A form builder wins: an import also takes application/json, but as a report file, not a JSON body.
          const json = !FORM_BUILDERS[op.operationId] && (op.consumes.length === 0 || op.consumes.includes('application/json'));
          assert.ok(
            json || FORM_BUILDERS[op.operationId],
            `${op.operationId} takes ${op.consumes.join(', ')}: add a request builder to FORM_BUILDERS`,
          );
          const specs = op.authz.scope === 'public' ? CALLERS.filter((c) => c.name === 'anonymous') : CALLERS;
          const mismatches: string[] = [];
          for (const spec of specs) {
            for (const target of targetsOf(op)) {
              const caller = callers.get(spec.name) as Caller;
              const input: FixtureInput = { server, caller, everyone: [...callers.values()], target, owner: true, values: {} };
              input.values = await fixtures.values(op, input);
              await PREPARE[op.operationId]?.(input);
              const query: Record<string, unknown> = {
                ...(op.query ? (minimalSample(op.query) as object) : {}),
                ...QUERY_OVERRIDES[op.operationId],
              };
              let body: Record<string, unknown> | undefined =
                op.body && json ? (minimalSample(op.body) as Record<string, unknown>) : undefined;
              for (const field of addressedFields(op)) {
                if (field.part === 'query') query[field.name] = input.values[field.name];
                if (field.part === 'body' && body) body[field.name] = input.values[field.name];
              }
              const override = BODY_OVERRIDES[op.operationId];
              if (override && body) body = { ...body, ...(await override(input)) };
              const form = json ? undefined : await FORM_BUILDERS[op.operationId]?.(input);
              const expected = expectedStatus(op, caller, target);
              const refused = typeof expected === 'number';
              const before = refused ? await databaseFingerprint(server, tables) : '';
              const response = await send(
                agent,
                `${server.url}/api/v1${expandPath(op.path, input.values)}${queryString(query)}`,
                op.method,
                {
                  accept: 'application/json',
                  ...(form ? {} : { 'content-type': 'application/json' }),
                  ...(caller.sendsKey ? { 'service.api-token': caller.key } : {}),
                },
                form ?? (body === undefined ? undefined : JSON.stringify(body)),
              );
              const { text } = response;
              const label = `${caller.name} → ${target}: expected ${expected}, got ${response.status}`;
              let ok = typeof expected === 'number' ? response.status === expected : response.status >= 200 && response.status < 300;
              if (ok && expected === 'omitted') {
                const batch = JSON.parse(text) as { items: { id: string }[]; missing: string[] };
                const id = input.values[addressedFields(op)[0]?.name as string];
                ok = batch.missing.includes(id as string) && !batch.items.some((item) => item.id === id);
              }
              if (!ok) mismatches.push(`${label} ${text.slice(0, 300)}`);
              // An accepted import writes its job in the background: let it finish before the next comparison.
              // So do a webhook's test event and a redelivery (they are sent to the matrix's receiver).
              if (response.status === 202 && ['importReport', 'testWebhook', 'redeliverWebhookDelivery'].includes(op.operationId)) {
                await server.app.attest.background.idle();
                await databaseSettled(server);
              }
              if (refused && (await databaseFingerprint(server, tables)) !== before)
                mismatches.push(`${label}: the refused call changed the database`);
              if (!refused && op.method !== 'GET') {
                fixtures.forget(op, caller, target);
                // An allowed call on oneself (deleting, demoting) may have used the caller up: then replace them.
                if (Object.values(input.values).includes(caller.email) && !(await stillCaller(server, caller))) {
                  callers.set(spec.name, await createCaller(server, spec));
                  fixtures.clear();
                }
              }
            }
          }
          assert.deepEqual(mismatches, [], `${op.method} ${op.path} (${op.operationId})`);
        });
      });
    }
  });
}
