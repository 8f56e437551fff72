import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import type { Static } from 'typebox';
import { RetentionPolicy } from '../../../src/api/v1/projects.ts';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import '../admin/admin.css';
import { atLeast, useMe } from '../admin/me.ts';
import { ProjectMembers } from '../admin/members.tsx';
import { SettingsForm } from '../admin/settings-form.tsx';
import { Page, PageWaiting } from '../components.tsx';
import { useApi } from '../data.ts';
import { formatBytes } from '../format.ts';
import { BodyTextField, Field, integerOrUndefined, problemAt, TextField } from '../forms.tsx';
import { FailureRulesEditor, useFailureRules } from '../triage/failure-rules.tsx';
import { TriageForm } from '../triage/triage-settings.tsx';
import { ForgeForm, IssueTrackerForm } from './integration-settings.tsx';

type Project = Static<typeof v1.projects.Project>;
const UPDATE = v1.projects.updateProject;
/** The retention fields' schemas, for their constraints. */
const RETENTION = RetentionPolicy.properties;
const MIB = 1024 * 1024;

/** Name and description; the title shows the new name at once and goes back if the API refuses it. */
function GeneralForm({ project, onSaved, onShown }: { project: Project; onSaved: (p: Project) => void; onShown: (name: string) => void }) {
  const action = useAction();
  const [form, setForm] = useState({ name: project.name, description: project.description });
  const submit = async () => {
    onShown(form.name.trim());
    const saved = await action.run(
      (client) =>
        client.call(UPDATE, {
          params: { projectId: project.id },
          body: { name: form.name.trim(), description: form.description.trim() },
        }),
      () => 'Saved the name and description.',
    );
    if (saved) onSaved(saved);
    else onShown(project.name);
  };
  return (
    <SettingsForm
      title="Name and description"
      action={action}
      fields={['/name', '/description']}
      submit="Save name and description"
      onSubmit={submit}
    >
      <BodyTextField
        endpoint={UPDATE}
        error={action.error}
        label="Name"
        name="name"
        value={form.name}
        onInput={(name) => setForm({ ...form, name })}
        required
      />
      <BodyTextField
        endpoint={UPDATE}
        error={action.error}
        label="Description"
        name="description"
        value={form.description}
        onInput={(description) => setForm({ ...form, description })}
      />
    </SettingsForm>
  );
}

const RETENTION_FIELDS = [
  { name: 'days', label: 'Keep finished runs (days)' },
  { name: 'failedDays', label: 'Keep failed and broken runs (days)' },
  { name: 'lastRunsPerTest', label: 'Keep at least the last runs of each test' },
] as const;

/** The retention policy (RET-2): the project's own, or the instance's default. */
function RetentionForm({ project, onSaved }: { project: Project; onSaved: (p: Project) => void }) {
  const action = useAction();
  const own = project.retention;
  const [useDefault, setUseDefault] = useState(own === null);
  const [values, setValues] = useState<Record<string, string>>({
    days: own?.days?.toString() ?? '',
    failedDays: own?.failedDays?.toString() ?? '',
    lastRunsPerTest: own?.lastRunsPerTest?.toString() ?? '',
  });
  const submit = async () => {
    const policy: Record<string, number> = {};
    for (const { name } of RETENTION_FIELDS) {
      const value = integerOrUndefined(values[name] ?? '');
      if (value !== undefined) policy[name] = value;
    }
    const saved = await action.run(
      (client) => client.call(UPDATE, { params: { projectId: project.id }, body: { retention: useDefault ? null : policy } }),
      (p) => (p.retention === null ? 'The project follows the instance default.' : 'Saved the retention policy.'),
    );
    if (saved) onSaved(saved);
  };
  return (
    <SettingsForm title="Retention" action={action} fields={['/retention']} submit="Save retention" onSubmit={submit}>
      <p class="muted">A run stays while any rule keeps it; runs marked keep are never expired.</p>
      <label class="checkbox">
        <input type="checkbox" checked={useDefault} onChange={(e) => setUseDefault(e.currentTarget.checked)} />
        Follow the instance default
      </label>
      <div class="form-row">
        {RETENTION_FIELDS.map(({ name, label }) => (
          <TextField
            key={name}
            label={label}
            name={name}
            type="number"
            value={values[name] ?? ''}
            disabled={useDefault}
            onInput={(value) => setValues({ ...values, [name]: value })}
            schema={RETENTION[name]}
            problem={problemAt(action.error, `/retention/${name}`)}
          />
        ))}
      </div>
    </SettingsForm>
  );
}

/** The storage quota (RET-5): admins set it; in MiB here, in bytes to the API. */
function QuotaForm({ project, onSaved }: { project: Project; onSaved: (p: Project) => void }) {
  const action = useAction();
  const quota = project.usage.quotaBytes;
  const [mib, setMib] = useState(quota === null ? '' : String(Math.round(quota / MIB)));
  const submit = async () => {
    const value = integerOrUndefined(mib);
    const saved = await action.run(
      (client) =>
        client.call(UPDATE, { params: { projectId: project.id }, body: { quotaBytes: value === undefined ? null : value * MIB } }),
      (p) => (p.usage.quotaBytes === null ? 'The project has no quota.' : `The quota is ${formatBytes(p.usage.quotaBytes)}.`),
    );
    if (saved) onSaved(saved);
  };
  return (
    <SettingsForm title="Quota" action={action} fields={['/quotaBytes']} submit="Save quota" onSubmit={submit}>
      <Field label="Quota (MiB)" problem={problemAt(action.error, '/quotaBytes')} hint="Empty: no quota. Uploads past it are refused.">
        {({ id, describedBy, invalid }) => (
          <input
            id={id}
            name="quota"
            type="number"
            min={0}
            step={1}
            max={2 ** 30}
            value={mib}
            aria-describedby={describedBy}
            aria-invalid={invalid || undefined}
            onInput={(e) => setMib(e.currentTarget.value)}
          />
        )}
      </Field>
    </SettingsForm>
  );
}

