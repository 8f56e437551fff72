import { useEffect, useState } from 'preact/hooks';
import type { Static } from 'typebox';
import { FailureRule } from '../../../src/api/v1/failures.ts';
import { v1 } from '../../../src/client/index.ts';
import type { useAction } from '../admin/action.ts';
import { useApi } from '../data.ts';
import { Field, FieldProblemNote, problemAt, TextField } from '../forms.tsx';
import { DEFECT_LABEL, DEFECT_TYPES, type DefectType } from './api.ts';
import './failure-rules.css';

type Rule = Static<typeof FailureRule>;
type Status = 'failed' | 'broken';
const STATUSES: readonly Status[] = ['failed', 'broken'];
const RULE = FailureRule.properties;

/** A rule as the form holds it: texts, empty for absent. */
export interface RuleRow {
  name: string;
  messageRegex: string;
  traceRegex: string;
  statuses: Status[];
  defectType: DefectType | '';
}

/** A rule from the API as a row: no `matchedStatuses` means both verdicts, so both are ticked. */
export const rowOf = (rule: Rule): RuleRow => ({
  name: rule.name,
  messageRegex: rule.messageRegex ?? '',
  traceRegex: rule.traceRegex ?? '',
  statuses: rule.matchedStatuses ? STATUSES.filter((s) => rule.matchedStatuses?.includes(s)) : [...STATUSES],
  defectType: rule.defectType ?? '',
});

/** A row as the API takes it: empty texts left out, both verdicts ticked left out (the rule applies to both). */
export function ruleOf(row: RuleRow): Rule {
  const rule: Rule = { name: row.name.trim() };
  if (row.messageRegex !== '') rule.messageRegex = row.messageRegex;
  if (row.traceRegex !== '') rule.traceRegex = row.traceRegex;
  if (row.statuses.length < STATUSES.length) rule.matchedStatuses = [...row.statuses];
  if (row.defectType !== '') rule.defectType = row.defectType;
  return rule;
}

const EMPTY: RuleRow = { name: '', messageRegex: '', traceRegex: '', statuses: [...STATUSES], defectType: '' };

/**
 * The project's ordered category rules (TRIAGE) as rows, one a rule with the fields of the API's
 * `FailureRule`: name, message and trace regexes (RE2, matching the whole text), the verdicts it
 * applies to, the defect type it gives. Rows are added, removed and moved (the first match wins);
 * saving replaces them all (`PUT …/failure-rules`), and the API's problem with a field
 * (`/rules/2/messageRegex`: a regex RE2 cannot compile) shows beside it. An Allure
 * `categories.json` is sent to the API as it is, which takes it in place of the rules.
 */
export function useFailureRules(projectId: string, action: ReturnType<typeof useAction>) {
  const loaded = useApi((client) => client.call(v1.failures.getFailureRules, { params: { projectId } }), [projectId]);
  const [rows, setRows] = useState<RuleRow[] | undefined>();
  useEffect(() => {
    if (loaded.data) setRows(loaded.data.rules.map(rowOf));
  }, [loaded.data]);
  const saved = (answer: Static<typeof v1.failures.FailureRules>) => setRows(answer.rules.map(rowOf));
  const summary = (answer: Static<typeof v1.failures.FailureRules>) =>
    `Saved ${answer.rules.length} rule${answer.rules.length === 1 ? '' : 's'}.`;
  const save = async () => {
    if (!rows) return;
    const answer = await action.run(
      (client) => client.call(v1.failures.putFailureRules, { params: { projectId }, body: { rules: rows.map(ruleOf) } }),
      summary,
    );
    if (answer) saved(answer);
  };
  /** Allure's categories.json, read from a file and sent as it is: the API keeps what it can use. */
  const importAllure = async (file: File) => {
    const answer = await action.run(async (client) => {
      let body: unknown;
      try {
        body = JSON.parse(await file.text());
      } catch (error) {
        throw new Error(`${file.name} is not JSON: ${(error as Error).message}`);
      }
      return client.call(v1.failures.putFailureRules, { params: { projectId }, body: body as never });
    }, summary);
    if (answer) saved(answer);
  };
  return { rows, setRows, loadError: loaded.error, save, importAllure };
}

