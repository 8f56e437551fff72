import { ErrorBox } from '../components.tsx';
import type { ActionState } from './action.ts';

/** The outcome of the last change: the problem the API gave, or what was done. */
export function ActionStatus({ state, testId }: { state: ActionState; testId?: string }) {
  if (state.error) return <ErrorBox error={state.error} />;
  if (state.done) {
    return (
      <p class="notice" role="status" data-testid={testId}>
        {state.done}
      </p>
    );
  }
  return null;
}

/** What the last change did, beside the button that made it (inline, in a form's actions); nothing before. */
export const DoneNotice = ({ done }: { done: string | undefined }) =>
  done ? (
    <span class="notice" role="status">
      {done}
    </span>
  ) : null;
