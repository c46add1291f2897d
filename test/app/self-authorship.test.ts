import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { composeCharter, createSelfAuthorshipTools } from '../../src/app/charter.ts';
import { installConfigHome, packagedDefaults } from '../../src/app/install.ts';
import { readOptIns } from '../../src/app/opt-in.ts';
import { createSystemPromptTools } from '../../src/tools/builtin/system-prompt.ts';
import { Policy } from '../../src/tools/policy.ts';
import { ToolRegistry } from '../../src/tools/registry.ts';
import { normalizeSchema } from '../../src/tools/schema.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { read, tempHome, toolContext, V1_DEFAULTS, write } from '../support/config-home.ts';

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

function setup() {
  const home = tempHome();
  installConfigHome({ configHome: home, version: '1', logger: silentLogger, defaults: V1_DEFAULTS, optIn: ['system_prompt'] });
  const [readTool, editTool] = createSelfAuthorshipTools(home, {
    defaults: V1_DEFAULTS,
    now: () => new Date('2030-01-02T03:04:05.678Z'),
  });
  const registry = new ToolRegistry({ policy: Policy.locked({ grants: readOptIns(home) }) });
  registry.register(readTool!).register(editTool!);
  const ctx = toolContext();
  const call = async (name: string, input: unknown) => {
    const result = await registry.run(name, input, ctx);
    return result;
  };
  return { home, readTool: readTool!, editTool: editTool!, call, ctx };
}

function backups(home: string): string[] {
  return fs.readdirSync(path.join(home, 'prompts')).filter((f) => f.endsWith('.bak'));
}

