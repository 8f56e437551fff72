import { randomUUID } from 'node:crypto';
import { NAME_MAX } from '../../../api/common.ts';
import { FLAKY_COST_DAYS_DEFAULT } from '../../../api/v1/flaky-cost.ts';
import { CreateTestBody } from '../../../api/v1/tests.ts';
import type { ServiceContext } from '../../context.ts';
import type { Page, PageRequest } from '../../db/pagination.ts';
import { listTestsByHealth, type TestListFilter } from '../../db/repositories/health.ts';
import { decisiveVerdictBefore, latestRunsOfTest } from '../../db/repositories/runs.ts';
import { findTest, insertTest, insertTestsByFullName, replaceTestLinks, testsByFullName } from '../../db/repositories/tests.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import type { Executor, TestRunsTable, TestsTable } from '../../db/types.ts';
import { found, invalid } from '../../errors.ts';
import { compileValidator } from '../../validation.ts';
import { auditBy } from '../access/audit.ts';
import type { UserActor } from '../actor.ts';
import { healthOnBranch, healthViewsOf, type TestHealthView } from '../triage/health.ts';
import { countOutcomes, foldOutcomes, type OutcomeCounts, type TestOutcome } from '../triage/outcomes.ts';
import { testsByFlakyCost } from '../triage/tests-by-cost.ts';
import { checkedLinks, checkedSuite, linkRows, type TestLink } from './content.ts';
import { type FeatureDefinition, featureToTest } from './gherkin.ts';

/** A test definition ready to store, with the input it came from. */
export interface NewTest extends FeatureDefinition {
  sourceFormat: TestsTable['source_format'];
  source: string | null;
  suite: string | null;
  links: TestLink[];
}

// The app validates JSON bodies itself only on routes that take JSON alone; this one also takes
// text/x-gherkin, so its JSON body is validated here, with the same rules and error shape.
const validateCreateTestBody = compileValidator(CreateTestBody);

/** The test a Gherkin feature text describes; problems are 400s at `pointer`. */
export function testFromGherkin(text: string, pointer: string, suite: string | null = null, links: TestLink[] = []): NewTest {
  return { ...featureToTest(text, pointer), sourceFormat: 'gherkin', source: text, suite, links };
}

/**
 * The test a JSON body describes: field by field (`name` + `steps`), or from its `gherkin` text.
 * Exactly one of `steps` and `gherkin` must be given; with `gherkin`, everything else but the
 * project comes from the feature, so giving it too is a 400 rather than a silent choice.
 */
export function testFromJsonBody(raw: unknown): NewTest {
  const body = validateCreateTestBody(raw);
  const suite = checkedSuite(body.suite ?? null, '/body/suite');
  const links = checkedLinks(body.links ?? [], '/body/links');
  if (body.gherkin !== undefined) {
    if (body.steps !== undefined) throw invalid('/body/steps', 'cannot be combined with gherkin; give one of them');
    for (const field of ['name', 'description', 'tags'] as const) {
      if (body[field] !== undefined) throw invalid(`/body/${field}`, 'comes from the Gherkin text; leave it out');
    }
    return testFromGherkin(body.gherkin, '/body/gherkin', suite, links);
  }
  if (body.steps === undefined) throw invalid('/body/steps', 'is required (or give a Gherkin feature in gherkin)');
  if (body.name === undefined) throw invalid('/body/name', 'is required with steps');
  return {
    name: body.name,
    description: body.description ?? '',
    steps: body.steps,
    tags: body.tags ?? [],
    sourceFormat: 'json',
    source: null,
    suite,
    links,
  };
}

/** Steps as stored: `data` kept only when it says something. */
export const storedSteps = (steps: readonly { action: string; data?: string; expected: string }[]) =>
  JSON.stringify(steps.map(({ action, data, expected }) => (data ? { action, data, expected } : { action, expected })));

