// The one reader carries an agent's tools/ code plugins as rom/tools/* (what a build packs and a
// granted host imports), and only plugin file names: the host writes these files to import them.
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readAgentDefinition, readAgentDirectory } from '../../src/agent-def/definition.ts';
import { readDirectorySource } from '../../src/agent-def/directory.ts';

const EXAMPLE = join(import.meta.dirname, '../../examples/notes-keeper');

function agentWithTools(files: Record<string, string>): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'acx-def-plugins-')), 'agent');
  cpSync(EXAMPLE, dir, { recursive: true });
  mkdirSync(join(dir, 'tools'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, 'tools', name), text);
  return dir;
}

describe('tool plugins in the agent definition', () => {
  it("packs a directory's tools/*.js|mjs|ts as rom/tools/, and nothing else from tools/", () => {
    const dir = agentWithTools({ 'greet.mjs': 'export default [];\n', 'typed.ts': 'export default [];\n', 'notes.md': '# notes\n', '.hidden.mjs': '', 'types.d.ts': '' });
    const definition = readAgentDirectory(dir);
    expect(definition.plugins.map((plugin) => plugin.file)).toEqual(['rom/tools/greet.mjs', 'rom/tools/typed.ts']);
    expect(definition.files.filter((file) => file.name.startsWith('rom/tools/')).map((file) => file.source)).toEqual([join('tools', 'greet.mjs'), join('tools', 'typed.ts')]);
  });

  it("a cartridge ROM's odd names under rom/tools/ are not plugins (a host never writes them)", () => {
    const source = readDirectorySource(agentWithTools({ 'greet.mjs': 'export default [];\n' }));
    const files = new Map(source.files);
    for (const name of ['rom/tools/..', 'rom/tools/.x.mjs', 'rom/tools/run.sh']) files.set(name, { name, bytes: Buffer.from('x'), source: name });
    const generated = readAgentDirectory(source.path).files.find((file) => file.name === 'rom/manifest/harness-requirements.json')!;
    files.set(generated.name, generated);
    const definition = readAgentDefinition({ ...source, kind: 'cartridge', files });
    expect(definition.plugins.map((plugin) => plugin.name)).toEqual(['greet.mjs']);
  });
});
