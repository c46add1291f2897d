// The engine is split by job (ARCHITECTURE.md): no class or function in src/engine/ over ~300
// lines, so that each job can be read on its own. The test names any that grows past it.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { SRC } from './imports.ts';

const MAX_LINES = 300;

/** Every class and function in a source text longer than `max` lines, as "name (N lines)". */
export function oversized(file: string, text: string, max: number): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: string[] = [];
  const lineOf = (pos: number) => source.getLineAndCharacterOfPosition(pos).line;
  const visit = (node: ts.Node) => {
    if (ts.isClassLike(node) || ts.isFunctionLike(node)) {
      const lines = lineOf(node.getEnd()) - lineOf(node.getStart(source)) + 1;
      const named = (node as { name?: ts.Node }).name ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name : undefined);
      const name = named?.getText(source) ?? `<anonymous at line ${lineOf(node.getStart(source)) + 1}>`;
      if (lines > max) found.push(`${file}: ${name} (${lines} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('the engine by job', () => {
  it(`no class or function in src/engine/ is over ${MAX_LINES} lines`, () => {
    const dir = join(SRC, 'engine');
    const files = readdirSync(dir).filter((file) => file.endsWith('.ts'));
    expect(files.length).toBeGreaterThan(0);
    expect(files.flatMap((file) => oversized(`engine/${file}`, readFileSync(join(dir, file), 'utf8'), MAX_LINES))).toEqual([]);
  });

  it('the measure sees classes and functions', () => {
    const body = Array.from({ length: 5 }, (_, i) => `  const a${i} = ${i};`).join('\n');
    const text = `class Big {\n  method() {\n${body}\n  }\n}\nfunction small() {}\nconst arrow = () => {\n${body}\n};\n`;
    expect(oversized('x.ts', text, 5)).toEqual(['x.ts: Big (9 lines)', 'x.ts: method (7 lines)', 'x.ts: arrow (7 lines)']);
  });
});
