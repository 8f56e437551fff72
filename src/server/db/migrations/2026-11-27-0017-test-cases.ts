import { type Kysely, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// Test-case management (TCM-*, docs/test-management.md): a test's suite (folder path), its links
// to requirements and issues, its version with every superseded version kept, and the version of
// its test each run executed.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('tests').addColumn('suite', 'text').execute();
  // JSON array of { kind, key?, url?, title? }, as the test answer shows them.
  await db.schema
    .alterTable('tests')
    .addColumn('links', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute();
  await db.schema
    .alterTable('tests')
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
  // When and by whom the current version was made; the creation until the first edit.
  await db.schema
    .alterTable('tests')
    .addColumn('updated_at', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await db.schema.alterTable('tests').addColumn('updated_by', 'text').execute();
  await sql`update tests set updated_at = created_at, updated_by = created_by`.execute(db);
  await db.schema.createIndex('tests_suite').on('tests').columns(['project_id', 'suite']).execute();

  // Every superseded version of a test, as it was while current; the current one is the test itself.
  await db.schema
    .createTable('test_versions')
    .addColumn('test_id', 'text', (c) => c.notNull().references('tests.id').onDelete('cascade'))
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('steps', 'text', (c) => c.notNull())
    .addColumn('tags', 'text', (c) => c.notNull())
    .addColumn('suite', 'text')
    .addColumn('links', 'text', (c) => c.notNull())
    .addColumn('source_format', 'text', (c) => c.notNull())
    .addColumn('source', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .addPrimaryKeyConstraint('test_versions_pk', ['test_id', 'version'])
    .execute();

  // The links of every test, one row each, for the filters and the traceability view. `ref` is the
  // link's identity within its kind: the key in lower case, or the URL when it has no key;
  // `link_id` a short hash of kind and ref, and `sort_key` the ref's first 200 characters, so a page
  // of distinct links is keyed by (kind, sort_key, link_id) and its cursor stays short.
  await db.schema
    .createTable('test_links')
    .addColumn('test_id', 'text', (c) => c.notNull().references('tests.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull()) // requirement | issue
    .addColumn('link_id', 'text', (c) => c.notNull())
    .addColumn('sort_key', 'text', (c) => c.notNull())
    .addColumn('ref', 'text', (c) => c.notNull())
    .addColumn('key', 'text')
    .addColumn('url', 'text')
    .addColumn('title', 'text')
    .addPrimaryKeyConstraint('test_links_pk', ['test_id', 'link_id'])
    .execute();
  await db.schema.createIndex('test_links_project_link').on('test_links').columns(['project_id', 'kind', 'sort_key', 'link_id']).execute();
  await db.schema.createIndex('test_links_project_ref').on('test_links').columns(['project_id', 'ref']).execute();
  await db.schema.createIndex('test_links_project_url').on('test_links').columns(['project_id', 'url']).execute();

  // The version of its test a run executed; runs made before versions executed version 1.
  await db.schema.alterTable('test_runs').addColumn('test_version', 'integer').execute();
  await sql`update test_runs set test_version = 1 where test_id is not null`.execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('test_runs').dropColumn('test_version').execute();
  await db.schema.dropTable('test_links').execute();
  await db.schema.dropTable('test_versions').execute();
  await db.schema.dropIndex('tests_suite').execute();
  await db.schema.alterTable('tests').dropColumn('updated_by').execute();
  await db.schema.alterTable('tests').dropColumn('updated_at').execute();
  await db.schema.alterTable('tests').dropColumn('version').execute();
  await db.schema.alterTable('tests').dropColumn('links').execute();
  await db.schema.alterTable('tests').dropColumn('suite').execute();
}
