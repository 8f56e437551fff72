import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { Static } from 'typebox';
import type { ProjectUsage } from '../../src/api/v1/projects.ts';
import { type AttestClient, v1 } from '../../src/client/index.ts';
import { useAction } from './admin/action.ts';
import { ErrorBox, Page } from './components.tsx';
import { useApi } from './data.ts';
import { formatBytes } from './format.ts';
import './manage.css';

type Usage = Static<typeof ProjectUsage>;

/**
 * What a deletion freed (UI-12). The API's deletions answer 204 with no body, so the page reads the
 * project's usage (`GET /projects/{projectId}/usage`) when it asks, and again once the deletion is done.
 */
export interface Freed {
  /** What was deleted, as the page names it: "the run Checkout", "the job Nightly and its 3 runs". */
  what: string;
  /** The project it belonged to, whose usage is measured. */
  projectId: string;
  /** Missing when the usage could not be read first. */
  before: Usage | undefined;
  /** Missing when the usage could not be read after: the deletion itself went through. */
  after: Usage | undefined;
}

/** The project's usage in words: "12 runs, 3.4 MB stored". */
export const describeUsage = (usage: Usage) =>
  `${usage.runs.toLocaleString('en')} run${usage.runs === 1 ? '' : 's'}, ${formatBytes(usage.storedBytes)} stored`;

/**
 * A deletion asked for first, measured (UI-12): `ask` reads the project's usage (and whatever else
 * the confirmation says, `load`), `confirm` deletes and reads the usage again; a usage that cannot be
 * read after is left unknown rather than failing what was done. `action` holds the refusal to show.
 */
export function useMeasuredDeletion<T = undefined>(projectId: string, load?: (client: AttestClient) => Promise<T>) {
  const action = useAction();
  const [asking, setAsking] = useState(false);
  const [asked, setAsked] = useState<{ before: Usage; loaded: T | undefined } | undefined>();
  const readUsage = (client: AttestClient) => client.call(v1.projects.getProjectUsage, { params: { projectId } });
  const ask = async () => {
    setAsking(true);
    setAsked(
      await action.run(
        async (client) => {
          const [before, loaded] = await Promise.all([readUsage(client), load?.(client)]);
          return { before, loaded };
        },
        () => '',
      ),
    );
  };
  const confirm = async (what: string, remove: (client: AttestClient) => Promise<unknown>): Promise<Freed | undefined> => {
    const done = await action.run(
      async (client) => {
        await remove(client);
        return { after: await readUsage(client).catch(() => undefined) };
      },
      () => `Deleted ${what}.`,
    );
    return done ? { what, projectId, before: asked?.before, after: done.after } : undefined;
  };
  return { action, asking, ask, cancel: () => setAsking(false), before: asked?.before, loaded: asked?.loaded, confirm };
}

/**
 * A page's load that stops once what it shows is deleted from it (`onDeleted`): nothing is asked
 * for again (a live page would read a 404), and `deleted` says what the deletion freed.
 */
export function useApiUntilDeleted<T>(
  load: (client: AttestClient) => Promise<T>,
  deps: unknown[],
  live?: { refreshMs: number; refreshWhile: (data: T | undefined) => boolean },
) {
  const [deleted, setDeleted] = useState<Freed | undefined>();
  const loaded = useApi<T | undefined>((client) => (deleted ? Promise.resolve(undefined) : load(client)), [...deps, deleted], live);
  return { ...loaded, deleted, onDeleted: setDeleted };
}

/**
 * A deletion asked first (UI-12): the button that asks (`ask`), then the question: what goes, what
 * the project holds now, the button that deletes (`label`), Cancel, and the API's refusal.
 */
export function ConfirmDeletion({
  deletion,
  ask,
  label,
  disabled,
  onConfirm,
  testId,
  children,
}: {
  deletion: ReturnType<typeof useMeasuredDeletion<unknown>>;
  ask: string;
  label: string;
  disabled?: boolean;
  onConfirm: () => void;
  testId?: string;
  children: ComponentChildren;
}) {
  const { action, before } = deletion;
  if (!deletion.asking) {
    return (
      <button type="button" class="secondary" onClick={deletion.ask}>
        {ask}
      </button>
    );
  }
  return (
    <div class="confirm-delete" data-testid={testId}>
      <p>
        {children}
        {before ? <span class="muted"> The project holds {describeUsage(before)} now.</span> : null}
      </p>
      <button type="button" class="danger" onClick={onConfirm} disabled={action.busy || disabled}>
        {label}
      </button>{' '}
      <button type="button" class="secondary" onClick={deletion.cancel}>
        Cancel
      </button>
      {action.error ? <ErrorBox error={action.error} /> : null}
    </div>
  );
}

/** A page's content once the thing it showed is deleted: what went, the usage before and after, and where to go. */
export function DeletedPage({ freed, links }: { freed: Freed; links: { href: string; label: string }[] }) {
  const { before, after } = freed;
  return (
    <Page title={`Deleted ${freed.what}`}>
      <div class="panel" role="status">
        <p>Deleted {freed.what}.</p>
        <p class="usage-change" data-testid="usage-change">
          Project usage: {before ? describeUsage(before) : 'unknown'} before, {after ? describeUsage(after) : 'unknown'} now
          {before && after ? ` (${formatBytes(Math.max(0, before.storedBytes - after.storedBytes))} freed)` : ''}.
        </p>
        <ul class="deleted-links">
          {links.map((link) => (
            <li key={link.href}>
              <a href={link.href}>{link.label}</a>
            </li>
          ))}
        </ul>
      </div>
    </Page>
  );
}
