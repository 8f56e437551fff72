import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { v1 } from '../../../src/client/index.ts';
import '../admin/admin.css';
import { Badge, Page, PageWaiting } from '../components.tsx';
import { useApi } from '../data.ts';
import { type FilterField, FilterForm, filterValues } from '../filter-form.tsx';
import '../forms.css';
import { formatScore } from '../format.ts';
import { loadTests, suiteOf, type TestDefinition } from '../tcm/tests-api.ts';
import { withQuery } from '../url.ts';
import './tests.css';

const FILTERS = [
  { name: 'q', label: 'Name' },
  { name: 'tag', label: 'Tag' },
  { name: 'suite', label: 'Suite', placeholder: 'Checkout/Payments' },
  { name: 'link', label: 'Link', placeholder: 'JIRA-12' },
] as const satisfies readonly FilterField[];

/** A folder of the tree: its tests and its sub-suites, by name. */
interface SuiteNode {
  name: string;
  path: string;
  tests: TestDefinition[];
  children: Map<string, SuiteNode>;
}

/** The tests as a tree of their suites (`Checkout/Payments`), tests without one at the root. */
function treeOf(tests: readonly TestDefinition[]): SuiteNode {
  const root: SuiteNode = { name: '', path: '', tests: [], children: new Map() };
  for (const test of tests) {
    let node = root;
    for (const part of suiteOf(test).split('/').filter(Boolean)) {
      const path = node.path ? `${node.path}/${part}` : part;
      let child = node.children.get(part);
      if (!child) {
        child = { name: part, path, tests: [], children: new Map() };
        node.children.set(part, child);
      }
      node = child;
    }
    node.tests.push(test);
  }
  return root;
}

const countOf = (node: SuiteNode): number => node.tests.length + [...node.children.values()].reduce((n, c) => n + countOf(c), 0);

function TestRow({ test, chosen, onChoose }: { test: TestDefinition; chosen: boolean; onChoose: (on: boolean) => void }) {
  const { path, query } = useLocation();
  return (
    <li class="test-row">
      <input type="checkbox" checked={chosen} aria-label={`Choose ${test.name}`} onChange={(e) => onChoose(e.currentTarget.checked)} />
      <a href={`/tests/${test.id}`}>{test.name}</a>
      {test.health.state !== 'stable' ? (
        <span class="test-health" data-testid="test-health">
          <Badge value={test.health.state} />{' '}
          <span class="muted">
            score {formatScore(test.health.flakyScore)} over {test.health.runsConsidered} jobs
          </span>
        </span>
      ) : null}
      {test.tags.length > 0 ? (
        <span class="chips">
          {test.tags.map((tag) => (
            <a key={tag} class="chip" href={withQuery(path, query, { tag })} aria-label={`Tests tagged ${tag}`}>
              @{tag}
            </a>
          ))}
        </span>
      ) : null}
    </li>
  );
}

/** One suite, open, with a link to run all of it; its sub-suites inside. */
function SuiteBranch(props: {
  node: SuiteNode;
  projectKey: string;
  /** Tests under each suite path in the whole project, beside those this page lists. */
  totals: Map<string, number>;
  chosen: Set<string>;
  onChoose: (ids: string[], on: boolean) => void;
}) {
  const { node, projectKey, totals, chosen, onChoose } = props;
  const rows = (
    <ul class="test-list">
      {[...node.children.values()].map((child) => (
        <li key={child.path}>
          <SuiteBranch {...props} node={child} />
        </li>
      ))}
      {node.tests.map((test) => (
        <TestRow key={test.id} test={test} chosen={chosen.has(test.id)} onChoose={(on) => onChoose([test.id], on)} />
      ))}
    </ul>
  );
  if (!node.path) return rows;
  return (
    <details open class="suite">
      <summary>
        <span class="suite-name">{node.name}</span>{' '}
        <span class="muted">
          ({countOf(node)}
          {totals.get(node.path) !== countOf(node) ? ` of ${totals.get(node.path) ?? '?'}` : ''})
        </span>
      </summary>
      <div class="suite-actions">
        <a href={`/projects/${projectKey}/jobs/new?suite=${encodeURIComponent(node.path)}`} aria-label={`Run suite ${node.path}`}>
          Run suite ({totals.get(node.path) ?? countOf(node)} tests)
        </a>
      </div>
      {rows}
    </details>
  );
}

