// Where each error of a run is shown, once, and each step's cell text once: the rules the HTML
// export (formats/html.ts) and the web interface's run page (web/src/run/steps.ts) share, on their
// own step trees.

/** The run cells an import writes a run's failure into: Playwright's `error`, a JUnit `failure`. */
export const ERROR_CELLS: ReadonlySet<string> = new Set(['error', 'failure']);

/** A step of a tree, as the rule reads it. */
export interface ErrorNode<N extends ErrorNode<N>> {
  step: { id: string; error?: string | null | undefined };
  children: readonly N[];
}

export interface ErrorPlaces<N, C> {
  /** The error each step shows; a step missing here shows none of its own. */
  shown: Map<string, string>;
  /** A step whose error is the same as a step's below it: the step below shows it. */
  shownBelow: Map<string, N>;
  /** The run's own cells, less an `error` or `failure` cell that repeats a step's error (that step shows the fuller text). */
  runCells: C[];
}

/**
 * Each error of a run once. A framework reports a failure on the step that failed and on every step
 * around it (Playwright's `test.step`), and again, with its code frame and stack, as the run's
 * `error` cell: the innermost step shows it, with the fuller text when the run's cell begins with
 * it; the steps around it say where it is, and the run's cells leave it out.
 */
export function errorsShownOnce<N extends ErrorNode<N>, C extends { name: string; text: string }>(
  roots: readonly N[],
  runCells: readonly C[],
): ErrorPlaces<N, C> {
  const shown = new Map<string, string>();
  const shownBelow = new Map<string, N>();
  const sameBelow = (node: N, error: string): N | undefined => {
    for (const child of node.children) {
      const deeper = sameBelow(child, error);
      if (deeper) return deeper;
      if (child.step.error?.trim() === error) return child;
    }
    return undefined;
  };
  const visit = (node: N) => {
    const error = node.step.error?.trim();
    if (error) {
      const below = sameBelow(node, error);
      if (below) shownBelow.set(node.step.id, below);
      else shown.set(node.step.id, node.step.error as string);
    }
    node.children.forEach(visit);
  };
  roots.forEach(visit);
  const cells = runCells.filter((cell) => {
    if (!ERROR_CELLS.has(cell.name)) return true;
    const text = cell.text.trim();
    for (const [id, error] of shown) {
      const own = error.trim();
      if (text === own || own.includes(text)) return false;
      if (text.startsWith(own)) {
        shown.set(id, cell.text);
        return false;
      }
    }
    return true;
  });
  return { shown, shownBelow, runCells: cells };
}

/**
 * A step's cells that say something its error, or a cell before them, has not said already. A step
 * failed by hand keeps its actual result as its error and as its `actual` cell (docs/test-management.md),
 * a blocked one as its `blocked` and `actual` cells: each text is shown once, under its first name.
 */
export function cellsNotRepeating<C extends { text: string }>(step: { error?: string | null | undefined; cells: readonly C[] }): C[] {
  const said = new Set(step.error ? [step.error.trim()] : []);
  return step.cells.filter((cell) => {
    const text = cell.text.trim();
    if (said.has(text)) return false;
    said.add(text);
    return true;
  });
}
