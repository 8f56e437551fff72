import { UpdateTestBody } from '../../../api/v1/tests.ts';
import type { ServiceContext } from '../../context.ts';
import type { Page, PageRequest } from '../../db/pagination.ts';
import {
  findTest,
  findTestVersion,
  insertTestVersion,
  replaceTestLinks,
  type TestContentUpdate,
  testVersionsBelow,
  updateTestContent,
} from '../../db/repositories/tests.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import type { TestsTable, TestVersionsTable } from '../../db/types.ts';
import { AppError, found, invalid } from '../../errors.ts';
import { compileValidator } from '../../validation.ts';
import { auditBy } from '../access/audit.ts';
import type { UserActor } from '../actor.ts';
import { checkedLinks, checkedSuite, linkRows, type TestLink } from './content.ts';
import { featureToTest } from './gherkin.ts';
import { getTest, storedSteps, type TestWithHealth } from './tests.ts';

// A test's edits in versions (TCM-2, docs/test-management.md): each edit that changes the content
// keeps the version it replaces; the current version is the test itself.

const validateUpdateTestBody = compileValidator(UpdateTestBody);

/** What an edit asks: a JSON body (validated here, as the route also takes text/x-gherkin), or a feature text. */
export type TestEdit = { kind: 'json'; body: unknown } | { kind: 'gherkin'; text: string; version?: number };

/** The content fields an edit compares and stores, as stored. */
const CONTENT_FIELDS = ['name', 'description', 'steps', 'tags', 'suite', 'links', 'source_format', 'source'] as const;
type Content = Pick<TestsTable, (typeof CONTENT_FIELDS)[number]>;

/** A test's content fields, as an edit starts from them and a version keeps them. */
const contentOf = (test: TestsTable): Content => Object.fromEntries(CONTENT_FIELDS.map((field) => [field, test[field]])) as Content;

/** The content an edit makes of a test; problems are 400s at their field. */
function editedContent(test: TestsTable, edit: TestEdit): { content: Content; version: number | undefined; links?: TestLink[] } {
  const content = contentOf(test);
  const fromFeature = (text: string, pointer: string) => {
    const feature = featureToTest(text, pointer);
    content.name = feature.name;
    content.description = feature.description;
    content.tags = JSON.stringify(feature.tags);
    content.steps = storedSteps(feature.steps);
    content.source_format = 'gherkin';
    content.source = text;
  };
  if (edit.kind === 'gherkin') {
    fromFeature(edit.text, '/body');
    return { content, version: edit.version };
  }
  const body = validateUpdateTestBody(edit.body);
  if (body.gherkin !== undefined) {
    if (body.steps !== undefined) throw invalid('/body/steps', 'cannot be combined with gherkin; give one of them');
    for (const field of ['name', 'description', 'tags'] as const) {
      if (body[field] !== undefined) throw invalid(`/body/${field}`, 'comes from the Gherkin text; leave it out');
    }
    fromFeature(body.gherkin, '/body/gherkin');
  } else {
    if (test.source_format === 'gherkin') {
      for (const field of ['name', 'description', 'tags'] as const) {
        if (body[field] !== undefined) {
          throw invalid(
            `/body/${field}`,
            'comes from the Gherkin text of this test; change the text (gherkin), or give steps to make it a JSON test',
          );
        }
      }
    }
    if (body.steps !== undefined) {
      content.steps = storedSteps(body.steps);
      content.source_format = 'json';
      content.source = null;
    }
    if (body.name !== undefined) content.name = body.name;
    if (body.description !== undefined) content.description = body.description;
    if (body.tags !== undefined) content.tags = JSON.stringify(body.tags);
  }
  if (body.suite !== undefined) content.suite = checkedSuite(body.suite, '/body/suite');
  const links = checkedLinks(body.links, '/body/links');
  if (links !== undefined) content.links = JSON.stringify(links);
  return { content, version: body.version, ...(links !== undefined ? { links } : {}) };
}

