// A drop-in server that exits while its connection is in use (a wake, a worker's kept connection)
// is started again on the next call, and a call is sent again only when that cannot repeat an
// effect. Real stdio servers that report their pid; every process they start is logged and
// checked to be gone at the end.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { connectMcpServers, type McpConnection } from '../../src/mcp/client.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { parseMcpServerEntry, type McpServerConfig } from '../../src/mcp/config.ts';
import { MAX_SERVER_RESTARTS } from '../../src/mcp/server-link.ts';
import { waitFor } from '../support/wait.ts';
import { processAlive } from '../tools/helpers.ts';
import { createFixtureServer } from '../fixtures/mcp/fixture-tools.ts';
import { startHttpFixture } from '../fixtures/mcp/http-server.ts';
import { byName, context, fixtureCommand } from './helpers.ts';

let dir: string;
let connection: McpConnection | undefined;
const files = () => ({ PID_LOG: join(dir, 'pids'), ONCE_FILE: join(dir, 'once'), VANISH_MARK: join(dir, 'vanished'), SLOW_START_FILE: join(dir, 'slow'), ASK_FILE: join(dir, 'asked') });
const config = (extra: Record<string, unknown> = {}): McpServerConfig =>
  parseMcpServerEntry('kept', { ...fixtureCommand('kept-server.ts'), env: files(), ...extra }, 'test:kept', process.cwd());
const call = (name: string, input: unknown = {}, overrides = {}) => byName(connection!.tools, `kept__${name}`).execute!(input, context(overrides));
const pidNow = async () => Number(await call('pid'));
const startedPids = () => (existsSync(files().PID_LOG) ? readFileSync(files().PID_LOG, 'utf8').trim().split('\n').map(Number) : []);
const runsOfOnce = () => readFileSync(files().ONCE_FILE, 'utf8').trim().split('\n').length;
const untilGone = (pid: number) => waitFor(`server ${pid} to end`, () => !processAlive(pid), { withinMs: 20_000, everyMs: 20 });

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'acx-mcp-restart-'));
});
afterEach(async () => {
  await connection?.close();
  connection = undefined;
  // No server is left running, whichever way it was started.
  for (const pid of startedPids()) await untilGone(pid);
  rmSync(dir, { recursive: true, force: true });
});

describe('an MCP server that exits while its connection is in use', () => {
  it('is started again on the next call, which runs there; the connection, no longer the one made, is not kept', async () => {
    const logger = createMemoryLogger('info');
    connection = await connectMcpServers([config()], { timeoutMs: 20_000, logger });
    const first = await pidNow();
    expect(await call('exit')).toBe('bye');
    await untilGone(first);
    expect(connection.alive()).toBe(false);
    const second = await pidNow();
    expect(second).not.toBe(first);
    expect(startedPids()).toEqual([first, second]);
    expect(await pidNow()).toBe(second);
    // A worker keeps only connections to the servers first started: the next event connects afresh.
    expect(connection.alive()).toBe(false);
    expect(logger.lines.some((line) => line.includes('mcp server exited; starting it again') && line.includes('server=kept'))).toBe(true);
  });

  it('starts it once for calls that find it gone together', async () => {
    connection = await connectMcpServers([config()], { timeoutMs: 20_000 });
    const first = await pidNow();
    await call('exit');
    await untilGone(first);
    const pids = await Promise.all([pidNow(), pidNow(), pidNow()]);
    expect(new Set(pids).size).toBe(1);
    expect(startedPids()).toEqual([first, pids[0]]);
  });

  it('fails an unsafe call the server died under, without sending it again; the next call gets a new server', async () => {
    connection = await connectMcpServers([config()], { timeoutMs: 20_000 });
    const first = await pidNow();
    await expect(call('once')).rejects.toThrow(/kept__once failed: .*Connection closed/);
    expect(runsOfOnce(), 'run once: not sent again').toBe(1);
    expect(await pidNow()).not.toBe(first);
    expect(runsOfOnce()).toBe(1);
  });

  it.each(['idempotent', 'read-only'] as const)('sends a %s call the server died under again, to the server started again', async (effect) => {
    connection = await connectMcpServers([config({ effect })], { timeoutMs: 20_000 });
    const first = await pidNow();
    expect(await call('once')).toBe('run 2');
    expect(runsOfOnce()).toBe(2);
    expect(await pidNow()).not.toBe(first);
  });

  it(`gives up after ${MAX_SERVER_RESTARTS} restarts, saying so; a new connection starts it again`, async () => {
    connection = await connectMcpServers([config()], { timeoutMs: 20_000 });
    for (let restart = 0; restart <= MAX_SERVER_RESTARTS; restart++) {
      const pid = await pidNow();
      await call('exit');
      await untilGone(pid);
    }
    await expect(pidNow()).rejects.toThrow(`kept__pid failed: the MCP server kept exited or lost its session ${MAX_SERVER_RESTARTS + 1} times`);
    expect(startedPids()).toHaveLength(MAX_SERVER_RESTARTS + 1);
    expect(connection.alive()).toBe(false);
    await connection.close();
    connection = await connectMcpServers([config()], { timeoutMs: 20_000 });
    expect(await pidNow()).toBeGreaterThan(0);
  });

  it('fails a call of a tool the restarted server no longer offers, or offers changed, and is no longer unchanged', async () => {
    connection = await connectMcpServers([config()], { timeoutMs: 20_000 });
    expect(await call('vanish')).toBe('here');
    const first = await pidNow();
    writeFileSync(files().VANISH_MARK, '');
    await call('exit');
    await untilGone(first);
    await expect(call('vanish')).rejects.toThrow('was started again and no longer offers vanish as it did');
    await expect(call('shifty')).rejects.toThrow('was started again and no longer offers shifty as it did');
    expect(await pidNow()).not.toBe(first);
    expect(await connection.unchanged(5_000)).toBe(false);
  });

  it('stops waiting for a restart when the call is cancelled, and a restart still under way at close is ended', async () => {
    // The start would take longer than the test may: only giving it up lets the test end.
    connection = await connectMcpServers([config()], { timeoutMs: 20_000, startTimeoutMs: 600_000 });
    const first = await pidNow();
    writeFileSync(files().SLOW_START_FILE, '600000');
    await call('exit');
    await untilGone(first);
    const abort = new AbortController();
    const waiting = call('pid', {}, { abortSignal: abort.signal });
    await waitFor('the restart to begin', () => startedPids().length === 2, { withinMs: 20_000, everyMs: 20 });
    abort.abort(new Error('the turn was stopped'));
    await expect(waiting).rejects.toThrow('kept__pid was cancelled: the turn was stopped');
    await connection.close();
    await untilGone(startedPids()[1]!);
  });
});

