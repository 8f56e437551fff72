import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

// The function-length rule docs/ARCHITECTURE.md states ("Code rules"): no function over 60 lines,
// counted from its first line to its last, except route tables, migrations and pure data.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const LIMIT = 60;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return name === 'node_modules' || name === 'dist' ? [] : sourceFiles(full);
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [full] : [];
  });
}

type FunctionNode =
  | ts.FunctionDeclaration
  | ts.MethodDeclaration
  | ts.ArrowFunction
  | ts.FunctionExpression
  | ts.ConstructorDeclaration
  | ts.GetAccessorDeclaration
  | ts.SetAccessorDeclaration;

function isFunction(node: ts.Node): node is FunctionNode {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isArrowFunction(node) ||
    ts.isFunctionExpression(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node)
  );
}

function nameOf(node: FunctionNode): string {
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) {
    return parent.name.getText();
  }
  return '<anonymous>';
}

const unwrap = (expression: ts.Expression): ts.Expression =>
  ts.isParenthesizedExpression(expression) || ts.isAsExpression(expression) || ts.isSatisfiesExpression(expression)
    ? unwrap(expression.expression)
    : expression;

/** What the function returns when its whole body is one returned expression, else undefined. */
function soleResult(node: FunctionNode): ts.Expression | undefined {
  const body = node.body;
  if (!body) return undefined;
  if (!ts.isBlock(body)) return unwrap(body);
  const [only, ...rest] = body.statements;
  return only && rest.length === 0 && ts.isReturnStatement(only) && only.expression ? unwrap(only.expression) : undefined;
}

const containsFunction = (node: ts.Node): boolean => isFunction(node) || ts.forEachChild(node, containsFunction) === true;

/**
 * Pure data: the whole body is one object or array literal (returned, or an arrow's expression
 * body; `as` and `satisfies` allowed) with no function anywhere inside it.
 */
function isPureData(node: FunctionNode): boolean {
  const result = soleResult(node);
  return result !== undefined && (ts.isObjectLiteralExpression(result) || ts.isArrayLiteralExpression(result)) && !containsFunction(result);
}

/**
 * A route table: a function named `…Routes` in src/server/routes/ whose body is only `const`
 * declarations followed by the return of an array whose every element is a `route(…)` call. The
 * handlers inside are functions of their own and are held to the limit.
 */
function isRouteTable(file: string, node: FunctionNode): boolean {
  if (!file.startsWith('src/server/routes/') || !/Routes$/.test(nameOf(node))) return false;
  const body = node.body;
  if (!body || !ts.isBlock(body)) return false;
  const statements = [...body.statements];
  const last = statements.pop();
  if (!last || !ts.isReturnStatement(last) || !last.expression) return false;
  const list = unwrap(last.expression);
  return (
    statements.every((statement) => ts.isVariableStatement(statement) && (statement.declarationList.flags & ts.NodeFlags.Const) !== 0) &&
    ts.isArrayLiteralExpression(list) &&
    list.elements.every(
      (element) => ts.isCallExpression(element) && ts.isIdentifier(element.expression) && element.expression.text === 'route',
    )
  );
}

const isMigration = (file: string) => file.startsWith('src/server/db/migrations/');

