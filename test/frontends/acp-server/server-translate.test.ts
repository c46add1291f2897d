// The pure parts of `acx acp`: event translation, journal replay, client MCP server configs and
// prompt content. The end-to-end behaviour is in server.test.ts; these pin the edge cases.
import { describe, expect, it } from 'vitest';
import { clientMcpConfigs } from '../../../src/frontends/acp-server/mcp-servers.ts';
import { toUserContent } from '../../../src/frontends/acp-server/prompt-content.ts';
import { replayUpdates } from '../../../src/frontends/acp-server/replay.ts';
import { acpToolKind, toolLocations, toolTitle } from '../../../src/frontends/acp-server/tool-calls.ts';
import { stopReasonOf, toolOutputContent, TurnTranslator } from '../../../src/frontends/acp-server/updates.ts';
import { WorkspaceRoots } from '../../../src/tools/sandbox/roots.ts';
import { emptyUsage } from '../../../src/engine/events.ts';
import type { StoredMessage } from '../../../src/store/journal.ts';
import type { Tool } from '../../../src/tools/tool.ts';

const memoryWrite: Tool = {
  name: 'memory_write',
  description: 'write',
  inputSchema: { type: 'object' },
  capabilityScopes: [],
  kind: 'edit',
  effect: 'idempotent',
};
const tools = new Map([[memoryWrite.name, memoryWrite]]);

describe('TurnTranslator', () => {
  it('settles a call that never reported (an unknown tool) as failed at the next step, so no call spins forever', () => {
    const t = new TurnTranslator({ tools, mode: 'allow-edits', contextSize: 1000 });
    expect(t.translate({ type: 'tool-call', toolCallId: 'x', toolName: 'no_such_tool', input: {} })).toEqual([
      expect.objectContaining({ sessionUpdate: 'tool_call', toolCallId: 'x', kind: 'other', status: 'pending' }),
    ]);
    expect(t.translate({ type: 'start-step', step: 2 })).toEqual([
      expect.objectContaining({ sessionUpdate: 'tool_call_update', toolCallId: 'x', status: 'failed' }),
    ]);
    expect(t.translate({ type: 'finish', finishReason: 'stop', totalUsage: emptyUsage() })).toEqual([]);
  });

  it('marks a call in progress at once only when the mode lets it run without asking', () => {
    const call = { type: 'tool-call' as const, toolCallId: 'c', toolName: 'memory_write', input: { key: 'k' } };
    expect(new TurnTranslator({ tools, mode: 'allow-edits', contextSize: undefined }).translate(call).map((u) => u.sessionUpdate)).toEqual([
      'tool_call',
      'tool_call_update',
    ]);
    expect(new TurnTranslator({ tools, mode: 'allow-reads', contextSize: undefined }).translate(call).map((u) => u.sessionUpdate)).toEqual([
      'tool_call',
    ]);
  });

  it('reports context use per step and maps finish reasons to stop reasons', () => {
    const t = new TurnTranslator({ tools, mode: 'allow-all', contextSize: 8000 });
    const usage = { ...emptyUsage(), inputTokens: 1200, outputTokens: 30, totalTokens: 1230 };
    expect(t.translate({ type: 'finish-step', step: 1, finishReason: 'stop', usage })).toEqual([
      { sessionUpdate: 'usage_update', used: 1230, size: 8000 },
    ]);
    expect(t.usage.totalTokens).toBe(1230);
    expect(stopReasonOf('stop')).toBe('end_turn');
    expect(stopReasonOf('length')).toBe('max_turn_requests');
    expect(stopReasonOf('content-filter')).toBe('refusal');
  });

  it('renders tool output: text, content parts with images, JSON', () => {
    expect(toolOutputContent('saved')).toEqual([{ type: 'content', content: { type: 'text', text: 'saved' } }]);
    expect(toolOutputContent([{ type: 'image', data: 'AAAA', mediaType: 'image/png' }])).toEqual([
      { type: 'content', content: { type: 'image', data: 'AAAA', mimeType: 'image/png' } },
    ]);
    expect(JSON.stringify(toolOutputContent({ sum: 3 }))).toContain('\\"sum\\": 3');
  });
});

