import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MIGRATION_NAMES } from '../../src/server/db/database.ts';
import * as mine from '../../src/server/db/migrations/2026-12-02-0029-merge-equal-groups.ts';
import { fingerprintOf, normaliseFailure } from '../../src/server/failures/normalise.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type AnyDb, migrate, schemaBefore } from '../helpers/migration-schema.ts';

// TRIAGE-10: migration 0029 merges the groups the version before stored apart for one cause (a
// reporter's step error without frames, its run's error cell with them, the JUnit import of the same
// failure without `Error: `), on rows shaped as that version wrote them.

const MINE = '2026-12-02-0029-merge-equal-groups';

/** Playwright's failure of a retrying matcher, as the live reporter sends a step's error. */
const statement =
  'Error: expect(locator).toHaveText(expected) failed\n\nLocator: locator(\'#total\')\nExpected string: "9.99"\nReceived string: "10.99"\nTimeout: 5000ms';
/** The run's `error` cell (the reporter), and the body of JUnit's `<failure>`: the error with its call log and stack. */
const withStack = (port: number) =>
  `${statement}\n\nCall log:\n  - Expect "toHaveText" with timeout 5000ms\n  - waiting for locator('#total')\n    - navigated to "http://localhost:${port}/cart"\n\n    at /home/runner/work/shop/shop/tests/cart.spec.ts:12:44`;
/** JUnit's `message` attribute as Playwright's JUnit reporter writes it: the first line, without `Error: `. */
const junitMessage = 'expect(locator).toHaveText(expected) failed';

