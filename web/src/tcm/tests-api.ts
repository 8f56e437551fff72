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

/** Every test of a project the filter keeps, page after page (the API pages by 200). */
export async function loadTests(client: AttestClient, projectId: string, filter: TestFilter = {}): Promise<TestDefinition[]> {
  const tests: TestDefinition[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.call(v1.tests.listTests, { query: { projectId, limit: 200, ...(cursor ? { cursor } : {}) } });
    tests.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return tests.filter((test) => keeps(test, filter));
}

/** The suite a test is filed under ('' for none). */
export const suiteOf = (test: TestDefinition): string => (test as { suite?: string | null }).suite ?? '';

/** Whether a test matches a filter as the API's filter would. */
function keeps(test: TestDefinition, { suite, tag, q }: TestFilter): boolean {
  if (suite && suiteOf(test) !== suite && !suiteOf(test).startsWith(`${suite}/`)) return false;
  if (tag && !test.tags.includes(tag)) return false;
  if (q && !test.name.toLowerCase().includes(q.toLowerCase())) return false;
  return true;
}
