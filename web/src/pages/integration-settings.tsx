import type { Static } from 'typebox';
import { v1 } from '../../../src/client/index.ts';
import { RemoveButton, SettingsForm, useStoredSettings } from '../admin/settings-form.tsx';
import { BodyTextField, Field, problemAt, SelectField, TextField } from '../forms.tsx';

// A project's integrations on its settings page (docs/integrations.md): the code host its jobs
// report to (FORGE-1) and the issue tracker "Create issue" files to (FORGE-5). Secrets are
// write-only: the forms say whether one is stored, and an empty field keeps it.

const PUT_FORGE = v1.integrations.putForgeSettings;
const PUT_TRACKER = v1.integrations.putIssueTracker;

/** A password input for a write-only secret: empty keeps the stored one. */
function SecretField(props: {
  label: string;
  name: string;
  value: string;
  set: boolean;
  onInput: (v: string) => void;
  problem?: string;
  multiline?: boolean;
}) {
  const hint = props.set ? 'One is stored; leave empty to keep it. It is never shown again.' : 'Not set.';
  return (
    <Field label={props.label} problem={props.problem} hint={hint}>
      {({ id, describedBy, invalid }) =>
        props.multiline ? (
          <textarea
            id={id}
            name={props.name}
            rows={4}
            class="mono"
            spellcheck={false}
            value={props.value}
            aria-describedby={describedBy}
            aria-invalid={invalid || undefined}
            onInput={(e) => props.onInput(e.currentTarget.value)}
          />
        ) : (
          <input
            id={id}
            name={props.name}
            type="password"
            autocomplete="off"
            value={props.value}
            aria-describedby={describedBy}
            aria-invalid={invalid || undefined}
            onInput={(e) => props.onInput(e.currentTarget.value)}
          />
        )
      }
    </Field>
  );
}

type ForgeSettings = NonNullable<Static<typeof v1.integrations.ForgeSettings>>;
type TrackerSettings = NonNullable<Static<typeof v1.integrations.IssueTracker>>;

const FORGE_FIELDS = ['/kind', '/apiUrl', '/auth', '/token', '/appId', '/installationId', '/privateKey', '/checkName'];
const EMPTY_FORGE = {
  kind: 'github',
  apiUrl: '',
  auth: 'token',
  token: '',
  appId: '',
  installationId: '',
  privateKey: '',
  checkName: '',
  comment: false,
};
type ForgeForm = typeof EMPTY_FORGE;

/** What the form shows again of a stored code host (never its secrets). */
const fillForge = (f: ForgeSettings): Partial<ForgeForm> => ({
  kind: f.kind,
  apiUrl: f.apiUrl,
  auth: f.auth,
  appId: f.appId ?? '',
  installationId: f.installationId ?? '',
  checkName: f.checkName,
  comment: f.pullRequestComment,
});

const signsInAsApp = (form: ForgeForm) => form.kind === 'github' && form.auth === 'app';

/** The body of a save: an empty field is left out (the server's default, or the stored secret kept). */
function forgeBody(form: ForgeForm) {
  const app = signsInAsApp(form);
  return {
    kind: form.kind as 'github' | 'gitlab',
    auth: app ? ('app' as const) : ('token' as const),
    pullRequestComment: form.comment,
    ...(form.apiUrl.trim() ? { apiUrl: form.apiUrl.trim() } : {}),
    ...(form.checkName.trim() ? { checkName: form.checkName.trim() } : {}),
    ...(!app && form.token ? { token: form.token } : {}),
    ...(app && form.appId.trim() ? { appId: form.appId.trim() } : {}),
    ...(app && form.installationId.trim() ? { installationId: form.installationId.trim() } : {}),
    ...(app && form.privateKey.trim() ? { privateKey: form.privateKey.trim() } : {}),
  };
}

type FieldsProps<F> = { form: F; set: (changes: Partial<F>) => void; error: Error | undefined };

/** How Attest signs in to GitHub as an App: its ids and private key. */
function AppFields({ form, set, error, keySet }: FieldsProps<ForgeForm> & { keySet: boolean }) {
  return (
    <>
      <div class="form-row">
        <TextField
          label="App id"
          name="appId"
          value={form.appId}
          onInput={(appId) => set({ appId })}
          problem={problemAt(error, '/appId')}
        />
        <TextField
          label="Installation id"
          name="installationId"
          value={form.installationId}
          onInput={(installationId) => set({ installationId })}
          problem={problemAt(error, '/installationId')}
        />
      </div>
      <SecretField
        label="Private key (PEM)"
        name="privateKey"
        multiline
        value={form.privateKey}
        set={keySet}
        onInput={(privateKey) => set({ privateKey })}
        problem={problemAt(error, '/privateKey')}
      />
    </>
  );
}

