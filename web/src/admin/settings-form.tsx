import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { AttestClient } from '../../../src/client/index.ts';
import { useApi } from '../data.ts';
import { FormProblem } from '../forms.tsx';
import { useAction } from './action.ts';
import { DoneNotice } from './status.tsx';

/** What the form shows of its change: busy, the API's problem, and what the last change did (none: the page says it elsewhere). */
type ActionShown = Pick<ReturnType<typeof useAction>, 'busy' | 'error'> & { done?: string | undefined };

/**
 * One form of a settings page (a project's settings, integrations, webhooks, a new project): a
 * panel with its heading, its fields, the API's problem that no field shows, and its submit button
 * with any other buttons (`actions`: Remove, Cancel) and what the last save did beside it.
 */
export function SettingsForm({
  title,
  heading = title,
  action,
  fields,
  submit,
  disabled,
  danger,
  onSubmit,
  actions,
  children,
}: {
  title: string;
  /** The heading, where it is shorter than the form's name. */
  heading?: string;
  action: ActionShown;
  /** The pointers its fields show problems for; a problem elsewhere shows above the button. */
  fields: readonly string[];
  submit: string;
  disabled?: boolean;
  danger?: boolean;
  onSubmit: () => void;
  actions?: ComponentChildren;
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
      <h2>{heading}</h2>
      {children}
      <FormProblem error={action.error} fields={fields} />
      <div class="form-actions">
        <button type="submit" class={danger ? 'danger' : undefined} disabled={action.busy || disabled}>
          {submit}
        </button>
        {actions}
        <DoneNotice done={action.done} />
      </div>
    </form>
  );
}

/**
 * A settings object that is stored or not (a project's code host, its issue tracker): loaded, the
 * form filled from it, kept after a save, dropped by remove. Secrets never come back, so `fill`
 * names only what the form may show again.
 */
export function useStoredSettings<T, F extends object>(options: {
  load: (client: AttestClient) => Promise<T | null>;
  deps: unknown[];
  initial: F;
  fill: (stored: T) => Partial<F>;
  remove: (client: AttestClient) => Promise<unknown>;
  removed: string;
}) {
  const loaded = useApi(options.load, options.deps);
  const action = useAction();
  const removal = useAction();
  const [form, setForm] = useState(options.initial);
  const [current, setCurrent] = useState<T | null>(null);
  useEffect(() => {
    const stored = loaded.data ?? null;
    setCurrent(stored);
    if (stored) setForm((old) => ({ ...old, ...options.fill(stored) }));
  }, [loaded.data]);
  const drop = async () => {
    const gone = await removal.run(
      (client) => options.remove(client).then(() => true),
      () => options.removed,
    );
    if (gone) setCurrent(null);
  };
  return {
    ready: loaded.data !== undefined,
    form,
    setForm,
    set: (changes: Partial<F>) => setForm({ ...form, ...changes }),
    current,
    setCurrent,
    action,
    drop,
    /** The problem and the outcome of the last save or remove, for the form's one status line. */
    error: action.error ?? removal.error,
    done: action.done ?? removal.done,
    removing: removal.busy,
  };
}

/** The Remove button of a stored settings object, shown only while one is stored. */
export function RemoveButton({ shown, busy, onClick, label }: { shown: boolean; busy: boolean; onClick: () => void; label: string }) {
  return shown ? (
    <button type="button" class="secondary" disabled={busy} onClick={onClick}>
      {label}
    </button>
  ) : null;
}
