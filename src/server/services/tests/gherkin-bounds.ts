import type { Background, DataTable, DocString, GherkinDocument, Scenario, Step, TableCell } from '@cucumber/messages';
import { TEXT_MAX } from '../../../api/common.ts';
import { TEST_STEPS_MAX } from '../../../api/v1/test-definition.ts';
import { invalid } from '../../errors.ts';

/**
 * Bounds on what a feature may expand to before Cucumber's compiler expands it (SEC-4g). A Scenario
 * Outline repeats its steps once per Examples row, with every `<placeholder>` filled in, so a few
 * hundred KB of text can stand for millions of steps or gigabytes of step text: every bound is checked
 * on the document's syntax tree, before a single step is made.
 */
export const GHERKIN_LIMITS = {
  /** Scenario steps after expansion (a Then step joins the step before it, so a test's 1,000 steps may come from more). */
  expandedSteps: 10 * TEST_STEPS_MAX,
  /** Characters of step text after expansion, every step and argument counted. */
  expandedText: 4 * 1024 * 1024,
  /** Characters the compiler scans to fill placeholders: each expanded string once per column of its Examples table. */
  fillWork: 64 * 1024 * 1024,
} as const;

/** What one scenario repeats: the background steps before it (none when it has no steps of its own) and its own. */
interface ScenarioShape {
  scenario: Scenario;
  background: readonly Step[];
}

/** Every scenario in the order the compiler visits them, with the background steps each pickle starts with. */
function scenarioShapes(document: GherkinDocument): ScenarioShape[] {
  const shapes: ScenarioShape[] = [];
  let featureBackground: readonly Step[] = [];
  const add = (scenario: Scenario, background: readonly Step[]) =>
    shapes.push({ scenario, background: scenario.steps.length === 0 ? [] : background });
  for (const child of document.feature?.children ?? []) {
    if (child.background) featureBackground = (child.background as Background).steps;
    else if (child.scenario) add(child.scenario, featureBackground);
    else if (child.rule) {
      let ruleBackground = featureBackground;
      for (const ruleChild of child.rule.children) {
        if (ruleChild.background) ruleBackground = [...ruleBackground, ...ruleChild.background.steps];
        else if (ruleChild.scenario) add(ruleChild.scenario, ruleBackground);
      }
    }
  }
  return shapes;
}

/** The strings of a step that the compiler fills in: its text, its doc string and every cell of its data table. */
function stepStrings(step: Step): string[] {
  const strings = [step.text];
  const doc: DocString | undefined = step.docString;
  if (doc) strings.push(doc.content, ...(doc.mediaType ? [doc.mediaType] : []));
  const table: DataTable | undefined = step.dataTable;
  if (table) for (const row of table.rows) for (const cell of row.cells) strings.push(cell.value);
  return strings;
}

const lengthOf = (strings: readonly string[]) => strings.reduce((sum, s) => sum + s.length, 0);

/** Non-overlapping occurrences of `pattern` in `text`, counted left to right as a global replace finds them. */
function occurrences(text: string, pattern: string): number {
  let count = 0;
  for (let at = text.indexOf(pattern); at >= 0; at = text.indexOf(pattern, at + pattern.length)) count += 1;
  return count;
}

/**
 * Throws the 400 that names the first bound `document` would pass when compiled, else returns.
 *
 * First by counting alone (scenarios, steps, the characters the compiler would scan); then each
 * Examples row's placeholders are filled in the compiler's order (one column after the other, every
 * occurrence) with each result's length known before it is made, so no string beyond a step's
 * `TEXT_MAX` and no more than `expandedText` characters in all are ever built.
 */
type Shapes = ReturnType<typeof scenarioShapes>;