/** Where the code host is and how Attest signs in to it: a token, or (GitHub) an App. */
function ForgeSignIn({ form, set, error, current }: FieldsProps<ForgeForm> & { current: ForgeSettings | null }) {
  return (
    <>
      <SelectField
        label="Host"
        name="kind"
        value={form.kind}
        options={[
          { value: 'github', label: 'GitHub' },
          { value: 'gitlab', label: 'GitLab' },
        ]}
        onChange={(kind) => set({ kind, apiUrl: '' })}
        problem={problemAt(error, '/kind')}
      />
      <BodyTextField
        endpoint={PUT_FORGE}
        error={error}
        label="API URL"
        name="apiUrl"
        type="url"
        value={form.apiUrl}
        onInput={(apiUrl) => set({ apiUrl })}
        placeholder={form.kind === 'github' ? 'https://api.github.com' : 'https://gitlab.com/api/v4'}
        hint="Empty: the public service. GitHub Enterprise: https://host/api/v3."
      />
      {form.kind === 'github' ? (
        <SelectField
          label="Sign in as"
          name="auth"
          value={form.auth}
          options={[
            { value: 'token', label: 'A token' },
            { value: 'app', label: 'A GitHub App' },
          ]}
          onChange={(auth) => set({ auth })}
          problem={problemAt(error, '/auth')}
        />
      ) : null}
      {signsInAsApp(form) ? (
        <AppFields form={form} set={set} error={error} keySet={current?.privateKeySet ?? false} />
      ) : (
        <SecretField
          label="Access token"
          name="token"
          value={form.token}
          set={current?.tokenSet ?? false}
          onInput={(token) => set({ token })}
          problem={problemAt(error, '/token')}
        />
      )}
    </>
  );
}

/** How a job reports: the check's name and the pull request comment. */
function ForgeReport({ form, set, error }: FieldsProps<ForgeForm>) {
  return (
    <>
      <TextField
        label="Check name"
        name="checkName"
        value={form.checkName}
        onInput={(checkName) => set({ checkName })}
        problem={problemAt(error, '/checkName')}
        placeholder="Attest"
      />
      <label class="checkbox">
        <input type="checkbox" name="comment" checked={form.comment} onChange={(e) => set({ comment: e.currentTarget.checked })} />
        Keep one comment on the pull (merge) request up to date
      </label>
    </>
  );
}

/** GitHub or GitLab: where the project's jobs with a commit and a repository report (check runs, commit statuses). */
export function ForgeForm({ projectId }: { projectId: string }) {
  const s = useStoredSettings({
    load: (client) => client.call(v1.integrations.getForgeSettings, { params: { projectId } }).then((r) => r.forge ?? null),
    deps: [projectId],
    initial: EMPTY_FORGE,
    fill: fillForge,
    remove: (client) => client.call(v1.integrations.deleteForgeSettings, { params: { projectId } }),
    removed: 'Removed the code host.',
  });
  const submit = async () => {
    const saved = await s.action.run(
      (client) => client.call(PUT_FORGE, { params: { projectId }, body: forgeBody(s.form) }),
      () => 'Saved the code host.',
    );
    if (saved) {
      s.setCurrent(saved.forge);
      s.setForm({ ...s.form, token: '', privateKey: '', apiUrl: saved.forge?.apiUrl ?? '' });
    }
  };
  const current = s.current;
  return (
    <SettingsForm
      title="Code host"
      onSubmit={submit}
      action={{ busy: s.action.busy, error: s.error, done: s.done }}
      fields={FORGE_FIELDS}
      submit="Save code host"
      disabled={!s.ready}
      actions={<RemoveButton shown={current !== null} busy={s.removing} onClick={s.drop} label="Remove code host" />}
    >
      <p class="muted">
        Jobs created with a <code>commit</code> and a <code>repository</code> report here: a GitHub check run or a GitLab commit status,
        {current ? ` now to ${current.kind === 'github' ? 'GitHub' : 'GitLab'} at ${current.apiUrl}.` : ' once one is set.'}
      </p>
      <ForgeSignIn form={s.form} set={s.set} error={s.action.error} current={current} />
      <ForgeReport form={s.form} set={s.set} error={s.action.error} />
    </SettingsForm>
  );
}

const TRACKER_FIELDS = ['/kind', '/baseUrl', '/projectKey', '/issueType', '/apiVersion', '/email', '/repository', '/token'];
const EMPTY_TRACKER = {
  kind: 'jira',
  baseUrl: '',
  apiVersion: '3',
  email: '',
  token: '',
  projectKey: '',
  issueType: '',
  repository: '',
};
type TrackerForm = typeof EMPTY_TRACKER;

/** What the form shows again of a stored tracker (never its token). */
const fillTracker = (t: TrackerSettings): Partial<TrackerForm> => ({
  kind: t.kind,
  baseUrl: t.baseUrl,
  apiVersion: String(t.apiVersion ?? 3),
  email: t.email ?? '',
  projectKey: t.projectKey ?? '',
  issueType: t.issueType ?? '',
  repository: t.repository ?? '',
});