describe('self-authorship tools', () => {
  it('are opt-in, scoped, and say when an edit takes effect', () => {
    const [readTool, editTool] = createSystemPromptTools({ configHome: tempHome() });
    expect(readTool).toMatchObject({ name: 'system_prompt_read', kind: 'read', effect: 'read-only', optIn: true, capabilityScopes: ['x-self-authorship'] });
    expect(editTool).toMatchObject({ name: 'system_prompt_edit', kind: 'edit', effect: 'unsafe', optIn: true, capabilityScopes: ['x-self-authorship'] });
    expect(editTool!.description).toMatch(/next turn/);
    expect(Policy.locked().check(editTool!).allowed).toBe(false);
  });

  it('read returns the content and a confirm token that is the sha256 of it', async () => {
    const { call, home } = setup();
    const result = await call('system_prompt_read', {});
    expect(result.ok).toBe(true);
    expect(result.output).toMatchObject({
      file: 'prompts/system-prompt.md',
      source: 'file',
      content: read(home, 'prompts/system-prompt.md'),
      confirm: sha(read(home, 'prompts/system-prompt.md')),
    });
  });

  it('without a confirm it only previews', async () => {
    const { call, home } = setup();
    const before = read(home, 'prompts/system-prompt.md');
    const result = await call('system_prompt_edit', { content: 'You are terse.\n' });
    expect(result.output).toMatchObject({ status: 'preview', written: false, confirm: sha(before) });
    expect((result.output as { preview: string }).preview).toContain('+ You are terse.');
    expect((result.output as { preview: string }).preview).toContain('- You are helpful. (v1)');
    expect(read(home, 'prompts/system-prompt.md')).toBe(before);
    expect(backups(home)).toEqual([]);
  });

  it('refuses a stale confirm without changing anything', async () => {
    const { call, home } = setup();
    const token = ((await call('system_prompt_read', {})).output as { confirm: string }).confirm;
    write(home, 'prompts/system-prompt.md', 'The operator changed this meanwhile.\n');
    const result = await call('system_prompt_edit', { content: 'You are terse.\n', confirm: token });
    expect(result.output).toMatchObject({ status: 'stale', written: false, confirm: sha('The operator changed this meanwhile.\n') });
    expect(read(home, 'prompts/system-prompt.md')).toBe('The operator changed this meanwhile.\n');
    expect(backups(home)).toEqual([]);

    const garbage = await call('system_prompt_edit', { content: 'x', confirm: 'not-a-hash' });
    expect(garbage.output).toMatchObject({ status: 'stale', written: false });
  });

  it('with the current token it snapshots the old file as a .bak and writes; the next charter has it', async () => {
    const { call, home, ctx } = setup();
    const before = read(home, 'prompts/system-prompt.md');
    const initializeBefore = read(home, 'prompts/initialize.md');
    const result = await call('system_prompt_edit', { content: 'You are terse.\n', confirm: sha(before) });
    expect(result.output).toMatchObject({
      status: 'written',
      written: true,
      confirm: sha('You are terse.\n'),
      backup: 'prompts/system-prompt.md.2030-01-02T03-04-05.678Z.bak',
    });
    expect((result.output as { message: string }).message).toMatch(/next turn/);
    expect(read(home, 'prompts/system-prompt.md')).toBe('You are terse.\n');
    expect(read(home, 'prompts/system-prompt.md.2030-01-02T03-04-05.678Z.bak')).toBe(before);
    expect(read(home, 'prompts/initialize.md')).toBe(initializeBefore);
    expect(composeCharter(home).systemPrompt).toBe('You are terse.');
    expect(ctx.logger.lines.join('\n')).not.toContain('terse');

    // The same token again is now stale: the first edit cannot be replayed over a later one.
    const replay = await call('system_prompt_edit', { content: 'You are verbose.\n', confirm: sha(before) });
    expect(replay.output).toMatchObject({ status: 'stale', written: false });
    // A second edit in the same millisecond gets its own backup.
    await call('system_prompt_edit', { content: 'You are verbose.\n', confirm: sha('You are terse.\n') });
    expect(backups(home).sort()).toEqual([
      'system-prompt.md.2030-01-02T03-04-05.678Z-1.bak',
      'system-prompt.md.2030-01-02T03-04-05.678Z.bak',
    ]);
  });

  it('has no way to target another file: no path in the schema, extra properties rejected', async () => {
    const { call, home, readTool, editTool } = setup();
    const editSchema = normalizeSchema(editTool.inputSchema).jsonSchema as { properties: object; additionalProperties: unknown };
    expect(Object.keys(editSchema.properties).sort()).toEqual(['confirm', 'content']);
    expect(editSchema.additionalProperties).toBe(false);
    const readSchema = normalizeSchema(readTool.inputSchema).jsonSchema as { properties?: object; additionalProperties: unknown };
    expect(Object.keys(readSchema.properties ?? {})).toEqual([]);
    expect(readSchema.additionalProperties).toBe(false);

    const before = read(home, 'prompts/initialize.md');
    const token = sha(read(home, 'prompts/system-prompt.md'));
    for (const extra of [{ path: 'prompts/initialize.md' }, { file: '../initialize.md' }, { agent: 'other' }]) {
      const result = await call('system_prompt_edit', { content: 'pwned', confirm: token, ...extra });
      expect(result.ok).toBe(false);
      expect(result.error).toMatch(/Invalid arguments/);
    }
    expect((await call('system_prompt_read', { path: '/etc/passwd' })).ok).toBe(false);
    expect(read(home, 'prompts/initialize.md')).toBe(before);
    expect(read(home, 'prompts/system-prompt.md')).toBe(V1_DEFAULTS['prompts/system-prompt.md']);
  });

  it('refuses to write through a symbolic link', async () => {
    const { call, home } = setup();
    const outside = path.join(path.dirname(home), 'outside.md');
    fs.writeFileSync(outside, 'outside\n');
    fs.rmSync(path.join(home, 'prompts/system-prompt.md'));
    fs.symlinkSync(outside, path.join(home, 'prompts/system-prompt.md'));
    const result = await call('system_prompt_edit', { content: 'x', confirm: sha('outside\n') });
    expect(result.ok).toBe(false);
    expect(result.error).toMatch(/not a regular file/);
    expect(fs.readFileSync(outside, 'utf8')).toBe('outside\n');
  });

  it('refuses empty content', async () => {
    const { call, home } = setup();
    const result = await call('system_prompt_edit', { content: '  \n', confirm: sha(read(home, 'prompts/system-prompt.md')) });
    expect(result.ok).toBe(false);
    expect(result.error).toMatch(/empty/);
  });

  it('in a never-installed home it reads the packaged default and an edit creates the file', async () => {
    const home = tempHome();
    const [readTool, editTool] = createSelfAuthorshipTools(home);
    const ctx = toolContext();
    const first = (await readTool!.execute!({}, ctx)) as { source: string; content: string; confirm: string };
    expect(first.source).toBe('default');
    expect(first.content).toBe(packagedDefaults()['prompts/system-prompt.md']);
    const result = (await editTool!.execute!({ content: 'You are Bo.\n', confirm: first.confirm }, ctx)) as { status: string; backup: unknown };
    expect(result).toMatchObject({ status: 'written', backup: null });
    expect(read(home, 'prompts/system-prompt.md')).toBe('You are Bo.\n');
    expect(composeCharter(home).systemPrompt).toBe('You are Bo.');
  });
});
