import { AstBuilder, compile, Errors, GherkinClassicTokenMatcher, Parser } from '@cucumber/gherkin';
import { type GherkinDocument, IdGenerator, type PickleStep, type Step } from '@cucumber/messages';
import { LABEL_MAX, LABELS_MAX, NAME_MAX, TEXT_MAX } from '../../../api/common.ts';
import { TEST_STEPS_MAX } from '../../../api/v1/tests.ts';
import { AppError, type FieldError, invalid } from '../../errors.ts';
import { checkFeatureExpansion } from './gherkin-bounds.ts';

export interface TestStepDefinition {
  action: string;
  /** Test data (TCM-1); steps made from Gherkin carry none. */
  data?: string;
  expected: string;
}

/** A test definition as a feature file describes it. */
export interface FeatureDefinition {
  name: string;
  description: string;
  tags: string[];
  steps: TestStepDefinition[];
}

/** The keyword each step and scenario is written with (`Given`, `And`, `Scenario Outline`, `Soit`…), by AST node id. */
function keywordsById(document: GherkinDocument): Map<string, string> {
  const keywords = new Map<string, string>();
  const addSteps = (steps: readonly Step[]) => {
    for (const step of steps) keywords.set(step.id, step.keyword.trim());
  };
  const children = document.feature?.children ?? [];
  for (const child of children) {
    if (child.background) addSteps(child.background.steps);
    if (child.scenario) {
      keywords.set(child.scenario.id, child.scenario.keyword.trim());
      addSteps(child.scenario.steps);
    }
    for (const ruleChild of child.rule?.children ?? []) {
      if (ruleChild.background) addSteps(ruleChild.background.steps);
      if (ruleChild.scenario) {
        keywords.set(ruleChild.scenario.id, ruleChild.scenario.keyword.trim());
        addSteps(ruleChild.scenario.steps);
      }
    }
  }
  return keywords;
}

/** The step's doc string or data table, on the lines after its text. */
function argumentText(step: PickleStep): string {
  if (step.argument?.docString) return `\n${step.argument.docString.content}`;
  if (step.argument?.dataTable)
    return `\n${step.argument.dataTable.rows.map((row) => `| ${row.cells.map((c) => c.value).join(' | ')} |`).join('\n')}`;
  return '';
}

/** Dedents a feature description: each line trimmed, surrounding blank lines dropped. */
function plainDescription(description: string): string {
  return description
    .split('\n')
    .map((line) => line.trim())
    .join('\n')
    .trim();
}

function parse(text: string, pointer: string): GherkinDocument {
  const newId = IdGenerator.uuid();
  try {
    return new Parser(new AstBuilder(newId), new GherkinClassicTokenMatcher()).parse(text);
  } catch (error) {
    if (!(error instanceof Errors.GherkinException)) throw error;
    // A composite exception lists every syntax error; each message starts with "(line:column): ".
    const problems = error.errors?.length ? error.errors : [error];
    const errors: FieldError[] = problems.slice(0, 20).map((problem) => {
      const location = (problem as Errors.GherkinException).location;
      const message = problem.message.replace(/^\(\d+:\d+\): /, '').slice(0, 400);
      if (!location) return { pointer, message };
      const column = location.column ?? 1;
      return { pointer, message: `line ${location.line}, column ${column}: ${message}`, line: location.line, column };
    });
    const first = errors[0] as FieldError;
    throw new AppError('INVALID_INPUT', `${pointer}: the Gherkin text does not parse: ${first.message}`.slice(0, 2000), { errors });
  }
}

/**
 * Turns a Gherkin feature into one test definition, with the real Cucumber parser and compiler.
 *
 * The steps are Cucumber's pickles: the scenarios it would run, with the background steps before
 * each one and one scenario per Examples row (placeholders filled in). A Given/When step (and an
 * And/But after it) becomes an action written as it is in the file; a Then step (and an And/But
 * after it) becomes the expected result of the action before it, one line per outcome. When the
 * feature has several scenarios each one opens with a `Scenario: <name>` step, so their outcomes
 * never attach to another scenario's action. What the outlines expand to is bounded before they are
 * expanded (SEC-4g). Problems answer 400 at `pointer`.
 */
export function featureToTest(text: string, pointer: string): FeatureDefinition {
  const document = parse(text, pointer);
  const feature = document.feature;
  if (!feature) throw invalid(pointer, 'holds no Feature');
  const name = feature.name.trim();
  if (name === '') throw invalid(pointer, 'the Feature has no name');
  if (name.length > NAME_MAX) throw invalid(pointer, `the Feature name is longer than ${NAME_MAX} characters`);
  const description = plainDescription(feature.description);
  if (description.length > TEXT_MAX) throw invalid(pointer, `the Feature description is longer than ${TEXT_MAX} characters`);
  const tags = [...new Set(feature.tags.map((tag) => tag.name.replace(/^@/, '')))];
  const badTag = tags.find((tag) => tag === '' || tag.length > LABEL_MAX || /[\s,]/.test(tag));
  if (badTag !== undefined) throw invalid(pointer, `the tag "@${badTag.slice(0, LABEL_MAX)}" is empty, too long or holds a comma`);
  if (tags.length > LABELS_MAX) throw invalid(pointer, `the Feature has more than ${LABELS_MAX} tags`);

  checkFeatureExpansion(document, pointer);
  const pickles = compile(document, 'feature', IdGenerator.uuid());
  if (pickles.length === 0) throw invalid(pointer, 'the Feature has no scenarios');
  const keywords = keywordsById(document);
  const steps: { action: string; expected: string[] }[] = [];
  for (const pickle of pickles) {
    let current: { action: string; expected: string[] } | undefined;
    if (pickles.length > 1) {
      const scenarioKeyword = keywords.get(pickle.astNodeIds[0] ?? '') ?? 'Scenario';
      current = { action: `${scenarioKeyword}: ${pickle.name}`, expected: [] };
      steps.push(current);
    }
    for (const step of pickle.steps) {
      const keyword = keywords.get(step.astNodeIds[0] ?? '') ?? '*';
      const body = `${step.text}${argumentText(step)}`;
      if (step.type === 'Outcome' && current) {
        current.expected.push(body);
      } else {
        current = { action: `${keyword} ${body}`, expected: [] };
        steps.push(current);
      }
    }
  }
  if (steps.length > TEST_STEPS_MAX)
    throw invalid(pointer, `the Feature makes ${steps.length} steps; a test holds at most ${TEST_STEPS_MAX}`);
  const definitions = steps.map((s) => ({ action: s.action, expected: s.expected.join('\n') }));
  const long = definitions.findIndex((s) => s.action.length > TEXT_MAX || s.expected.length > TEXT_MAX);
  if (long >= 0) throw invalid(pointer, `step ${long + 1} is longer than ${TEXT_MAX} characters`);
  return { name, description, tags, steps: definitions };
}
