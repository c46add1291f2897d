// acx's own tool schemas are built on first use and converted to JSON Schema only when something
// reads it (a provider building its request); a user's schema is still converted where the tool
// is defined, so one with no JSON Schema form is refused there, naming the tool.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { lazySchema } from '../../src/core/lazy-schema.ts';
import { tool } from '../../src/tools/tool.ts';
import { fromLanguageModel } from '../../src/model/providers.ts';
import { ToolRegistry } from '../../src/tools/registry.ts';
import { Policy } from '../../src/tools/policy.ts';
import { scriptedModel } from '../support/scripted-model.ts';
import { createSkillTool } from '../../src/app/skills.ts';
import { createSelfAuthorshipTools } from '../../src/app/charter.ts';
import { createDispatchTool } from '../../src/app/dispatch.ts';
import { createMemoryTools, createAddMemoryTool, createSearchMemoryTool } from '../../src/memory/tools.ts';
import { mediaModels } from '../../src/model/media.ts';
import { normalizeSchema } from '../../src/tools/schema.ts';
import { createCodeAttachTool } from '../../src/tools/builtin/code-attach.ts';
import { createGrokImageTools, createOpenAIImageTools } from '../../src/tools/builtin/images.ts';
import { createListenTool } from '../../src/tools/builtin/listen.ts';
import { createShellTool } from '../../src/tools/builtin/shell.ts';
import { createGrokVideoTool } from '../../src/tools/builtin/video.ts';
import { createXaiBalanceTool } from '../../src/tools/builtin/xai-balance.ts';
import type { Harness } from '../../src/harness/harness.ts';
import { rig } from '../engine/helpers.ts';

// A date has no JSON Schema form: converting this schema throws, so a test sees whether it was converted.
const noJsonForm = () => z.object({ when: z.date() });

function toolWith(inputSchema: z.ZodType, name = 'stamp') {
  return tool({ name, description: 'Stamp a date', inputSchema, capabilityScopes: [], kind: 'read', effect: 'read-only', execute: () => 'ok' });
}

describe('lazy tool schemas', () => {
  it('lazySchema builds its schema on the first call only, and returns that one schema after', () => {
    let built = 0;
    const schema = lazySchema(() => {
      built += 1;
      return z.object({ text: z.string() });
    });
    expect(built).toBe(0);
    const first = schema();
    expect(schema()).toBe(first);
    expect(built).toBe(1);
  });

  it("a user's tool whose schema has no JSON Schema form is refused at registration, naming the tool", () => {
    const registry = new ToolRegistry({ policy: Policy.unlocked() });
    expect(() => registry.register(toolWith(noJsonForm()))).toThrow(/Tool "stamp" has an invalid inputSchema: .*Date cannot be represented in JSON Schema/);
  });

  it("acx's own schema is converted only when read: a model that reads tool names only never converts it", async () => {
    const own = lazySchema(noJsonForm);
    const namesOnly = scriptedModel((options) => ({ text: `tools: ${(options.tools ?? []).map((t) => t.name).join(',')}` }));
    const { agent } = rig(fromLanguageModel(namesOnly, { provider: 'openai' }), { agent: { tools: [toolWith(own())] } });
    const result = await agent.generate({ session: await agent.createSession(), prompt: 'hi' });
    expect(result.text).toBe('tools: stamp');
  });

  it('a provider reading a tool\'s inputSchema gets its JSON Schema, converted on that read', async () => {
    const own = lazySchema(() => z.object({ text: z.string().describe('what to echo') }));
    let seen: unknown;
    const reads = scriptedModel((options) => {
      seen = JSON.parse(JSON.stringify((options.tools ?? [])[0]));
      return { text: 'done' };
    });
    const { agent } = rig(fromLanguageModel(reads, { provider: 'openai' }), { agent: { tools: [toolWith(own(), 'echo')] } });
    await agent.generate({ session: await agent.createSession(), prompt: 'hi' });
    expect(seen).toMatchObject({
      type: 'function',
      name: 'echo',
      inputSchema: { type: 'object', properties: { text: { type: 'string', description: 'what to echo' } }, required: ['text'] },
    });
  });

  it("every built-in tool built on a lazySchema converts to a JSON Schema object (the registry leaves acx's own to this test)", () => {
    const unused = () => {
      throw new Error('not opened in this test');
    };
    const workspace = '/nonexistent-acx-workspace';
    const media = (provider: 'openai' | 'xai') => mediaModels({ provider, env: { OPENAI_API_KEY: 'k', XAI_API_KEY: 'k' } });
    const builtIns = [
      ...createMemoryTools(unused),
      createAddMemoryTool(unused),
      createSearchMemoryTool(unused),
      createSkillTool([]),
      ...createSelfAuthorshipTools(workspace),
      createDispatchTool({ harness: {} as Harness, tools: () => [], instructions: () => '', agentId: 'a' }),
      createShellTool({ cwd: workspace }),
      createCodeAttachTool({ workspace, attach: unused }),
      ...createOpenAIImageTools({ workspace, media: media('openai'), shared: undefined }),
      ...createGrokImageTools({ workspace, media: media('xai'), shared: undefined }),
      createListenTool({ workspace, media: media('openai'), shared: undefined }),
      createGrokVideoTool({ workspace, media: media('xai'), shared: undefined }),
      createXaiBalanceTool(),
    ];
    expect(builtIns).toHaveLength(20);
    for (const builtIn of builtIns) {
      expect(normalizeSchema(builtIn.inputSchema).jsonSchema, builtIn.name).toMatchObject({ type: 'object' });
    }
  });
});
