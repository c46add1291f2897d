// KeptMcpConnections: what `acx worker` keeps of an agent's MCP servers between a timeline's
// deliveries. Real stdio servers: each says which process it is, so "started again" is seen.
import { afterEach, describe, expect, it } from 'vitest';
import { connectMcpServers, type McpConnection } from '../../src/mcp/client.ts';
import { parseMcpServerEntry, type McpServerConfig } from '../../src/mcp/config.ts';
import { KeptMcpConnections, type McpConnector } from '../../src/mcp/kept-connections.ts';
import { waitFor } from '../support/wait.ts';
import { processAlive } from '../tools/helpers.ts';
import { byName, context, fixtureCommand } from './helpers.ts';

const config = (name: string, file = 'kept-server.ts', env: Record<string, string> = {}): McpServerConfig =>
  parseMcpServerEntry(name, { ...fixtureCommand(file), env }, `test:${name}`, process.cwd());

let started = 0;
const connect: McpConnector = (configs) => {
  started += 1;
  return connectMcpServers(configs, { timeoutMs: 20_000 });
};
const pidOf = async (connection: McpConnection, server = 'kept') => Number(await byName(connection.tools, `${server}__pid`).execute!({}, context()));
const running = processAlive;
const until = (condition: () => boolean) => waitFor('the server process to end', condition, { withinMs: 20_000, everyMs: 20 });

let kept: KeptMcpConnections;
afterEach(async () => {
  await kept.close();
});

describe('KeptMcpConnections', () => {
  it("gives a conversation's next event the connection its last one gave back: the server starts once", async () => {
    kept = new KeptMcpConnections();
    started = 0;
    const first = await kept.connector('timeline:a', connect)([config('kept')]);
    const pid = await pidOf(first);
    await first.close();
    expect(running(pid), 'given back, not closed').toBe(true);
    const next = await kept.connector('timeline:a', connect)([config('kept')]);
    expect(await pidOf(next)).toBe(pid);
    expect(started).toBe(1);
    await next.close();
    expect(kept.size).toBe(1);
  });

  it('never hands one connection to two events at once, nor to another conversation or a changed configuration', async () => {
    kept = new KeptMcpConnections();
    const a1 = await kept.connector('timeline:a', connect)([config('kept')]);
    const a2 = await kept.connector('timeline:a', connect)([config('kept')]);
    const b = await kept.connector('timeline:b', connect)([config('kept')]);
    const pids = [await pidOf(a1), await pidOf(a2), await pidOf(b)];
    expect(new Set(pids).size).toBe(3);
    await a1.close();
    const changed = await kept.connector('timeline:a', connect)([config('kept', 'kept-server.ts', { CHANGED: '1' })]);
    expect(pids).not.toContain(await pidOf(changed));
    for (const connection of [a2, b, changed]) await connection.close();
  });

  it('starts a server again once the kept one has exited (during its event or while kept) or no longer answers', async () => {
    kept = new KeptMcpConnections();
    const first = await kept.connector('timeline:a', connect)([config('kept')]);
    const pid = await pidOf(first);
    await byName(first.tools, 'kept__exit').execute!({}, context());
    await until(() => !running(pid));
    await first.close();
    const next = await kept.connector('timeline:a', connect)([config('kept')]);
    const again = await pidOf(next);
    expect(again).not.toBe(pid);
    await next.close();
    // Dies while kept idle (killed, crashed): found dead when the next event asks for it.
    process.kill(again, 'SIGKILL');
    await until(() => !running(again));
    const third = await kept.connector('timeline:a', connect)([config('kept')]);
    const thirdPid = await pidOf(third);
    expect([pid, again]).not.toContain(thirdPid);
    await third.close();
    // Hung while kept (stopped: its connection still open, nothing answers): not handed out.
    process.kill(thirdPid, 'SIGSTOP');
    try {
      const fourth = await kept.connector('timeline:a', connect)([config('kept')]);
      expect([pid, again, thirdPid]).not.toContain(await pidOf(fourth));
      await fourth.close();
    } finally {
      process.kill(thirdPid, 'SIGKILL');
    }
  });

  it('keeps no connection one of whose servers did not start, so the next event tries it again', async () => {
    kept = new KeptMcpConnections();
    const connection = await kept.connector('timeline:a', connect)([config('kept'), config('crashy', 'crash-server.ts')]);
    expect(connection.servers.map((server) => server.status).sort()).toEqual(['ok', 'skipped']);
    const pid = await pidOf(connection);
    await connection.close();
    expect(kept.size).toBe(0);
    await until(() => !running(pid));
  });

  it('ends the servers it keeps when closed, and those given back after', async () => {
    kept = new KeptMcpConnections();
    const idle = await kept.connector('timeline:a', connect)([config('kept')]);
    const busy = await kept.connector('timeline:b', connect)([config('kept')]);
    const pids = [await pidOf(idle), await pidOf(busy)];
    await idle.close();
    await kept.close();
    await busy.close();
    expect(kept.size).toBe(0);
    await until(() => pids.every((pid) => !running(pid)));
  });

  it('does not keep a connection whose call was given up, or whose tools changed', async () => {
    kept = new KeptMcpConnections();
    // Cancelled (the wake lost its claims): the server may still be running the call.
    const cancelled = await kept.connector('timeline:a', connect)([config('kept')]);
    const first = await pidOf(cancelled);
    const abort = new AbortController();
    const call = byName(cancelled.tools, 'kept__sleep').execute!({ ms: 5_000 }, context({ abortSignal: abort.signal }));
    abort.abort(new Error('claims lost'));
    await expect(call).rejects.toThrow(/cancelled/);
    await cancelled.close();
    expect(kept.size).toBe(0);
    await until(() => !running(first));
    // Its tools changed after they were bridged: the next event connects afresh (as it did when every event did).
    const growing = await kept.connector('timeline:a', connect)([config('kept')]);
    const second = await pidOf(growing);
    await byName(growing.tools, 'kept__grow').execute!({}, context());
    await growing.close();
    const next = await kept.connector('timeline:a', connect)([config('kept')]);
    expect(await pidOf(next)).not.toBe(second);
    await next.close();
  });

  it('retires the connections made before the agent changed, those in use when given back', async () => {
    kept = new KeptMcpConnections();
    const idle = await kept.connector('timeline:a', connect)([config('kept')]);
    const busy = await kept.connector('timeline:b', connect)([config('kept')]);
    const pids = [await pidOf(idle), await pidOf(busy)];
    await idle.close();
    await kept.closeIdle();
    await busy.close();
    expect(kept.size).toBe(0);
    await until(() => pids.every((pid) => !running(pid)));
    const after = await kept.connector('timeline:b', connect)([config('kept')]);
    await pidOf(after);
    await after.close();
    expect(kept.size, 'made after the change: kept').toBe(1);
  });
});