/** The defect type a rule gives, or none (the group stays to investigate). */
function DefectTypeField({
  value,
  onChange,
  problem,
}: {
  value: DefectType | '';
  onChange: (t: DefectType | '') => void;
  problem: string | undefined;
}) {
  return (
    <Field label="Defect type" problem={problem}>
      {({ id, describedBy, invalid }) => (
        <select
          id={id}
          value={value}
          aria-describedby={describedBy}
          aria-invalid={invalid || undefined}
          onChange={(e) => onChange(e.currentTarget.value as DefectType | '')}
        >
          <option value="">None (to investigate)</option>
          {DEFECT_TYPES.map((type) => (
            <option key={type} value={type}>
              {DEFECT_LABEL[type]}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

/** The verdicts of the runs a rule applies to. */
function StatusBoxes({
  i,
  statuses,
  onChange,
  problem,
}: {
  i: number;
  statuses: RuleRow['statuses'];
  onChange: (s: RuleRow['statuses']) => void;
  problem: string | undefined;
}) {
  return (
    <fieldset class="rule-statuses" aria-describedby={problem ? `rule-statuses-${i}-problem` : undefined}>
      <legend>Applies to runs that</legend>
      {STATUSES.map((status) => (
        <label class="checkbox" key={status}>
          <input
            type="checkbox"
            checked={statuses.includes(status)}
            onChange={(e) => onChange(STATUSES.filter((s) => (s === status ? e.currentTarget.checked : statuses.includes(s))))}
          />
          {status}
        </label>
      ))}
      {statuses.length === 0 ? <span class="field-hint">Neither ticked: the rule matches nothing.</span> : null}
      <FieldProblemNote problem={problem} id={`rule-statuses-${i}-problem`} />
    </fieldset>
  );
}

/** One rule: its name, defect type, regexes and verdicts, and the buttons that move and remove it. */
function RuleEditor(props: {
  i: number;
  row: RuleRow;
  count: number;
  error: Error | undefined;
  set: (change: Partial<RuleRow>) => void;
  move: (by: -1 | 1) => void;
  remove: () => void;
}) {
  const { i, row, set } = props;
  const at = (field: string) => problemAt(props.error, `/rules/${i}/${field}`);
  return (
    <fieldset class="rule-row" data-testid="rule-row">
      <legend>Rule {i + 1}</legend>
      <div class="form-row">
        <TextField
          label="Name"
          name={`rule-name-${i}`}
          value={row.name}
          required
          schema={RULE.name}
          onInput={(name) => set({ name })}
          problem={at('name') ?? problemAt(props.error, `/rules/${i}`)}
        />
        <DefectTypeField value={row.defectType} onChange={(defectType) => set({ defectType })} problem={at('defectType')} />
      </div>
      <TextField
        label="Message regex"
        name={`rule-message-${i}`}
        value={row.messageRegex}
        schema={RULE.messageRegex}
        placeholder=".*ECONNREFUSED.*"
        onInput={(messageRegex) => set({ messageRegex })}
        problem={at('messageRegex')}
      />
      <TextField
        label="Trace regex"
        name={`rule-trace-${i}`}
        value={row.traceRegex}
        schema={RULE.traceRegex}
        onInput={(traceRegex) => set({ traceRegex })}
        problem={at('traceRegex')}
      />
      <StatusBoxes i={i} statuses={row.statuses} onChange={(statuses) => set({ statuses })} problem={at('matchedStatuses')} />
      <div class="form-actions">
        <button type="button" class="secondary" onClick={() => props.move(-1)} disabled={i === 0}>
          Move rule {i + 1} up
        </button>
        <button type="button" class="secondary" onClick={() => props.move(1)} disabled={i === props.count - 1}>
          Move rule {i + 1} down
        </button>
        <button type="button" class="secondary" onClick={props.remove}>
          Remove rule {i + 1}
        </button>
      </div>
    </fieldset>
  );
}

/** Add rule, and Replace with an Allure categories.json. */
function RuleListActions({ onAdd, onImport }: { onAdd: () => void; onImport: (file: File) => void }) {
  return (
    <div class="form-actions">
      <button type="button" class="secondary" onClick={onAdd}>
        Add rule
      </button>
      <label class="button secondary file-button">
        Replace with Allure’s categories.json
        <input
          class="visually-hidden"
          type="file"
          accept=".json,application/json"
          onChange={(event) => {
            const input = event.currentTarget;
            const file = input.files?.[0];
            input.value = '';
            if (file) onImport(file);
          }}
        />
      </label>
    </div>
  );
}

/** The rows of the rules editor, with add, remove and move, each field with the API's problem beside it. */
export function FailureRulesEditor({
  rows,
  error,
  onChange,
  onImport,
}: {
  rows: RuleRow[];
  error: Error | undefined;
  onChange: (rows: RuleRow[]) => void;
  onImport: (file: File) => void;
}) {
  const set = (i: number, change: Partial<RuleRow>) => onChange(rows.map((row, j) => (j === i ? { ...row, ...change } : row)));
  const move = (i: number, by: -1 | 1) => {
    const next = [...rows];
    [next[i], next[i + by]] = [next[i + by] as RuleRow, next[i] as RuleRow];
    onChange(next);
  };
  return (
    <>
      <p class="muted">
        In order: the first rule whose regexes both match a failure (an empty one matches anything; a regex matches the whole text, in RE2
        syntax) and whose verdicts include the run's names its group and gives its defect type.
      </p>
      {rows.length === 0 ? <p class="muted">No rule: every group stays “To investigate” until someone triages it.</p> : null}
      <ol class="rule-rows">
        {rows.map((row, i) => (
          // Rows have no identity of their own but their place: a rule is where it stands.
          <li key={i}>
            <RuleEditor
              i={i}
              row={row}
              count={rows.length}
              error={error}
              set={(change) => set(i, change)}
              move={(by) => move(i, by)}
              remove={() => onChange(rows.filter((_, j) => j !== i))}
            />
          </li>
        ))}
      </ol>
      <RuleListActions onAdd={() => onChange([...rows, { ...EMPTY, statuses: [...STATUSES] }])} onImport={onImport} />
    </>
  );
}