/** How many scenarios and steps the Feature expands to, and the placeholder scans filling it takes. */
function expansionCounts(shapes: Shapes): { scenarios: number; steps: number; work: number } {
  let scenarios = 0;
  let steps = 0;
  let work = 0;
  for (const { scenario, background } of shapes) {
    const perScenario = background.length + scenario.steps.length;
    const templateChars = lengthOf(background.flatMap(stepStrings)) + lengthOf(scenario.steps.flatMap(stepStrings)) + scenario.name.length;
    if (scenario.examples.length === 0) {
      scenarios += 1;
      steps += perScenario;
      continue;
    }
    for (const examples of scenario.examples) {
      if (!examples.tableHeader) continue;
      const rows = examples.tableBody.length;
      const columns = examples.tableHeader.cells.length;
      scenarios += rows;
      steps += rows * perScenario;
      // Each column is one scan of every string the outline fills (a RegExp made per string and column).
      work += rows * columns * (templateChars + 64 * (perScenario + 1));
    }
  }
  return { scenarios, steps, work };
}

/** Adds up the step text the Feature expands to, each filled step's length known before it is made. */
function checkExpandedText(shapes: Shapes, pointer: string): void {
  let text = 0;
  const spend = (chars: number) => {
    text += chars;
    if (text > GHERKIN_LIMITS.expandedText)
      throw invalid(pointer, `the Feature expands to more than ${GHERKIN_LIMITS.expandedText} characters of step text`);
  };
  for (const { scenario, background } of shapes) {
    const backgroundChars = lengthOf(background.flatMap(stepStrings));
    if (scenario.examples.length === 0) {
      spend(backgroundChars + lengthOf(scenario.steps.flatMap(stepStrings)));
      continue;
    }
    for (const examples of scenario.examples) {
      if (!examples.tableHeader) continue;
      const columns = examples.tableHeader.cells;
      for (const row of examples.tableBody) {
        spend(backgroundChars);
        spend(filledLength(scenario.name, columns, row.cells));
        for (const step of scenario.steps) {
          const length = stepStrings(step).reduce((sum, s) => sum + filledLength(s, columns, row.cells), 0);
          if (length > TEXT_MAX)
            throw invalid(
              pointer,
              `the step "${step.text.slice(0, 80)}" (line ${step.location.line}) is longer than ${TEXT_MAX} characters once the Examples row on line ${row.location.line} fills it`,
            );
          spend(length);
        }
      }
    }
  }
}

export function checkFeatureExpansion(document: GherkinDocument, pointer: string): void {
  const shapes = scenarioShapes(document);
  const { scenarios, steps, work } = expansionCounts(shapes);
  // More than one scenario: each one opens with its own "Scenario: name" step (featureToTest).
  if (scenarios > 1 && scenarios > TEST_STEPS_MAX)
    throw invalid(
      pointer,
      `the Feature expands to ${scenarios} scenarios, so at least as many steps; a test holds at most ${TEST_STEPS_MAX}`,
    );
  if (steps > GHERKIN_LIMITS.expandedSteps)
    throw invalid(pointer, `the Feature expands to ${steps} Gherkin steps; at most ${GHERKIN_LIMITS.expandedSteps} are read`);
  if (work > GHERKIN_LIMITS.fillWork)
    throw invalid(
      pointer,
      `filling the Scenario Outlines' placeholders would scan ${work} characters; at most ${GHERKIN_LIMITS.fillWork} (fewer Examples rows, columns or steps)`,
    );
  checkExpandedText(shapes, pointer);
}

/**
 * The length of the string Cucumber's `interpolate` makes of `template` for one Examples row (each
 * column's `<name>` replaced in turn, every occurrence), or Infinity once it would pass `TEXT_MAX`:
 * each replacement's length is worked out before it is made.
 */
function filledLength(template: string, columns: readonly TableCell[], values: readonly TableCell[]): number {
  let text = template;
  for (const [n, column] of columns.entries()) {
    const pattern = `<${column.value}>`;
    const count = occurrences(text, pattern);
    if (count === 0) continue;
    const value = values[n]?.value ?? '';
    if (text.length + count * (value.length - pattern.length) > TEXT_MAX) return Number.POSITIVE_INFINITY;
    text = text.split(pattern).join(value);
  }
  return text.length;
}
