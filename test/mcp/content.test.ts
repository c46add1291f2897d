import { describe, expect, it } from 'vitest';
import { base64ByteLength, describeImageForTextModel, mapCallToolResult, toCallToolResult } from '../../src/mcp/content.ts';
import { bridgedToolName } from '../../src/mcp/names.ts';
import { prepareInputSchema } from '../../src/mcp/bridge.ts';

describe('bridged tool names', () => {
  it('joins server and tool, replacing characters outside ^[A-Za-z0-9_-]$', () => {
    expect(bridgedToolName('github', 'create_issue')).toBe('github__create_issue');
    expect(bridgedToolName('x.api', 'posts/search')).toBe('x_api__posts_search');
  });

  it('keeps long and colliding names unique, within 64 characters, the same on every run', () => {
    const taken = new Set<string>();
    const long = bridgedToolName('server', 'a'.repeat(100), taken);
    expect(long).toMatch(/^[A-Za-z0-9_-]{64}$/);
    expect(bridgedToolName('server', 'a'.repeat(100), new Set())).toBe(long);
    const first = bridgedToolName('s', 'get.x', taken);
    const second = bridgedToolName('s', 'get_x', taken);
    expect(first).toBe('s__get_x');
    expect(second).not.toBe(first);
    expect(second).toMatch(/^s__get_x_[0-9a-f]{6}$/);
  });
});

describe('image description for text-only models', () => {
  it('names the media type and the decoded byte size', () => {
    const data = Buffer.alloc(5000, 7).toString('base64');
    expect(base64ByteLength(data)).toBe(5000);
    expect(describeImageForTextModel({ data, mediaType: 'image/jpeg' })).toMatch(/^\[image: image\/jpeg, 4\.9 KiB \(5000 bytes\)/);
  });
});

describe('MCP result → tool output', () => {
  it('text-only results become a string; the old toolResult shape is read too', () => {
    expect(mapCallToolResult({ content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] })).toBe('a\nb');
    expect(mapCallToolResult({ toolResult: { ok: 1 } })).toBe('{"ok":1}');
  });

  it('a resource link is noted by uri', () => {
    expect(mapCallToolResult({ content: [{ type: 'resource_link', uri: 'https://x/y', name: 'y' }] })).toBe('[resource link: y https://x/y]');
  });
});

describe('tool output → MCP result', () => {
  it('keeps text in content for every shape', () => {
    expect(toCallToolResult('hi')).toEqual({ content: [{ type: 'text', text: 'hi' }] });
    expect(toCallToolResult(undefined)).toEqual({ content: [{ type: 'text', text: '(no output)' }] });
    expect(toCallToolResult([1, 2])).toEqual({ content: [{ type: 'text', text: '[1,2]' }] });
    expect(toCallToolResult({ a: 1 })).toEqual({ content: [{ type: 'text', text: '{"a":1}' }], structuredContent: { a: 1 } });
    expect(toCallToolResult({ content: [{ type: 'text', text: 'x' }], structuredContent: { x: true } })).toEqual({
      content: [{ type: 'text', text: 'x' }],
      structuredContent: { x: true },
    });
  });
});

describe('server input schemas', () => {
  it('drops a draft-07 $schema the 2020-12 validator cannot resolve, keeps the rest', () => {
    const schema = { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { a: { type: 'string' } } };
    expect(prepareInputSchema(schema)).toEqual({ type: 'object', properties: { a: { type: 'string' } } });
    const modern = { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' };
    expect(prepareInputSchema(modern)).toEqual(modern);
  });
});
