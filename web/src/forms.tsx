import type { ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';
import type { TSchema } from 'typebox';
import { ApiError } from '../../src/client/index.ts';
import { describeError } from './data.ts';
import './forms.css';

/** One validation problem of an API answer: the body field it names (a JSON pointer) and what is wrong. */
export interface FieldProblem {
  pointer: string;
  message: string;
  /** Where in a Gherkin text the problem is, when the server says. */
  line?: number;
  column?: number;
}

/** The problems an API error names field by field (`errors[]` of its problem), or none. */
export function fieldProblems(error: Error | undefined): FieldProblem[] {
  if (!(error instanceof ApiError)) return [];
  const errors = error.problem.errors;
  if (!Array.isArray(errors)) return [];
  return errors.flatMap((item) => {
    if (typeof item !== 'object' || item === null) return [];
    const { pointer, message, line, column } = item as Record<string, unknown>;
    if (typeof pointer !== 'string' || typeof message !== 'string') return [];
    // The line may come as fields of its own, or only in the words ("line 3, column 5: …").
    const said = /line (\d+)(?:, column (\d+))?/.exec(message);
    const lineOf = typeof line === 'number' ? line : said ? Number(said[1]) : undefined;
    const columnOf = typeof column === 'number' ? column : said?.[2] ? Number(said[2]) : undefined;
    // The server names body fields from the request (`/body/key`); a form names them from its body (`/key`).
    return [
      {
        pointer: pointer.replace(/^\/body(?=\/|$)/, ''),
        message,
        ...(lineOf ? { line: lineOf } : {}),
        ...(columnOf ? { column: columnOf } : {}),
      },
    ];
  });
}

/** What the API said about one field: the problems at `pointer` or inside it, in words; undefined when none. */
export function problemAt(error: Error | undefined, pointer: string): string | undefined {
  const found = fieldProblems(error).filter((p) => p.pointer === pointer || p.pointer.startsWith(`${pointer}/`));
  return found.length ? found.map((p) => p.message).join('; ') : undefined;
}

/** The pointers a form shows beside its fields; a problem elsewhere shows at the top of the form. */
export function FormProblem({ error, fields }: { error: Error | undefined; fields: readonly string[] }) {
  if (!error) return null;
  const problems = fieldProblems(error);
  const placed = problems.length > 0 && problems.every((p) => fields.some((f) => p.pointer === f || p.pointer.startsWith(`${f}/`)));
  if (placed) return null;
  return (
    <p class="error" role="alert">
      {describeError(error)}
    </p>
  );
}

/** The HTML constraints of a string or integer schema, so the browser checks a field as the API will. */
export function constraintsOf(schema: TSchema | undefined): Record<string, string | number> {
  if (!schema) return {};
  const s = schema as Record<string, unknown>;
  // A nullable field: the constraints of its non-null member.
  const members = (s.anyOf ?? s.oneOf) as Record<string, unknown>[] | undefined;
  if (members) return constraintsOf(members.find((m) => m.type !== 'null') as TSchema | undefined);
  const attrs: Record<string, string | number> = {};
  if (typeof s.pattern === 'string') attrs.pattern = s.pattern.replace(/^\^/, '').replace(/\$$/, '');
  if (typeof s.maxLength === 'number') attrs.maxLength = s.maxLength;
  if (typeof s.minLength === 'number') attrs.minLength = s.minLength;
  if (typeof s.minimum === 'number') attrs.min = s.minimum;
  if (typeof s.maximum === 'number') attrs.max = s.maximum;
  if (s.type === 'integer') attrs.step = 1;
  // Shares and rates: any decimal (an exclusive minimum is the API's to refuse).
  if (s.type === 'number') attrs.step = 'any';
  return attrs;
}

/**
 * A labelled field with what the API said about it underneath, tied to the control
 * (`aria-describedby`, `aria-invalid`), so a screen reader reads the problem with the field.
 */
export function Field({
  label,
  problem,
  hint,
  children,
}: {
  label: string;
  problem: string | undefined;
  hint?: string;
  children: (ids: { id: string; describedBy: string | undefined; invalid: boolean }) => ComponentChildren;
}) {
  const id = useId();
  const problemId = `${id}-problem`;
  const hintId = `${id}-hint`;
  const describedBy = [problem ? problemId : '', hint ? hintId : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children({ id, describedBy, invalid: problem !== undefined })}
      {hint ? (
        <span class="field-hint" id={hintId}>
          {hint}
        </span>
      ) : null}
      <FieldProblemNote problem={problem} id={problemId} />
    </div>
  );
}

/** What the API said is wrong with a field (or a group of them), read out as it appears. */
export function FieldProblemNote({ problem, id }: { problem: string | undefined; id?: string }) {
  return problem ? (
    <span class="field-problem" id={id} role="alert">
      {problem}
    </span>
  ) : null;
}

interface TextFieldProps {
  label: string;
  name: string;
  value: string;
  onInput: (value: string) => void;
  schema?: TSchema;
  problem: string | undefined;
  hint?: string;
  required?: boolean;
  type?: 'text' | 'number' | 'email' | 'url';
  placeholder?: string;
  disabled?: boolean;
}

/** A text input in a Field: its constraints from the API's schema, its problem from the API's answer. */
export function TextField({
  label,
  name,
  value,
  onInput,
  schema,
  problem,
  hint,
  required,
  type = 'text',
  placeholder,
  disabled,
}: TextFieldProps) {
  return (
    <Field label={label} problem={problem} hint={hint}>
      {({ id, describedBy, invalid }) => (
        <input
          id={id}
          name={name}
          type={type as 'text'}
          value={value}
          required={required}
          placeholder={placeholder}
          disabled={disabled}
          aria-describedby={describedBy}
          aria-invalid={invalid || undefined}
          onInput={(event) => onInput(event.currentTarget.value)}
          {...constraintsOf(schema)}
        />
      )}
    </Field>
  );
}

/**
 * A TextField for one property of an endpoint's body, named after it: its constraints from the
 * endpoint's schema, its problem what the API's answer says at the property's pointer.
 */
export function BodyTextField({
  endpoint,
  name,
  error,
  ...field
}: Omit<TextFieldProps, 'schema' | 'problem'> & { endpoint: { body?: TSchema }; error: Error | undefined }) {
  return <TextField {...field} name={name} schema={bodyField(endpoint, name)} problem={problemAt(error, `/${name}`)} />;
}

/** A whole number typed in a field, for the API: undefined when empty, NaN refused by the browser first. */
export const integerOrUndefined = (text: string): number | undefined => (text.trim() === '' ? undefined : Number(text));

/** The schema of one property of an endpoint's body, for its field's constraints. */
export function bodyField(endpoint: { body?: TSchema }, name: string): TSchema | undefined {
  return ((endpoint.body as Record<string, unknown> | undefined)?.properties as Record<string, TSchema> | undefined)?.[name];
}

/** A select in a Field: one option a choice, its problem from the API's answer. */
export function SelectField({
  label,
  name,
  value,
  options,
  onChange,
  problem,
}: {
  label: string;
  name: string;
  value: string;
  options: readonly { value: string; label: string }[];
  onChange: (value: string) => void;
  problem: string | undefined;
}) {
  return (
    <Field label={label} problem={problem}>
      {({ id, describedBy }) => (
        <select id={id} name={name} aria-describedby={describedBy} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
          {options.map((o) => (
            <option key={o.value} value={o.value}>
              {o.label}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}
