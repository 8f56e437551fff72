import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import '../admin/admin.css';
import { Page, PageWaiting } from '../components.tsx';
import { useApi } from '../data.ts';
import { BodyTextField, bodyField, FieldProblemNote, FormProblem, problemAt, TextField } from '../forms.tsx';
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

/** The project, the tests the address chose and the lab's devices. */
function useLaunchData(projectKey: string, query: Record<string, string>) {
  const selection = selectionOf(query);
  return useApi(
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
}

const toggled = (items: Set<string>, id: string, on: boolean) => {
  const next = new Set(items);
  if (on) next.add(id);
  else next.delete(id);
  return next;
};

/** Checkboxes, one an item, with the API's problem with the choice under them. */
function Choices<T extends { id: string }>(props: {
  legend: string;
  items: T[];
  empty: string;
  chosen: Set<string>;
  onChange: (chosen: Set<string>) => void;
  label: (item: T) => ComponentChildren;
  problem: string | undefined;
}) {
  const { items, chosen, problem } = props;
  return (
    <fieldset class="choices">
      <legend>{props.legend}</legend>
      {items.length === 0 ? <p class="muted">{props.empty}</p> : null}
      {items.map((item) => (
        <label class="checkbox" key={item.id}>
          <input
            type="checkbox"
            checked={chosen.has(item.id)}
            onChange={(e) => props.onChange(toggled(chosen, item.id, e.currentTarget.checked))}
          />
          {props.label(item)}
        </label>
      ))}
      <FieldProblemNote problem={problem} />
    </fieldset>
  );
}

type Device = { id: string; name: string; platform: string; status: string };

/** The lab's devices to run on, each with its platform and status. */
function DeviceChoices(props: { devices: Device[]; chosen: Set<string>; onChange: (c: Set<string>) => void; problem: string | undefined }) {
  return (
    <Choices
      legend="Devices"
      items={props.devices}
      empty="No device in the lab: each test runs once, without a device."
      chosen={props.chosen}
      onChange={props.onChange}
      label={(device) => (
        <>
          {device.name}{' '}
          <span class="muted">
            ({device.platform}, {device.status})
          </span>
        </>
      )}
      problem={props.problem}
    />
  );
}

type LaunchForm = Record<string, string>;

/** The body of the job: its name if one is given, the tests, the devices by id and by label, the job's labels. */
function jobBody(projectId: string, form: LaunchForm, testIds: string[], deviceIds: Set<string>) {
  const labels = Object.fromEntries(LABELS.filter((l) => form[l]?.trim()).map((l) => [l, form[l]?.trim()]));
  return {
    projectId,
    ...(form.name?.trim() ? { name: form.name.trim() } : {}),
    testIds,
    deviceIds: [...deviceIds],
    deviceLabels: wordsOf(form.deviceLabels ?? ''),
    ...labels,
  };
}

/** The device labels and the job's own labels (branch, build, environment, commit). */
function LabelFields({ form, set, error }: { form: LaunchForm; set: (name: string) => (value: string) => void; error: Error | undefined }) {
  return (
    <>
      <TextField
        label="Device labels"
        name="deviceLabels"
        value={form.deviceLabels ?? ''}
        onInput={set('deviceLabels')}
        hint="Every device carrying any of these labels, separated by commas: android, tablet."
        problem={problemAt(error, '/deviceLabels')}
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
            problem={problemAt(error, `/${label}`)}
          />
        ))}
      </div>
    </>
  );
}

const FIELDS = ['/name', '/testIds', '/deviceIds', '/deviceLabels', ...LABELS.map((l) => `/${l}`)];

/**
 * Launch a job (JOB-2): the tests the address chose (a selection, a suite or a tag), on the devices
 * chosen by id or by label, with its labels. One queued run per test and device.
 */
export function NewJobPage({ projectKey }: { projectKey: string }) {
  const { query, route } = useLocation();
  const data = useLaunchData(projectKey, query);
  const action = useAction();
  // Until the person changes it, every test the address chose is chosen.
  const [changed, setChosen] = useState<Set<string> | undefined>();
  const [deviceIds, setDeviceIds] = useState<Set<string>>(new Set());
  const [form, setForm] = useState<LaunchForm>({ name: '', deviceLabels: '', branch: '', build: '', environment: '', commit: '' });
  if (!data.data) return <PageWaiting title="New job" error={data.error} />;
  const { project, tests, devices } = data.data;
  const chosen = changed ?? new Set(tests.map((t) => t.id));
  const set = (name: string) => (value: string) => setForm({ ...form, [name]: value });
  const submit = async (event: Event) => {
    event.preventDefault();
    const testIds = tests.filter((t) => chosen.has(t.id)).map((t) => t.id);
    const job = await action.run(
      (client) => client.call(CREATE, { body: jobBody(project.id, form, testIds, deviceIds) }),
      (created) => `Launched ${created.name}.`,
    );
    if (job) route(`/jobs/${job.id}`);
  };
  return (
    <Page title={`${project.key} · New job`}>
      <form class="form launch-form" onSubmit={submit} aria-label="New job">
        <p>
          Runs {selectionOf(query).says}: {chosen.size} of {tests.length} test{tests.length === 1 ? '' : 's'} chosen.
        </p>
        <BodyTextField
          endpoint={CREATE}
          error={action.error}
          label="Job name"
          name="name"
          value={form.name ?? ''}
          onInput={set('name')}
          hint="Left empty, the server names it."
        />
        <Choices
          legend="Tests"
          items={tests}
          empty="No test matches."
          chosen={chosen}
          onChange={setChosen}
          label={(test) => test.name}
          problem={problemAt(action.error, '/testIds')}
        />
        <DeviceChoices devices={devices} chosen={deviceIds} onChange={setDeviceIds} problem={problemAt(action.error, '/deviceIds')} />
        <LabelFields form={form} set={set} error={action.error} />
        <FormProblem error={action.error} fields={FIELDS} />
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
