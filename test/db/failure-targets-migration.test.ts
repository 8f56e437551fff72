import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { MIGRATION_NAMES } from '../../src/server/db/database.ts';
import { normaliseFailure } from '../../src/server/failures/normalise.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type AnyDb, migrate, schemaBefore } from '../helpers/migration-schema.ts';

// TRIAGE-1, TRIAGE-2: migration 0027 re-fingerprints the failures recorded before targets were part
// of the fingerprint, on rows shaped as the version before it wrote them.

const MINE = '2026-12-02-0027-failure-targets';

const first = 'Error: locator.click: Test timeout of 30000ms exceeded.';
const pay = "getByRole('button', { name: 'Pay now' })";
const checkout = "getByRole('link', { name: 'Checkout' })";
/** A JUnit body as Playwright prints the error: the first line, the call log, the source, the stack. */
const body = (locator: string, line: number, port: number) =>
  `${first}\nCall log:\n  - waiting for ${locator}\n    - navigated to "http://localhost:${port}/checkout"\n\n  ${line} |   await page.${locator}.click();\n\n    at /home/runner/work/shop/shop/tests/checkout.spec.ts:${line}:50`;
/** The fingerprint the version before wrote: SHA-256 of the normalised message and frames, no target. */
const oldFingerprint = (message: string, trace: string | null) => {
  const n = normaliseFailure({ message, trace });
  return createHash('sha256')
    .update(`${n.message}\n\n${n.frames.map((frame) => `${frame.file} ${frame.function}`).join('\n')}`)
    .digest('hex');
};

