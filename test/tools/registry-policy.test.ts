import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createExecuteTool } from '../../src/tools/builtin/execute.ts';
import { createFsTools } from '../../src/tools/builtin/fs.ts';
import { createShellTool } from '../../src/tools/builtin/shell.ts';
import { createWebFetchTool } from '../../src/tools/builtin/web-fetch.ts';
import { Policy, parseProfile, type PolicyTool } from '../../src/tools/policy.ts';
import { ToolDefinitionError, ToolRegistry } from '../../src/tools/registry.ts';
import type { Tool } from '../../src/tools/tool.ts';
import { AcxError, PolicyError } from '../../src/core/errors.ts';
import { addLiveSecret } from '../../src/util/scrub.ts';
import { tempDir, toolContext, removeTempDirs } from './helpers.ts';

afterAll(removeTempDirs);

function echoTool(overrides: Partial<PolicyTool> = {}): PolicyTool {
  return {
    name: 'echo',
    description: 'Echo the text back.',
    inputSchema: z.object({ text: z.string() }),
    capabilityScopes: ['memory.read'],
    kind: 'read',
    effect: 'read-only',
    execute: (input: { text: string }) => `echo: ${input.text}`,
    ...overrides,
  };
}

describe('ACX_PROFILE parsing', () => {
  it.each([
    ['unlocked', 'unlocked'],
    [' Unlocked ', 'unlocked'],
    ['UNLOCKED', 'unlocked'],
    [undefined, 'locked'],
    ['', 'locked'],
    ['locked', 'locked'],
    ['unlock', 'locked'],
    ['yes', 'locked'],
    ['unlocked please', 'locked'],
  ])('%j -> %s', (value, expected) => {
    expect(parseProfile(value)).toBe(expected);
    expect(Policy.fromEnv({ ACX_PROFILE: value }).profile).toBe(expected);
  });

  it('a registry without a policy is locked', () => {
    expect(new ToolRegistry().policy.profile).toBe('locked');
  });
});

