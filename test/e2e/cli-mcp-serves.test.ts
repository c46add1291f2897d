// `acx mcp [agent]` serves more than tools: the MCP SDK's own Client, on a real `acx mcp` child
// process over stdio and over Streamable HTTP, reads the agent's skills as prompts (arguments
// filled in, known values completed), its instructions and memory as resources (listed, read by
// key, searched, keys completed, a subscription told of a change), and the host's log lines at
// the level it chose. Every state directory is in a temp dir; nothing leaves 127.0.0.1.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema, ResourceUpdatedNotificationSchema, type LoggingMessageNotification } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openMemoryStore } from '../../src/memory/store.ts';
import { scaled } from '../support/time-scale.ts';

const ROOT = join(import.meta.dirname, '../..');
const ACX = ['--disable-warning=ExperimentalWarning', join(ROOT, 'bin/acx.js')];
const AGENT = join(ROOT, 'test/fixtures/mcp/served-agent');

interface Served {
  client: Client;
  /** The agent's memory file, as `acx resolved-config` names it. */
  memoryPath: string;
  logs: LoggingMessageNotification['params'][];
  updates: string[];
  close(): Promise<void>;
}

function freshEnv(): Record<string, string> {
  const home = mkdtempSync(join(tmpdir(), 'acx-mcp-serves-'));
  return { PATH: process.env.PATH ?? '', HOME: home, ACX_HOME: join(home, 'state'), ACX_CONFIG_HOME: join(home, 'config') };
}

async function memoryPathOf(env: Record<string, string>): Promise<string> {
  const child = spawn(process.execPath, [...ACX, 'resolved-config', AGENT], { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  await new Promise((resolve) => child.on('close', resolve));
  return (JSON.parse(stdout) as { memory_path: string }).memory_path;
}

function watched(client: Client): Pick<Served, 'logs' | 'updates'> {
  const seen = { logs: [] as Served['logs'], updates: [] as string[] };
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => void seen.logs.push(notification.params));
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => void seen.updates.push(notification.params.uri));
  return seen;
}

async function overStdio(): Promise<Served> {
  const env = freshEnv();
  const client = new Client({ name: 'acx-e2e', version: '1.0.0' });
  const seen = watched(client);
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [...ACX, 'mcp', AGENT], env, cwd: ROOT, stderr: 'pipe' }));
  return { client, memoryPath: await memoryPathOf(env), ...seen, close: () => client.close() };
}

