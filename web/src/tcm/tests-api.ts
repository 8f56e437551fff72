import type { Static } from 'typebox';
import { type AttestClient, v1 } from '../../../src/client/index.ts';

export type TestDefinition = Static<typeof v1.tests.TestDefinition>;

/** Which of a project's tests: by suite (a folder and everything under it), by tag, by words, by link. */
export interface TestFilter {
  suite?: string;
  tag?: string;
  q?: string;
  link?: string;
}

/** Every test of a project the filter keeps (the API filters), page after page. */
export async function loadTests(client: AttestClient, projectId: string, filter: TestFilter = {}): Promise<TestDefinition[]> {
  const tests: TestDefinition[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.call(v1.tests.listTests, { query: { projectId, limit: 200, ...filter, ...(cursor ? { cursor } : {}) } });
    tests.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return tests;
}

/** The suite a test is filed under ('' for none). */
export const suiteOf = (test: { suite: string | null }): string => test.suite ?? '';
