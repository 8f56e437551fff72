import type { Static } from 'typebox';
import type { SuiteTree, TraceLink } from '../../../api/v1/tests.ts';
import type { ServiceContext } from '../../context.ts';
import type { Page, PageRequest } from '../../db/pagination.ts';
import { latestCompletedRuns, listDistinctLinks, testsOfLinks } from '../../db/repositories/test-links.ts';
import { suiteCounts } from '../../db/repositories/tests.ts';
import type { TestLinksTable } from '../../db/types.ts';

// A project's tests seen as a whole (TCM-5, TCM-4): the suite tree and the traceability of links.

type SuiteNode = Static<typeof SuiteTree>['items'][number];

/** Orders paths segment by segment, so a folder comes right before its subfolders. */
function bySegments(a: string[], b: string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i] as string;
    const y = b[i] as string;
    if (x !== y) return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** The suite tree: every folder holding a test or above one, with its own and total counts. */
export async function suiteTree(ctx: ServiceContext, projectId: string): Promise<Static<typeof SuiteTree>> {
  const counts = await suiteCounts(ctx.db, projectId);
  const nodes = new Map<string, SuiteNode & { segments: string[] }>();
  let unsorted = 0;
  let total = 0;
  for (const { suite, tests } of counts) {
    total += tests;
    if (suite === null) {
      unsorted += tests;
      continue;
    }
    const segments = suite.split('/');
    for (let depth = 1; depth <= segments.length; depth++) {
      const path = segments.slice(0, depth).join('/');
      let node = nodes.get(path);
      if (!node) {
        node = {
          path,
          name: segments[depth - 1] as string,
          parent: depth === 1 ? null : segments.slice(0, depth - 1).join('/'),
          depth,
          tests: 0,
          total: 0,
          segments: segments.slice(0, depth),
        };
        nodes.set(path, node);
      }
      node.total += tests;
      if (depth === segments.length) node.tests += tests;
    }
  }
  const items = [...nodes.values()].sort((a, b) => bySegments(a.segments, b.segments)).map(({ segments: _, ...node }) => node);
  return { items, unsorted, total };
}

/**
 * Traceability: a page of the project's distinct links, each with its tests and their latest
 * verdicts (the latest completed run of each, by finish time), counted.
 */
export async function traceLinks(
  ctx: ServiceContext,
  projectId: string,
  filter: { kind?: TestLinksTable['kind']; q?: string },
  page: PageRequest,
): Promise<Page<Static<typeof TraceLink>>> {
  const links = await listDistinctLinks(ctx.db, projectId, filter, page);
  const tests = await testsOfLinks(
    ctx.db,
    projectId,
    links.items.map((link) => link.link_id),
  );
  const latest = await latestCompletedRuns(ctx.db, [...new Set(tests.map((t) => t.test_id))]);
  const items = links.items.map((link) => {
    const summary = { tests: 0, passed: 0, failed: 0, broken: 0, skipped: 0, notRun: 0 };
    const own = tests
      .filter((t) => t.link_id === link.link_id)
      .map((t) => {
        const run = latest.get(t.test_id);
        summary.tests++;
        if (run?.verdict) summary[run.verdict]++;
        else summary.notRun++;
        return {
          testId: t.test_id,
          name: t.name,
          suite: t.suite,
          latestVerdict: run?.verdict ?? null,
          latestRunId: run?.id ?? null,
          latestRunFinishedAt: run?.finished_at ?? null,
        };
      });
    return { kind: link.kind, key: link.key, url: link.url, title: link.title, tests: own, summary };
  });
  return { items, nextCursor: links.nextCursor };
}