describe('a server that dies while its user is being asked a question', () => {
  it("lets the call's time limit run again, so the call sent again to the restarted server cannot hang", async () => {
    const logger = createMemoryLogger('info');
    connection = await connectMcpServers([config({ effect: 'idempotent' })], { timeoutMs: 20_000, callTimeoutMs: 2_000, logger });
    const neverAnswered = () => new Promise<never>(() => {});
    await expect(call('ask', {}, { elicit: neverAnswered })).rejects.toThrow('kept__ask did not answer within 2 s');
    expect(logger.lines.some((line) => line.startsWith('WARNING mcp elicitation withdrawn server=kept tool=kept__ask'))).toBe(true);
    expect(startedPids()).toHaveLength(2);
  });
});

describe('a Streamable HTTP server that forgot the session', () => {
  it('gets a new session and the call, refused unread (404), sent again whatever its effect', async () => {
    const http = await startHttpFixture();
    const logger = createMemoryLogger('info');
    const remote = await connectMcpServers([parseMcpServerEntry('remote', { url: http.url }, 'test:remote', process.cwd())], { timeoutMs: 20_000, logger });
    try {
      const echo = byName(remote.tools, 'remote__echo');
      expect(echo.effect).toBe('unsafe');
      expect(await echo.execute!({ text: 'one' }, context())).toBe('echo: one');
      await http.expireSessions();
      expect(await echo.execute!({ text: 'two' }, context())).toBe('echo: two');
      expect(http.sessionsStarted()).toBe(2);
      expect(remote.alive()).toBe(false);
      expect(logger.lines.some((line) => line.includes('mcp session expired; sending the call again in a new one') && line.includes('server=remote'))).toBe(true);
    } finally {
      await remote.close();
      await http.close();
    }
  });

  it('sends nothing again for a 404 from a server that gave no session: there was none to forget', async () => {
    let refusing = false;
    let initialized = 0;
    // A stateless server (no Mcp-Session-Id), each request on a transport of its own.
    const server = createServer(async (req, res) => {
      if (refusing) return void res.writeHead(404).end();
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      const mcp = createFixtureServer('stateless');
      mcp.server.oninitialized = () => void (initialized += 1);
      await mcp.connect(transport);
      await transport.handleRequest(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    const logger = createMemoryLogger('info');
    const remote = await connectMcpServers([parseMcpServerEntry('stateless', { url }, 'test:stateless', process.cwd())], { timeoutMs: 20_000, logger });
    try {
      const echo = byName(remote.tools, 'stateless__echo');
      expect(await echo.execute!({ text: 'one' }, context())).toBe('echo: one');
      refusing = true;
      await expect(echo.execute!({ text: 'two' }, context())).rejects.toThrow('stateless__echo failed: Streamable HTTP error: Error POSTing to endpoint');
      expect(initialized).toBe(1);
      expect(logger.lines.some((line) => line.includes('mcp session expired'))).toBe(false);
    } finally {
      await remote.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