describe('tool-call descriptions', () => {
  const made = (name: string, kind: Tool['kind'], scopes: Tool['capabilityScopes'] = []): Tool => ({ ...memoryWrite, name, kind, capabilityScopes: scopes });

  it('maps acx kinds to ACP kinds, refined by the words of the tool name', () => {
    const kinds = Object.fromEntries(
      [
        made('fs_read', 'read'),
        made('fs_list', 'read'),
        made('fs_write', 'edit'),
        made('memory_search', 'read'),
        made('memory_delete', 'edit'),
        made('execute', 'execute'),
        made('web_fetch', 'fetch'),
        made('files__move_file', 'other'),
        made('notes__think', 'other'),
        made('remote__search', 'other'), // an "other" tool that searches may still change things
        made('dispatch', 'other'),
      ].map((tool) => [tool.name, acpToolKind(tool)]),
    );
    expect(kinds).toEqual({
      fs_read: 'read',
      fs_list: 'read',
      fs_write: 'edit',
      memory_search: 'search',
      memory_delete: 'delete',
      execute: 'execute',
      web_fetch: 'fetch',
      files__move_file: 'move',
      notes__think: 'think',
      remote__search: 'other',
      dispatch: 'other',
    });
    expect(acpToolKind(undefined, 'no_such_tool')).toBe('other');
  });

  it('titles an execute call with its command and locates file tools by absolute path and line', () => {
    expect(toolTitle('execute', { command: 'npm   test\n -- x' }, made('execute', 'execute'))).toBe('npm test -- x');
    expect(toolTitle('fs_read', { path: 'src/a.ts' }, made('fs_read', 'read'))).toBe('fs_read src/a.ts');
    const roots = new WorkspaceRoots({ primary: '/work/project', additional: ['/work/docs'] });
    const reader = made('fs_read', 'read', ['fs.read']);
    expect(toolLocations(reader, { path: 'src/a.ts', line: 12 }, roots)).toEqual([{ path: '/work/project/src/a.ts', line: 12 }]);
    expect(toolLocations(reader, { path: '/work/docs/guide.md' }, roots)).toEqual([{ path: '/work/docs/guide.md' }]);
    expect(toolLocations(reader, { path: '/etc/passwd' }, roots)).toEqual([]);
    expect(toolLocations(reader, { path: '../x' }, roots)).toEqual([]);
    expect(toolLocations(made('memory_read', 'read', ['memory.read']), { path: 'x' }, roots)).toEqual([]);
  });
});

describe('replayUpdates', () => {
  it('matches results to calls within their step, even when a model reuses a call id', () => {
    const messages: StoredMessage[] = [
      { seq: 1, turnId: 't', kind: 'user', message: { role: 'user', content: 'save twice' } },
      { seq: 2, turnId: 't', kind: 'assistant', message: { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'memory_write', input: { key: 'a' } }] } },
      { seq: 3, turnId: 't', kind: 'tool', message: { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'memory_write', output: { type: 'text', value: 'saved a' } }] } },
      { seq: 4, turnId: 't', kind: 'assistant', message: { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'memory_write', input: { key: 'b' } }] } },
      { seq: 5, turnId: 't', kind: 'tool', message: { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'memory_write', output: { type: 'execution-denied', reason: 'The user rejected this call.' } }] } },
      { seq: 6, turnId: 't', kind: 'note', message: { role: 'user', content: '[harness] internal' } },
      { seq: 7, turnId: 't', kind: 'assistant', message: { role: 'assistant', content: 'Saved a, not b.' } },
    ];
    const updates = replayUpdates(messages, tools);
    expect(updates.map((u) => u.sessionUpdate)).toEqual(['user_message_chunk', 'tool_call', 'tool_call', 'agent_message_chunk']);
    expect(updates[1]).toMatchObject({ status: 'completed', kind: 'edit', title: 'memory_write a' });
    expect(updates[2]).toMatchObject({ status: 'failed', title: 'memory_write b' });
    expect(JSON.stringify(updates[2])).toContain('rejected');
  });
});

describe('clientMcpConfigs', () => {
  it('converts stdio, http and sse servers, fits names, and rejects bad URLs with reasons', () => {
    const { configs, rejected } = clientMcpConfigs(
      [
        { name: 'My Tools', command: '/usr/bin/tool-server', args: ['--x'], env: [{ name: 'TOKEN', value: 't' }] },
        { type: 'http', name: 'remote', url: 'https://mcp.example.com/mcp', headers: [{ name: 'Authorization', value: 'Bearer x' }] },
        { type: 'sse', name: 'legacy', url: 'https://old.example.com/sse', headers: [] },
        { type: 'http', name: 'bad', url: 'ftp://nope', headers: [] },
      ],
      '/work/project',
    );
    expect(configs).toEqual([
      expect.objectContaining({ name: 'My_Tools', transport: 'stdio', command: '/usr/bin/tool-server', args: ['--x'], env: { TOKEN: 't' }, cwd: '/work/project' }),
      expect.objectContaining({ name: 'remote', transport: 'http', headers: { Authorization: 'Bearer x' } }),
      expect.objectContaining({ name: 'legacy', transport: 'sse', url: 'https://old.example.com/sse' }),
    ]);
    expect(rejected.map((r) => r.name)).toEqual(['bad']);
    expect(rejected[0]!.reason).toContain('must be http(s)');
  });
});

describe('toUserContent', () => {
  it('keeps a text-only prompt a plain string and refuses images when the model cannot see', () => {
    expect(toUserContent([{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }], { images: false })).toBe('a\nb');
    expect(() => toUserContent([{ type: 'image', data: 'AAAA', mimeType: 'image/png' }], { images: false })).toThrow(/does not take images/);
    expect(() => toUserContent([], { images: true })).toThrow(/empty/);
  });
});
