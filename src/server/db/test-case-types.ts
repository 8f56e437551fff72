// Row shapes of test-case management's tables (migration 0017, docs/test-management.md), beside types.ts to keep it short.

/** One link of a test (TCM-4); `ref` is its identity in its kind: the key in lower case, else the URL. */
export interface TestLinksTable {
  test_id: string;
  project_id: string;
  kind: 'requirement' | 'issue';
  /** A short hash of kind and ref (the link's id in pages), and the ref's first 200 characters (their order). */
  link_id: string;
  sort_key: string;
  ref: string;
  key: string | null;
  url: string | null;
  title: string | null;
}
