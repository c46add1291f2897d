import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpAuditNotice } from '../../src/mcp/audit.ts';
import { bridgedKind } from '../../src/mcp/bridge.ts';
import { connectMcpServers, resolveMcpStartTimeoutMs, resolveMcpTimeoutMs, type McpConnection } from '../../src/mcp/client.ts';
import { requiredServersDown } from '../../src/mcp/required.ts';
import { parseMcpServerEntry, type McpServerConfig } from '../../src/mcp/config.ts';
import { describeImageForTextModel, McpToolError, type McpToolOutput } from '../../src/mcp/content.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { PIXEL_PNG_BASE64 } from '../fixtures/mcp/fixture-tools.ts';
import { startHttpFixture } from '../fixtures/mcp/http-server.ts';
import { byName, context, fixtureCommand } from './helpers.ts';

function server(name: string, entry: Record<string, unknown>): McpServerConfig {
  return parseMcpServerEntry(name, entry, `test:${name}`, process.cwd());
}

describe('a server restricted to granted host variables (a cartridge\'s ROM drop-in)', () => {
  it('is skipped, naming the variable, the server and the grant, unless that variable is granted', async () => {
    const logger = createMemoryLogger('debug');
    const asks = (name: string, grant: string[]) => ({ ...server(name, { ...fixtureCommand('stdio-server.ts'), env: { OPENAI_API_KEY: '${OPENAI_API_KEY}' } }), envGrant: grant });
    const connection = await connectMcpServers(
      [asks('ungranted', []), asks('granted', ['OPENAI_API_KEY']), { ...server('web', { url: 'http://127.0.0.1:9/mcp', headers: { Authorization: 'Bearer ${OPENAI_API_KEY}' } }), envGrant: [] }],
      { logger, timeoutMs: 10_000, env: { ...process.env, OPENAI_API_KEY: 'sk-host-secret' } },
    );
    try {
      const status = Object.fromEntries(connection.servers.map((s) => [s.name, s]));
      expect(status.ungranted).toMatchObject({ status: 'skipped', reason: expect.stringContaining('asks for host variable OPENAI_API_KEY in "env", which the host has not granted to cartridges; grant it with --allow-cartridge-env OPENAI_API_KEY (or ACX_CARTRIDGE_ENV=OPENAI_API_KEY)') });
      expect(status.web).toMatchObject({ status: 'skipped', reason: expect.stringContaining('asks for host variable OPENAI_API_KEY in "headers"') });
      expect(status.granted!.status).toBe('ok');
      expect(await byName(connection.tools, 'granted__env_value').execute!({ name: 'OPENAI_API_KEY' }, context())).toBe('sk-host-secret');
      expect(logger.lines.filter((l) => l.startsWith('WARNING mcp server skipped')).map((l) => /server=(\S+)/.exec(l)?.[1]).sort()).toEqual(['ungranted', 'web']);
      expect(logger.lines.join('\n')).not.toContain('sk-host-secret');
    } finally {
      await connection.close();
    }
  });
});

