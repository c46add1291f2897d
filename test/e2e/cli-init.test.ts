// Issue 9 item 8: `acx init [DIR]` scaffolds an agent directory that runs as it is — agent.json,
// the two prompts, one skill — and prints the command that runs it. What it writes is checked the
// way a user would: resolved-config reads it, build packs it, run answers with a model.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ModelServer, respondByTurn, startModelServer } from '../support/model-server.ts';
import { cleanEnv, runAcx, tempDir } from '../support/cli.ts';
import { scaled } from '../support/time-scale.ts';

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer({
    fallback: respondByTurn(({ request }) => `I am ${request.view.system.join(' ').includes('You are Release Bot') ? 'Release Bot' : 'someone else'}.`),
  });
});
afterAll(async () => {
  await server.close();
});

describe.concurrent('acx init (e2e)', { timeout: scaled(120_000) }, () => {
  it('creates the directory, prints the next command, and the agent runs as written', async () => {
    const root = tempDir('acx-init-');
    const init = await runAcx(['init', 'release-bot'], { cwd: root });
    expect(init.status, init.stderr).toBe(0);
    expect(init.stdout).toBe(
      [
        'Created the agent "Release Bot" (id release-bot) in ./release-bot:',
        '  agent.json',
        '  prompts/system-prompt.md',
        '  prompts/initialize.md',
        '  skills/summarize/SKILL.md',
        '',
        'Next: acx run ./release-bot "What can you do?"',
        '      (it uses openai:gpt-5.4-mini: export OPENAI_API_KEY=... first; another model: --model provider:id; what it would use: acx resolved-config ./release-bot)',
        '',
      ].join('\n'),
    );
    const dir = join(root, 'release-bot');
    expect(JSON.parse(readFileSync(join(dir, 'agent.json'), 'utf8'))).toEqual({
      id: 'release-bot',
      name: 'Release Bot',
      version: '0.1.0',
      description: 'Release Bot: a helpful assistant that remembers what it is told.',
      model: 'openai:gpt-5.4-mini',
      maxSteps: 12,
      permissionMode: 'allow-edits',
      tools: ['memory', 'execute', 'dispatch'],
    });
    expect(readdirSync(root), 'no temporary directory is left behind').toEqual(['release-bot']);

    // Started by npx (a checkout, or a project that depends on acx), where `acx` alone is not on PATH.
    const viaNpx = await runAcx(['init', 'npx-bot'], { cwd: root, env: cleanEnv({ npm_command: 'exec' }) });
    expect(viaNpx.stdout).toContain('Next: npx acx run ./npx-bot "What can you do?"\n');
    expect(viaNpx.stdout).toContain('what it would use: npx acx resolved-config ./npx-bot)');

    // The printed command, with the key and a local endpoint for the model it names.
    const env = cleanEnv({ OPENAI_API_KEY: 'sk-test-init', OPENAI_BASE_URL: server.openaiBaseURL });
    const run = await runAcx(['run', './release-bot', 'What can you do?'], { cwd: root, env });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe('I am Release Bot.\n');
    const request = server.requests.find((r) => r.view.messages.some((m) => m.text === 'What can you do?'))!;
    expect(request.body.model).toBe('gpt-5.4-mini');
    expect(request.view.tools).toEqual(expect.arrayContaining(['memory_write', 'memory_search']));
    expect(request.view.system.join('\n')).toContain('summarize: Summarize what you remember about a topic');
  });

  it('resolved-config reads it and build packs it', async () => {
    const root = tempDir('acx-init-');
    expect((await runAcx(['init', join(root, 'agent')])).status).toBe(0);
    const resolved = await runAcx(['resolved-config', join(root, 'agent')]);
    expect(resolved.status, resolved.stderr).toBe(0);
    expect(JSON.parse(resolved.stdout)).toMatchObject({ agent: { id: 'agent', name: 'Agent', source: 'directory' }, model: 'gpt-5.4-mini', max_steps: 12 });
    const keys = await runAcx(['keygen', '-o', join(root, 'keys')]);
    expect(keys.status, keys.stderr).toBe(0);
    const build = await runAcx(['build', join(root, 'agent'), '-o', join(root, 'agent.acx'), '--key', join(root, 'keys/acx-signing.key.pem'), '--publisher', 'dev.acx.test']);
    expect(build.status, build.stderr).toBe(0);
    expect(build.stdout).toMatch(/^wrote: +.*agent\.acx$/m);
    const inspect = await runAcx(['inspect', join(root, 'agent.acx'), '--json']);
    const files = (JSON.parse(inspect.stdout) as { files: Array<{ name: string }> }).files.map((f) => f.name);
    expect(files).toEqual(expect.arrayContaining(['rom/agent.json', 'rom/prompts/system-prompt.md', 'rom/prompts/initialize.md', 'rom/skills/summarize/SKILL.md']));
  });

  it('never overwrites: a directory that already has an agent is refused and left as it was', async () => {
    const root = tempDir('acx-init-');
    mkdirSync(join(root, 'mine', 'prompts'), { recursive: true });
    writeFileSync(join(root, 'mine', 'agent.json'), '{"id":"mine"}');
    writeFileSync(join(root, 'mine', 'prompts', 'system-prompt.md'), 'my own prompt');
    const init = await runAcx(['init', join(root, 'mine')]);
    expect(init.status).toBe(1);
    expect(init.stderr).toBe(
      `acx: ${join(root, 'mine')} already has agent.json, prompts/system-prompt.md; nothing was written.\n` +
        `  → Choose a new directory (acx init ${join(root, 'mine-2')}), or edit the agent that is there.\n`,
    );
    expect(readFileSync(join(root, 'mine', 'agent.json'), 'utf8')).toBe('{"id":"mine"}');
    expect(existsSync(join(root, 'mine', 'prompts', 'initialize.md'))).toBe(false);
  });

  it('fills an existing directory that holds other files, and takes --name, --model and --json', async () => {
    const root = tempDir('acx-init-');
    writeFileSync(join(root, 'README.md'), 'notes');
    const init = await runAcx(['init', '--name', 'Ops Helper', '--model', 'anthropic:claude-sonnet-4-5', '--json'], { cwd: root });
    expect(init.status, init.stderr).toBe(0);
    const result = JSON.parse(init.stdout) as Record<string, unknown>;
    expect(result).toMatchObject({ dir: root, name: 'Ops Helper', model: 'anthropic:claude-sonnet-4-5', next: 'acx run . "What can you do?"' });
    expect(readdirSync(root).sort()).toEqual(['README.md', 'agent.json', 'prompts', 'skills']);
    expect(JSON.parse(readFileSync(join(root, 'agent.json'), 'utf8'))).toMatchObject({ name: 'Ops Helper', model: 'anthropic:claude-sonnet-4-5' });
  });

  it('refuses a bad model spec before writing anything', async () => {
    const root = tempDir('acx-init-');
    const init = await runAcx(['init', join(root, 'x'), '--model', 'gpt-4']);
    expect(init.status).toBe(1);
    expect(init.stderr).toMatch(/^acx: "gpt-4" is not a model spec\.\n {2}→ Write provider:model-id/);
    expect(existsSync(join(root, 'x'))).toBe(false);
  });
});
