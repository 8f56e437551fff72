import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import { atLeast, useMe } from '../admin/me.ts';
import { SettingsForm } from '../admin/settings-form.tsx';
import { ErrorBox, Loading, Page } from '../components.tsx';
import { useApi } from '../data.ts';
import { BodyTextField } from '../forms.tsx';
import { UsageSummary } from '../usage.tsx';

const CREATE = v1.projects.createProject;

/** A new project (managers and admins): its short key and its name; the API checks both as the fields do. */
/** The new project's key and name, and its description when one is written. */
const projectBody = (form: { key: string; name: string; description: string }) => ({
  key: form.key.trim(),
  name: form.name.trim(),
  ...(form.description.trim() ? { description: form.description.trim() } : {}),
});

function NewProjectForm({ onCancel }: { onCancel: () => void }) {
  const { route } = useLocation();
  const action = useAction();
  const [form, setForm] = useState({ key: '', name: '', description: '' });
  const set = (field: keyof typeof form) => (value: string) => setForm({ ...form, [field]: value });
  const submit = async () => {
    const created = await action.run(
      (client) => client.call(CREATE, { body: projectBody(form) }),
      (project) => `Created ${project.key}.`,
    );
    if (created) route(`/projects/${created.key}`);
  };
  return (
    <SettingsForm
      title="New project"
      onSubmit={submit}
      action={{ busy: action.busy, error: action.error }}
      fields={['/key', '/name', '/description']}
      submit="Create project"
      actions={
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      }
    >
      <div class="form-row">
        <BodyTextField
          endpoint={CREATE}
          error={action.error}
          label="Key"
          name="key"
          value={form.key}
          onInput={(value) => set('key')(value.toUpperCase())}
          hint="2 to 16 capitals and digits, starting with a letter: WEB, SHOP2."
          required
        />
        <BodyTextField endpoint={CREATE} error={action.error} label="Name" name="name" value={form.name} onInput={set('name')} required />
      </div>
      <BodyTextField
        endpoint={CREATE}
        error={action.error}
        label="Description"
        name="description"
        value={form.description}
        onInput={set('description')}
      />
    </SettingsForm>
  );
}

/** The projects the signed-in user can see, and a new one for managers. */
export function ProjectsPage() {
  const projects = useApi((client) => client.call(v1.projects.listProjects, { query: { limit: 200 } }), []);
  const me = useMe();
  const [creating, setCreating] = useState(false);
  const canCreate = atLeast(me.data?.role, 'manager');
  return (
    <Page
      title="Projects"
      actions={
        canCreate && !creating ? (
          <button type="button" onClick={() => setCreating(true)}>
            New project
          </button>
        ) : null
      }
    >
      {creating ? <NewProjectForm onCancel={() => setCreating(false)} /> : null}
      {projects.error ? <ErrorBox error={projects.error} /> : null}
      {projects.data === undefined ? (
        <Loading />
      ) : projects.data.items.length === 0 ? (
        <p class="muted">No project yet, or none you are a member of.</p>
      ) : (
        <ul class="cards">
          {projects.data.items.map((project) => (
            <li key={project.id}>
              <a class="card" href={`/projects/${project.key}`}>
                <span class="card-key">{project.key}</span>
                <span class="card-title">{project.name}</span>
                {project.description ? <span class="muted">{project.description}</span> : null}
                <UsageSummary usage={project.usage} />
              </a>
            </li>
          ))}
        </ul>
      )}
    </Page>
  );
}
