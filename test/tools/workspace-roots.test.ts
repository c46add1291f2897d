// A workspace of several roots (an editor's cwd and additional directories): relative paths in
// the primary root, absolute paths inside any root, the same confinement in each, and execute
// seeing every root (writable) and nothing else of them.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Sandbox } from '../../src/tools/builtin/execute.ts';
import { createFsTools } from '../../src/tools/builtin/fs.ts';
import { probeIsolation } from '../../src/tools/sandbox/isolation.ts';
import { WorkspaceRoots } from '../../src/tools/sandbox/roots.ts';
import type { Tool } from '../../src/tools/tool.ts';
import { removeTempDirs, tempDir, toolContext } from './helpers.ts';

afterAll(removeTempDirs);

function layout() {
  const base = fs.realpathSync(tempDir('acx-roots-'));
  const project = path.join(base, 'project');
  const docs = path.join(base, 'docs');
  const outside = path.join(base, 'outside');
  for (const dir of [project, docs, outside]) fs.mkdirSync(dir);
  fs.writeFileSync(path.join(project, 'a.txt'), 'in the project\n');
  fs.writeFileSync(path.join(docs, 'guide.md'), 'in the docs\n');
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'outside\n');
  fs.symlinkSync(outside, path.join(docs, 'escape'));
  return { base, project, docs, outside };
}

const run = async (tool: Tool, input: unknown) => tool.execute!(input, toolContext());

describe('fs tools over several roots', () => {
  const { project, docs, outside } = layout();
  const [fsRead, fsList, fsWrite] = createFsTools({ workspace: project, additionalRoots: [docs] });

  it('reads relative paths in the primary root and absolute paths in any root', async () => {
    expect(await run(fsRead, { path: 'a.txt' })).toBe('in the project\n');
    expect(await run(fsRead, { path: path.join(project, 'a.txt') })).toBe('in the project\n');
    expect(await run(fsRead, { path: path.join(docs, 'guide.md') })).toBe('in the docs\n');
    expect(await run(fsList, { path: docs })).toMatch(new RegExp(`^${docs}/: 2 entries\nescape -> \\(symlink\\)\nguide\\.md \\(12 bytes\\)$`));
  });

  it('writes into an additional root by absolute path and names the file absolutely', async () => {
    expect(await run(fsWrite, { path: path.join(docs, 'new/page.md'), content: 'page\n' })).toBe(`Wrote 5 bytes to ${path.join(docs, 'new/page.md')}.`);
    expect(fs.readFileSync(path.join(docs, 'new/page.md'), 'utf8')).toBe('page\n');
    expect(await run(fsWrite, { path: 'b.txt', content: 'bee' })).toBe('Wrote 3 bytes to b.txt.');
  });

  it('refuses absolute paths outside every root, and symlink escapes from an additional root', async () => {
    await expect(run(fsRead, { path: path.join(outside, 'secret.txt') })).rejects.toThrow(/absolute path outside the workspace roots/);
    await expect(run(fsWrite, { path: path.join(outside, 'planted.txt'), content: 'x' })).rejects.toThrow(/outside the workspace roots/);
    expect(fs.existsSync(path.join(outside, 'planted.txt'))).toBe(false);
    await expect(run(fsRead, { path: path.join(docs, 'escape/secret.txt') })).rejects.toThrow(/outside the workspace/);
    await expect(run(fsWrite, { path: path.join(docs, 'escape/planted.txt'), content: 'x' })).rejects.toThrow(/outside the workspace/);
    expect(fs.existsSync(path.join(outside, 'planted.txt'))).toBe(false);
    // A root's name as a prefix is not the root.
    await expect(run(fsRead, { path: `${docs}-other/x` })).rejects.toThrow(/outside the workspace roots/);
  });
});

describe('WorkspaceRoots', () => {
  it('picks the deepest root for a path inside nested roots, and reads what exists', () => {
    const { project } = layout();
    const inner = path.join(project, 'vendor');
    fs.mkdirSync(inner);
    fs.writeFileSync(path.join(inner, 'lib.js'), 'lib');
    const roots = new WorkspaceRoots({ primary: project, additional: [inner] });
    const located = roots.locate(path.join(inner, 'lib.js'));
    expect(located.workspace.root).toBe(inner);
    expect(located.relative).toBe('lib.js');
    expect(roots.absolute('src/x.ts')).toBe(path.join(project, 'src/x.ts'));
    expect(roots.readText('vendor/lib.js')).toBe('lib');
    expect(roots.readText('missing.txt')).toBeUndefined();
    expect(() => roots.absolute('../x')).toThrow(/"\.\."/);
  });
});

const bwrap = await probeIsolation('bwrap');

describe.skipIf(bwrap.kind !== 'bwrap')(`execute with additional roots (bwrap${bwrap.kind === 'bwrap' ? '' : `: skipped, ${bwrap.reason}`})`, () => {
  it('runs in the primary root, can write in an additional root, and cannot see a directory beside them', async () => {
    const { project, docs, outside } = layout();
    const sandbox = new Sandbox({ workspace: project, additionalRoots: [docs], isolation: 'bwrap' });
    const result = await sandbox.run({
      command: `pwd; echo made > ${docs}/made.txt && echo wrote; cat ${outside}/secret.txt 2>/dev/null || echo unseen`,
    });
    expect(result.stdout.text).toBe(`${project}\nwrote\nunseen\n`);
    expect(fs.readFileSync(path.join(docs, 'made.txt'), 'utf8')).toBe('made\n');
  });
});

describe('fs tools with an editor holding the contents', () => {
  it('pages the editor\'s text like a file, writes through it, and never asks about a refused path', async () => {
    const { project, docs } = layout();
    const asked: string[] = [];
    const [fsRead, , fsWrite] = createFsTools({
      workspace: project,
      additionalRoots: [docs],
      maxReadBytes: 4,
      contents: {
        async read(file) {
          asked.push(`read ${file}`);
          return 'buffer text';
        },
        async write(file, content) {
          asked.push(`write ${file} ${content}`);
        },
      },
    });
    expect(await run(fsRead, { path: 'a.txt', offset: 7 })).toBe('text\n[showing bytes 7-11 of 11]');
    expect(await run(fsWrite, { path: path.join(docs, 'guide.md'), content: 'edited' })).toBe(`Wrote 6 bytes to ${path.join(docs, 'guide.md')}.`);
    expect(fs.readFileSync(path.join(docs, 'guide.md'), 'utf8')).toBe('in the docs\n'); // the editor has it
    await expect(run(fsRead, { path: path.join(docs, 'escape/secret.txt') })).rejects.toThrow(/outside the workspace/);
    await expect(run(fsRead, { path: 'missing.txt' })).rejects.toThrow();
    expect(asked).toEqual([`read ${path.join(project, 'a.txt')}`, `write ${path.join(docs, 'guide.md')} edited`]);
  });
});