/** How many tests are chosen, Choose all or none, and Run: the chosen tests, the suite or the tag searched for. */
function SelectionBar(props: {
  projectKey: string;
  tests: { id: string }[];
  chosen: Set<string>;
  choose: (ids: string[], on: boolean) => void;
  filter: Record<string, string>;
}) {
  const { projectKey, tests, chosen, choose, filter } = props;
  const { route } = useLocation();
  const runChosen = () => route(`/projects/${projectKey}/jobs/new?tests=${[...chosen].join(',')}`);
  return (
    <div class="selection-bar">
      <span role="status">
        {chosen.size} of {tests.length} chosen
      </span>
      <button
        type="button"
        class="secondary"
        onClick={() =>
          choose(
            tests.map((t) => t.id),
            chosen.size < tests.length,
          )
        }
      >
        {chosen.size < tests.length ? 'Choose all' : 'Choose none'}
      </button>
      <button type="button" onClick={runChosen} disabled={chosen.size === 0}>
        Run
      </button>
      {filter.suite ? (
        <a href={`/projects/${projectKey}/jobs/new?suite=${encodeURIComponent(filter.suite)}`}>Run suite {filter.suite}</a>
      ) : null}
      {filter.tag ? (
        <a href={`/projects/${projectKey}/jobs/new?tag=${encodeURIComponent(filter.tag)}`}>Run every test tagged {filter.tag}</a>
      ) : null}
    </div>
  );
}

/** A project's tests as a tree by suite, searchable, with a selection to launch as a job. */
export function TestsPage({ projectKey }: { projectKey: string }) {
  const { query } = useLocation();
  const filter = filterValues(query, FILTERS);
  const data = useApi(
    async (client) => {
      const project = await client.call(v1.projects.getProject, { params: { projectId: projectKey } });
      const [tests, suites] = await Promise.all([
        loadTests(client, project.id, filter),
        client.call(v1.tests.listSuites, { params: { projectId: project.id } }),
      ]);
      return { project, tests, totals: new Map(suites.items.map((s) => [s.path, s.total])) };
    },
    [projectKey, JSON.stringify(filter)],
  );
  const [chosen, setChosen] = useState<Set<string>>(new Set());
  if (!data.data) return <PageWaiting title="Tests" error={data.error} />;
  const { project, tests, totals } = data.data;
  const choose = (ids: string[], on: boolean) => {
    const next = new Set(chosen);
    for (const id of ids) on ? next.add(id) : next.delete(id);
    setChosen(next);
  };
  return (
    <Page
      title={`${project.key} · Tests`}
      actions={
        <>
          <a class="button" href={`/projects/${project.key}/tests/new`}>
            New test
          </a>
          <a class="button secondary" href={`/projects/${project.key}/traceability`}>
            Traceability
          </a>
        </>
      }
    >
      <FilterForm label="Search tests" fields={FILTERS} />
      <SelectionBar projectKey={project.key} tests={tests} chosen={chosen} choose={choose} filter={filter} />
      {tests.length === 0 ? (
        <p class="muted">{Object.keys(filter).length ? 'No test matches.' : 'No test yet.'}</p>
      ) : (
        <section class="panel test-tree" aria-label="Tests by suite">
          <SuiteBranch node={treeOf(tests)} projectKey={project.key} totals={totals} chosen={chosen} onChoose={choose} />
        </section>
      )}
    </Page>
  );
}