async function overHttp(): Promise<Served> {
  const env = freshEnv();
  const child: ChildProcess = spawn(process.execPath, [...ACX, 'mcp', AGENT, '--http'], { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const line = await new Promise<string>((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (chunk) => {
      text += chunk;
      if (text.includes('\n')) resolve(text.split('\n')[0]!);
    });
    child.once('exit', (code) => reject(new Error(`acx mcp --http exited ${code}: ${stderr}`)));
  });
  const { url, token } = JSON.parse(line) as { url: string; token: string };
  const client = new Client({ name: 'acx-e2e', version: '1.0.0' });
  const seen = watched(client);
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return {
    client,
    memoryPath: await memoryPathOf(env),
    ...seen,
    close: async () => {
      await client.close();
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The text of a resource's first content. */
function firstText(result: Awaited<ReturnType<Client['readResource']>>): string {
  return (result.contents[0] as { text: string }).text;
}

/** Resolves once `condition` holds, checking each time the event loop turns (notifications arrive as events). */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe.each([
  ['stdio', overStdio],
  ['Streamable HTTP', overHttp],
])('acx mcp serves an agent over %s', { timeout: scaled(120_000) }, (_name, connect) => {
  let served: Served;
  beforeAll(async () => {
    served = await connect();
  }, scaled(120_000));
  afterAll(() => served?.close());

  it('initialize says what it is: serverInfo.title names the agent, instructions say how to use the server', () => {
    expect(served.client.getServerVersion()).toMatchObject({ name: 'acx', title: 'acx: Served Agent' });
    const instructions = served.client.getInstructions()!;
    expect(instructions).toContain('acx serves the agent "Served Agent" over MCP.');
    expect(instructions).toContain("Prompts are the agent's skills");
    expect(instructions).toContain('acx://instructions is the system prompt the agent runs with');
    expect(instructions).toContain('acx://memory/{+key} reads one of its memories and acx://memory{?q} searches them');
    expect(served.client.getServerCapabilities()).toMatchObject({ tools: {}, prompts: {}, resources: { subscribe: true }, logging: {}, completions: {} });
  });

  it("lists the agent's skills as prompts, with the arguments a skill declares; get fills them in", async () => {
    const { prompts } = await served.client.listPrompts();
    expect(prompts).toEqual([
      {
        name: 'release-notes',
        description: 'Write release notes for one release from what you remember about it.',
        arguments: [
          { name: 'version', description: 'The release, e.g. 1.4.0', required: true },
          { name: 'audience', description: 'Who reads the notes', required: false },
        ],
      },
      { name: 'standup', description: 'Summarise what changed since yesterday for the daily standup.' },
    ]);
    const filled = await served.client.getPrompt({ name: 'release-notes', arguments: { version: '1.4.0', audience: 'customers' } });
    expect(filled.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'Write the release notes for 1.4.0, for customers.\nSearch memory for the release first.' } }]);
    const plain = await served.client.getPrompt({ name: 'standup' });
    expect(plain.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'List what changed since yesterday, one line each.' } }]);
    await expect(served.client.getPrompt({ name: 'release-notes', arguments: {} })).rejects.toThrow(/^MCP error -32602: Invalid arguments for prompt release-notes/);
    await expect(served.client.getPrompt({ name: 'no-such-skill' })).rejects.toThrow(/^MCP error -32602: Prompt no-such-skill not found$/);
  });

  it('completes a prompt argument from the values its skill lists, and memory keys in the key template', async () => {
    const audience = await served.client.complete({ ref: { type: 'ref/prompt', name: 'release-notes' }, argument: { name: 'audience', value: 'c' } });
    expect(audience.completion.values).toEqual(['customers', 'contributors']);
    const version = await served.client.complete({ ref: { type: 'ref/prompt', name: 'release-notes' }, argument: { name: 'version', value: '1' } });
    expect(version.completion.values).toEqual([]);
    const keys = await served.client.complete({ ref: { type: 'ref/resource', uri: 'acx://memory/{+key}' }, argument: { name: 'key', value: 'team/' } });
    expect(keys.completion.values).toEqual(['team/deploy-policy', 'team/on-call']);
  });

  it('serves the instructions and the memory as resources: listed, read by key, searched', async () => {
    const { resources } = await served.client.listResources();
    expect(resources.map((r) => [r.uri, r.name])).toEqual([
      ['acx://instructions', 'instructions'],
      ['acx://memory/release/1.4.0', 'release/1.4.0'],
      ['acx://memory/team/deploy-policy', 'team/deploy-policy'],
      ['acx://memory/team/on-call', 'team/on-call'],
    ]);
    const { resourceTemplates } = await served.client.listResourceTemplates();
    expect(resourceTemplates.map((t) => [t.name, t.uriTemplate])).toEqual([
      ['memory', 'acx://memory/{+key}'],
      ['memory-search', 'acx://memory{?q}'],
    ]);
    const instructions = await served.client.readResource({ uri: 'acx://instructions' });
    expect(instructions.contents).toHaveLength(1);
    expect(instructions.contents[0]).toMatchObject({ uri: 'acx://instructions', mimeType: 'text/markdown' });
    expect(firstText(instructions)).toMatch(/^You are Served Agent\. You keep the team's notes and answer from them\.\n\n## Skills\n/);
    expect(firstText(instructions)).toContain('- release-notes: Write release notes for one release from what you remember about it.');
    expect((await served.client.readResource({ uri: 'acx://memory/team/on-call' })).contents).toEqual([
      { uri: 'acx://memory/team/on-call', mimeType: 'text/plain', text: 'On-call rotates weekly; the handover is Monday 09:00 UTC.' },
    ]);
    expect((await served.client.readResource({ uri: 'acx://memory?q=deploy' })).contents).toEqual([
      { uri: 'acx://memory/team/deploy-policy', mimeType: 'text/plain', text: 'We deploy on Tuesdays and Thursdays before 15:00 UTC; never on Fridays.' },
    ]);
    await expect(served.client.readResource({ uri: 'acx://memory/team/on-cal' })).rejects.toThrow(/^MCP error -32002: No memory under the key "team\/on-cal"\. Nearest keys: team\/on-call/);
  });

  it('tells a subscriber when its memory changes: by a tool call through this server, and by another process', async () => {
    const uri = 'acx://memory/release/1.5.0';
    await served.client.subscribeResource({ uri });
    await served.client.subscribeResource({ uri: 'acx://memory/team/on-call' });
    const written = await served.client.callTool({ name: 'memory_write', arguments: { key: 'release/1.5.0', value: '1.5.0 drops the old importer.' } });
    expect(written.isError).toBeFalsy();
    // Told as part of the call that changed it: the notice came before the call's result.
    expect(served.updates).toEqual([uri]);
    expect(firstText(await served.client.readResource({ uri }))).toBe('1.5.0 drops the old importer.');

    // Another process (an `acx run` of the same agent, say) changes it: the server notices too.
    const store = openMemoryStore(served.memoryPath);
    try {
      store.write('release/1.5.0', '1.5.0 drops the old importer and the v1 API.');
    } finally {
      store.close();
    }
    await until(() => served.updates.length === 2);
    expect(served.updates).toEqual([uri, uri]);
    await served.client.unsubscribeResource({ uri });
    await served.client.unsubscribeResource({ uri: 'acx://memory/team/on-call' });
    await expect(served.client.subscribeResource({ uri: 'test://watched-resource' })).rejects.toThrow(/^MCP error -32002: acx mcp serves no resource test:\/\/watched-resource to subscribe to\./);
  });

  it("sends the host's log lines at the level the client chose", async () => {
    const hostCall = (tool: string) => served.logs.filter((log) => String(log.data).startsWith(`mcp host call tool=${tool} `));
    await served.client.setLoggingLevel('debug');
    await served.client.callTool({ name: 'memory_read', arguments: { key: 'team/on-call' } });
    await until(() => hostCall('memory_read').length === 1);
    expect(hostCall('memory_read')[0]).toMatchObject({ level: 'debug', logger: 'acx' });
    expect(hostCall('memory_read')[0]!.data).toMatch(/^mcp host call tool=memory_read toolCallId=mcp-[0-9a-f-]+ ok=true$/);

    await served.client.setLoggingLevel('warning');
    await served.client.callTool({ name: 'memory_list', arguments: {} });
    await served.client.setLoggingLevel('debug');
    await served.client.callTool({ name: 'memory_search', arguments: { query: 'deploy' } });
    await until(() => hostCall('memory_search').length === 1);
    // The call made while the client wanted warnings only sent nothing (it would have arrived first).
    expect(hostCall('memory_list')).toEqual([]);
  });

  it('an unknown tool is refused with one prefix, naming the tools there are', async () => {
    await expect(served.client.callTool({ name: 'memory_wipe', arguments: {} })).rejects.toThrow(
      /^MCP error -32602: There is no tool "memory_wipe" here\. The tools: memory_write, memory_read, memory_list, memory_search, memory_delete, load_skill\.$/,
    );
  });
});