/**
 * Edits a test (TCM-2): an edit that changes its content stores the version it replaces and bumps
 * `version`; one that changes nothing answers the test as it is. The new version is written only
 * while the test is still at the version read (a concurrent edit answers 409), and audited as
 * `test.update` in the same transaction.
 */
export async function updateTest(ctx: ServiceContext, testId: string, edit: TestEdit, actor: UserActor): Promise<TestWithHealth> {
  const test = found(await findTest(ctx.db, testId), 'The test');
  const { content, version, links } = editedContent(test, edit);
  const conflict = () =>
    new AppError('STATE_CONFLICT', `The test was edited meanwhile: it is at version ${test.version}; read it again and redo the edit.`);
  if (version !== undefined && version !== Number(test.version)) throw conflict();
  const fields = CONTENT_FIELDS.filter((field) => content[field] !== test[field]);
  if (fields.length === 0) return getTest(ctx, testId);
  const from = Number(test.version);
  const now = ctx.clock().toISOString();
  const update: TestContentUpdate = { ...content, version: from + 1, updated_at: now, updated_by: actor.userId };
  await inTransaction(ctx.db, async (trx) => {
    // The update first: a concurrent edit of the same version waits on the row, then finds it moved on.
    if (!(await updateTestContent(trx, testId, from, update))) throw conflict();
    await insertTestVersion(trx, versionOfTest(test));
    if (links !== undefined) await replaceTestLinks(trx, testId, linkRows(testId, test.project_id, links));
    await auditBy(ctx, trx, actor, {
      action: 'test.update',
      targetType: 'test',
      targetId: testId,
      details: { projectId: test.project_id, fromVersion: from, toVersion: from + 1, fields: fields.map(fieldName) },
    });
  });
  return getTest(ctx, testId);
}

const fieldName = (field: (typeof CONTENT_FIELDS)[number]) => (field === 'source_format' ? 'sourceFormat' : field);

/** A test's current content as a version row. */
const versionOfTest = (test: TestsTable): TestVersionsTable => ({
  test_id: test.id,
  version: Number(test.version),
  ...contentOf(test),
  created_at: test.updated_at,
  created_by: test.updated_by,
});

/** A version of a test, with whether it is the current one. */
export interface TestVersionView {
  row: TestVersionsTable;
  current: boolean;
}

/**
 * A test's versions, newest first (TCM-2): the current one (the test itself), then the superseded
 * ones. Versions run 1..current without gaps, so the cursor is the last version answered.
 */
export async function listTestVersions(ctx: ServiceContext, testId: string, page: PageRequest): Promise<Page<TestVersionView>> {
  const test = found(await findTest(ctx.db, testId), 'The test');
  const current = Number(test.version);
  let below = current;
  const items: TestVersionView[] = [];
  if (page.cursor === undefined) {
    items.push({ row: versionOfTest(test), current: true });
  } else {
    below = /^[1-9]\d{0,9}$/.test(page.cursor) ? Number(page.cursor) : Number.NaN;
    if (!(below <= current)) {
      throw new AppError('INVALID_CURSOR', '/query/cursor: not a cursor this list issued', {
        errors: [{ pointer: '/query/cursor', message: 'is not a cursor this list issued' }],
      });
    }
  }
  const rows = await testVersionsBelow(ctx.db, testId, below, page.limit - items.length);
  for (const row of rows) items.push({ row, current: false });
  const last = items[items.length - 1];
  const lastVersion = last ? Number(last.row.version) : 1;
  return { items, nextCursor: lastVersion > 1 && items.length === page.limit ? String(lastVersion) : null };
}

/** One version of a test; a version it never had is a 404. */
export async function getTestVersion(ctx: ServiceContext, testId: string, version: number): Promise<TestVersionView> {
  const test = found(await findTest(ctx.db, testId), 'The test');
  if (version === Number(test.version)) return { row: versionOfTest(test), current: true };
  return { row: found(await findTestVersion(ctx.db, testId, version), 'The test version'), current: false };
}