/** The project's failure category rules (TRIAGE), a row a rule (`triage/failure-rules.tsx`). */
function FailureRulesForm({ projectId }: { projectId: string }) {
  const action = useAction();
  const rules = useFailureRules(projectId, action);
  return (
    <SettingsForm
      title="Failure rules"
      action={action}
      fields={['/rules']}
      submit="Save failure rules"
      disabled={rules.rows === undefined}
      onSubmit={rules.save}
    >
      {rules.rows ? (
        <FailureRulesEditor rows={rules.rows} error={action.error} onChange={rules.setRows} onImport={rules.importAllure} />
      ) : (
        <p class="muted">{rules.loadError ? rules.loadError.message : 'Loading…'}</p>
      )}
    </SettingsForm>
  );
}

/** How much the project holds, read from its counters (`GET /projects/{id}/usage`). */
function UsagePanel({ projectId, version }: { projectId: string; version: number }) {
  const usage = useApi((client) => client.call(v1.projects.getProjectUsage, { params: { projectId } }), [projectId, version]);
  const u = usage.data;
  return (
    <section class="panel" aria-labelledby="usage-heading">
      <h2 id="usage-heading">Usage</h2>
      {u ? (
        <dl class="facts" data-testid="usage">
          <dt>Runs</dt>
          <dd>{u.runs.toLocaleString('en')}</dd>
          <dt>Artifacts</dt>
          <dd>{u.artifacts.toLocaleString('en')}</dd>
          <dt>Stored</dt>
          <dd>{formatBytes(u.storedBytes)}</dd>
          <dt>Uploaded</dt>
          <dd>{formatBytes(u.logicalBytes)}</dd>
          <dt>Quota</dt>
          <dd>{u.quotaBytes === null ? 'none' : formatBytes(u.quotaBytes)}</dd>
        </dl>
      ) : (
        <p class="muted">{usage.error ? usage.error.message : 'Loading…'}</p>
      )}
    </section>
  );
}

/** Deleting the project asks for its key to be typed: everything it holds goes with it. */
function DeleteProject({ project }: { project: Project }) {
  const { route } = useLocation();
  const action = useAction();
  const [typed, setTyped] = useState('');
  const submit = async () => {
    const went = await action.run(
      (client) => client.call(v1.projects.deleteProject, { params: { projectId: project.id } }).then(() => true),
      () => `Deleted ${project.key}.`,
    );
    if (went) route('/projects');
  };
  return (
    <SettingsForm
      title="Delete project"
      action={action}
      fields={[]}
      submit="Delete project"
      danger
      disabled={typed.trim() !== project.key}
      onSubmit={submit}
    >
      <p>
        Deletes {project.key} with its {project.usage.runs.toLocaleString('en')} runs, its tests, jobs and files (
        {formatBytes(project.usage.storedBytes)} stored). This cannot be undone.
      </p>
      <TextField
        label={`Type ${project.key} to confirm`}
        name="confirm"
        value={typed}
        onInput={setTyped}
        problem={undefined}
        placeholder={project.key}
      />
    </SettingsForm>
  );
}

/** A project's settings: name, retention, quota (admins), members, usage, and deleting it. */
export function ProjectSettingsPage({ projectKey }: { projectKey: string }) {
  const loaded = useApi((client) => client.call(v1.projects.getProject, { params: { projectId: projectKey } }), [projectKey]);
  const me = useMe();
  const [project, setProject] = useState<Project | undefined>();
  const [shownName, setShownName] = useState<string | undefined>();
  const [version, setVersion] = useState(0);
  useEffect(() => {
    if (loaded.data) setProject(loaded.data);
  }, [loaded.data]);
  if (!project) return <PageWaiting title="Project settings" error={loaded.error} />;
  const saved = (p: Project) => {
    setProject(p);
    setShownName(undefined);
    setVersion((n) => n + 1);
  };
  const manages = atLeast(me.data?.role, 'manager');
  return (
    <Page
      title={`${project.key} · ${shownName ?? project.name} · Settings`}
      actions={
        <>
          <a class="button secondary" href={`/projects/${project.key}/webhooks`}>
            Webhooks
          </a>
          <a class="button secondary" href={`/projects/${project.key}`}>
            Runs
          </a>
        </>
      }
    >
      {!manages && me.data ? <p class="muted">Only managers change a project; the API will refuse your changes.</p> : null}
      <div class="settings">
        <GeneralForm project={project} onSaved={saved} onShown={setShownName} />
        <RetentionForm project={project} onSaved={saved} />
        {me.data?.role === 'admin' ? <QuotaForm project={project} onSaved={saved} /> : null}
        <UsagePanel projectId={project.id} version={version} />
        <TriageForm project={project} onSaved={saved} />
        <FailureRulesForm projectId={project.id} />
        {manages ? <ForgeForm projectId={project.id} /> : null}
        {manages ? <IssueTrackerForm projectId={project.id} /> : null}
        <section class="panel" aria-labelledby="members-heading">
          <h2 id="members-heading">Members</h2>
          <ProjectMembers projectId={project.id} projectName={project.name} />
        </section>
        <DeleteProject project={project} />
      </div>
    </Page>
  );
}
