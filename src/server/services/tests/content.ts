import { createHash } from 'node:crypto';
import type { Static } from 'typebox';
import { SUITE_MAX, type TestLink as TestLinkSchema } from '../../../api/v1/tests.ts';
import type { TestLinksTable } from '../../db/types.ts';
import { invalid } from '../../errors.ts';

// The parts of a test's content that are more than their schema (TCM-1, TCM-4,
// docs/test-management.md): suite paths and links, checked and normalised the same way by every
// writer (create, edit, imports).

export type TestLink = Static<typeof TestLinkSchema>;

/**
 * A suite path as stored: each `/`-separated segment trimmed; an empty segment or a path over
 * SUITE_MAX characters is a 400 at `pointer`. Null stays null (no folder); undefined (left out) too.
 */
export function checkedSuite<T extends string | null | undefined>(raw: T, pointer: string): T {
  if (raw === null || raw === undefined) return raw;
  const segments = (raw as string).split('/').map((segment) => segment.trim());
  if (segments.some((segment) => segment === '')) {
    throw invalid(pointer, 'holds an empty folder name: segments are separated by a single "/" and none may be blank');
  }
  const path = segments.join('/');
  if (path.length > SUITE_MAX) throw invalid(pointer, `is longer than ${SUITE_MAX} characters`);
  return path as T;
}

/**
 * A suite path from a report's suite names (imports, IMP): each name split on `/`, segments
 * trimmed and empty ones dropped, cut at a segment boundary to fit SUITE_MAX; null when nothing is left.
 */
export function suiteOfNames(names: readonly string[] | undefined): string | null {
  if (!names) return null;
  const segments = names
    .flatMap((name) => name.split('/'))
    .map((segment) => segment.trim().replace(/[\r\n]+/g, ' '))
    .filter(Boolean);
  let path = '';
  for (const segment of segments) {
    const next = path === '' ? segment : `${path}/${segment}`;
    if (next.length > SUITE_MAX) break;
    path = next;
  }
  return path === '' ? null : path;
}

/** The suite a new test of each full name gets (TCM-6): where the first case of that name is filed. */
export function suitesOfCases(cases: readonly { fullName: string; suite?: string[] }[]): Map<string, string | null> {
  const suites = new Map<string, string | null>();
  for (const testCase of cases) {
    if (!suites.has(testCase.fullName)) suites.set(testCase.fullName, suiteOfNames(testCase.suite));
  }
  return suites;
}

/** A link's identity within its kind: its key in lower case, or its URL when it has none. */
export const linkRef = (link: TestLink): string => (link.key !== undefined ? link.key.toLowerCase() : (link.url as string));

/**
 * Links as stored: keys and titles trimmed, each with a key or a URL, none twice (by kind and
 * identity); problems are 400s at `pointer`/<index>.
 */
export function checkedLinks<T extends readonly TestLink[] | undefined>(links: T, pointer: string): T {
  if (links === undefined) return links;
  const seen = new Set<string>();
  const out = links.map((raw, i) => {
    const link: TestLink = { kind: raw.kind };
    const key = raw.key?.trim();
    if (raw.key !== undefined && key === '') throw invalid(`${pointer}/${i}/key`, 'is blank');
    if (key !== undefined) link.key = key;
    if (raw.url !== undefined) link.url = raw.url;
    const title = raw.title?.trim();
    if (title) link.title = title;
    if (link.key === undefined && link.url === undefined) throw invalid(`${pointer}/${i}`, 'needs a key or a url');
    const identity = `${link.kind}\n${linkRef(link)}`;
    if (seen.has(identity)) throw invalid(`${pointer}/${i}`, 'is already linked: a test holds each link once');
    seen.add(identity);
    return link;
  });
  return out as unknown as T;
}

/** The index rows of a test's links. */
export function linkRows(testId: string, projectId: string, links: readonly TestLink[]): TestLinksTable[] {
  return links.map((link) => {
    const ref = linkRef(link);
    return {
      test_id: testId,
      project_id: projectId,
      kind: link.kind,
      link_id: createHash('sha256').update(`${link.kind}\n${ref}`).digest('hex').slice(0, 32),
      sort_key: ref.slice(0, 200),
      ref,
      key: link.key ?? null,
      url: link.url ?? null,
      title: link.title ?? null,
    };
  });
}