/** Creates a test at version 1 (TCM-1), with its links indexed; audited as `test.create`. */
export async function createTest(ctx: ServiceContext, projectId: string, test: NewTest, actor: UserActor): Promise<TestsTable> {
  const now = ctx.clock().toISOString();
  const row: TestsTable = {
    id: randomUUID(),
    project_id: projectId,
    name: test.name,
    description: test.description,
    steps: storedSteps(test.steps),
    tags: JSON.stringify(test.tags),
    source_format: test.sourceFormat,
    source: test.source,
    full_name: null,
    created_at: now,
    created_by: actor.userId,
    suite: test.suite,
    links: JSON.stringify(test.links),
    version: 1,
    updated_at: now,
    updated_by: actor.userId,
    flaky_milli: 0,
  };
  await inTransaction(ctx.db, async (trx) => {
    await insertTest(trx, row);
    await replaceTestLinks(trx, row.id, linkRows(row.id, projectId, test.links));
    await auditBy(ctx, trx, actor, {
      action: 'test.create',
      targetType: 'test',
      targetId: row.id,
      details: { projectId, name: row.name, sourceFormat: row.source_format },
    });
  });
  return row;
}

/** A test with its health, as every test answer shows it. */
export interface TestWithHealth {
  test: TestsTable;
  health: TestHealthView;
}

/** A test just created: stable, with nothing considered and no quarantine. */
export const NEW_TEST_HEALTH: TestHealthView = {
  state: 'stable',
  flakyScore: 0,
  runsConsidered: 0,
  quarantine: null,
  lifecycle: { state: 'active', fixAttempt: null, disabled: null },
  monitor: null,
  branch: null,
  evidence: null,
};

/** A test and its health: on the default branch as stored, or on `branch` when asked (TRIAGE-11). */
export async function getTest(ctx: ServiceContext, testId: string, branch?: string): Promise<TestWithHealth> {
  const test = found(await findTest(ctx.db, testId), 'The test');
  if (branch !== undefined) return { test, health: await healthOnBranch(ctx, test, branch) };
  return { test, health: (await healthViewsOf(ctx, [testId])).get(testId) as TestHealthView };
}

/** A test's latest runs, newest first, each with whether its verdict flipped, and their counts. */
export interface TestHistory {
  testId: string;
  runs: { run: TestRunsTable; flaky: boolean }[];
  summary: { runs: number; passed: number; failed: number; broken: number; skipped: number; flakyFlips: number };
  /** The same runs folded per job (TRIAGE-5), newest first, each with its attempts' run ids, first to final. */
  outcomes: { outcome: TestOutcome; runIds: string[] }[];
  outcomeSummary: OutcomeCounts & { passRate: number | null };
  health: TestHealthView;
}

const decisive = (run: TestRunsTable): 'passed' | 'failed' | undefined =>
  run.status === 'completed' && (run.verdict === 'passed' || run.verdict === 'failed') ? run.verdict : undefined;

/**
 * The test's latest `limit` runs (SPEC-2.1). A run is flaky when it passed or failed and the next
 * older completed run that passed or failed had the other verdict; broken and skipped runs say
 * nothing about flakiness and are stepped over. The run compared with may be older than the
 * window, so it is read once, below the window's oldest run.
 */
export async function getTestHistory(ctx: ServiceContext, testId: string, limit: number): Promise<TestHistory> {
  found(await findTest(ctx.db, testId), 'The test');
  const rows = await latestRunsOfTest(ctx.db, testId, limit);
  const oldest = rows[rows.length - 1];
  let older = oldest ? await decisiveVerdictBefore(ctx.db, testId, { createdAt: oldest.created_at, id: oldest.id }) : undefined;
  const runs: TestHistory['runs'] = new Array(rows.length);
  // Oldest to newest, carrying the verdict of the last decisive run seen.
  for (let i = rows.length - 1; i >= 0; i--) {
    const run = rows[i] as TestRunsTable;
    const verdict = decisive(run);
    runs[i] = { run, flaky: verdict !== undefined && older !== undefined && verdict !== older };
    if (verdict !== undefined) older = verdict;
  }
  const summary = { runs: rows.length, passed: 0, failed: 0, broken: 0, skipped: 0, flakyFlips: 0 };
  for (const { run, flaky } of runs) {
    if (run.verdict) summary[run.verdict]++;
    if (flaky) summary.flakyFlips++;
  }
  const outcomes = foldOutcomes(rows).map((outcome) => ({
    outcome,
    runIds: rows
      .filter((run) =>
        outcome.jobId === null ? run.id === outcome.runId : run.job_id === outcome.jobId && run.device_id === outcome.deviceId,
      )
      .sort((a, b) => a.attempt - b.attempt || (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : 1))
      .map((run) => run.id),
  }));
  const counts = countOutcomes(outcomes.map(({ outcome }) => outcome));
  const decided = counts.passed + counts.flaky + counts.failed + counts.broken;
  const passRate = decided === 0 ? null : Math.round(((counts.passed + counts.flaky) / decided) * 10_000) / 10_000;
  const health = (await healthViewsOf(ctx, [testId])).get(testId) as TestHealthView;
  return { testId, runs, summary, outcomes, outcomeSummary: { ...counts, passRate }, health };
}

