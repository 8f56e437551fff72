import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { strToU8, zipSync } from 'fflate';
import sharp from 'sharp';
import { type ApiError, v1 } from '../../src/client/index.ts';
import { insertImport } from '../../src/server/db/repositories/imports.ts';
import { enqueueTask, findTaskByKey } from '../../src/server/db/repositories/tasks.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type TestUser, twoProjects, unique } from '../helpers/factories.ts';
import { encodeForm, jsonHeaders, rawRequest } from '../helpers/http.ts';
import { acceptedImportRow } from '../helpers/import-rows.ts';
import { nestedPlaywrightReport } from '../helpers/nested-report.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// IMP-1, IMP-2, IMP-4, IMP-5, IMP-8: reports in through POST /projects/{projectId}/imports, over real HTTP.

const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** A JUnit XML report of three cases, the failing one pointing at a screenshot by the Jenkins convention. */
const junit = (suite: string) =>
  Buffer.from(`<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="nightly">
  <testsuite name="${suite}" tests="3" failures="1" skipped="1" timestamp="2026-03-02T09:29:12">
    <properties><property name="branch" value="release/7"/><property name="browser" value="chromium"/></properties>
    <testcase classname="${suite}" name="signs in" time="1.5"><system-out>logged in &amp; redirected</system-out></testcase>
    <testcase classname="${suite}" name="rejects a bad password" time="0.25">
      <failure message="expected 401 but was 500" type="AssertionError">at Login.java:42</failure>
      <system-out>[[ATTACHMENT|shots/bad-password.png]]</system-out>
    </testcase>
    <testcase classname="${suite}" name="remembers me"><skipped message="flaky on CI"/></testcase>
  </testsuite>
</testsuites>`);