/** The JUnit failure's fingerprint as the version before made it: the one line, the body's frames and target. */
function oldJunitFingerprint(): string {
  const line = normaliseFailure({ message: junitMessage }).message;
  const withBody = normaliseFailure({ message: junitMessage, trace: withStack(3000) });
  return fingerprintOf(line, withBody.frames, withBody.signature.target);
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] migration ${MINE}`, () => {
    let db: AnyDb;
    let close: () => Promise<void> = async () => {};
    // The schema as it stood just before this migration (later ones run after it, in the test).
    before(async () => {
      ({ db, close } = await schemaBefore(dialect, MINE, 'attest_merge'));
    });
    after(() => close());

    test('groups of one cause stored apart merge into the one triaged first, with every occurrence, count, rollup row, issue link and incident, audited; a second run changes nothing', async () => {
      const at = '2026-03-01T08:00:00.000Z';
      await db
        .insertInto('projects')
        .values({ id: 'p1', key: 'SHOP', name: 'Shop', description: '', created_at: at, updated_at: at })
        .execute();
      await db
        .insertInto('jobs')
        .values([
          { id: 'j1', project_id: 'p1', name: 'live', request: '{}', created_at: at },
          { id: 'j2', project_id: 'p1', name: 'junit', request: '{}', created_at: at },
        ])
        .execute();
      const reporterStep = normaliseFailure({ message: statement });
      const reporterRun = normaliseFailure({ message: withStack(3000) });
      const junit = oldJunitFingerprint();
      assert.equal(new Set([reporterStep.fingerprint, reporterRun.fingerprint, junit]).size, 3, 'the version before made three groups');
      const crash = 'TypeError: cart is undefined';
      const crashTrace = '    at pay (/home/runner/work/shop/shop/src/cart.ts:3:1)';
      const triage = {
        status: 'new',
        defect_type: 'to_investigate',
        comment: null,
        issue_url: null,
        assignee: null,
        rule: null,
        triaged_at: null,
        triaged_by: null,
      };
      const group = (id: string, fingerprint: string, message: string, frames: string, extra: Record<string, unknown>) => ({
        id,
        project_id: 'p1',
        fingerprint,
        title: message.split('\n')[0],
        message,
        frames,
        category: 'assertion',
        action: 'toHaveText',
        target: "locator('#total')",
        ...triage,
        first_seen_at: '2026-03-02T09:00:00.000Z',
        first_seen_run_id: 'r1',
        first_seen_job_id: 'j1',
        last_seen_at: '2026-03-03T09:00:00.000Z',
        last_seen_run_id: 'r2',
        last_seen_job_id: 'j1',
        occurrences: 2,
        affected_tests: 1,
        affected_branches: 2,
        created_at: at,
        updated_at: at,
        ...extra,
      });
      const frames = '["tests/cart.spec.ts:"]';
      await db
        .insertInto('failure_groups')
        .values([
          // The reporter's step error (no frames), untriaged, seen first.
          group('gS', reporterStep.fingerprint, statement, '[]', {}),
          // The reporter's run error cell, triaged second.
          group('gR', reporterRun.fingerprint, statement, frames, {
            status: 'known',
            defect_type: 'automation_bug',
            comment: 'second look',
            triaged_at: '2026-03-05T10:00:00.000Z',
            triaged_by: 'u2',
          }),
          // The JUnit import, triaged first; retention took two of its runs already.
          group('gJ', junit, junitMessage, frames, {
            status: 'known',
            defect_type: 'product_bug',
            comment: 'Totals round wrong',
            issue_url: 'https://jira.example.com/browse/SHOP-7',
            assignee: 'alice@example.com',
            rule: 'Totals',
            triaged_at: '2026-03-04T10:00:00.000Z',
            triaged_by: 'u1',
            first_seen_at: '2026-03-04T09:00:00.000Z',
            first_seen_run_id: 'r3',
            first_seen_job_id: 'j2',
            last_seen_at: '2026-03-04T09:00:00.000Z',
            last_seen_run_id: 'r3',
            last_seen_job_id: 'j2',
            occurrences: 3,
            affected_branches: 1,
          }),
          group('gC', normaliseFailure({ message: crash, trace: crashTrace }).fingerprint, crash, '["src/cart.ts:pay"]', {
            category: 'crash',
            action: 'TypeError',
            target: null,
            occurrences: 1,
            affected_branches: 1,
            first_seen_run_id: 'r4',
            last_seen_run_id: 'r4',
          }),
        ])
        .execute();
      const runs = [
        { run: 'r1', job: 'j1', test: 'totals', branch: 'main', at: '2026-03-02T09:00:00.000Z', via: 'reporter' },
        { run: 'r2', job: 'j1', test: 'totals', branch: 'feature', at: '2026-03-03T09:00:00.000Z', via: 'reporter' },
        { run: 'r3', job: 'j2', test: 'sums up', branch: 'main', at: '2026-03-04T09:00:00.000Z', via: 'junit' },
        { run: 'r4', job: 'j2', test: 'pays', branch: 'main', at: '2026-03-04T09:00:00.000Z', via: 'crash' },
      ];
      for (const [i, r] of runs.entries()) {
        const runGroup = { reporter: 'gR', junit: 'gJ', crash: 'gC' }[r.via];
        const stepGroup = { reporter: 'gS', junit: 'gJ', crash: 'gC' }[r.via];
        const row = { project_id: 'p1', job_id: r.job, test_key: `name:${r.test}`, branch: r.branch, at: r.at };
        await db
          .insertInto('test_runs')
          .values({
            id: r.run,
            project_id: 'p1',
            job_id: r.job,
            name: r.test,
            status: 'completed',
            verdict: 'failed',
            branch: r.branch,
            finished_at: r.at,
            created_at: r.at,
            failure_group_id: runGroup,
          })
          .execute();
        const message = { reporter: statement, junit: junitMessage, crash }[r.via];
        await db
          .insertInto('steps')
          .values({
            id: `s${i}`,
            run_id: r.run,
            depth: 1,
            position: 0,
            title: r.test,
            status: 'failed',
            error_message: message,
            failure_group_id: stepGroup,
            created_at: r.at,
          })
          .execute();
        // The reporter writes the run's `error` cell; JUnit the body on the step.
        const cell =
          r.via === 'reporter'
            ? { step_id: null, name: 'error', text: withStack(3000 + i) }
            : { step_id: `s${i}`, name: 'failure', text: r.via === 'junit' ? withStack(41234) : `${crash}\n${crashTrace}` };
        await db
          .insertInto('text_cells')
          .values({ id: `c${i}`, run_id: r.run, position: 0, media_type: 'text/plain', created_at: r.at, ...cell })
          .execute();
        const occurrences = [{ ...row, group_id: stepGroup, run_id: r.run, step_id: `s${i}` }];
        if (runGroup !== stepGroup) occurrences.push({ ...row, group_id: runGroup, run_id: r.run, step_id: null as unknown as string });
        await db.insertInto('failure_occurrences').values(occurrences).execute();
      }
      await db
        .insertInto('failure_group_tests')
        .values([
          { group_id: 'gS', test_key: 'name:totals' },
          { group_id: 'gR', test_key: 'name:totals' },
          { group_id: 'gJ', test_key: 'name:sums up' },
          { group_id: 'gC', test_key: 'name:pays' },
        ])
        .execute();
      await db
        .insertInto('failure_group_branches')
        .values([
          ...['gS', 'gR'].flatMap((group_id) => [
            { group_id, branch: 'main' },
            { group_id, branch: 'feature' },
          ]),
          { group_id: 'gJ', branch: 'main' },
          { group_id: 'gC', branch: 'main' },
        ])
        .execute();
      await db
        .insertInto('issue_links')
        .values({
          id: 'l1',
          project_id: 'p1',
          failure_group_id: 'gR',
          tracker: 'jira',
          key: 'SHOP-9',
          url: 'https://jira.example.com/browse/SHOP-9',
          title: 'Totals',
          created_at: at,
        })
        .execute();
      await db.updateTable('jobs').set({ incident_group_id: 'gR', incident_failed_runs: 2 }).where('id', '=', 'j1').execute();

      await migrate(db, MIGRATION_NAMES);

      const groups = await db.selectFrom('failure_groups').selectAll().orderBy('id').execute();
      assert.deepEqual(
        groups.map((g) => g.id),
        ['gC', 'gJ'],
      );
      const [crashGroup, merged] = groups;
      // Today's normaliser gives every one of its failures, from every path, the survivor's fingerprint.
      assert.equal(merged?.fingerprint, reporterRun.fingerprint);
      assert.equal(merged?.fingerprint, normaliseFailure({ message: junitMessage, trace: withStack(5173) }).fingerprint);
      assert.equal(crashGroup?.fingerprint, normaliseFailure({ message: crash, trace: crashTrace }).fingerprint);
      assert.deepEqual(
        [merged?.status, merged?.defect_type, merged?.comment, merged?.issue_url, merged?.assignee, merged?.rule, merged?.triaged_by],
        ['known', 'product_bug', 'Totals round wrong', 'https://jira.example.com/browse/SHOP-7', 'alice@example.com', 'Totals', 'u1'],
      );
      assert.equal(merged?.triaged_at, '2026-03-04T10:00:00.000Z');
      assert.equal(merged?.frames, frames);
      // 3 + 2 + 2 occurrences, less r1 and r2 counted by both reporter groups.
      assert.deepEqual(
        [merged?.occurrences, merged?.affected_tests, merged?.affected_branches, merged?.first_seen_run_id, merged?.last_seen_run_id].map(
          String,
        ),
        ['5', '2', '2', 'r1', 'r3'],
      );
      assert.equal(merged?.first_seen_at, '2026-03-02T09:00:00.000Z');
      const groupOf = async (table: 'steps' | 'test_runs', id: string) =>
        (await db.selectFrom(table).select('failure_group_id').where('id', '=', id).executeTakeFirstOrThrow()).failure_group_id;
      assert.deepEqual(await Promise.all(['r1', 'r2', 'r3', 'r4'].map((id) => groupOf('test_runs', id))), ['gJ', 'gJ', 'gJ', 'gC']);
      assert.deepEqual(await Promise.all(['s0', 's1', 's2', 's3'].map((id) => groupOf('steps', id))), ['gJ', 'gJ', 'gJ', 'gC']);
      const occurrences = await db.selectFrom('failure_occurrences').select(['group_id', 'run_id', 'step_id']).orderBy('run_id').execute();
      assert.deepEqual(occurrences, [
        { group_id: 'gJ', run_id: 'r1', step_id: 's0' },
        { group_id: 'gJ', run_id: 'r2', step_id: 's1' },
        { group_id: 'gJ', run_id: 'r3', step_id: 's2' },
        { group_id: 'gC', run_id: 'r4', step_id: 's3' },
      ]);
      const tests = await db.selectFrom('failure_group_tests').selectAll().orderBy('group_id').orderBy('test_key').execute();
      assert.deepEqual(tests, [
        { group_id: 'gC', test_key: 'name:pays' },
        { group_id: 'gJ', test_key: 'name:sums up' },
        { group_id: 'gJ', test_key: 'name:totals' },
      ]);
      const branches = await db.selectFrom('failure_group_branches').selectAll().where('group_id', '=', 'gJ').orderBy('branch').execute();
      assert.deepEqual(branches, [
        { group_id: 'gJ', branch: 'feature' },
        { group_id: 'gJ', branch: 'main' },
      ]);
      // The dashboard's rollup (migration 0025's triggers) followed the occurrences; the merged groups' rows went with them.
      const days = await db
        .selectFrom('group_days')
        .select(['group_id', 'day', 'occurrences'])
        .orderBy('group_id')
        .orderBy('day')
        .execute();
      assert.deepEqual(
        days.map((d) => [d.group_id, d.day, Number(d.occurrences)]),
        [
          ['gC', '2026-03-04', 1],
          ['gJ', '2026-03-02', 1],
          ['gJ', '2026-03-03', 1],
          ['gJ', '2026-03-04', 1],
        ],
      );
      const link = await db.selectFrom('issue_links').select('failure_group_id').where('id', '=', 'l1').executeTakeFirstOrThrow();
      assert.equal(link.failure_group_id, 'gJ');
      const job = await db
        .selectFrom('jobs')
        .select(['incident_group_id', 'incident_failed_runs'])
        .where('id', '=', 'j1')
        .executeTakeFirstOrThrow();
      assert.deepEqual([job.incident_group_id, Number(job.incident_failed_runs)], ['gJ', 2]);
      const audit = await db.selectFrom('audit_log').selectAll().where('action', '=', 'failure-group.merge').orderBy('target_id').execute();
      assert.deepEqual(
        audit.map((entry) => entry.target_id),
        ['gJ', 'gR', 'gS'],
      );
      const [into, ...from] = audit.map((entry) => JSON.parse(entry.details));
      assert.deepEqual(into.from.map((g: { id: string }) => g.id).sort(), ['gR', 'gS']);
      assert.equal(into.fingerprint, reporterRun.fingerprint);
      // The triage of the groups merged away is kept in the audit.
      const second = into.from.find((g: { id: string }) => g.id === 'gR');
      assert.deepEqual(
        [second.status, second.defectType, second.comment, second.triagedAt, second.triagedBy],
        ['known', 'automation_bug', 'second look', '2026-03-05T10:00:00.000Z', 'u2'],
      );
      assert.deepEqual(
        from.map((d) => d.into),
        ['gJ', 'gJ'],
      );

      // On a database with no two groups equal, it changes nothing.
      const before = JSON.stringify(await db.selectFrom('failure_groups').selectAll().orderBy('id').execute());
      await mine.up(db);
      assert.equal(JSON.stringify(await db.selectFrom('failure_groups').selectAll().orderBy('id').execute()), before);
      const entries = await db.selectFrom('audit_log').select('id').where('action', '=', 'failure-group.merge').execute();
      assert.equal(entries.length, 3);
    });

    test('runs past a batch of 500 all merge; a JUnit group with no twin takes the fingerprint a JUnit import now gives it', async () => {
      const at = '2026-04-01T08:00:00.000Z';
      await db
        .insertInto('projects')
        .values({ id: 'p2', key: 'BIG', name: 'Big', description: '', created_at: at, updated_at: at })
        .execute();
      await db.insertInto('jobs').values({ id: 'k1', project_id: 'p2', name: 'live', request: '{}', created_at: at }).execute();
      const other = statement.replace('#total', '#count');
      const step = normaliseFailure({ message: other });
      const run = normaliseFailure({ message: withStack(3000).replace(/#total/g, '#count') });
      const line = normaliseFailure({ message: junitMessage }).message;
      const loneBody = normaliseFailure({ message: junitMessage, trace: withStack(3000).replace(/#total/g, '#lone') });
      const loneOld = fingerprintOf(line, loneBody.frames, loneBody.signature.target);
      const group = (id: string, fingerprint: string, message: string, occurrences: number) => ({
        id,
        project_id: 'p2',
        fingerprint,
        title: message.split('\n')[0],
        message,
        frames: '[]',
        category: 'assertion',
        status: 'new',
        defect_type: 'to_investigate',
        first_seen_at: at,
        first_seen_run_id: 'b0000',
        last_seen_at: at,
        last_seen_run_id: 'b0000',
        occurrences,
        affected_tests: 1,
        affected_branches: 1,
        created_at: at,
        updated_at: at,
      });
      const N = 1100;
      await db
        .insertInto('failure_groups')
        .values([group('bS', step.fingerprint, other, N), group('bR', run.fingerprint, other, N), group('bL', loneOld, junitMessage, 1)])
        .execute();
      const ids = Array.from({ length: N + 1 }, (_, i) => `b${String(i).padStart(4, '0')}`);
      for (let from = 0; from < ids.length; from += 200) {
        const part = ids.slice(from, from + 200);
        const isLone = (id: string) => id === ids[N];
        await db
          .insertInto('test_runs')
          .values(
            part.map((id) => ({
              id,
              project_id: 'p2',
              job_id: 'k1',
              name: 'counts',
              status: 'completed',
              verdict: 'failed',
              branch: 'main',
              finished_at: at,
              created_at: at,
              failure_group_id: isLone(id) ? 'bL' : 'bR',
            })),
          )
          .execute();
        await db
          .insertInto('steps')
          .values(
            part.map((id) => ({
              id: `${id}s`,
              run_id: id,
              depth: 1,
              position: 0,
              title: 'counts',
              status: 'failed',
              error_message: isLone(id) ? junitMessage : other,
              failure_group_id: isLone(id) ? 'bL' : 'bS',
              created_at: at,
            })),
          )
          .execute();
        await db
          .insertInto('text_cells')
          .values(
            part.map((id) => ({
              id: `${id}c`,
              run_id: id,
              step_id: isLone(id) ? `${id}s` : null,
              position: 0,
              name: isLone(id) ? 'failure' : 'error',
              media_type: 'text/plain',
              text: isLone(id) ? withStack(3000).replace(/#total/g, '#lone') : withStack(3000).replace(/#total/g, '#count'),
              created_at: at,
            })),
          )
          .execute();
        const row = { project_id: 'p2', job_id: 'k1', test_key: 'name:counts', branch: 'main', at };
        await db
          .insertInto('failure_occurrences')
          .values(
            part.flatMap((id) =>
              isLone(id)
                ? [{ ...row, group_id: 'bL', run_id: id, step_id: `${id}s` }]
                : [
                    { ...row, group_id: 'bS', run_id: id, step_id: `${id}s` },
                    { ...row, group_id: 'bR', run_id: id, step_id: null },
                  ],
            ),
          )
          .execute();
      }
      await db
        .insertInto('failure_group_tests')
        .values(['bS', 'bR', 'bL'].map((group_id) => ({ group_id, test_key: 'name:counts' })))
        .execute();
      await db
        .insertInto('failure_group_branches')
        .values(['bS', 'bR', 'bL'].map((group_id) => ({ group_id, branch: 'main' })))
        .execute();

      await mine.up(db);

      const groups = await db.selectFrom('failure_groups').selectAll().where('project_id', '=', 'p2').orderBy('id').execute();
      assert.deepEqual(
        groups.map((g) => [g.id, g.fingerprint, Number(g.occurrences), Number(g.affected_tests)]),
        [
          ['bL', normaliseFailure({ message: junitMessage, trace: withStack(5173).replace(/#total/g, '#lone') }).fingerprint, 1, 1],
          // Neither triaged: the one first seen, then the smallest id (bR before bS).
          ['bR', run.fingerprint, N, 1],
        ],
      );
      assert.notEqual(loneOld, groups[0]?.fingerprint);
      const moved = await db
        .selectFrom('steps')
        .select((eb) => eb.fn.countAll().as('count'))
        .where('failure_group_id', '=', 'bR')
        .executeTakeFirstOrThrow();
      assert.equal(Number(moved.count), N);
      const occurrences = await db
        .selectFrom('failure_occurrences')
        .select((eb) => [eb.fn.countAll().as('count'), eb.fn.count('step_id').as('steps')])
        .where('group_id', '=', 'bR')
        .executeTakeFirstOrThrow();
      assert.deepEqual([Number(occurrences.count), Number(occurrences.steps)], [N, N]);
      const days = await db
        .selectFrom('group_days')
        .select(['group_id', 'occurrences'])
        .where('project_id', '=', 'p2')
        .orderBy('group_id')
        .execute();
      assert.deepEqual(
        days.map((d) => [d.group_id, Number(d.occurrences)]),
        [
          ['bL', 1],
          ['bR', N],
        ],
      );
    });
  });
}
