import { describe, expect, it } from 'vitest';
import { mcpLoginCommand } from '../../src/app/mcp-drop-ins.ts';
import { fromOrigin, parseMcpSpec } from '../../src/mcp/config.ts';

describe('the acx mcp login a message names', () => {
  it("names the agent a server belongs to, and the --mcp flag a flag's server came from", () => {
    const flag = fromOrigin(parseMcpSpec('tracker=https://t.example/mcp'), 'flag');
    const home = { agent: { id: 'default', name: 'default', source: 'config-home' as const, path: null } };
    const agent = { agent: { id: 'helper', name: 'helper', source: 'directory' as const, path: '/agents/my helper' } };
    expect(mcpLoginCommand(home, [])('docs')).toBe('acx mcp login docs');
    expect(mcpLoginCommand(agent, [])('docs')).toBe('acx mcp login docs "/agents/my helper"');
    expect(mcpLoginCommand(agent, [flag])('tracker')).toBe('acx mcp login tracker "/agents/my helper" --mcp "tracker=https://t.example/mcp"');
  });
});
