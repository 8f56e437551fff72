import { ApiError, type AttestClient, v1 } from '../../../src/client/index.ts';
import { ConfirmDeletion, type Freed, useMeasuredDeletion } from '../deletion.tsx';
import type { TestDefinition } from './tests-api.ts';
import '../manage.css';

/** Runs counted before asking: 200 a page, at most this many pages ("1,000 or more" past it). */
const COUNT_PAGES = 5;

/** How many runs of the test exist, counted through `GET /testmgmt/testruns?testId=` (capped). */
async function countRuns(client: AttestClient, projectId: string, testId: string): Promise<{ runs: number; more: boolean }> {
  let runs = 0;
  let cursor: string | undefined;
  for (let page = 0; page < COUNT_PAGES; page++) {
    const answer = await client.call(v1.runs.listRuns, { query: { projectId, testId, limit: 200, cursor } });
    runs += answer.items.length;
    cursor = answer.nextCursor ?? undefined;
    if (!cursor) return { runs, more: false };
  }
  return { runs, more: true };
}

const runsWord = (count: { runs: number; more: boolean }) =>
  `${count.runs.toLocaleString('en')}${count.more ? ' or more' : ''} run${count.runs === 1 && !count.more ? '' : 's'}`;

/**
 * "Delete test" (manager, UI-12): asked first, saying how many runs the test has and what the
 * project holds. A test with runs is refused (409) unless its runs go with it (`cascade=true`), so
 * the confirmation offers exactly that; a run that appeared meanwhile makes the API refuse, and its
 * problem is shown with the offer. Once deleted, the page says what it freed.
 */
export function DeleteTest({ test, onDeleted }: { test: TestDefinition; onDeleted: (freed: Freed) => void }) {
  const deletion = useMeasuredDeletion(test.projectId, (client) => countRuns(client, test.projectId, test.id));
  const { action, loaded: count } = deletion;
  // Refused because runs exist that were not counted: offer them too.
  const refused = action.error instanceof ApiError && action.error.status === 409;
  const cascade = refused || (count !== undefined && count.runs > 0);
  const confirm = async () => {
    const freed = await deletion.confirm(cascade ? `the test ${test.name} and its runs` : `the test ${test.name}`, (client) =>
      client.call(v1.tests.deleteTest, { params: { testId: test.id }, query: cascade ? { cascade: true } : {} }),
    );
    if (freed) onDeleted(freed);
  };
  return (
    <ConfirmDeletion
      deletion={deletion}
      ask="Delete test"
      label={cascade ? `Delete ${test.name} and its runs` : `Delete ${test.name}`}
      disabled={count === undefined && !refused}
      onConfirm={confirm}
      testId="delete-test"
    >
      Delete the test <strong>{test.name}</strong> with its versions and links
      {count === undefined ? '' : count.runs > 0 ? `, and its ${runsWord(count)} with everything they hold` : ' (it has no runs)'}?
    </ConfirmDeletion>
  );
}
