import { useLocation } from 'preact-iso';
import { v1 } from '../../../src/client/index.ts';
import { Breadcrumb } from '../breadcrumb.tsx';
import { Badge, ErrorBox, Loading, Page, PageWaiting } from '../components.tsx';
import { useApi } from '../data.ts';
import { type Column, ListTable } from '../list-table.tsx';
import { type ComparedTest, type Comparison, type ComparisonSection, getComparison } from '../triage/api.ts';
import { CompareForm } from '../triage/compare-form.tsx';
import { DefectName, GroupStatus } from '../triage/parts.tsx';
import '../triage/triage.css';

/** The sections of a comparison, in the order a reviewer reads them, with what each holds. */
const SECTIONS: { key: ComparisonSection; title: string; about: string }[] = [
  { key: 'newFailures', title: 'New failures', about: 'Failing in this job, not failing in the base (and not quarantined).' },
  { key: 'newErrorGroups', title: 'New error groups', about: 'Causes seen in this job and not in the base.' },
  { key: 'stillFailing', title: 'Still failing', about: 'Failing in both jobs.' },
  { key: 'fixed', title: 'Fixed', about: 'Failing in the base, passing (or flaky) in this job.' },
  { key: 'flaky', title: 'Flaky', about: 'Failed, then passed on a retry in this job.' },
  { key: 'quarantined', title: 'Quarantined', about: 'Failing or flaky in this job, and quarantined.' },
];

function testColumns(projectKey: string | undefined): Column<ComparedTest>[] {
  return [
    { header: 'Test', cell: (t) => (t.testId ? <a href={`/tests/${t.testId}`}>{t.name}</a> : t.name) },
    { header: 'Verdict', cell: (t) => <Badge value={t.verdict ?? 'absent'} /> },
    { header: 'In the base', cell: (t) => <Badge value={t.baseVerdict ?? 'absent'} /> },
    { header: 'Attempts', class: 'num', cell: (t) => t.attempts },
    { header: 'Run', cell: (t) => (t.runId ? <a href={`/runs/${t.runId}`}>This job’s</a> : '—') },
    { header: 'Base run', cell: (t) => (t.baseRunId ? <a href={`/runs/${t.baseRunId}`}>The base’s</a> : '—') },
    {
      header: 'Error group',
      cell: (t) => (t.failureGroupId && projectKey ? <a href={`/projects/${projectKey}/failures/${t.failureGroupId}`}>Open group</a> : '—'),
    },
  ];
}

function Section({ comparison, section, projectKey }: { comparison: Comparison; section: (typeof SECTIONS)[number]; projectKey?: string }) {
  const count = comparison.counts[section.key];
  return (
    <section class="panel" aria-labelledby={`section-${section.key}`} data-testid={`section-${section.key}`}>
      <h2 id={`section-${section.key}`}>
        {section.title} <span class="muted">({count})</span>
      </h2>
      <p class="muted">{section.about}</p>
      {section.key === 'newErrorGroups' ? (
        <ListTable
          label={section.title}
          rows={comparison.newErrorGroups}
          empty="None."
          rowKey={(g) => g.id}
          columns={[
            {
              header: 'Error',
              class: 'group-title',
              cell: (g) => g.title,
              href: (g) => `/projects/${projectKey ?? comparison.job.projectId}/failures/${g.id}`,
            },
            { header: 'Category', cell: (g) => g.category },
            { header: 'Status', cell: (g) => <GroupStatus status={g.status} /> },
            { header: 'Defect type', cell: (g) => <DefectName type={g.defectType} /> },
            { header: 'Tests', class: 'num', cell: (g) => g.tests },
            { header: 'Flaky only', cell: (g) => (g.flakyOnly ? 'yes' : '') },
          ]}
        />
      ) : (
        <ListTable
          label={section.title}
          rows={comparison[section.key]}
          empty="None."
          rowKey={(t) => t.testKey}
          columns={testColumns(projectKey)}
        />
      )}
    </section>
  );
}

/** Two jobs compared (TRIAGE-7, TRIAGE-8): what is new, fixed, still failing, flaky and quarantined. */
export function ComparePage({ jobId }: { jobId: string }) {
  const { query } = useLocation();
  const base = query.base || undefined;
  const baseBranch = base ? undefined : query.baseBranch || undefined;
  const job = useApi((client) => client.call(v1.jobs.getJob, { params: { jobId } }), [jobId]);
  const projectId = job.data?.projectId;
  const project = useApi(
    (client) => (projectId ? client.call(v1.projects.getProject, { params: { projectId } }) : Promise.resolve(undefined)),
    [projectId],
  );
  const comparison = useApi(
    (client) => (base || baseBranch ? getComparison(client, jobId, { base, baseBranch }) : Promise.resolve(undefined)),
    [jobId, base, baseBranch],
  );
  if (!job.data) return <PageWaiting title="Comparison" error={job.error} />;
  const data = comparison.data;
  return (
    <Page title={`${job.data.name} · Comparison`}>
      <Breadcrumb projectId={job.data.projectId} jobId={jobId} here="Comparison" />
      <CompareForm jobId={jobId} base={base} baseBranch={baseBranch} />
      {comparison.error ? <ErrorBox error={comparison.error} /> : null}
      {!base && !baseBranch ? <p class="muted">Choose the job to compare with.</p> : null}
      {(base || baseBranch) && data === undefined && !comparison.error ? <Loading /> : null}
      {data ? (
        <div data-testid="comparison">
          <p>
            <a href={`/jobs/${data.job.id}`}>{data.job.name}</a> compared with{' '}
            {data.base ? (
              <a href={`/jobs/${data.base.id}`}>{data.base.name}</a>
            ) : (
              <span>no job (none was found: every failure is new)</span>
            )}
            {baseBranch && data.base ? ` (the latest completed job on ${baseBranch})` : ''}, {data.counts.tests} tests.
          </p>
          <ul class="count-list" aria-label="Counts">
            {SECTIONS.map((section) => (
              <li key={section.key} data-testid={`count-${section.key}`}>
                <a href={`#section-${section.key}`}>{data.counts[section.key]}</a> {section.title.toLowerCase()}
              </li>
            ))}
          </ul>
          {SECTIONS.map((section) => (
            <Section key={section.key} comparison={data} section={section} projectKey={project.data?.key} />
          ))}
        </div>
      ) : null}
    </Page>
  );
}