describe('Policy refusals say why', () => {
  const hostShellTool = echoTool({ name: 'dangerous', requires: ['host-shell'], capabilityScopes: ['exec'] });

  it('locked refuses a tool that needs the host shell, at registration, with a PolicyError', () => {
    const registry = new ToolRegistry({ policy: Policy.locked() });
    const error = (() => {
      try {
        registry.register(hostShellTool);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(PolicyError);
    expect((error as PolicyError).message).toMatch(/"dangerous" was refused by the locked policy/);
    expect((error as PolicyError).message).toMatch(/unsandboxed shell on the host/);
    expect((error as PolicyError).message).toMatch(/ACX_PROFILE=unlocked/);
    expect(registry.has('dangerous')).toBe(false);
  });

  it('locked refuses a tool that writes outside the workspace', () => {
    const decision = Policy.locked().check(echoTool({ requires: ['fs-outside-workspace'] }));
    expect(decision.allowed).toBe(false);
    expect(decision.reason).toMatch(/writing files outside the workspace/);
  });

  it('unlocked allows them (when not root)', () => {
    const policy = Policy.unlocked({ isRoot: () => false });
    expect(policy.check(hostShellTool)).toEqual({ allowed: true, reason: '' });
    expect(policy.check(echoTool({ requires: ['fs-outside-workspace'] })).allowed).toBe(true);
  });

  it('refuses an unknown host capability', () => {
    const decision = Policy.unlocked().check(echoTool({ requires: ['root-kit' as never] }));
    expect(decision).toEqual({ allowed: false, reason: 'it declares an unknown host capability "root-kit"' });
  });

  it('an opt-in tool loads only when granted, whatever the profile', () => {
    const optIn = echoTool({ name: 'generate_image', optIn: true });
    expect(Policy.unlocked().check(optIn).reason).toMatch(/opt-in tool and was not granted/);
    expect(Policy.locked({ grants: ['generate_image'] }).check(optIn).allowed).toBe(true);
    // A tool covered by a wider grant names the grant an operator can actually give.
    const covered = echoTool({ name: 'system_prompt_read', optIn: true, grant: 'system_prompt' });
    expect(Policy.locked().check(covered).reason).toMatch(/\(grant "system_prompt" explicitly to enable it\)/);
  });
});

describe('the shell tool needs both gates and never loads as root', () => {
  const notRoot = (): boolean => false;

  it('granted but locked: refused (gate 2)', () => {
    const registry = new ToolRegistry({ policy: Policy.locked({ grants: ['shell'], isRoot: notRoot }) });
    expect(() => registry.register(createShellTool())).toThrow(/locked profile refuses/);
  });

  it('unlocked but not granted: refused (gate 1)', () => {
    const registry = new ToolRegistry({ policy: Policy.unlocked({ isRoot: notRoot }) });
    expect(() => registry.register(createShellTool())).toThrow(/opt-in tool and was not granted/);
  });

  it('granted and unlocked: loads and runs a real command', async () => {
    const registry = new ToolRegistry({ policy: Policy.unlocked({ grants: ['shell'], isRoot: notRoot }) });
    registry.register(createShellTool({ isRoot: notRoot, cwd: tempDir(), loginShell: false }));
    const run = await registry.run('shell', { command: 'echo one | tr a-z A-Z && echo two >&2' }, toolContext());
    expect(run.ok).toBe(true);
    expect(run.output).toBe('Exit code: 0\n--- stdout ---\nONE\n--- stderr ---\ntwo');
  });

  it('a working folder that does not exist yet is made on first use; one that cannot be made is said plainly', async () => {
    const registry = new ToolRegistry({ policy: Policy.unlocked({ grants: ['shell'], isRoot: notRoot }) });
    const fresh = join(tempDir(), 'agents', 'nova', 'workspace');
    registry.register(createShellTool({ isRoot: notRoot, cwd: fresh, loginShell: false }));
    const run = await registry.run('shell', { command: 'pwd' }, toolContext());
    expect(run.output).toBe(`Exit code: 0\n--- stdout ---\n${fresh}`);
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, 'x');
    const blocked = new ToolRegistry({ policy: Policy.unlocked({ grants: ['shell'], isRoot: notRoot }) });
    blocked.register(createShellTool({ isRoot: notRoot, cwd: join(file, 'workspace'), loginShell: false }));
    const refused = await blocked.run('shell', { command: 'pwd' }, toolContext());
    expect(refused).toMatchObject({ ok: false, error: expect.stringMatching(new RegExp(`The shell's working folder "${join(file, 'workspace')}" does not exist and could not be created \\(ENOTDIR\\); create it, or point ACX_WORKSPACE at a folder this user can write\\.`)) });
  });

  it("passes its environment on, but never the fleet's secrets (other agents' platform tokens, signing keys)", async () => {
    const saved = { ...process.env };
    Object.assign(process.env, { ACX_SHELL_PROBE: 'visible', BASECRADLE_TOKEN: 'own-token', BASECRADLE_TOKEN_ADA: 'ada-token', ACX_PLATFORM_WEBHOOK_SECRET: 'hush', BASECRADLE_ROUTER_BASECRADLE_WEBHOOK_SECRET_NOVA: 'hush2' });
    try {
      const registry = new ToolRegistry({ policy: Policy.unlocked({ grants: ['shell'], isRoot: notRoot }) });
      registry.register(createShellTool({ isRoot: notRoot, cwd: tempDir(), loginShell: false }));
      const run = await registry.run('shell', { command: 'env | grep -E "^(ACX_SHELL_PROBE|BASECRADLE|ACX_PLATFORM)" | sort' }, toolContext());
      expect(run.output).toBe('Exit code: 0\n--- stdout ---\nACX_SHELL_PROBE=visible\nBASECRADLE_TOKEN=own-token');
    } finally {
      process.env = saved;
    }
  });

  it('as root: refused at registration even with both gates cleared', () => {
    const registry = new ToolRegistry({ policy: Policy.unlocked({ grants: ['shell'], isRoot: () => true }) });
    expect(() => registry.register(createShellTool())).toThrow(/runs as root/);
  });

  it('as root: refuses to run even if it was somehow registered', async () => {
    const registry = new ToolRegistry({ policy: Policy.unlocked({ grants: ['shell'], isRoot: notRoot }) });
    registry.register(createShellTool({ isRoot: () => true }));
    const run = await registry.run('shell', { command: 'id' }, toolContext());
    expect(run.ok).toBe(false);
    expect(run.output).toMatch(/refuses to run as root/);
  });
});

describe('load() records skipped tools for resolved-config', () => {
  it('registers what the policy allows and lists the rest with reasons', () => {
    const workspace = tempDir();
    const registry = new ToolRegistry({ policy: Policy.locked({ isRoot: () => false }) });
    const result = registry.load([
      ...createFsTools({ workspace }),
      createExecuteTool({ workspace }),
      createWebFetchTool(),
      createShellTool(),
    ]);
    expect(result.registered).toEqual(['fs_read', 'fs_list', 'fs_write', 'execute', 'web_fetch']);
    expect(result.skipped).toEqual([{ name: 'shell', reason: expect.stringMatching(/opt-in tool and was not granted/) }]);
    const described = registry.describe();
    expect(described.profile).toBe('locked');
    expect(described.skipped.map((s) => s.name)).toEqual(['shell']);
    expect(described.tools.find((t) => t.name === 'execute')).toEqual({
      name: 'execute',
      kind: 'execute',
      effect: 'unsafe',
      capabilityScopes: ['exec', 'fs.read'],
    });
  });

  it('the execute tool satisfies the acx:execute contract shape', () => {
    const registry = new ToolRegistry().register(createExecuteTool({ workspace: tempDir() }));
    const schema = registry.jsonSchema('execute') as { type: string; required: string[]; properties: Record<string, { type: string }> };
    expect(schema.type).toBe('object');
    expect(schema.required).toEqual(['command']);
    expect(schema.properties.command?.type).toBe('string');
  });
});

describe('registration rejects malformed tools', () => {
  it.each([
    ['a bad scope', { capabilityScopes: ['root'] }, /unknown capability scope\(s\): root/],
    ['an uppercase vendor scope', { capabilityScopes: ['X-Thing'] }, /unknown capability scope/],
    ['a bad name', { name: 'has space' }, /Tool name "has space" is invalid/],
    ['an over-long name', { name: 'x'.repeat(65) }, /is invalid/],
    ['an empty description', { description: ' ' }, /has no description/],
    ['a bad kind', { kind: 'delete' }, /unknown kind "delete"/],
    ['a bad effect', { effect: 'maybe' }, /unknown effect "maybe"/],
    ['an uncompilable JSON Schema', { inputSchema: { type: 'nonsense' } }, /invalid inputSchema/],
  ])('rejects %s', (_label, overrides, message) => {
    const registry = new ToolRegistry();
    const error = (() => {
      try {
        registry.register(echoTool(overrides as Partial<PolicyTool>));
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ToolDefinitionError);
    expect((error as Error).message).toMatch(message);
  });

  it('accepts x- vendor scopes', () => {
    expect(new ToolRegistry().register(echoTool({ capabilityScopes: ['x-acme.widgets'] })).has('echo')).toBe(true);
  });

  it('rejects a duplicate name', () => {
    const registry = new ToolRegistry().register(echoTool());
    expect(() => registry.register(echoTool())).toThrow(/already registered/);
  });
});

describe('run() never throws: failures go back to the model', () => {
  const jsonSchemaTool: Tool = {
    name: 'add',
    description: 'Add two numbers.',
    inputSchema: {
      type: 'object',
      required: ['a', 'b'],
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      additionalProperties: false,
    },
    capabilityScopes: [],
    kind: 'other',
    effect: 'read-only',
    execute: (input: { a: number; b: number }) => input.a + input.b,
  };

  it('runs a valid call (JSON Schema)', async () => {
    const registry = new ToolRegistry().register(jsonSchemaTool);
    expect(await registry.run('add', { a: 2, b: 3 }, toolContext())).toEqual({ ok: true, output: 5 });
  });

  it('returns a JSON Schema validation error with a WARNING, without calling execute', async () => {
    let called = false;
    const registry = new ToolRegistry().register({ ...jsonSchemaTool, execute: () => (called = true) });
    const context = toolContext();
    const run = await registry.run('add', { a: 'two' }, context);
    expect(run.ok).toBe(false);
    expect(run.output).toMatch(/Invalid arguments for add/);
    expect(run.output).toMatch(/\/a: must be number/);
    expect(run.output).toMatch(/must have required property 'b'/);
    expect(run.error).toBe(run.output);
    expect(called).toBe(false);
    expect(context.logger.lines.filter((line) => line.startsWith('WARNING tool_error tool=add'))).toHaveLength(1);
  });

  it('returns a zod validation error', async () => {
    const run = await new ToolRegistry().register(echoTool()).run('echo', { text: 42 }, toolContext());
    expect(run.ok).toBe(false);
    expect(run.output).toMatch(/\/text: /);
  });

  it('returns a thrown error as the result', async () => {
    const registry = new ToolRegistry().register(
      echoTool({
        execute: () => {
          throw new Error('disk on fire');
        },
      }),
    );
    const context = toolContext();
    const run = await registry.run('echo', { text: 'x' }, context);
    expect(run).toEqual({ ok: false, output: 'echo failed: disk on fire', error: 'echo failed: disk on fire' });
    expect(context.logger.lines.some((line) => line.startsWith('WARNING tool_error tool=echo error="echo failed: disk on fire"'))).toBe(true);
  });

  it('a thrown error that quotes a credential reaches neither the model nor the journal with it', async () => {
    const key = 'PlainToolKey-5kq2Lm';
    addLiveSecret(key);
    const registry = new ToolRegistry().register(
      echoTool({
        execute: () => {
          throw new Error(`upstream refused key ${key} and token=abcdef123456`);
        },
      }),
    );
    const run = await registry.run('echo', { text: 'x' }, toolContext());
    expect(run).toEqual({ ok: false, output: 'echo failed: upstream refused key [REDACTED] and token=[REDACTED]', error: 'echo failed: upstream refused key [REDACTED] and token=[REDACTED]' });
  });

  it("names an MCP tool once: its error already does; another tool's error that starts with its name is still named", async () => {
    const throwing = (error: Error) =>
      new ToolRegistry().register(
        echoTool({
          execute: () => {
            throw error;
          },
        }),
      );
    const mcp = throwing(new AcxError('mcp-timeout', 'echo did not answer within 20 s'));
    expect((await mcp.run('echo', { text: 'x' }, toolContext())).output).toBe('echo did not answer within 20 s');
    const plain = throwing(new Error('echo access denied'));
    expect((await plain.run('echo', { text: 'x' }, toolContext())).output).toBe('echo failed: echo access denied');
  });

  it('returns a rejected promise as the result', async () => {
    const registry = new ToolRegistry().register(echoTool({ execute: async () => Promise.reject(new Error('later')) }));
    expect((await registry.run('echo', { text: 'x' }, toolContext())).output).toBe('echo failed: later');
  });

  it('answers an unknown tool name with the available ones', async () => {
    const run = await new ToolRegistry().register(echoTool()).run('nope', {}, toolContext());
    expect(run).toMatchObject({ ok: false, output: 'Unknown tool "nope". Available tools: echo.' });
  });

  it('does not run a tool when the turn was already cancelled', async () => {
    const controller = new AbortController();
    controller.abort();
    const run = await new ToolRegistry().register(echoTool()).run('echo', { text: 'x' }, toolContext({ abortSignal: controller.signal }));
    expect(run.ok).toBe(false);
    expect(run.output).toMatch(/cancelled/);
  });
});
