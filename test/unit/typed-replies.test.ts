import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

// SEC-9c: a handler's answer is typed by its endpoint. This compiles handlers with the project's
// own compiler options (tsconfig.json) and asserts what the compiler says about them: a planted
// wrong handler is refused, the same handler made right is not, and every `@ts-expect-error` of
// typed-replies.types.ts marks a refusal on its own line. Only the planted files are checked (what
// they import is read, not checked), so this takes seconds, not the whole project's `tsc`.

const root = fileURLToPath(new URL('../../', import.meta.url));
const TYPES_FILE = path.join(root, 'test/unit/typed-replies.types.ts');

function projectOptions(): ts.CompilerOptions {
  const config = ts.readConfigFile(path.join(root, 'tsconfig.json'), ts.sys.readFile);
  return ts.parseJsonConfigFileContent(config.config, ts.sys, root).options;
}

/** Error diagnostics of `files` (path → text, served in memory), each as its 1-based line and message. */
function diagnosticsOf(files: Record<string, string>): Record<string, { line: number; code: number; message: string }[]> {
  const options = projectOptions();
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (name) => name in files || fileExists(name);
  host.readFile = (name) => files[name] ?? readFile(name);
  host.getSourceFile = (name, language, ...rest) =>
    name in files ? ts.createSourceFile(name, files[name] as string, language) : getSourceFile(name, language, ...rest);
  const program = ts.createProgram(Object.keys(files), options, host);
  const found: Record<string, { line: number; code: number; message: string }[]> = {};
  for (const name of Object.keys(files)) {
    const file = program.getSourceFile(name) as ts.SourceFile;
    found[name] = [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)]
      .filter((d) => d.category === ts.DiagnosticCategory.Error)
      .map((d) => ({
        line: file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1,
        code: d.code,
        message: ts.flattenDiagnosticMessageText(d.messageText, '\n'),
      }));
  }
  return found;
}

/** A handler of `GET /device/devices/{deviceId}` answering `status`, planted beside the types test. */
const planted = (status: string) => `import type { JsonReplyOf } from '../../src/api/endpoint.ts';
import { getDevice } from '../../src/api/v1/devices.ts';
import { route } from '../../src/server/routes/route.ts';
declare const device: JsonReplyOf<typeof getDevice>;
export const planted = route(getDevice, {
  handler: async () => ({ ...device, status: '${status}' as const }),
});
`;

const WRONG = path.join(root, 'test/unit/planted-wrong-reply.ts');
const RIGHT = path.join(root, 'test/unit/planted-right-reply.ts');
const typesLines = readFileSync(TYPES_FILE, 'utf8').split('\n');
/** The types test with its expectations turned into plain comments: each line below one must fail, and no other. */
const bareTypes = typesLines.map((line) => line.replace('// @ts-expect-error', '// expected:')).join('\n');

let compiled: ReturnType<typeof diagnosticsOf> | undefined;
/** One program for every test below: the planted handlers and the bare types test. */
const diagnostics = () => {
  compiled ??= diagnosticsOf({ [WRONG]: planted('broken'), [RIGHT]: planted('busy'), [TYPES_FILE]: bareTypes });
  return compiled;
};

describe('typed replies (SEC-9c)', () => {
  test('tsc refuses a handler whose reply does not match its schema, and accepts it made right', () => {
    const found = diagnostics();
    assert.deepEqual(found[RIGHT], []);
    const refused = found[WRONG] ?? [];
    assert.equal(refused.length, 1, JSON.stringify(refused));
    assert.equal(refused[0]?.line, 6);
    assert.equal(refused[0]?.code, 2322);
    assert.match(refused[0]?.message ?? '', /'"broken"' is not assignable to type '"available" \| "busy" \| "offline" \| "maintenance"'/);
  });

  test('every @ts-expect-error of the types test marks a refusal of the handler on the line below it', () => {
    const expected = typesLines.flatMap((line, i) => (line.trim().startsWith('// @ts-expect-error') ? [i + 2] : []));
    assert.ok(expected.length >= 10, `only ${expected.length} expectations`);
    const found = diagnostics()[TYPES_FILE] ?? [];
    const failing = [...new Set(found.map((d) => d.line))].sort((a, b) => a - b);
    assert.deepEqual(failing, expected, JSON.stringify(found, null, 1));
  });
});