/** A project's tests, newest or flakiest first, filtered by health, each with its health. */
export async function listTests(
  ctx: ServiceContext,
  projectId: string,
  filter: Omit<TestListFilter, 'now'> & { days?: number },
  page: PageRequest,
): Promise<Page<TestWithHealth>> {
  const { sort, days = FLAKY_COST_DAYS_DEFAULT, ...rest } = filter;
  const asked = { ...rest, now: ctx.clock().toISOString() };
  const rows =
    sort === 'flakyCost'
      ? await testsByFlakyCost(ctx, projectId, { ...asked, sort }, days, page)
      : await listTestsByHealth(ctx.db, projectId, { ...asked, sort }, page);
  const health = await healthViewsOf(
    ctx,
    rows.items.map((row) => row.id),
  );
  return { items: rows.items.map((test) => ({ test, health: health.get(test.id) as TestHealthView })), nextCursor: rows.nextCursor };
}

/** A test's display name from its full name: the full name, cut to the name limit with an ellipsis. */
const displayName = (fullName: string) => (fullName.length > NAME_MAX ? `${fullName.slice(0, NAME_MAX - 1)}…` : fullName);

/**
 * The ids of the project's tests with these full names, creating those it lacks (IMP-3): imports
 * and reporters name tests by the full name their framework gives them, so each is created once
 * per project and later imports build its history. A concurrent creator of the same name wins
 * harmlessly: the insert skips names that exist by then, and the ids are read afterwards.
 */
export async function ensureTestsByFullName(
  executor: Executor,
  input: {
    projectId: string;
    fullNames: readonly string[];
    actorId: string | null;
    now: string;
    /** The suite of each test a report names (TCM-6), by full name: given to the tests created, never to existing ones. */
    suites?: ReadonlyMap<string, string | null>;
  },
): Promise<{ ids: Map<string, string>; versions: Map<string, number>; created: number }> {
  const wanted = [...new Set(input.fullNames)];
  const known = await testsByFullName(executor, input.projectId, wanted);
  const missing = wanted.filter((name) => !known.has(name));
  if (missing.length === 0) return { ...idsAndVersions(known), created: 0 };
  await insertTestsByFullName(
    executor,
    missing.map((fullName) => ({
      id: randomUUID(),
      project_id: input.projectId,
      name: displayName(fullName),
      description: '',
      steps: '[]',
      tags: '[]',
      source_format: 'json' as const,
      source: null,
      full_name: fullName,
      created_at: input.now,
      created_by: input.actorId,
      suite: input.suites?.get(fullName) ?? null,
      links: '[]',
      version: 1,
      updated_at: input.now,
      updated_by: input.actorId,
      flaky_milli: 0,
    })),
  );
  return { ...idsAndVersions(await testsByFullName(executor, input.projectId, wanted)), created: missing.length };
}

/** Tests by full name as `ensureTestsByFullName` answers them: ids by full name, versions by id. */
function idsAndVersions(tests: ReadonlyMap<string, { id: string; version: number }>) {
  const ids = new Map<string, string>();
  const versions = new Map<string, number>();
  for (const [fullName, { id, version }] of tests) {
    ids.set(fullName, id);
    versions.set(id, version);
  }
  return { ids, versions };
}
