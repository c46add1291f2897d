import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Command } from 'commander';
import { register, runHandshake } from '../../src/frontends/cli/commands/handshake.ts';
import { EXIT } from '../../src/frontends/cli/output.ts';
import { assertPreflight } from '../../src/contract/preflight.ts';
import { matchingTools, manifestBytes } from './helpers.ts';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acx-handshake-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function writeFixtures(tools = matchingTools()) {
  const manifest = path.join(dir, 'harness-requirements.json');
  fs.writeFileSync(manifest, manifestBytes());
  const toolsFile = path.join(dir, 'tools.json');
  fs.writeFileSync(toolsFile, JSON.stringify(tools));
  return { manifest, toolsFile };
}

describe('acx handshake (core)', () => {
  it('accepts with host tools from a file and prints the descriptor as JSON', async () => {
    const { manifest, toolsFile } = writeFixtures();
    const run = await runHandshake(manifest, { tools: toolsFile, contextWindow: 200_000, json: true });
    expect(run.exitCode).toBe(EXIT.ok);
    const printed = JSON.parse(run.stdout);
    expect(printed.verdict).toBe('accept');
    expect(printed.protocolRevision).toBe('2025-11-25');
    expect(run.stderr).toBe('');
  });

  it('reads the manifest from a directory (plain or rom/manifest layout)', async () => {
    const { toolsFile } = writeFixtures();
    const agent = path.join(dir, 'agent');
    fs.mkdirSync(path.join(agent, 'rom', 'manifest'), { recursive: true });
    fs.writeFileSync(path.join(agent, 'rom', 'manifest', 'harness-requirements.json'), manifestBytes());
    expect((await runHandshake(dir, { tools: toolsFile, contextWindow: 200_000 })).exitCode).toBe(EXIT.ok);
    expect((await runHandshake(agent, { tools: toolsFile, contextWindow: 200_000 })).exitCode).toBe(EXIT.ok);
  });

  it('refuses with EXIT.refused, a readable summary and the JSON-RPC error', async () => {
    const { manifest, toolsFile } = writeFixtures(matchingTools().filter((t) => t.name !== 'dispatch'));
    const run = await runHandshake(manifest, { tools: toolsFile, contextWindow: 8000 });
    expect(run.exitCode).toBe(EXIT.refused);
    expect(run.stdout).toContain('FAIL acx:dispatch -> unbound');
    expect(run.stdout).toContain('FAIL model.minContextWindowTokens: requested >= 100000, offered 8000');
    expect(run.stdout).toContain('verdict: refuse (unmet: model.minContextWindowTokens, tool:acx:dispatch)');
    expect(JSON.parse(run.stderr)).toMatchObject({ code: -32602, message: 'Unsupported harness', data: { unmet: ['model.minContextWindowTokens', 'tool:acx:dispatch'] } });
  });

  it('applies --grant, --bind, --fs and --protocol-revision', async () => {
    const tools = matchingTools().map((t) => (t.name === 'execute' ? { ...t, name: 'shell', grantedScopes: [] } : t));
    const { manifest, toolsFile } = writeFixtures(tools);
    const run = await runHandshake(manifest, {
      tools: toolsFile,
      contextWindow: 200_000,
      grant: ['shell=exec', 'shell=fs.read'],
      bind: ['acx:execute=shell'],
      fs: 'fs.read,fs.write',
      protocolRevision: '2025-06-18',
    });
    expect(run.exitCode).toBe(EXIT.ok);
    expect(run.descriptor.bindings[0]).toMatchObject({ boundTool: 'shell', via: 'explicit', scopesGranted: ['exec', 'fs.read'] });
    expect(run.descriptor.filesystem).toEqual(['fs.read', 'fs.write']);
    expect(run.descriptor.protocolRevision).toBe('2025-06-18');
  });

  it('writes the descriptor with --out so the preflight can check it', async () => {
    const { manifest, toolsFile } = writeFixtures();
    const out = path.join(dir, 'compliance.json');
    await runHandshake(manifest, { tools: toolsFile, contextWindow: 200_000, out });
    expect(assertPreflight(fs.readFileSync(out, 'utf8'), fs.readFileSync(manifest)).verdict).toBe('accept');
  });

  it('says what is missing instead of guessing', async () => {
    const { manifest, toolsFile } = writeFixtures();
    // No model: the engine's floor, and the checklist says so (test/e2e/cli-model-less.test.ts runs the CLI).
    const floor = await runHandshake(manifest, { tools: toolsFile });
    expect(floor.descriptor.checks.find((c) => c.id === 'model.minContextWindowTokens')?.offered).toMatch(/^128000 \(the engine's 128000 floor .*no model given: pass --model or --context-window\)$/);
    await expect(runHandshake(manifest, { tools: toolsFile, model: 'gpt-x' })).rejects.toThrow(/is not a model spec/);
    await expect(runHandshake(manifest, { tools: toolsFile, contextWindow: 1, mcp: ['node server.js'] })).rejects.toThrow(/could not be used for the handshake/);
    await expect(runHandshake(path.join(dir, 'missing.json'), { contextWindow: 1 })).rejects.toThrow(/Cannot read/);
    await expect(runHandshake(manifest, { tools: toolsFile, contextWindow: 1, grant: ['ghost=exec'] })).rejects.toThrow(/--grant names "ghost"/);
    const cartridge = path.join(import.meta.dirname, '..', 'fixtures', 'reference', 'rex-calder.acx');
    // A cartridge is read after verification; a 1-token context window is then refused.
    expect((await runHandshake(cartridge, { contextWindow: 1 })).exitCode).toBe(3);
  });

  it('registers as a commander subcommand', () => {
    const program = new Command('acx');
    register(program);
    const command = program.commands.find((c) => c.name() === 'handshake')!;
    expect(command.options.map((o) => o.long)).toEqual(expect.arrayContaining(['--tools', '--mcp', '--model', '--json', '--bind', '--grant', '--out']));
  });
});
