import { useState } from 'preact/hooks';
import type { Static } from 'typebox';
import { TRIAGE_DEFAULTS, TriageSettings } from '../../../src/api/v1/projects.ts';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import { SettingsForm } from '../admin/settings-form.tsx';
import { BodyTextField, problemAt, TextField } from '../forms.tsx';

type Project = Static<typeof v1.projects.Project>;
type NumberSetting = Exclude<keyof typeof TRIAGE_DEFAULTS, 'autoQuarantine'>;

const UPDATE = v1.projects.updateProject;

/** The numeric thresholds, grouped as docs/triage.md explains them, each labelled in words. */
const GROUPS: { title: string; fields: { name: NumberSetting; label: string }[] }[] = [
  {
    title: 'Health',
    fields: [
      { name: 'healthWindow', label: 'Latest outcomes read' },
      { name: 'brokenAfter', label: 'Failures in a row that make a test broken' },
    ],
  },
  {
    title: 'Retry monitor',
    fields: [
      { name: 'retryWindow', label: 'Latest outcomes read' },
      { name: 'retryMinSamples', label: 'Outcomes needed' },
      { name: 'retryMinEvents', label: 'Retries that fire it' },
    ],
  },
  {
    title: 'Rate monitor',
    fields: [
      { name: 'rateWindow', label: 'Latest outcomes read' },
      { name: 'rateMinSamples', label: 'Outcomes needed' },
      { name: 'rateThreshold', label: 'Failure rate that fires it (0 to 1)' },
    ],
  },
  {
    title: 'Outage guard and fixes',
    fields: [
      { name: 'incidentMinFailures', label: 'Failed tests before a job can be an incident' },
      { name: 'incidentShare', label: 'Share of failures one cause must exceed (0 to 1)' },
      { name: 'fixPasses', label: 'Passing runs that verify a fix' },
    ],
  },
];

const asText = (settings: Project['triage']) =>
  Object.fromEntries(GROUPS.flatMap((g) => g.fields.map(({ name }) => [name, String(settings[name])]))) as Record<NumberSetting, string>;

/** The thresholds, by group, each with its default beside it; an empty one takes the default. */
function Thresholds({
  values,
  onChange,
  error,
}: {
  values: Record<string, string>;
  onChange: (v: Record<string, string>) => void;
  error: Error | undefined;
}) {
  return (
    <>
      {GROUPS.map((group) => (
        <fieldset key={group.title}>
          <legend>{group.title}</legend>
          <div class="form-row">
            {group.fields.map(({ name, label }) => (
              <TextField
                key={name}
                label={label}
                name={name}
                type="number"
                value={values[name] as string}
                hint={`Default ${TRIAGE_DEFAULTS[name]}`}
                onInput={(value) => onChange({ ...values, [name]: value })}
                schema={TriageSettings.properties[name]}
                problem={problemAt(error, `/triage/${name}`)}
              />
            ))}
          </div>
        </fieldset>
      ))}
    </>
  );
}

/**
 * The project's default branch (TRIAGE-16) and its triage settings (TRIAGE-4, -6, -11, -13): each
 * field holds the value in effect, and saving makes them all the project's own; "Use the defaults"
 * returns every threshold to the defaults. An empty default branch returns to inferring it from
 * the jobs.
 */
export function TriageForm({ project, onSaved }: { project: Project; onSaved: (p: Project) => void }) {
  const action = useAction();
  const [branch, setBranch] = useState(project.defaultBranchInferred ? '' : (project.defaultBranch ?? ''));
  const [values, setValues] = useState(asText(project.triage));
  const [autoQuarantine, setAutoQuarantine] = useState(project.triage.autoQuarantine);
  const save = async (triage: Record<string, number | boolean> | null) => {
    const saved = await action.run(
      (client) => client.call(UPDATE, { params: { projectId: project.id }, body: { defaultBranch: branch.trim() || null, triage } }),
      (p) =>
        `Saved. Default branch: ${p.defaultBranch ?? 'none yet'}${p.defaultBranchInferred && p.defaultBranch ? ' (inferred from the jobs)' : ''}.`,
    );
    if (saved) {
      setValues(asText(saved.triage));
      setAutoQuarantine(saved.triage.autoQuarantine);
      onSaved(saved);
    }
  };
  const submit = () => {
    const triage: Record<string, number | boolean> = { autoQuarantine };
    for (const [name, text] of Object.entries(values)) if (text.trim() !== '') triage[name] = Number(text);
    return save(triage);
  };
  const inferred = project.defaultBranchInferred && project.defaultBranch ? project.defaultBranch : undefined;
  return (
    <SettingsForm title="Triage" action={action} fields={['/defaultBranch', '/triage']} submit="Save triage settings" onSubmit={submit}>
      <BodyTextField
        endpoint={UPDATE}
        error={action.error}
        label="Default branch"
        name="defaultBranch"
        value={branch}
        placeholder={inferred}
        hint={
          inferred
            ? `Jobs on other branches are compared with it. Empty: ${inferred}, inferred from the latest jobs.`
            : 'Jobs on other branches are compared with it. Empty: inferred from the latest jobs.'
        }
        onInput={setBranch}
      />
      <label class="checkbox">
        <input type="checkbox" checked={autoQuarantine} onChange={(e) => setAutoQuarantine(e.currentTarget.checked)} />
        Quarantine a test automatically when its health turns flaky (never a broken one)
      </label>
      <Thresholds values={values} onChange={setValues} error={action.error} />
      <button type="button" class="secondary" disabled={action.busy} onClick={() => save(null)}>
        Use the defaults
      </button>
    </SettingsForm>
  );
}
