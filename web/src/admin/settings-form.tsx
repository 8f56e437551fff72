import type { ComponentChildren } from 'preact';
import { FormProblem } from '../forms.tsx';
import type { useAction } from './action.ts';
import { DoneNotice } from './status.tsx';

type Action = ReturnType<typeof useAction>;

/**
 * One form of the settings page: a panel with its heading, its fields, the API's problem that no
 * field shows, and its submit button with what the last save did beside it.
 */
export function SettingsForm({
  title,
  action,
  fields,
  submit,
  disabled,
  danger,
  onSubmit,
  children,
}: {
  title: string;
  action: Action;
  /** The pointers its fields show problems for; a problem elsewhere shows above the button. */
  fields: readonly string[];
  submit: string;
  disabled?: boolean;
  danger?: boolean;
  onSubmit: () => void;
  children: ComponentChildren;
}) {
  return (
    <form
      class={`panel form${danger ? ' danger-zone' : ''}`}
      aria-label={title}
      onSubmit={(event) => {
        event.preventDefault();
        onSubmit();
      }}
    >
      <h2>{title}</h2>
      {children}
      <FormProblem error={action.error} fields={fields} />
      <div class="form-actions">
        <button type="submit" class={danger ? 'danger' : undefined} disabled={action.busy || disabled}>
          {submit}
        </button>
        <DoneNotice done={action.done} />
      </div>
    </form>
  );
}
