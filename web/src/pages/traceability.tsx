import { useLocation } from 'preact-iso';
import type { Static } from 'typebox';
import { v1 } from '../../../src/client/index.ts';
import '../admin/admin.css';
import { Badge, Page, PageWaiting } from '../components.tsx';
import { useApi } from '../data.ts';
import { type FilterField, FilterForm, filterValues } from '../filter-form.tsx';
import { formatTime } from '../format.ts';
import { Pager, pageQuery } from '../list-table.tsx';
import './tests.css';

type TraceLink = Static<typeof v1.tests.TraceLink>;

const FILTERS = [
  { name: 'kind', label: 'Kind', options: ['requirement', 'issue'] },
  { name: 'q', label: 'Key, URL or title' },
] as const satisfies readonly FilterField[];

/** A link's name: its key and title, else its URL. */
const nameOf = (link: TraceLink) => [link.key, link.title].filter(Boolean).join(' · ') || (link.url ?? '');

function LinkSummary({ summary }: { summary: TraceLink['summary'] }) {
  const parts = (['passed', 'failed', 'broken', 'skipped', 'notRun'] as const).filter((p) => summary[p] > 0);
  return (
    <span class="muted">
      {summary.tests} test{summary.tests === 1 ? '' : 's'}: {parts.map((p) => `${summary[p]} ${p === 'notRun' ? 'not run' : p}`).join(', ')}
    </span>
  );
}

/** One requirement or issue with its tests and their latest verdicts. */
function LinkBlock({ link, projectKey }: { link: TraceLink; projectKey: string }) {
  const name = nameOf(link);
  const filterBy = link.key ?? link.url ?? '';
  return (
    <section class="panel trace-link" aria-label={`${link.kind} ${name}`} data-testid="trace-link">
      <h2>
        <span class="muted">{link.kind}</span>{' '}
        {link.url ? (
          <a href={link.url} rel="noopener noreferrer" target="_blank">
            {name}
          </a>
        ) : (
          name
        )}
      </h2>
      <p>
        <LinkSummary summary={link.summary} /> ·{' '}
        <a href={`/projects/${projectKey}/tests?link=${encodeURIComponent(filterBy)}`}>Its tests in the tree</a>
      </p>
      <table class="list" aria-label={`Tests of ${name}`}>
        <thead>
          <tr>
            <th scope="col">Test</th>
            <th scope="col">Latest verdict</th>
            <th scope="col">Suite</th>
            <th scope="col">Finished</th>
          </tr>
        </thead>
        <tbody>
          {link.tests.map((test) => (
            <tr key={test.testId}>
              <td>
                <a href={`/tests/${test.testId}`}>{test.name}</a>
              </td>
              <td>
                {test.latestRunId ? (
                  <a href={`/runs/${test.latestRunId}`} aria-label={`Latest run of ${test.name}: ${test.latestVerdict ?? 'not run'}`}>
                    <Badge value={test.latestVerdict ?? 'not run'} />
                  </a>
                ) : (
                  <Badge value="not run" />
                )}
              </td>
              <td>{test.suite ?? '—'}</td>
              <td>{formatTime(test.latestRunFinishedAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/** Traceability (TCM-5): each requirement or issue the project's tests link to, with those tests' latest verdicts. */
export function TraceabilityPage({ projectKey }: { projectKey: string }) {
  const { query } = useLocation();
  const filter = filterValues(query, FILTERS) as { kind?: 'requirement' | 'issue'; q?: string };
  const data = useApi(
    async (client) => {
      const project = await client.call(v1.projects.getProject, { params: { projectId: projectKey } });
      const links = await client.call(v1.tests.listLinks, { params: { projectId: project.id }, query: { ...pageQuery(query), ...filter } });
      return { project, links };
    },
    [projectKey, JSON.stringify(query)],
  );
  if (!data.data) return <PageWaiting title="Traceability" error={data.error} />;
  const { project, links } = data.data;
  return (
    <Page
      title={`${project.key} · Traceability`}
      actions={
        <a class="button secondary" href={`/projects/${project.key}/tests`}>
          Tests
        </a>
      }
    >
      <FilterForm label="Filter links" fields={FILTERS} />
      {links.items.length === 0 ? (
        <p class="muted">No test links to a requirement or an issue{Object.keys(filter).length ? ' that matches' : ' yet'}.</p>
      ) : (
        links.items.map((link) => <LinkBlock key={`${link.kind}:${link.key ?? link.url}`} link={link} projectKey={project.key} />)
      )}
      <Pager nextCursor={links.nextCursor} first="First links" next="More links" />
    </Page>
  );
}
