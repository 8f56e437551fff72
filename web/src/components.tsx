import type { ComponentChildren } from 'preact';
import { describeError } from './data.ts';

/** A verdict or status as a coloured badge; the colour is never the only sign (the word is there). */
export function Badge({ value, label }: { value: string | null | undefined; label?: string }) {
  const word = value ?? 'none';
  return <span class={`badge badge-${word}`}>{label ?? word}</span>;
}

export function ErrorBox({ error }: { error: Error }) {
  return (
    <p class="error" role="alert">
      {describeError(error)}
    </p>
  );
}

export function Loading() {
  return (
    <p class="muted" aria-live="polite">
      Loading…
    </p>
  );
}

/** A page: its title (also the document's) and its content. */
export function Page({ title, actions, children }: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  document.title = `${title} · Attest`;
  return (
    <section class="page">
      <header class="page-header">
        <h1>{title}</h1>
        {actions ? <div class="page-actions">{actions}</div> : null}
      </header>
      {children}
    </section>
  );
}

/** A page whose data has not come yet: "Loading…", or the error that stopped it. */
export function PageWaiting({ title, error }: { title: string; error: Error | undefined }) {
  return <Page title={title}>{error ? <ErrorBox error={error} /> : <Loading />}</Page>;
}

/** Whether a page is refreshing itself (something on it still runs), and a refresh that failed. */
export function LiveStatus({ live, error }: { live: boolean; error: Error | undefined }) {
  return (
    <>
      {live ? (
        <span class="live" role="status">
          <span class="live-dot" aria-hidden="true" /> Live, refreshing every 3 s
        </span>
      ) : null}
      {error ? (
        <span class="error" role="alert">
          Refresh failed: {error.message}
        </span>
      ) : null}
    </>
  );
}

/**
 * Text as it was written, in a box that scrolls when it is long (`pre` has a maximum height). It is
 * in the tab order and named, so a keyboard can scroll it too (WCAG 2.1.1; axe's
 * scrollable-region-focusable).
 */
export function Preformatted({ label, class: className, children }: { label: string; class?: string; children: ComponentChildren }) {
  return (
    // biome-ignore lint/a11y/useSemanticElements lint/a11y/noNoninteractiveTabindex: a block of text, not form controls (no fieldset); a box that scrolls must take focus for the keyboard to scroll it
    <pre class={className} tabIndex={0} role="group" aria-label={label}>
      {children}
    </pre>
  );
}

/** A required input inside its label, e.g. a credential of the sign-in or the key form. */
export function LabelledInput({
  label,
  name,
  type,
  autoComplete,
  value,
  onInput,
}: {
  label: string;
  name: string;
  type: 'email' | 'password';
  autoComplete: string;
  value: string;
  onInput: (value: string) => void;
}) {
  return (
    <label>
      {label}
      <input
        type={type as 'email'}
        name={name}
        autoComplete={autoComplete}
        required
        value={value}
        onInput={(event) => onInput(event.currentTarget.value)}
      />
    </label>
  );
}
