import { useEffect, useState } from 'preact/hooks';
import { type AttestClient, v1 } from '../../../src/client/index.ts';
import { Breadcrumb } from '../breadcrumb.tsx';
import { Page, PageWaiting, Preformatted } from '../components.tsx';
import { useApi } from '../data.ts';
import { Fact } from '../facts.tsx';
import { formatTime } from '../format.ts';
import { ApiImage } from '../images.tsx';
import { type Column, ListTable } from '../list-table.tsx';
import { type FailureGroup, type FailureGroupDetail, getFailureGroup, type Occurrence } from '../triage/api.ts';
import { Sparkline } from '../triage/charts.tsx';
import { IssueLinks } from '../triage/issue-links.tsx';
import { DefectName, GroupStatus, TriageForm } from '../triage/parts.tsx';
import '../triage/triage.css';

/**
 * A group and the images of its occurrences' screenshots: an occurrence names a screenshot
 * artifact, whose image (`GET /images/{id}`, as thumbnail) one batch call of the artifacts'
 * details gives, as on the run page.
 */
async function loadGroup(client: AttestClient, projectId: string, groupId: string) {
  const group = await getFailureGroup(client, projectId, groupId);
  const artifactIds = [...new Set(group.latestOccurrences.map((o) => o.screenshotId).filter((id): id is string => id !== null))];
  const shots = new Map<string, string>();
  if (artifactIds.length > 0) {
    const { items } = await client.call(v1.artifacts.getArtifacts, { query: { ids: artifactIds.join(',') } });
    for (const artifact of items) {
      const image = artifact.images.find((i) => i.role === 'screenshot');
      if (image) shots.set(artifact.id, image.id);
    }
  }
  return { group, shots };
}

function occurrenceColumns(shots: Map<string, string>): Column<Occurrence>[] {
  return [
    {
      header: 'Screenshot',
      cell: (o) => {
        const imageId = o.screenshotId ? shots.get(o.screenshotId) : undefined;
        return imageId ? (
          <a href={`/runs/${o.runId}`}>
            <ApiImage
              imageId={imageId}
              thumbnail
              alt={`Screenshot of ${o.runName}`}
              class="occurrence-shot"
              data-testid="occurrence-shot"
            />
          </a>
        ) : (
          <span class="muted">none</span>
        );
      },
    },
    { header: 'Run', cell: (o) => o.runName, href: (o) => `/runs/${o.runId}` },
    { header: 'Step', cell: (o) => o.stepTitle ?? '—' },
    { header: 'Test', cell: (o) => (o.testId ? <a href={`/tests/${o.testId}`}>Open test</a> : '—') },
    { header: 'Job', cell: (o) => (o.jobId ? <a href={`/jobs/${o.jobId}`}>Open job</a> : '—') },
    { header: 'Branch', cell: (o) => o.branch ?? '' },
    { header: 'When', cell: (o) => formatTime(o.at) },
  ];
}

/** What the group is: its signature, counts and first and last sightings. */
function GroupFacts({ group }: { group: FailureGroup }) {
  return (
    <dl class="facts">
      <Fact term="Status">
        <GroupStatus status={group.status} />
      </Fact>
      <Fact term="Defect type">
        <DefectName type={group.defectType} />
      </Fact>
      <Fact term="Category">{group.category}</Fact>
      {group.action ? <Fact term="Action">{group.action}</Fact> : null}
      {group.target ? <Fact term="Target">{group.target}</Fact> : null}
      {group.rule ? <Fact term="Rule">{group.rule}</Fact> : null}
      <Fact term="Occurrences">{group.occurrences}</Fact>
      <Fact term="Tests affected">{group.affectedTests}</Fact>
      <Fact term="Branches affected">{group.affectedBranches}</Fact>
      <Fact term="First seen">
        {group.firstSeenRunId ? (
          <a href={`/runs/${group.firstSeenRunId}`}>{formatTime(group.firstSeenAt)}</a>
        ) : (
          formatTime(group.firstSeenAt)
        )}
      </Fact>
      <Fact term="Last seen">
        {group.lastSeenRunId ? <a href={`/runs/${group.lastSeenRunId}`}>{formatTime(group.lastSeenAt)}</a> : formatTime(group.lastSeenAt)}
      </Fact>
      {group.assignee ? <Fact term="Assignee">{group.assignee}</Fact> : null}
      {group.issueUrl ? (
        <Fact term="Issue">
          <a href={group.issueUrl} rel="noopener noreferrer" target="_blank">
            {group.issueUrl}
          </a>
        </Fact>
      ) : null}
      {group.triagedAt ? (
        <Fact term="Triaged">
          {formatTime(group.triagedAt)}
          {group.triagedBy ? ` by ${group.triagedBy}` : ''}
        </Fact>
      ) : null}
    </dl>
  );
}