describe('connectMcpServers with real servers over stdio and Streamable HTTP', () => {
  let http: { url: string; close(): Promise<void> };
  let connection: McpConnection;
  const logger = createMemoryLogger('debug');

  beforeAll(async () => {
    http = await startHttpFixture({ token: 'fixture-token-123' });
    connection = await connectMcpServers(
      [
        server('local', { ...fixtureCommand('stdio-server.ts'), env: { FIXTURE_SECRET: '${ACX_TEST_SECRET}' } }),
        server('remote', { url: http.url, headers: { Authorization: 'Bearer ${ACX_TEST_HTTP_TOKEN}' } }),
        server('crashy', fixtureCommand('crash-server.ts')),
        server('nolist', fixtureCommand('broken-list-server.ts')),
        server('ghost', { command: '/nonexistent/acx-mcp-server' }),
        server('needsvar', { url: http.url, headers: { Authorization: 'Bearer ${ACX_TEST_UNSET_VAR}' } }),
      ],
      {
        logger,
        timeoutMs: 10_000,
        env: { ...process.env, ACX_TEST_SECRET: 'from-host-env', ACX_TEST_HTTP_TOKEN: 'fixture-token-123' },
      },
    );
  });
  afterAll(async () => {
    await connection?.close();
    await http?.close();
  });

  it('lists each server tool as <server>__<tool>, sanitised to the tool-name pattern', () => {
    const names = connection.tools.map((t) => t.name);
    for (const prefix of ['local', 'remote']) {
      expect(names).toEqual(expect.arrayContaining([`${prefix}__echo`, `${prefix}__add`, `${prefix}__screenshot`, `${prefix}__get_weather`]));
    }
    for (const name of names) expect(name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });

  it('reports each server with its status, reason and negotiated protocol revision', () => {
    const status = Object.fromEntries(connection.servers.map((s) => [s.name, s]));
    expect(status.local).toMatchObject({ status: 'ok', toolCount: 8, protocolVersion: '2025-11-25', transport: 'stdio' });
    expect(status.remote).toMatchObject({ status: 'ok', toolCount: 8, protocolVersion: '2025-11-25', transport: 'http' });
    expect(status.crashy!.status).toBe('skipped');
    expect(status.crashy!.reason).toMatch(/failed to start or initialize/);
    expect(status.crashy!.reason).toContain('cannot open the widget database');
    expect(status.nolist!.status).toBe('skipped');
    expect(status.nolist!.reason).toMatch(/failed to list its tools: .*tool catalogue unavailable/);
    expect(status.ghost!.status).toBe('skipped');
    expect(status.ghost!.reason).toMatch(/ENOENT/);
    expect(status.needsvar).toMatchObject({ status: 'skipped', reason: expect.stringMatching(/ACX_TEST_UNSET_VAR is not set/) });
  });

  it('logs a WARNING for each skipped server and never logs env or header values', () => {
    const skipped = logger.lines.filter((l) => l.startsWith('WARNING mcp server skipped'));
    expect(skipped.map((l) => /server=(\S+)/.exec(l)?.[1]).sort()).toEqual(['crashy', 'ghost', 'needsvar', 'nolist']);
    const all = logger.lines.join('\n');
    expect(all).not.toContain('from-host-env');
    expect(all).not.toContain('fixture-token-123');
  });

  it('round-trips calls on both transports', async () => {
    for (const prefix of ['local', 'remote']) {
      expect(await byName(connection.tools, `${prefix}__echo`).execute!({ text: 'hi' }, context())).toBe('echo: hi');
      expect(await byName(connection.tools, `${prefix}__get_weather`).execute!({ city: 'Oslo' }, context())).toBe('sunny in Oslo');
    }
  });

  it('passes ${VAR} env values from the host to a stdio server', async () => {
    expect(await byName(connection.tools, 'local__env_value').execute!({ name: 'FIXTURE_SECRET' }, context())).toBe('from-host-env');
    // Host variables that are not in the config stay out of the server's environment.
    expect(await byName(connection.tools, 'local__env_value').execute!({ name: 'ACX_TEST_SECRET' }, context())).toBe('(unset)');
  });

  it('keeps structuredContent next to the text', async () => {
    const out = (await byName(connection.tools, 'remote__add').execute!({ a: 2, b: 3 }, context())) as McpToolOutput;
    expect(out).toEqual({ content: [{ type: 'text', text: '5' }], structuredContent: { sum: 5 } });
  });

  it('maps an image result to an image part, and describes it for a text-only model', async () => {
    const out = (await byName(connection.tools, 'local__screenshot').execute!({}, context())) as McpToolOutput;
    expect(out.content).toEqual([
      { type: 'text', text: 'here is the page' },
      { type: 'image', data: PIXEL_PNG_BASE64, mediaType: 'image/png' },
    ]);
    const description = describeImageForTextModel(out.content[1] as { data: string; mediaType: string });
    expect(description).toContain('image/png');
    expect(description).toContain(`${Buffer.from(PIXEL_PNG_BASE64, 'base64').length} bytes`);
  });

  it('notes other block types instead of inlining them', async () => {
    const out = await byName(connection.tools, 'local__mixed').execute!({}, context());
    expect(out).toMatch(/\[audio content: audio\/wav, 3 bytes/);
    expect(out).toMatch(/\[embedded resource: file:\/\/\/notes.txt \(text\/plain, 5 characters of text\)/);
  });

  it('turns isError into an error result for the model', async () => {
    const call = byName(connection.tools, 'remote__fail').execute!({}, context());
    await expect(call).rejects.toBeInstanceOf(McpToolError);
    await expect(call).rejects.toThrow('the widget is broken');
  });

  it('validates arguments against the server inputSchema before calling', async () => {
    await expect(byName(connection.tools, 'local__echo').execute!({ text: 42 }, context())).rejects.toMatchObject({
      code: 'mcp-invalid-input',
      message: expect.stringMatching(/\/text: must be string/),
    });
  });

  it('gives MCP tools no capability scopes and conservative kind/effect unless configured', () => {
    const tool = byName(connection.tools, 'local__echo');
    expect(tool).toMatchObject({ capabilityScopes: [], kind: 'other', effect: 'unsafe' });
    expect(tool.description).toBe('Echo the text back.');
  });

  it('makes a tool the server marks readOnlyHint read-kind only when the config names no kind', () => {
    expect(bridgedKind({ kind: 'edit' }, { annotations: { readOnlyHint: true } })).toBe('edit'); // a configured kind wins
    expect(bridgedKind({ kind: 'other' }, { annotations: { readOnlyHint: false } })).toBe('other');
  });

  it('cancels a call when the turn is aborted', async () => {
    const abort = new AbortController();
    const call = byName(connection.tools, 'local__sleep').execute!({ ms: 60_000 }, context({ abortSignal: abort.signal }));
    abort.abort(new Error('turn cancelled'));
    await expect(call).rejects.toThrow(/cancelled|abort/i);
  });

  it('makes leaving the safe default loud: an audit line and a notice for the model', () => {
    const audit = createMemoryLogger('debug');
    const notice = mcpAuditNotice(connection.servers, audit)!;
    expect(audit.lines).toEqual([notice.logLine]);
    expect(notice.logLine).toMatch(/^WARNING mcp drop-ins active servers=local,remote tools=16 skipped=crashy,nolist,ghost,needsvar$/);
    expect(notice.modelText).toMatch(/sanctioned for your use by the operator/);
    expect(notice.modelText).toContain('local__*');
    expect(mcpAuditNotice(connection.servers.filter((s) => s.status === 'skipped'))).toBeNull();
  });
});

describe('timeouts', () => {
  it('a slow tool call fails with a timeout error while the server stays usable', async () => {
    const connection = await connectMcpServers([server('slow', fixtureCommand('stdio-server.ts'))], { callTimeoutMs: 500 });
    try {
      await expect(byName(connection.tools, 'slow__sleep').execute!({ ms: 30_000 }, context())).rejects.toMatchObject({
        code: 'mcp-timeout',
        message: expect.stringMatching(/did not answer within 0.5 s/),
      });
      expect(await byName(connection.tools, 'slow__echo').execute!({ text: 'still here' }, context())).toBe('echo: still here');
    } finally {
      await connection.close();
    }
  });

  it('a server that never answers initialize is skipped after the timeout', async () => {
    // `sleep` reads nothing and writes nothing: a stuck server.
    const connection = await connectMcpServers(
      [server('stuck', { command: process.execPath, args: ['-e', 'setTimeout(() => {}, 60000)'] })],
      { timeoutMs: 500 },
    );
    expect(connection.servers[0]).toMatchObject({ status: 'skipped', reason: expect.stringMatching(/timed out/i) });
    await connection.close();
  });

  it('a required server that does not start is named, with why and what to do; an optional or disabled one stops nothing', async () => {
    const logger = createMemoryLogger('debug');
    // It never answers, so only the start timeout ends the wait: a short one races nothing.
    const stuck = { command: process.execPath, args: ['-e', 'setTimeout(() => {}, 60000)'] };
    const connection = await connectMcpServers(
      [
        { ...server('lookup', stuck), required: true },
        { ...server('extra', fixtureCommand('crash-server.ts')), required: false },
        { ...server('off', { ...fixtureCommand('stdio-server.ts'), disabled: true }), required: true },
      ],
      { logger, env: { ACX_MCP_START_TIMEOUT: '0.5' } },
    );
    try {
      expect(connection.servers.map((s) => [s.name, s.status, s.required])).toEqual([
        ['lookup', 'skipped', true],
        ['extra', 'skipped', false],
        ['off', 'skipped', false],
      ]);
      expect(logger.lines).toContain('WARNING mcp server skipped server=lookup source=test:lookup required=true reason="failed to start or initialize: timed out after 0.5 s (raise ACX_MCP_START_TIMEOUT if it is only slow to start)"');
      expect(logger.lines.find((l) => l.startsWith('WARNING') && l.includes('server=extra'))).toMatch(/^WARNING mcp server skipped server=extra source=test:extra required=false reason="failed to start or initialize: .*fatal: cannot open the widget database/);
      const down = requiredServersDown(connection.servers)!;
      expect(down.code).toBe('mcp-unavailable');
      expect(down.message).toBe(
        'No turn was started: the required MCP server "lookup" did not start. lookup (test:lookup): failed to start or initialize: timed out after 0.5 s (raise ACX_MCP_START_TIMEOUT if it is only slow to start).',
      );
      expect(down.hint).toBe(
        "Fix the server and try again (a wake's event stays pending for the retry); if it is only slow to start, raise ACX_MCP_START_TIMEOUT (seconds). To let turns run without it: drop \"required\": true from test:lookup.",
      );
      expect(requiredServersDown(connection.servers.filter((s) => s.name !== 'lookup'))).toBeUndefined();
    } finally {
      await connection.close();
    }
  });

  it('ACX_MCP_START_TIMEOUT bounds start-up alone, in seconds; unset or invalid, the request timeout does', () => {
    expect(resolveMcpStartTimeoutMs(undefined, 20_000, { ACX_MCP_START_TIMEOUT: '2.5' })).toBe(2_500);
    expect(resolveMcpStartTimeoutMs(undefined, 20_000, { ACX_MCP_START_TIMEOUT: 'soon' })).toBe(20_000);
    expect(resolveMcpStartTimeoutMs(undefined, 45_000, {})).toBe(45_000);
    expect(resolveMcpStartTimeoutMs(700, 20_000, { ACX_MCP_START_TIMEOUT: '3' })).toBe(700);
  });

  it('ACX_MCP_TIMEOUT is read in seconds', () => {
    expect(resolveMcpTimeoutMs(undefined, { ACX_MCP_TIMEOUT: '45' })).toBe(45_000);
    expect(resolveMcpTimeoutMs(undefined, { ACX_MCP_TIMEOUT: 'soon' })).toBe(20_000);
    expect(resolveMcpTimeoutMs(1234, { ACX_MCP_TIMEOUT: '45' })).toBe(1234);
  });
});

describe('config options', () => {
  it('applies configured scopes, kind and effect, and skips a disabled server', async () => {
    const connection = await connectMcpServers([
      server('reader', { ...fixtureCommand('stdio-server.ts'), scopes: ['search'], kind: 'read', effect: 'read-only' }),
      server('off', { ...fixtureCommand('stdio-server.ts'), disabled: true }),
    ]);
    try {
      expect(byName(connection.tools, 'reader__echo')).toMatchObject({ capabilityScopes: ['search'], kind: 'read', effect: 'read-only' });
      expect(connection.servers[1]).toMatchObject({ name: 'off', status: 'skipped', reason: 'disabled in its config' });
      expect(connection.tools.some((t) => t.name.startsWith('off__'))).toBe(false);
    } finally {
      await connection.close();
    }
  });
});
