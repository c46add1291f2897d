// The manifest a timeline agent's brief lists its active tools in: one line each, with the one
// thing easy to get wrong, for exactly the tools that are active.
import { describe, expect, it } from 'vitest';
import { BaseCradleClient, createPlatformTools, PLATFORM_TOOL_GOTCHAS, toolManifest } from '../../../src/channel/index.ts';
import { tool } from '../../../src/tools/tool.ts';

describe('the tool manifest', () => {
  const platform = createPlatformTools({ client: new BaseCradleClient({ env: {}, baseUrl: 'http://127.0.0.1:9', token: 'bc_uat_unused-00000000' }), recentToolImages: () => [] });

  it('every platform tool has a gotcha, and no gotcha names a tool that does not exist', () => {
    expect(Object.keys(PLATFORM_TOOL_GOTCHAS).sort()).toEqual(platform.map((t) => t.name).sort());
  });

  it('one line per active tool, its kind, whether it is safe to repeat, and its gotcha', () => {
    const lines = toolManifest(platform).split('\n');
    expect(lines).toHaveLength(platform.length);
    expect(lines).toContain('- lock (edit): irreversible: the timeline takes no new content ever; needs confirm=<its uuid>, and without it only previews');
    expect(lines).toContain('- timelines_create (edit, not safe to repeat): each call makes another room (not idempotent)');
    expect(lines[0]).toBe('- messages_list (read): one page at a time, newest page first; pass before= for older ones');
  });

  it('only the tools given: another tool gets the first sentence of its description', () => {
    const own = tool({ name: 'weather', description: 'Look up the weather. Uses a paid API.', inputSchema: { type: 'object' }, capabilityScopes: ['net.fetch'], kind: 'fetch', effect: 'read-only' });
    const chosen = platform.filter((t) => t.name === 'messages_create');
    expect(toolManifest([...chosen, own])).toBe('- messages_create (edit): the only way to be heard: your final answer text is not posted\n- weather (fetch): Look up the weather.');
  });
});