/** What the group is: its normalised error, a message as it was, its frames and its facts. */
function GroupError({ group }: { group: FailureGroupDetail }) {
  return (
    <section class="panel" aria-labelledby="group-error">
      <h2 id="group-error">Error</h2>
      <Preformatted label="Normalised error" class="group-title">
        {group.title}
      </Preformatted>
      {group.message && group.message !== group.title ? (
        <details>
          <summary>A message as it was</summary>
          <Preformatted label="Message">{group.message}</Preformatted>
        </details>
      ) : null}
      {group.frames.length > 0 ? (
        <details>
          <summary>Frames in the project ({group.frames.length})</summary>
          <Preformatted label="Frames">{group.frames.join('\n')}</Preformatted>
        </details>
      ) : null}
      <GroupFacts group={group} />
    </section>
  );
}

/** How often the group failed each day of the window: a sparkline, and its numbers. */
function GroupTrend({ trend }: { trend: FailureGroupDetail['trend'] }) {
  return (
    <section class="panel" aria-labelledby="group-trend">
      <h2 id="group-trend">Last {trend.length} days</h2>
      <Sparkline
        values={trend.map((t) => t.occurrences)}
        label={`Occurrences per day: ${trend.map((t) => `${t.day} ${t.occurrences}`).join(', ')}`}
        testId="group-trend"
      />
      <details>
        <summary>The trend's numbers</summary>
        <div class="numbers">
          <ListTable
            label="Occurrences per day"
            rows={trend}
            rowKey={(t) => t.day}
            columns={[
              { header: 'Day', cell: (t) => t.day },
              { header: 'Occurrences', class: 'num', cell: (t) => t.occurrences },
            ]}
          />
        </div>
      </details>
    </section>
  );
}

/** One error group (TRIAGE-2, TRIAGE-3, TRIAGE-8): what it is, its trend, its triage and its latest occurrences. */
export function FailureGroupPage({ projectKey, groupId }: { projectKey: string; groupId: string }) {
  const project = useApi((client) => client.call(v1.projects.getProject, { params: { projectId: projectKey } }), [projectKey]);
  const projectId = project.data?.id;
  const loaded = useApi((client) => (projectId ? loadGroup(client, projectId, groupId) : Promise.resolve(undefined)), [projectId, groupId]);
  // The triage answer replaces the group's fields at once; the occurrences and trend stay as loaded.
  const [group, setGroup] = useState<FailureGroupDetail | undefined>();
  useEffect(() => setGroup(loaded.data?.group), [loaded.data]);
  if (!project.data || !group) return <PageWaiting title="Error group" error={project.error ?? loaded.error} />;
  return (
    <Page title="Error group">
      <Breadcrumb projectId={project.data.id} here="Error group" />
      <p>
        <a href={`/projects/${project.data.key}/failures`}>All error groups</a>
      </p>
      <GroupError group={group} />
      <section class="panel" aria-labelledby="group-triage">
        <h2 id="group-triage">Triage</h2>
        <TriageForm projectId={project.data.id} group={group} onSaved={(saved) => setGroup({ ...group, ...saved })} />
      </section>
      <IssueLinks projectId={project.data.id} failureGroupId={group.id} onCreated={(link) => setGroup({ ...group, issueUrl: link.url })} />
      <GroupTrend trend={group.trend} />
      <section class="panel" aria-labelledby="group-occurrences">
        <h2 id="group-occurrences">Latest occurrences</h2>
        <ListTable
          class="occurrences-table"
          label="Latest occurrences"
          rows={group.latestOccurrences}
          empty="No occurrence is kept (retention deleted the runs)."
          columns={occurrenceColumns(loaded.data?.shots ?? new Map())}
          rowKey={(o) => `${o.runId}:${o.stepId ?? ''}`}
        />
      </section>
    </Page>
  );
}