/** The body of a save, by kind; an empty token keeps the stored one. */
function trackerBody(form: TrackerForm) {
  const token = form.token ? { token: form.token } : {};
  if (form.kind !== 'jira')
    return {
      kind: 'github' as const,
      repository: form.repository.trim(),
      ...(form.baseUrl.trim() ? { baseUrl: form.baseUrl.trim() } : {}),
      ...token,
    };
  return {
    kind: 'jira' as const,
    baseUrl: form.baseUrl.trim(),
    apiVersion: form.apiVersion === '2' ? (2 as const) : (3 as const),
    email: form.email.trim() || null,
    projectKey: form.projectKey.trim(),
    ...(form.issueType.trim() ? { issueType: form.issueType.trim() } : {}),
    ...token,
  };
}

/** Where in Jira an issue goes: the project, the issue type, the API version and the account. */
function JiraFields({ form, set, error }: FieldsProps<TrackerForm>) {
  return (
    <>
      <div class="form-row">
        <TextField
          label="Project key"
          name="projectKey"
          value={form.projectKey}
          onInput={(projectKey) => set({ projectKey })}
          problem={problemAt(error, '/projectKey')}
          required
        />
        <TextField
          label="Issue type"
          name="issueType"
          value={form.issueType}
          onInput={(issueType) => set({ issueType })}
          problem={problemAt(error, '/issueType')}
          placeholder="Bug"
        />
        <SelectField
          label="REST API"
          name="apiVersion"
          value={form.apiVersion}
          options={[
            { value: '3', label: 'v3 (Cloud)' },
            { value: '2', label: 'v2 (Server, Data Center)' },
          ]}
          onChange={(apiVersion) => set({ apiVersion })}
          problem={problemAt(error, '/apiVersion')}
        />
      </div>
      <TextField
        label="Account e-mail"
        name="email"
        type="email"
        value={form.email}
        onInput={(email) => set({ email })}
        problem={problemAt(error, '/email')}
        hint="Jira Cloud: the account of the API token. Empty: the token is a personal access token."
      />
    </>
  );
}

/** Which tracker and where it is. */
function TrackerPlace({ form, set, error }: FieldsProps<TrackerForm>) {
  const jira = form.kind === 'jira';
  return (
    <>
      <SelectField
        label="Tracker"
        name="trackerKind"
        value={form.kind}
        options={[
          { value: 'jira', label: 'Jira' },
          { value: 'github', label: 'GitHub Issues' },
        ]}
        onChange={(kind) => set({ kind })}
        problem={problemAt(error, '/kind')}
      />
      <TextField
        label={jira ? 'Jira site' : 'API URL'}
        name="baseUrl"
        type="url"
        value={form.baseUrl}
        onInput={(baseUrl) => set({ baseUrl })}
        problem={problemAt(error, '/baseUrl')}
        placeholder={jira ? 'https://acme.atlassian.net' : 'https://api.github.com'}
        required={jira}
      />
      {jira ? (
        <JiraFields form={form} set={set} error={error} />
      ) : (
        <TextField
          label="Repository (owner/name)"
          name="repository"
          value={form.repository}
          onInput={(repository) => set({ repository })}
          problem={problemAt(error, '/repository')}
          required
        />
      )}
    </>
  );
}

/** Jira or GitHub Issues: where "Create issue" on an error group or a run files to. */
export function IssueTrackerForm({ projectId }: { projectId: string }) {
  const s = useStoredSettings({
    load: (client) => client.call(v1.integrations.getIssueTracker, { params: { projectId } }).then((r) => r.tracker ?? null),
    deps: [projectId],
    initial: EMPTY_TRACKER,
    fill: fillTracker,
    remove: (client) => client.call(v1.integrations.deleteIssueTracker, { params: { projectId } }),
    removed: 'Removed the issue tracker.',
  });
  const submit = async () => {
    const saved = await s.action.run(
      (client) => client.call(PUT_TRACKER, { params: { projectId }, body: trackerBody(s.form) }),
      () => 'Saved the issue tracker.',
    );
    if (saved) {
      s.setCurrent(saved.tracker);
      s.setForm({ ...s.form, token: '' });
    }
  };
  return (
    <SettingsForm
      title="Issue tracker"
      onSubmit={submit}
      action={{ busy: s.action.busy, error: s.error, done: s.done }}
      fields={TRACKER_FIELDS}
      submit="Save issue tracker"
      disabled={!s.ready}
      actions={<RemoveButton shown={s.current !== null} busy={s.removing} onClick={s.drop} label="Remove issue tracker" />}
    >
      <p class="muted">"Create issue" on an error group or a run files it here, with the failure, the steps and links back.</p>
      <TrackerPlace form={s.form} set={s.set} error={s.action.error} />
      <SecretField
        label="Token"
        name="trackerToken"
        value={s.form.token}
        set={s.current?.tokenSet ?? false}
        onInput={(token) => s.set({ token })}
        problem={problemAt(s.action.error, '/token')}
      />
    </SettingsForm>
  );
}