/** Every function of one source text over the limit that no exception covers, as "file:line name (n lines)". */
function longFunctions(file: string, text: string, limit = LIMIT): string[] {
  if (isMigration(file)) return [];
  const kind = file.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (isFunction(node)) {
      const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const last = source.getLineAndCharacterOfPosition(node.end).line;
      const lines = last - first + 1;
      if (lines > limit && !isPureData(node) && !isRouteTable(file, node)) {
        found.push(`${file}:${first + 1} ${nameOf(node)} (${lines} lines)`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function offencesUnder(root: string): string[] {
  return sourceFiles(path.join(ROOT, root)).flatMap((full) => {
    const file = path.relative(ROOT, full).split(path.sep).join('/');
    return longFunctions(file, readFileSync(full, 'utf8'));
  });
}

/** A function of `lines` lines, first to last, wrapped by `head` and `tail`. */
const planted = (head: string, lines: number, tail: string) =>
  [head, ...Array.from({ length: lines - 2 }, (_, i) => `  const v${i} = ${i};`), tail].join('\n');

describe('function length', () => {
  for (const root of ['src', 'web/src', 'packages/playwright-reporter/src']) {
    test(`no function in ${root} passes ${LIMIT} lines, except route tables, migrations and pure data`, () => {
      assert.deepEqual(offencesUnder(root), []);
    });
  }

  test('the check reports a planted 61-line function of each kind, and passes one of 60', () => {
    assert.deepEqual(longFunctions('src/x.ts', planted('export function long() {', 61, '}')), ['src/x.ts:1 long (61 lines)']);
    assert.deepEqual(longFunctions('src/x.ts', planted('export function fits() {', 60, '}')), []);
    assert.deepEqual(longFunctions('src/x.ts', planted('const arrow = () => {', 61, '};')), ['src/x.ts:1 arrow (61 lines)']);
    assert.deepEqual(
      longFunctions('web/src/x.tsx', `class A {\n${planted('  method() {', 61, '  }')}\n}`).map((s) => s.split(' ')[1]),
      ['method'],
    );
    assert.deepEqual(
      longFunctions('src/x.ts', `class A {\n${planted('  constructor() {', 61, '  }')}\n}`).map((s) => s.split(' ')[1]),
      ['constructor'],
    );
    assert.deepEqual(
      longFunctions('src/x.ts', `class A {\n${planted('  get value() {', 61, '  }')}\n}`).map((s) => s.split(' ')[1]),
      ['value'],
    );
    // A short function inside a long one: only the long one is reported.
    assert.deepEqual(
      longFunctions('src/x.ts', planted('function outer() {\n  const inner = () => 1;', 61, '}')).map((s) => s.split(' ')[1]),
      ['outer'],
    );
  });

  test('the exceptions are exactly route tables, migrations and pure data', () => {
    const data = ['export function table() {', '  return {', ...Array.from({ length: 60 }, (_, i) => `    k${i}: ${i},`), '  };', '}'];
    assert.deepEqual(longFunctions('src/x.ts', data.join('\n')), [], 'pure data is excepted');
    const withFunction = [...data.slice(0, 2), '    f: () => 1,', ...data.slice(2)];
    assert.equal(longFunctions('src/x.ts', withFunction.join('\n')).length, 1, 'an object with a function in it is not pure data');
    const computed = ['export function table() {', '  const x = 1;', ...data.slice(1)];
    assert.equal(longFunctions('src/x.ts', computed.join('\n')).length, 1, 'a statement before the literal is not pure data');

    const routes = [
      'export function thingRoutes(ctx) {',
      '  const own = (r) => r;',
      '  return [',
      ...Array.from({ length: 30 }, (_, i) => `    route(api.op${i}, {\n      handler: async () => ${i},\n    }),`),
      '  ];',
      '}',
    ].join('\n');
    assert.deepEqual(longFunctions('src/server/routes/v1/things.ts', routes), [], 'a route table is excepted');
    assert.equal(longFunctions('src/server/services/things.ts', routes).length, 1, 'only under src/server/routes/');
    const notOnlyRoutes = routes.replace('  const own = (r) => r;', '  if (ctx) ctx.log();');
    assert.equal(longFunctions('src/server/routes/v1/things.ts', notOnlyRoutes).length, 1, 'a table runs no statement');
    const longHandler = routes.replace('handler: async () => 0,', planted('handler: async () => {', 61, '},'));
    assert.deepEqual(
      longFunctions('src/server/routes/v1/things.ts', longHandler).map((s) => s.split(' ')[1]),
      ['handler'],
      'a handler inside a route table is held to the limit',
    );

    const migration = planted('export async function up(db) {', 200, '}');
    assert.deepEqual(longFunctions('src/server/db/migrations/2026-01-01-0001-x.ts', migration), []);
    assert.equal(longFunctions('src/server/db/x.ts', migration).length, 1);
  });
});
