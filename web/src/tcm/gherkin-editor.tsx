import { useRef } from 'preact/hooks';
import type { FieldProblem } from '../forms.tsx';

/** Puts the caret at the start of a line of a textarea and scrolls it into view. */
function goToLine(area: HTMLTextAreaElement, line: number) {
  const lines = area.value.split('\n');
  const offset = lines.slice(0, line - 1).reduce((n, text) => n + text.length + 1, 0);
  area.focus();
  area.setSelectionRange(offset, offset + (lines[line - 1]?.length ?? 0));
}

/**
 * A Gherkin text with its line numbers beside it, and the server's own syntax errors at their
 * lines: the line's number marked, and each error listed with a button that selects its line.
 * The textarea grows with the text (no inner scroll), so the numbers stay beside their lines.
 */
export function GherkinEditor({
  value,
  onInput,
  problems,
  id,
  describedBy,
}: {
  value: string;
  onInput: (value: string) => void;
  problems: readonly FieldProblem[];
  id: string;
  describedBy: string | undefined;
}) {
  const area = useRef<HTMLTextAreaElement>(null);
  const lines = value.split('\n');
  const bad = new Map(problems.filter((p) => p.line).map((p) => [p.line as number, p]));
  const listId = `${id}-errors`;
  return (
    <div class="gherkin">
      <div class="gherkin-editor">
        <ol class="gherkin-gutter" aria-hidden="true">
          {lines.map((_, i) => (
            <li key={i} class={bad.has(i + 1) ? 'gherkin-bad' : undefined} data-line={i + 1}>
              {bad.has(i + 1) ? '⚠ ' : ''}
              {i + 1}
            </li>
          ))}
        </ol>
        <textarea
          ref={area}
          id={id}
          class="gherkin-text"
          rows={Math.max(8, lines.length + 1)}
          spellcheck={false}
          value={value}
          aria-invalid={problems.length > 0 || undefined}
          aria-describedby={[problems.length ? listId : '', describedBy ?? ''].filter(Boolean).join(' ') || undefined}
          onInput={(e) => onInput(e.currentTarget.value)}
        />
      </div>
      {problems.length > 0 ? (
        <div role="alert" id={listId}>
          <ul class="gherkin-errors" aria-label="Gherkin errors">
            {problems.map((problem) => (
              <li key={`${problem.line}-${problem.message}`} data-testid="gherkin-error">
                {problem.line ? (
                  <button type="button" class="gherkin-line" onClick={() => area.current && goToLine(area.current, problem.line as number)}>
                    Line {problem.line}
                  </button>
                ) : null}{' '}
                {problem.message}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
    </div>
  );
}
