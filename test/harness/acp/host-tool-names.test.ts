// Which tool calls of an ACP agent are acx's own host tools (served over acx's MCP server and
// gated by acx) depends on how each agent names MCP tools; a misread host call is denied as an
// unknown agent tool, so each naming is pinned here.
import { describe, expect, it } from 'vitest';
import { TurnTranslator } from '../../../src/harness/acp/translate.ts';

const translator = new TurnTranslator({ emit: () => {}, hostToolNames: new Set(['memory_write', 'execute']), hostServerName: 'acx' });
const host = (name: string | null, title: string | null = null) => translator.toolNameOf(name, title);

describe('host tool names across ACP agents', () => {
  it.each([
    ['mcp__acx__memory_write', null, 'Claude Code'],
    ['acx__memory_write', null, 'double-underscore servers'],
    ['acx/memory_write', null, 'slash-qualified names'],
    ['mcp_acx_memory_write', null, "Gemini CLI's model-facing name"],
    [null, 'memory_write (acx MCP Server)', "Gemini CLI's permission title"],
  ] as Array<[string | null, string | null, string]>)('%s %s (%s) is the host tool memory_write', (name, title) => {
    expect(host(name, title)).toEqual({ toolName: 'memory_write', host: true, dynamic: false });
  });

  it.each([
    ['mcp__other__memory_write', null],
    ['mcp_acxx_memory_write', null],
    ['mcp_acx_not_a_host_tool', null],
    [null, 'memory_write (other MCP Server)'],
    [null, 'rm -rf / (acx MCP Server) extra'],
  ] as Array<[string | null, string | null]>)('%s %s is not a host tool', (name, title) => {
    expect(host(name, title).host).toBe(false);
  });
});
