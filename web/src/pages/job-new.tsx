import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import '../admin/admin.css';
import { Page, PageWaiting } from '../components.tsx';
import { useApi } from '../data.ts';
import { bodyField, FormProblem, problemAt, TextField } from '../forms.tsx';
import { loadTests, type TestFilter } from '../tcm/tests-api.ts';

const CREATE = v1.jobs.createJob;
const LABELS = ['branch', 'build', 'environment', 'commit'] as const;

/** Words separated by commas or spaces, each once. */
const wordsOf = (text: string) => [...new Set(text.split(/[\s,]+/).filter(Boolean))];

/** What the address asks to run: chosen tests (`tests=id,id`), a suite, or a tag. */
function selectionOf(query: Record<string, string>): { filter: TestFilter; ids: string[] | undefined; says: string } {
  if (query.tests) return { filter: {}, ids: query.tests.split(','), says: 'the chosen tests' };
  if (query.suite) return { filter: { suite: query.suite }, ids: undefined, says: `suite ${query.suite}` };
  if (query.tag) return { filter: { tag: query.tag }, ids: undefined, says: `tag ${query.tag}` };
  return { filter: {}, ids: undefined, says: 'every test' };
}

/**
 * Launch a job (JOB-2): the tests the address chose (a selection, a suite or a tag), on the devices
 * chosen by id or by label, with its labels. One queued run per test and device.
 */
export function NewJobPage({ projectKey }: { projectKey: string }) {
  const { query, route } = useLocation();
  const selection = selectionOf(query);
  const data = useApi(
    async (client) => {
      const project = await client.call(v1.projects.getProject, { params: { projectId: projectKey } });
      const [tests, devices] = await Promise.all([
        loadTests(client, project.id, selection.filter),
        client.call(v1.devices.listDevices, { query: { limit: 200 } }),
      ]);
      return { project, tests: selection.ids ? tests.filter((t) => selection.ids?.includes(t.id)) : tests, devices: devices.items };
    },
    [projectKey, JSON.stringify(query)],
  );
  const action = useAction();
  // Until the person changes it, every test the address chose is chosen.
  const [changed, setChosen] = useState<Set<string> | undefined>();
  const [deviceIds, setDeviceIds] = useState<Set<string>>(new Set());
  const [form, setForm] = useState<Record<string, string>>({
    name: '',
    deviceLabels: '',
    branch: '',
    build: '',
    environment: '',
    commit: '',
  });
  if (!data.data) return <PageWaiting title="New job" error={data.error} />;
  const { project, tests, devices } = data.data;
  const chosen = changed ?? new Set(tests.map((t) => t.id));
  const set = (name: string) => (value: string) => setForm({ ...form, [name]: value });
  const toggle = (items: Set<string>, id: string, on: boolean) => {
    const next = new Set(items);
    if (on) next.add(id);
    else next.delete(id);
    return next;
  };
  const submit = async (event: Event) => {
    event.preventDefault();
    const labels = Object.fromEntries(LABELS.filter((l) => form[l]?.trim()).map((l) => [l, form[l]?.trim()]));
    const job = await action.run(
      (client) =>
        client.call(CREATE, {
          body: {
            projectId: project.id,
            ...(form.name?.trim() ? { name: form.name.trim() } : {}),
            testIds: tests.filter((t) => chosen.has(t.id)).map((t) => t.id),
            deviceIds: [...deviceIds],
            deviceLabels: wordsOf(form.deviceLabels ?? ''),
            ...labels,
          },
        }),
      (created) => `Launched ${created.name}.`,
    );
    if (job) route(`/jobs/${job.id}`);
  };
  const fields = ['/name', '/testIds', '/deviceIds', '/deviceLabels', ...LABELS.map((l) => `/${l}`)];
  return (
    <Page title={`${project.key} · New job`}>
      <form class="form launch-form" onSubmit={submit} aria-label="New job">
        <p>
          Runs {selection.says}: {chosen.size} of {tests.length} test{tests.length === 1 ? '' : 's'} chosen.
        </p>
        <TextField
          label="Job name"
          name="name"
          value={form.name ?? ''}
          onInput={set('name')}
          schema={bodyField(CREATE, 'name')}
          hint="Left empty, the server names it."
          problem={problemAt(action.error, '/name')}
        />
        <fieldset class="choices">
          <legend>Tests</legend>
          {tests.length === 0 ? <p class="muted">No test matches.</p> : null}
          {tests.map((test) => (
            <label class="checkbox" key={test.id}>
              <input
                type="checkbox"
                checked={chosen.has(test.id)}
                onChange={(e) => setChosen(toggle(chosen, test.id, e.currentTarget.checked))}
              />
              {test.name}
            </label>
          ))}
          {problemAt(action.error, '/testIds') ? (
            <span class="field-problem" role="alert">
              {problemAt(action.error, '/testIds')}
            </span>
          ) : null}
        </fieldset>
        <fieldset class="choices">
          <legend>Devices</legend>
          {devices.length === 0 ? <p class="muted">No device in the lab: each test runs once, without a device.</p> : null}
          {devices.map((device) => (
            <label class="checkbox" key={device.id}>
              <input
                type="checkbox"
                checked={deviceIds.has(device.id)}
                onChange={(e) => setDeviceIds(toggle(deviceIds, device.id, e.currentTarget.checked))}
              />
              {device.name}{' '}
              <span class="muted">
                ({device.platform}, {device.status})
              </span>
            </label>
          ))}
          {problemAt(action.error, '/deviceIds') ? (
            <span class="field-problem" role="alert">
              {problemAt(action.error, '/deviceIds')}
            </span>
          ) : null}
        </fieldset>
        <TextField
          label="Device labels"
          name="deviceLabels"
          value={form.deviceLabels ?? ''}
          onInput={set('deviceLabels')}
          hint="Every device carrying any of these labels, separated by commas: android, tablet."
          problem={problemAt(action.error, '/deviceLabels')}
        />
        <div class="form-row">
          {LABELS.map((label) => (
            <TextField
              key={label}
              label={label[0]?.toUpperCase() + label.slice(1)}
              name={label}
              value={form[label] ?? ''}
              onInput={set(label)}
              schema={bodyField(CREATE, label)}
              problem={problemAt(action.error, `/${label}`)}
            />
          ))}
        </div>
        <FormProblem error={action.error} fields={fields} />
        <div class="form-actions">
          <button type="submit" disabled={action.busy || chosen.size === 0}>
            Launch job
          </button>
          <a href={`/projects/${project.key}/tests`}>Back to the tests</a>
        </div>
      </form>
    </Page>
  );
}