for (const dialect of DIALECTS) {
  describe(`[${dialect}] imports`, () => {
    let server: TestServer;
    let projectA: string;
    let tester: TestUser;
    let viewer: TestUser;
    let png: Buffer;

    before(async () => {
      server = await startTestServer(dialect);
      ({ projectA, tester, viewer } = await twoProjects(server));
      png = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#c03' } })
        .png()
        .toBuffer();
    });
    after(() => server.close());

    /** Posts a raw body as the report; answers status, body and headers as sent. */
    const post = (body: Buffer, type: string, query = '', key = tester.key) =>
      rawRequest(`${server.url}/api/v1/projects/${projectA}/imports${query}`, {
        method: 'POST',
        headers: { ...jsonHeaders(key), 'content-type': type, 'content-length': body.length },
        body,
      });

    /** Posts a multipart import: the options part, then the file part. */
    const postForm = async (file: { name: string; bytes: Buffer }, options: Record<string, string>) => {
      const form = new FormData();
      form.append('options', JSON.stringify(options));
      form.append('file', new Blob([file.bytes]), file.name);
      const { payload, contentType } = await encodeForm(form);
      return rawRequest(`${server.url}/api/v1/projects/${projectA}/imports`, {
        method: 'POST',
        headers: { ...jsonHeaders(tester.key), 'content-type': contentType, 'content-length': payload.length },
        body: payload,
      });
    };

    const settled = async (importId: string) => {
      for (let i = 0; i < 400; i++) {
        const record = await viewer.client.call(v1.imports.getImport, { params: { projectId: projectA, importId } });
        if (record.status === 'completed' || record.status === 'failed') return record;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error('the import did not finish');
    };
    const runsOf = async (jobId: string) =>
      (await viewer.client.call(v1.runs.listRuns, { query: { projectId: projectA, jobId, limit: 200 } })).items;
    const stored = async () => ({
      imports: (await viewer.client.call(v1.imports.listImports, { params: { projectId: projectA }, query: { limit: 200 } })).items.length,
      jobs: (await viewer.client.call(v1.jobs.listJobs, { query: { projectId: projectA, limit: 200 } })).items.length,
      runs: (await viewer.client.call(v1.runs.listRuns, { query: { projectId: projectA, limit: 200 } })).items.length,
    });

    test('a JUnit XML body becomes one job of completed runs with their steps, cells and labels; 202, then completed', async () => {
      const suite = unique('com.example.Login');
      const answer = await post(junit(suite), 'application/xml', '?build=2026.11.25');
      assert.equal(answer.status, 202, answer.text);
      assert.equal(answer.json.status, 'queued');
      assert.match(String(answer.headers.location), new RegExp(`/api/v1/projects/${projectA}/imports/${answer.json.id}$`));
      const record = await settled(String(answer.json.id));
      assert.equal(record.status, 'completed', record.error ?? '');
      assert.equal(record.counts?.runs, 3);
      assert.deepEqual([record.counts?.passed, record.counts?.failed, record.counts?.skipped], [1, 1, 1]);
      assert.equal(record.counts?.testsCreated, 3);
      assert.equal(record.counts?.attachmentsMissing, 1, 'the XML alone lacks the screenshot it names');
      assert.match(record.files[0]?.errors[0] ?? '', /shots\/bad-password\.png/);

      const job = await viewer.client.call(v1.jobs.getJob, { params: { jobId: record.jobId as string } });
      assert.equal(job.name, 'nightly');
      assert.equal(job.status, 'completed');
      const runs = await runsOf(job.id);
      assert.equal(runs.length, 3);
      const failed = runs.find((r) => r.verdict === 'failed');
      assert.ok(failed);
      assert.equal(failed.status, 'completed');
      assert.equal(failed.build, '2026.11.25', 'the import option');
      assert.equal(failed.branch, 'release/7', 'a suite property of a run label name');
      const results = await viewer.client.call(v1.results.getResults, { params: { testRunId: failed.id } });
      assert.equal(results.steps.length, 1);
      assert.equal(results.steps[0]?.status, 'failed');
      assert.match(results.steps[0]?.error ?? '', /expected 401 but was 500/);
      assert.ok(results.cells.some((c) => c.name === 'labels' && c.text.includes('browser: chromium')));

      // The same tests imported again build history: no new test, a new job.
      const again = await post(junit(suite), 'application/xml');
      const second = await settled(String(again.json.id));
      assert.equal(second.counts?.testsCreated, 0);
      assert.notEqual(second.jobId, record.jobId);
      const secondRuns = await runsOf(second.jobId as string);
      assert.deepEqual(new Set(secondRuns.map((r) => r.testId)), new Set(runs.map((r) => r.testId)));
    });

    test('a ZIP with its attachments: the screenshot is an artifact of the failing step, bytes unchanged', async () => {
      const suite = unique('com.example.Zip');
      const zip = Buffer.from(zipSync({ 'reports/TEST-login.xml': junit(suite), 'reports/shots/bad-password.png': png }));
      const answer = await post(zip, 'application/zip');
      assert.equal(answer.status, 202, answer.text);
      const record = await settled(String(answer.json.id));
      assert.equal(record.counts?.attachments, 1);
      assert.equal(record.counts?.attachmentsMissing, 0);
      const failed = (await runsOf(record.jobId as string)).find((r) => r.verdict === 'failed');
      assert.ok(failed);
      const results = await viewer.client.call(v1.results.getResults, { params: { testRunId: failed.id } });
      const listing = await viewer.client.call(v1.artifacts.listArtifacts, {
        params: { projectId: projectA },
        query: { testRunId: failed.id },
      });
      assert.equal(listing.items.length, 1);
      assert.equal(listing.items[0]?.kind, 'screenshot');
      assert.equal(listing.items[0]?.stepId, results.steps[0]?.id);
      const details = await viewer.client.call(v1.artifacts.getArtifacts, { query: { ids: listing.items[0]?.id as string } });
      const imageId = details.items[0]?.images[0]?.id as string;
      const image = await viewer.client.fetchRaw('GET', `/images/${imageId}`);
      assert.equal(sha(new Uint8Array(await image.arrayBuffer())), sha(png));
    });

    test('multipart with an options part; the same file and key answer the same import (200), another file 409', async () => {
      const key = unique('ci-');
      const file = { name: 'TEST-cart.xml', bytes: junit(unique('com.example.Cart')) };
      const first = await postForm(file, { name: 'Cart nightly', branch: 'main', idempotencyKey: key });
      assert.equal(first.status, 202, first.text);
      const record = await settled(String(first.json.id));
      assert.equal(record.fileName, 'TEST-cart.xml');
      const job = await viewer.client.call(v1.jobs.getJob, { params: { jobId: record.jobId as string } });
      assert.equal(job.name, 'Cart nightly');
      assert.ok(
        (await runsOf(job.id)).every((r) => r.branch === 'main'),
        'the option wins over the report property',
      );
      const before = await stored();
      // The client sends the file as the body, options in the query: the same import either way.
      const replay = await tester.client.importReport(projectA, file, { name: 'Cart nightly', branch: 'main', idempotencyKey: key });
      assert.equal(replay.id, first.json.id);
      assert.equal(replay.jobId, record.jobId);
      await assert.rejects(
        tester.client.importReport(projectA, { name: 'other.xml', bytes: junit(unique('x')) }, { idempotencyKey: key }),
        (e: ApiError) => e.status === 409,
      );
      assert.equal((await postForm({ name: 'x.xml', bytes: junit('x') }, { colour: 'red' } as never)).status, 400);
      assert.deepEqual(await stored(), before);
    });

    test('bad input is a 400 naming the problem, and nothing is stored (IMP-5)', async () => {
      const laughs = Buffer.from(
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]><testsuite name="x"><testcase name="&lol2;"/></testsuite>',
      );
      const xxe = Buffer.from(
        '<?xml version="1.0"?><!DOCTYPE t [<!ENTITY x SYSTEM "file:///etc/passwd">]><testsuite name="x"><testcase name="&x;"/></testsuite>',
      );
      const bomb = Buffer.from(zipSync({ 'report.xml': junit('bomb'), 'zeros.bin': new Uint8Array(64 * 1024 * 1024) }, { level: 9 }));
      const cases: [string, Buffer, string, RegExp][] = [
        ['malformed XML', Buffer.from('<testsuite name="x"><testcase name="a"></testsuite>'), 'application/xml', /well-formed/],
        ['billion laughs', laughs, 'application/xml', /DTD|entit/i],
        ['external entity', xxe, 'text/xml', /DTD|entit/i],
        ['not a report', Buffer.from('<html><body/></html>'), 'application/xml', /testsuite/i],
        ['malformed JSON', Buffer.from('{"config": {'), 'application/json', /JSON/],
        ['broken ZIP', Buffer.concat([Buffer.from('PK\x03\x04'), Buffer.alloc(200, 7)]), 'application/zip', /ZIP/],
        ['a ../ entry', Buffer.from(zipSync({ 'report.xml': junit('a'), '../evil.png': png })), 'application/zip', /\.\./],
        ['an absolute entry', Buffer.from(zipSync({ 'report.xml': junit('a'), '/etc/evil.png': png })), 'application/zip', /absolute/],
        ['a decompression bomb', bomb, 'application/zip', /bomb/],
        ['a ZIP without a report', Buffer.from(zipSync({ 'notes.txt': strToU8('hello') })), 'application/zip', /no JUnit XML/],
      ];
      const before = await stored();
      for (const [what, body, type, message] of cases) {
        const answer = await post(body, type);
        assert.equal(answer.status, 400, `${what}: ${answer.text}`);
        assert.match(String(answer.headers['content-type']), /^application\/problem\+json/, what);
        assert.match(String(answer.json.detail), message, what);
      }
      assert.equal((await post(junit('x'), 'text/plain')).status, 415);
      assert.deepEqual(await stored(), before);
    });

    test('odd but readable input: bad times, NUL in names, a stray package.json; an entry lying about its size is refused', async () => {
      // A Playwright report whose times are not times: imported, the run timed by the import.
      const odd = {
        config: {},
        suites: [
          {
            title: 'odd.spec.ts',
            specs: [
              {
                title: 'odd times',
                tests: [{ projectName: '', results: [{ status: 'passed', retry: 0, startTime: 'yesterday', duration: 1e300, steps: [] }] }],
              },
            ],
          },
        ],
      };
      const accepted = await post(Buffer.from(JSON.stringify(odd)), 'application/json');
      assert.equal(accepted.status, 202, accepted.text);
      const record = await settled(String(accepted.json.id));
      assert.equal(record.status, 'completed', record.error ?? '');
      // A report shaped against the parser's expectations is the file's fault: 400, not 500.
      const shaped = structuredClone(odd) as { suites: { specs: { tests: { results: Record<string, unknown>[] }[] }[] }[] };
      (shaped.suites[0]?.specs[0]?.tests[0]?.results[0] as Record<string, unknown>).steps = [{ title: 's', error: { message: 5 } }];
      (shaped.suites[0]?.specs[0]?.tests[0]?.results[0] as Record<string, unknown>).errors = [{ message: { toString: 1 } }];
      assert.equal((await post(Buffer.from(JSON.stringify(shaped)), 'application/json')).status, 400);

      // NUL in a test name (a raw byte in the XML): stored without it, on PostgreSQL too.
      const nul = Buffer.from('<testsuite name="nul"><testcase classname="nul" name="a\u0000b"/></testsuite>');
      const named = await settled(String((await post(nul, 'application/xml')).json.id));
      assert.equal(named.status, 'completed', named.error ?? '');
      const run = (await runsOf(named.jobId as string))[0];
      assert.equal(run?.name, 'ab');

      // Other JSON in a ZIP is an attachment, not a broken report.
      const stray = Buffer.from(zipSync({ 'TEST-a.xml': junit(unique('s')), 'package.json': strToU8('{"name":"x","config":{"a":1}}') }));
      assert.equal((await post(stray, 'application/zip')).status, 202);

      // An entry declaring 1,000 bytes that expands to 8 MiB: refused, not expanded whole.
      const liar = Buffer.from(zipSync({ 'report.xml': junit('liar'), 'big.bin': new Uint8Array(8 * 1024 * 1024) }, { level: 9 }));
      const central = liar.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]), liar.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02])) + 4);
      const local = liar.readUInt32LE(central + 42);
      liar.writeUInt32LE(1000, central + 24);
      liar.writeUInt32LE(1000, local + 22);
      const lying = await post(liar, 'application/zip');
      assert.equal(lying.status, 400, lying.text);
      assert.match(String(lying.json.detail), /beyond the size it declares/);

      // No test case at all, and the same key with other options.
      assert.equal((await post(Buffer.from('<testsuite name="empty"/>'), 'application/xml')).status, 400);
      const key = unique('opt-');
      const same = junit(unique('o'));
      assert.equal((await post(same, 'application/xml', `?idempotencyKey=${key}&branch=a`)).status, 202);
      assert.equal((await post(same, 'application/xml', `?idempotencyKey=${key}&branch=a`)).status, 200);
      assert.equal((await post(same, 'application/xml', `?idempotencyKey=${key}&branch=b`)).status, 409);
    });

    test('a Playwright report whose steps nest 2,000 deep (84 KB) is a 400 naming the limit, and the imports after it complete (IMP-8)', async () => {
      const deep = nestedPlaywrightReport(2000);
      assert.ok(deep.length > 80_000 && deep.length < 90_000, `${deep.length} bytes`);
      const limit = /steps nest more than 100 levels deep; an import takes at most 100/;
      // Imports only: the tests before this one leave some being written, whose jobs and runs grow meanwhile.
      const before = (await stored()).imports;
      const raw = await post(deep, 'application/json');
      assert.equal(raw.status, 400, raw.text);
      assert.equal(raw.json.code, 'INVALID_INPUT');
      assert.match(String(raw.json.detail), limit);
      const zipped = await post(Buffer.from(zipSync({ 'results/report.json': deep })), 'application/zip');
      assert.equal(zipped.status, 400, zipped.text);
      assert.match(String(zipped.json.detail), /^results\/report\.json: .*steps nest more than 100 levels deep/);
      const form = await postForm({ name: 'report.json', bytes: deep }, {});
      assert.equal(form.status, 400, form.text);
      assert.equal((await stored()).imports, before, 'no import, so no job, run or blob');

      // The same instance goes on importing: the deepest tree taken (its steps past the tenth level
      // under the tenth), and a JUnit report.
      const deepest = await settled(String((await post(nestedPlaywrightReport(100), 'application/json')).json.id));
      assert.equal(deepest.status, 'completed', deepest.error ?? '');
      const [run] = await runsOf(deepest.jobId as string);
      const results = await viewer.client.call(v1.results.getResults, { params: { testRunId: run?.id as string } });
      assert.equal(results.steps.length, 100);
      const other = await settled(String((await post(junit(unique('com.example.After')), 'application/xml')).json.id));
      assert.equal(other.status, 'completed', other.error ?? '');
    });

    test('such a report accepted before the limit ends failed naming it when its task is claimed, never queued again (IMP-8)', async () => {
      // An import a version without the limit accepted: its upload kept, its row and task stored, as
      // startImport leaves them. This instance's runner claims it on waking, as after a restart.
      const ctx = server.app.attest;
      const deep = nestedPlaywrightReport(2000);
      const blob = await ctx.blobs.put([deep]);
      const id = randomUUID();
      try {
        await insertImport(
          ctx.db,
          acceptedImportRow({
            id,
            project_id: projectA,
            file_name: 'report.json',
            source_type: 'json',
            source_sha256: blob.sha256,
            source_size: deep.length,
          }),
        );
        const now = ctx.background.time();
        await enqueueTask(ctx.db, { kind: 'import', key: `import:${id}`, payload: JSON.stringify({ importId: id }), runAt: now, now });
      } finally {
        blob.release();
      }
      ctx.background.wake();
      const record = await settled(id);
      assert.equal(record.status, 'failed');
      assert.match(String(record.error), /steps nest more than 100 levels deep; an import takes at most 100/);
      // The runner drops the task once the handler has returned, just after the failure is committed.
      await waitFor(async () => (await findTaskByKey(ctx.db, `import:${id}`)) === undefined, {
        message: 'its task is gone: no instance claims it again',
      });
      const next = await settled(String((await post(junit(unique('com.example.Next')), 'application/xml')).json.id));
      assert.equal(next.status, 'completed', next.error ?? '');
    });

    test('XML and ZIP bodies are refused (415) on every route but an import', async () => {
      const answer = await rawRequest(`${server.url}/api/v1/testmgmt/tests`, {
        method: 'POST',
        headers: { ...jsonHeaders(tester.key), 'content-type': 'application/xml' },
        body: junit('x'),
      });
      assert.equal(answer.status, 415);
    });

    test('a viewer cannot import (403)', async () => {
      assert.equal((await post(junit('x'), 'application/xml', '', viewer.key)).status, 403);
    });
  });
}

describe('[sqlite] import size limit', () => {
  test('an upload over ATTEST_MAX_IMPORT_BYTES is a 413 and stores nothing', async () => {
    const server = await startTestServer('sqlite', { ATTEST_MAX_IMPORT_BYTES: '4096' });
    try {
      const { projectA, tester } = await twoProjects(server);
      const body = Buffer.concat([junit('big'), Buffer.from(`<!-- ${'x'.repeat(8000)} -->`)]);
      const answer = await rawRequest(`${server.url}/api/v1/projects/${projectA}/imports`, {
        method: 'POST',
        headers: { ...jsonHeaders(tester.key), 'content-type': 'application/xml', 'content-length': body.length },
        body,
      });
      assert.equal(answer.status, 413, answer.text);
      const multipart = await tester.client.importReport(projectA, { name: 'big.xml', bytes: body }).catch((e: ApiError) => e.status);
      assert.equal(multipart, 413);
      const imports = await tester.client.call(v1.imports.listImports, { params: { projectId: projectA } });
      assert.equal(imports.items.length, 0);
    } finally {
      await server.close();
    }
  });
});