for (const dialect of DIALECTS) {
  describe(`[${dialect}] migration ${MINE}`, () => {
    let db: AnyDb;
    let close: () => Promise<void> = async () => {};
    // The schema as it stood just before this migration (later ones run after it, in the test).
    before(async () => {
      ({ db, close } = await schemaBefore(dialect, MINE, 'attest_targets'));
    });
    after(() => close());

    test('a group holding two locators splits into one group per target, each with the triage, counts and rollup of its failures, audited; a group without a target keeps its fingerprint', async () => {
      const at = '2026-03-02T09:00:00.000Z';
      await db
        .insertInto('projects')
        .values({ id: 'p1', key: 'SHOP', name: 'Shop', description: '', created_at: at, updated_at: at })
        .execute();
      await db.insertInto('jobs').values({ id: 'j1', project_id: 'p1', name: 'ci', request: '{}', created_at: at }).execute();
      // As the version before recorded them: one step per JUnit case (message attribute, body in a `failure` cell).
      const failures = [
        { run: 'r1', test: 'pays', locator: pay, line: 12, port: 3000, branch: 'main', at: '2026-03-02T09:00:01.000Z' },
        { run: 'r2', test: 'checks out', locator: checkout, line: 12, port: 3000, branch: 'feature', at: '2026-03-02T09:00:02.000Z' },
        { run: 'r3', test: 'pays', locator: pay, line: 19, port: 41234, branch: 'main', at: '2026-03-03T09:00:03.000Z' },
      ];
      const g1 = oldFingerprint(first, body(pay, 12, 3000));
      assert.equal(oldFingerprint(first, body(checkout, 12, 3000)), g1, 'the version before put both locators in one group');
      const crash = 'TypeError: cart is undefined';
      const crashTrace = '    at pay (/home/runner/work/shop/shop/src/cart.ts:3:1)';
      const group = (id: string, fingerprint: string, message: string, extra: Record<string, unknown>) => ({
        id,
        project_id: 'p1',
        fingerprint,
        title: message,
        message,
        frames: '[]',
        category: 'timeout',
        action: 'click',
        target: null,
        rule: 'Timeouts',
        status: 'known',
        defect_type: 'product_bug',
        comment: 'Pay now is broken',
        issue_url: 'https://jira.example.com/browse/SHOP-12',
        assignee: 'alice@example.com',
        first_seen_at: failures[0]?.at,
        first_seen_run_id: 'r1',
        first_seen_job_id: 'j1',
        last_seen_at: failures[2]?.at,
        last_seen_run_id: 'r3',
        last_seen_job_id: 'j1',
        occurrences: 3,
        affected_tests: 2,
        affected_branches: 2,
        triaged_at: at,
        triaged_by: 'u1',
        created_at: at,
        updated_at: at,
        ...extra,
      });
      await db
        .insertInto('failure_groups')
        .values([
          group('g1', g1, first, {}),
          group('g2', oldFingerprint(crash, crashTrace), crash, {
            category: 'crash',
            action: 'TypeError',
            occurrences: 1,
            affected_tests: 1,
            affected_branches: 1,
            first_seen_run_id: 'r4',
            last_seen_run_id: 'r4',
          }),
        ])
        .execute();
      const rows = [...failures, { run: 'r4', test: 'crashes', locator: '', line: 3, port: 0, branch: 'main', at }];
      for (const [i, f] of rows.entries()) {
        const groupId = f.run === 'r4' ? 'g2' : 'g1';
        await db
          .insertInto('test_runs')
          .values({
            id: f.run,
            project_id: 'p1',
            job_id: 'j1',
            name: f.test,
            status: 'completed',
            verdict: 'failed',
            branch: f.branch,
            finished_at: f.at,
            created_at: f.at,
            failure_group_id: groupId,
          })
          .execute();
        await db
          .insertInto('steps')
          .values({
            id: `s${i}`,
            run_id: f.run,
            depth: 1,
            position: 0,
            title: f.test,
            status: 'failed',
            error_message: f.run === 'r4' ? crash : first,
            failure_group_id: groupId,
            created_at: f.at,
          })
          .execute();
        await db
          .insertInto('text_cells')
          .values({
            id: `c${i}`,
            run_id: f.run,
            step_id: `s${i}`,
            position: 0,
            name: 'failure',
            media_type: 'text/plain',
            text: f.run === 'r4' ? `${crash}\n${crashTrace}` : body(f.locator, f.line, f.port),
            created_at: f.at,
          })
          .execute();
        await db
          .insertInto('failure_occurrences')
          .values({
            group_id: groupId,
            run_id: f.run,
            project_id: 'p1',
            job_id: 'j1',
            step_id: `s${i}`,
            test_key: `name:${f.test}`,
            branch: f.branch,
            at: f.at,
          })
          .execute();
      }
      await db
        .insertInto('failure_group_tests')
        .values([
          { group_id: 'g1', test_key: 'name:pays' },
          { group_id: 'g1', test_key: 'name:checks out' },
          { group_id: 'g2', test_key: 'name:crashes' },
        ])
        .execute();
      await db
        .insertInto('failure_group_branches')
        .values([
          { group_id: 'g1', branch: 'main' },
          { group_id: 'g1', branch: 'feature' },
          { group_id: 'g2', branch: 'main' },
        ])
        .execute();

      await migrate(db, MIGRATION_NAMES);

      const groups = await db.selectFrom('failure_groups').selectAll().orderBy('first_seen_at').execute();
      assert.equal(groups.length, 3);
      const kept = groups.find((g) => g.id === 'g1');
      const split = groups.find((g) => g.id !== 'g1' && g.id !== 'g2');
      const untouched = groups.find((g) => g.id === 'g2');
      // Each now holds the fingerprint today's normaliser gives its failures, so new ones find it.
      assert.equal(kept?.target, pay);
      assert.equal(kept?.fingerprint, normaliseFailure({ message: first, trace: body(pay, 27, 5173) }).fingerprint);
      assert.equal(split?.target, checkout);
      assert.equal(split?.fingerprint, normaliseFailure({ message: first, trace: body(checkout, 12, 3000) }).fingerprint);
      assert.equal(untouched?.fingerprint, oldFingerprint(crash, crashTrace));
      assert.equal(untouched?.fingerprint, normaliseFailure({ message: crash, trace: crashTrace }).fingerprint);
      for (const g of [kept, split]) {
        assert.deepEqual(
          [g?.status, g?.defect_type, g?.comment, g?.issue_url, g?.assignee, g?.rule, g?.triaged_at, g?.triaged_by],
          [
            'known',
            'product_bug',
            'Pay now is broken',
            'https://jira.example.com/browse/SHOP-12',
            'alice@example.com',
            'Timeouts',
            at,
            'u1',
          ],
        );
      }
      assert.deepEqual(
        [kept?.occurrences, kept?.affected_tests, kept?.affected_branches, kept?.first_seen_run_id, kept?.last_seen_run_id].map(String),
        ['2', '1', '1', 'r1', 'r3'],
      );
      assert.deepEqual(
        [split?.occurrences, split?.affected_tests, split?.affected_branches, split?.first_seen_run_id, split?.last_seen_run_id].map(
          String,
        ),
        ['1', '1', '1', 'r2', 'r2'],
      );
      const groupOf = async (table: 'steps' | 'test_runs', id: string) =>
        (await db.selectFrom(table).select('failure_group_id').where('id', '=', id).executeTakeFirstOrThrow()).failure_group_id;
      assert.deepEqual(await Promise.all(['r1', 'r2', 'r3', 'r4'].map((id) => groupOf('test_runs', id))), ['g1', split?.id, 'g1', 'g2']);
      assert.deepEqual(await Promise.all(['s0', 's1', 's2', 's3'].map((id) => groupOf('steps', id))), ['g1', split?.id, 'g1', 'g2']);
      const occurrences = await db.selectFrom('failure_occurrences').select(['group_id', 'run_id', 'step_id']).orderBy('run_id').execute();
      assert.deepEqual(occurrences, [
        { group_id: 'g1', run_id: 'r1', step_id: 's0' },
        { group_id: split?.id, run_id: 'r2', step_id: 's1' },
        { group_id: 'g1', run_id: 'r3', step_id: 's2' },
        { group_id: 'g2', run_id: 'r4', step_id: 's3' },
      ]);
      const tests = await db
        .selectFrom('failure_group_tests')
        .selectAll()
        .where('group_id', 'in', ['g1', split?.id])
        .orderBy('test_key')
        .execute();
      assert.deepEqual(tests, [
        { group_id: split?.id, test_key: 'name:checks out' },
        { group_id: 'g1', test_key: 'name:pays' },
      ]);
      const branches = await db
        .selectFrom('failure_group_branches')
        .selectAll()
        .where('group_id', 'in', ['g1', split?.id])
        .orderBy('branch')
        .execute();
      assert.deepEqual(branches, [
        { group_id: split?.id, branch: 'feature' },
        { group_id: 'g1', branch: 'main' },
      ]);
      // The dashboard's rollup (migration 0025's triggers) followed the occurrences.
      const days = await db
        .selectFrom('group_days')
        .select(['group_id', 'day', 'occurrences'])
        .where('occurrences', '>', 0)
        .orderBy('day')
        .orderBy('group_id')
        .execute();
      assert.deepEqual(
        days
          .filter((d) => d.group_id !== 'g2')
          .map((d) => [d.group_id, d.day, Number(d.occurrences)])
          .sort(),
        [
          ['g1', '2026-03-02', 1],
          ['g1', '2026-03-03', 1],
          [split?.id, '2026-03-02', 1],
        ].sort(),
      );
      const audit = await db.selectFrom('audit_log').selectAll().where('action', '=', 'failure-group.split').orderBy('target_id').execute();
      assert.deepEqual(audit.map((entry) => entry.target_id).sort(), ['g1', split?.id].sort());
      const details = audit.map((entry) => JSON.parse(entry.details));
      assert.ok(details.some((d) => d.from === 'g1' && d.target === checkout));
      assert.ok(details.some((d) => d.target === pay && d.into?.[0]?.id === split?.id));
    });
  });
}
