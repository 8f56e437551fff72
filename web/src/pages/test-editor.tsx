import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import type { Static } from 'typebox';
import { TestLink, TestStep, TestSuite } from '../../../src/api/v1/tests.ts';
import { type AttestClient, v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import '../admin/admin.css';
import { Page, PageWaiting } from '../components.tsx';
import { useApi } from '../data.ts';
import { BodyTextField, Field, type FieldProblem, FormProblem, fieldProblems, problemAt, TextField } from '../forms.tsx';
import { GherkinEditor } from '../tcm/gherkin-editor.tsx';
import type { TestDefinition } from '../tcm/tests-api.ts';
import './tests.css';

type Step = Static<typeof TestStep>;
type Link = Static<typeof TestLink>;
type Mode = 'steps' | 'gherkin';

const CREATE = v1.tests.createTest;
const STEP = TestStep.properties;
const LINK = TestLink.properties;

const GHERKIN_START = `Feature: 
  Scenario: 
    Given 
    When 
    Then 
`;

/** What the form holds; the API's body is made from it on save. */
interface Draft {
  mode: Mode;
  name: string;
  description: string;
  tags: string;
  suite: string;
  steps: Step[];
  gherkin: string;
  links: Link[];
}

const draftOf = (test: TestDefinition | undefined): Draft => ({
  mode: test?.sourceFormat === 'gherkin' ? 'gherkin' : test ? 'steps' : 'steps',
  name: test?.name ?? '',
  description: test?.description ?? '',
  tags: test?.tags.join(', ') ?? '',
  suite: test?.suite ?? '',
  steps: test?.steps.length ? test.steps.map((s) => ({ ...s })) : [{ action: '', data: '', expected: '' }],
  gherkin: test?.source ?? GHERKIN_START,
  links: test?.links.map((l) => ({ ...l })) ?? [],
});

/** The fields as the API takes them: empty optional strings left out, tags split on commas and spaces. */
function bodyOf(draft: Draft) {
  const links = draft.links.map((link) =>
    Object.fromEntries(Object.entries(link).filter(([, v]) => typeof v !== 'string' || v.trim() !== '')),
  ) as Link[];
  const shared = { suite: draft.suite.trim() || null, links };
  if (draft.mode === 'gherkin') return { ...shared, gherkin: draft.gherkin };
  return {
    ...shared,
    name: draft.name.trim(),
    description: draft.description.trim(),
    tags: [
      ...new Set(
        draft.tags
          .split(/[\s,]+/)
          .map((t) => t.replace(/^@/, ''))
          .filter(Boolean),
      ),
    ],
    steps: draft.steps.map((s) => ({ action: s.action, expected: s.expected, ...(s.data?.trim() ? { data: s.data } : {}) })),
  };
}

function StepEditor({
  index,
  step,
  count,
  error,
  onChange,
  onMove,
  onRemove,
}: {
  index: number;
  step: Step;
  count: number;
  error: Error | undefined;
  onChange: (step: Step) => void;
  onMove: (by: number) => void;
  onRemove: () => void;
}) {
  const n = index + 1;
  const area = (name: 'action' | 'data' | 'expected', label: string) => (
    <Field label={label} problem={problemAt(error, `/steps/${index}/${name}`)}>
      {({ id, describedBy, invalid }) => (
        <textarea
          id={id}
          rows={2}
          value={step[name] ?? ''}
          required={name === 'action'}
          maxLength={(STEP[name] as { maxLength?: number }).maxLength}
          aria-describedby={describedBy}
          aria-invalid={invalid || undefined}
          onInput={(e) => onChange({ ...step, [name]: e.currentTarget.value })}
        />
      )}
    </Field>
  );
  return (
    <li class="step-editor" aria-label={`Step ${n}`}>
      <strong>Step {n}</strong>
      {area('action', `Action of step ${n}`)}
      {area('data', `Data of step ${n}`)}
      {area('expected', `Expected result of step ${n}`)}
      <div class="form-actions">
        <button type="button" class="secondary" disabled={index === 0} onClick={() => onMove(-1)}>
          Move step {n} up
        </button>
        <button type="button" class="secondary" disabled={index === count - 1} onClick={() => onMove(1)}>
          Move step {n} down
        </button>
        <button type="button" class="secondary" disabled={count === 1} onClick={onRemove}>
          Remove step {n}
        </button>
      </div>
    </li>
  );
}

function LinksEditor({ links, error, onChange }: { links: Link[]; error: Error | undefined; onChange: (links: Link[]) => void }) {
  const set = (i: number, link: Link) => onChange(links.map((l, j) => (j === i ? link : l)));
  return (
    <fieldset class="choices">
      <legend>Links to requirements and issues</legend>
      {links.length === 0 ? <p class="muted">No link yet.</p> : null}
      {links.map((link, i) => (
        <div class="link-row" key={i}>
          <Field label={`Kind of link ${i + 1}`} problem={problemAt(error, `/links/${i}/kind`)}>
            {({ id }) => (
              <select id={id} value={link.kind} onChange={(e) => set(i, { ...link, kind: e.currentTarget.value as Link['kind'] })}>
                <option value="requirement">requirement</option>
                <option value="issue">issue</option>
              </select>
            )}
          </Field>
          <TextField
            label={`Key of link ${i + 1}`}
            name={`link-key-${i}`}
            value={link.key ?? ''}
            placeholder="SHOP-12"
            schema={LINK.key}
            onInput={(key) => set(i, { ...link, key })}
            problem={problemAt(error, `/links/${i}/key`) ?? problemAt(error, `/links/${i}`)}
          />
          <TextField
            label={`URL of link ${i + 1}`}
            name={`link-url-${i}`}
            type="url"
            value={link.url ?? ''}
            schema={LINK.url}
            onInput={(url) => set(i, { ...link, url })}
            problem={problemAt(error, `/links/${i}/url`)}
          />
          <TextField
            label={`Title of link ${i + 1}`}
            name={`link-title-${i}`}
            value={link.title ?? ''}
            schema={LINK.title}
            onInput={(title) => set(i, { ...link, title })}
            problem={problemAt(error, `/links/${i}/title`)}
          />
          <button type="button" class="secondary" onClick={() => onChange(links.filter((_, j) => j !== i))}>
            Remove link {i + 1}
          </button>
        </div>
      ))}
      <div>
        <button type="button" class="secondary" onClick={() => onChange([...links, { kind: 'requirement', key: '' }])}>
          Add link
        </button>
      </div>
    </fieldset>
  );
}

/** The test being edited (and its project), or the project a new test goes into. */
async function loadTarget(client: AttestClient, props: { projectKey?: string; testId?: string }) {
  const test = props.testId ? await client.call(v1.tests.getTest, { params: { testId: props.testId } }) : undefined;
  const project = await client.call(v1.projects.getProject, { params: { projectId: test?.projectId ?? props.projectKey ?? '' } });
  return { test, project };
}

/** A test written as a Gherkin feature, its syntax errors at their lines. */
function GherkinField(props: { value: string; onInput: (text: string) => void; problems: FieldProblem[] }) {
  return (
    <Field label="Gherkin feature" problem={undefined} hint="Name, description, tags and steps come from the feature.">
      {({ id, describedBy }) => <GherkinEditor id={id} describedBy={describedBy} {...props} />}
    </Field>
  );
}

/** Written as steps or as a Gherkin feature. */
function ModeChoice({ mode, onChange }: { mode: Draft['mode']; onChange: (mode: Draft['mode']) => void }) {
  return (
    <fieldset class="choices">
      <legend>Written as</legend>
      <label class="checkbox">
        <input type="radio" name="mode" checked={mode === 'steps'} onChange={() => onChange('steps')} />
        Steps (action, data, expected result)
      </label>
      <label class="checkbox">
        <input type="radio" name="mode" checked={mode === 'gherkin'} onChange={() => onChange('gherkin')} />
        Gherkin
      </label>
    </fieldset>
  );
}

/** A test written as steps: its name, description and tags, and its steps in order. */
function StepsFields({ draft, set, error }: { draft: Draft; set: (changes: Partial<Draft>) => void; error: Error | undefined }) {
  const setStep = (i: number, step: Step) => set({ steps: draft.steps.map((s, j) => (j === i ? step : s)) });
  const moveStep = (i: number, by: number) => {
    const steps = [...draft.steps];
    const [step] = steps.splice(i, 1);
    steps.splice(i + by, 0, step as Step);
    set({ steps });
  };
  return (
    <>
      <BodyTextField
        endpoint={CREATE}
        error={error}
        label="Name"
        name="name"
        value={draft.name}
        required
        onInput={(name) => set({ name })}
      />
      <BodyTextField
        endpoint={CREATE}
        error={error}
        label="Description"
        name="description"
        value={draft.description}
        onInput={(description) => set({ description })}
      />
      <TextField
        label="Tags"
        name="tags"
        value={draft.tags}
        placeholder="smoke, checkout"
        hint="Separated by commas or spaces, without @."
        onInput={(tags) => set({ tags })}
        problem={problemAt(error, '/tags')}
      />
      <ol class="step-list" aria-label="Steps">
        {draft.steps.map((step, i) => (
          <StepEditor
            key={i}
            index={i}
            step={step}
            count={draft.steps.length}
            error={error}
            onChange={(s) => setStep(i, s)}
            onMove={(by) => moveStep(i, by)}
            onRemove={() => set({ steps: draft.steps.filter((_, j) => j !== i) })}
          />
        ))}
      </ol>
      <div>
        <button type="button" class="secondary" onClick={() => set({ steps: [...draft.steps, { action: '', data: '', expected: '' }] })}>
          Add step
        </button>
      </div>
    </>
  );
}

/**
 * Write a test (TCM-1): as steps (action, data, expected result) or as a Gherkin feature, whose
 * syntax errors the server finds and the page shows at their lines; its suite and links. Editing
 * saves a new version (the one it was made on is sent: a test changed meanwhile is not overwritten).
 */
export function TestEditorPage(props: { projectKey?: string; testId?: string }) {
  const target = useApi((client) => loadTarget(client, props), [props.projectKey, props.testId]);
  if (!target.data) return <PageWaiting title={props.testId ? 'Edit test' : 'New test'} error={target.error} />;
  return <TestForm key={target.data.test?.id ?? target.data.project.id} {...target.data} />;
}

type Target = Awaited<ReturnType<typeof loadTarget>>;

/** A new version of the test, made on the one the form was filled from; or a new test in the project. */
function saveTest(client: AttestClient, { test, project }: Target, body: ReturnType<typeof bodyOf>) {
  return test
    ? client.call(v1.tests.updateTest, { params: { testId: test.id }, body: { ...body, version: test.version } })
    : client.call(CREATE, { body: { projectId: project.id, ...body } });
}

/** The form of the test, filled from it (or empty for a new one); saving opens the test's page. */
function TestForm({ test, project }: Target) {
  const { route } = useLocation();
  const action = useAction();
  const [draft, setDraft] = useState<Draft>(() => draftOf(test));
  const set = (changes: Partial<Draft>) => setDraft({ ...draft, ...changes });
  const submit = async (event: Event) => {
    event.preventDefault();
    const saved = await action.run(
      (client) => saveTest(client, { test, project }, bodyOf(draft)),
      (t) => `Saved ${t.name}, version ${t.version}.`,
    );
    if (saved) route(`/tests/${saved.id}`);
  };
  const gherkinProblems = fieldProblems(action.error).filter((p) => p.pointer === '/gherkin' || p.pointer === '');
  const fields = ['/name', '/description', '/tags', '/suite', '/steps', '/links', '/gherkin'];
  const title = test ? `Edit ${test.name}` : `${project.key} · New test`;
  return (
    <Page title={title}>
      <form class="form test-form" onSubmit={submit} aria-label={test ? 'Edit test' : 'New test'}>
        {test ? (
          <p class="muted">
            Version {test.version}. Saving makes version {test.version + 1}; runs keep the version they executed.
          </p>
        ) : null}
        <ModeChoice mode={draft.mode} onChange={(mode) => set({ mode })} />
        <TextField
          label="Suite"
          name="suite"
          value={draft.suite}
          placeholder="Checkout/Payments"
          hint="A folder path, its parts separated by /. Empty: no folder."
          schema={TestSuite}
          onInput={(suite) => set({ suite })}
          problem={problemAt(action.error, '/suite')}
        />
        {draft.mode === 'gherkin' ? (
          <GherkinField value={draft.gherkin} onInput={(gherkin) => set({ gherkin })} problems={gherkinProblems} />
        ) : (
          <StepsFields draft={draft} set={set} error={action.error} />
        )}
        <LinksEditor links={draft.links} error={action.error} onChange={(links) => set({ links })} />
        {gherkinProblems.length === 0 ? <FormProblem error={action.error} fields={fields} /> : null}
        <div class="form-actions">
          <button type="submit" disabled={action.busy}>
            {test ? 'Save test' : 'Create test'}
          </button>
          <a href={test ? `/tests/${test.id}` : `/projects/${project.key}/tests`}>Cancel</a>
        </div>
      </form>
    </Page>
  );
}
