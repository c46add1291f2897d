// The provider's server-side built-ins (web_search, x_search, code_execution) through the real
// AI SDK providers and the local wire: declared on the request as the provider's own tool
// entries, run on the provider's side (never here), their citations a Sources: footer and AI SDK
// `source` parts, their calls journaled so a resumed turn never runs them again.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.ts';
import { builtinAvailability, providerBuiltins } from '../../src/model/builtins.ts';
import { resolveModel, type ResolvedModel } from '../../src/model/providers.ts';
import { Journal } from '../../src/store/journal.ts';
import { SqliteJournalStore } from '../../src/store/journal-store.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import type { ModelServer } from '../support/model-server.ts';
import { echoTool, OPENAI_KEY, rig, startModelServer, tmpHome } from './helpers.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

function modelOf(provider: 'openai' | 'xai' | 'openrouter'): Promise<ResolvedModel> {
  const env: Record<string, string> = {
    openai: { OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: server.openaiBaseURL },
    xai: { XAI_API_KEY: 'xai-test-key', XAI_BASE_URL: server.openaiBaseURL },
    openrouter: { OPENROUTER_API_KEY: 'sk-or-test', OPENROUTER_BASE_URL: server.openaiBaseURL },
  }[provider] as Record<string, string>;
  return resolveModel({ spec: `${provider}:test-model`, env });
}

async function builtinsFor(model: ResolvedModel, grants: string[], extra: { searchParams?: Record<string, unknown> } = {}) {
  const availability = builtinAvailability({ provider: model.provider, surface: model.surface, grants: new Set(grants) });
  return providerBuiltins(availability.active, { provider: model.provider, surface: model.surface, ...extra });
}

const CITED = { hosted: { webSearch: { query: 'acx release' }, citations: [{ url: 'https://example.org/acx', title: 'acx ships' }] } };

describe('web_search on OpenAI Responses', () => {
  it('declares the web_search tool entry, answers with a Sources: footer, and streams source parts', async () => {
    server.enqueue({ text: 'acx 1.0 shipped last week.', ...CITED });
    const model = await modelOf('openai');
    const { agent } = rig(model, { harness: { builtins: await builtinsFor(model, ['web_search']) }, agent: { tools: [echoTool()] } });
    const result = await agent.stream({ prompt: 'what is new with acx?' });
    const parts: Array<{ type: string; url?: string }> = [];
    for await (const part of result.fullStream) parts.push(part as never);
    const text = await result.text;
    const body = server.requests[0]!.body;
    expect(body.tools.map((entry: { type: string; name?: string }) => entry.name ?? entry.type).sort()).toEqual(['echo', 'web_search']);
    expect(text).toBe('acx 1.0 shipped last week.\n\nSources:\n- acx ships: https://example.org/acx');
    expect(parts.filter((part) => part.type === 'source').map((part) => part.url)).toEqual(['https://example.org/acx']);
  });

  it('non-streaming too: the footer is the journaled final text, and the next turn replays the search without re-running it', async () => {
    server.enqueue({ text: 'Found it.', ...CITED }, 'Second answer.');
    const model = await modelOf('openai');
    const { agent, readJournal } = rig(model, { harness: { builtins: await builtinsFor(model, ['web_search']) } });
    const session = await agent.createSession({ sessionId: 'searching' });
    const first = await agent.generate({ session, prompt: 'search' });
    expect(first.text).toContain('Sources:\n- acx ships: https://example.org/acx');
    const second = await agent.generate({ session, prompt: 'and now?' });
    expect(second.text).toBe('Second answer.');
    expect(server.requests).toHaveLength(2);
    // The second request carries the first turn's search as an item the provider knows, not as a function call.
    const input = JSON.stringify(server.requests[1]!.body.input);
    expect(input).toMatch(/ws_1/);
    expect(server.requests[1]!.view.messages.flatMap((message) => message.toolCalls ?? [])).toEqual([]);
    const stored = readJournal((journal) => journal.messages('searching').map((entry) => entry.message));
    const hostedParts = stored.flatMap((message) => (Array.isArray(message.content) ? (message.content as Array<{ type: string; providerExecuted?: boolean; toolName?: string }>) : []));
    expect(hostedParts.some((part) => part.type === 'tool-call' && part.providerExecuted && part.toolName === 'web_search')).toBe(true);
    expect(hostedParts.some((part) => part.type === 'tool-result' && part.toolName === 'web_search')).toBe(true);
  });

  it('is absent from the request when not granted', async () => {
    server.enqueue('plain');
    const model = await modelOf('openai');
    const { agent } = rig(model, { harness: { builtins: await builtinsFor(model, []) }, agent: { tools: [echoTool()] } });
    await agent.generate({ prompt: 'hi' });
    expect(server.requests[0]!.body.tools.map((entry: { type: string }) => entry.type)).toEqual(['function']);
  });
});

describe('a turn that crashed after its search was journaled', () => {
  it('is finished from the journal: the model is not asked again and the search is not re-run', async () => {
    server.enqueue({ text: 'Answer from the web.', ...CITED });
    const model = await modelOf('openai');
    const home = tmpHome();
    const journalPath = join(home, 'journal.db');
    const builtins = await builtinsFor(model, ['web_search']);
    const crashing = new Engine({
      model,
      journal: new SqliteJournalStore(new Journal(journalPath)),
      builtins,
      checkpoint: (event) => {
        if (event.at === 'assistant-persisted') throw new Error('killed after the assistant message was written');
      },
    });
    await expect(crashing.runTurn({ sessionId: 's1', prompt: 'search it' })).rejects.toThrow(/killed/);
    await crashing.journal.close();
    const engine = new Engine({ model, journal: new SqliteJournalStore(new Journal(journalPath)), builtins, logger: createMemoryLogger('debug') });
    expect(await engine.hasUnfinishedTurn('s1')).toBe(true);
    const resumed = await engine.continueTurn({ sessionId: 's1' });
    expect(resumed.text, 'the footer survives the crash: the sources were journaled with the assistant message').toBe(
      'Answer from the web.\n\nSources:\n- acx ships: https://example.org/acx',
    );
    expect(server.requests, 'no second model call: the search ran once, on the provider').toHaveLength(1);
    expect(resumed.toolResults).toEqual([]);
    engine.journal.close();
  });
});

describe('xAI: web_search and x_search', () => {
  it('declares both as xAI tool entries and footers the citations', async () => {
    server.enqueue({ text: 'People on X and the web agree.', hosted: { webSearch: { query: 'q' }, xSearch: { query: 'q' }, citations: [{ url: 'https://x.com/acx/status/1', title: 'post' }] } });
    const model = await modelOf('xai');
    const { agent, logger } = rig(model, { harness: { builtins: await builtinsFor(model, ['web_search', 'x_search']) } });
    const result = await agent.generate({ prompt: 'what do people say?' });
    expect(server.requests[0]!.path).toBe('/v1/responses');
    expect(server.requests[0]!.body.tools.map((entry: { type: string }) => entry.type).sort()).toEqual(['web_search', 'x_search']);
    expect(result.text).toBe('People on X and the web agree.\n\nSources:\n- post: https://x.com/acx/status/1');
    expect(logger.lines.filter((line: string) => / builtin session=/.test(line)).map((line: string) => /tool=(\S+)/.exec(line)![1]).sort()).toEqual(['web_search', 'x_search']);
  });
});

describe('xAI: code_execution', () => {
  it('declares code_interpreter, and a run the provider made is journaled, not executed here', async () => {
    server.enqueue({ text: '2**10 is 1024.', hosted: { codeInterpreter: { code: 'print(2**10)', containerId: 'cntr_x', logs: '1024' } } });
    const model = await modelOf('xai');
    const echo = echoTool();
    const { agent, readJournal } = rig(model, { harness: { builtins: await builtinsFor(model, ['code_execution']) }, agent: { tools: [echo] } });
    const session = await agent.createSession({ sessionId: 'xcode' });
    const result = await agent.generate({ session, prompt: 'compute 2**10' });
    expect(server.requests[0]!.body.tools.map((entry: { type: string }) => entry.type).sort()).toEqual(['code_interpreter', 'function']);
    expect(result.text).toBe('2**10 is 1024.');
    expect(result.toolResults).toEqual([]);
    expect(echo.seen).toEqual([]);
    const parts = readJournal((journal) => journal.messages('xcode').flatMap((entry) => (Array.isArray(entry.message.content) ? (entry.message.content as Array<{ type: string; toolName?: string; providerExecuted?: boolean }>) : [])));
    expect(parts.filter((part) => part.type === 'tool-call').map((part) => [part.toolName, part.providerExecuted])).toEqual([['code_execution', true]]);
  });
});

describe('OpenAI code_interpreter, streamed', () => {
  it('parses the streamed code_interpreter_call and never runs it here', async () => {
    server.enqueue({ text: 'It printed 42.', hosted: { codeInterpreter: { code: 'print(42)', containerId: 'cntr_s', logs: '42' } } });
    const model = await modelOf('openai');
    const { agent, logger } = rig(model, { harness: { builtins: await builtinsFor(model, ['code_execution']) } });
    const result = await agent.stream({ prompt: 'print 42' });
    expect(await result.text).toBe('It printed 42.');
    expect(server.requests[0]!.stream).toBe(true);
    expect(server.requests[0]!.body.tools).toEqual([{ type: 'code_interpreter', container: { type: 'auto', file_ids: [] } }]);
    expect(logger.lines.some((line: string) => / builtin session=.* tool=code_execution call=ci_1/.test(line))).toBe(true);
  });
});

describe("OpenRouter's openrouter:web_search server tool", () => {
  it('sends search_params verbatim as the parameters and footers the url_citation annotations', async () => {
    const params = { engine: 'exa', max_results: 10, allowed_domains: ['arxiv.org'], user_location: { type: 'approximate', city: 'Dallas' } };
    server.enqueue({ text: 'Per arXiv, yes.', hosted: { citations: [{ url: 'https://arxiv.org/abs/1', title: 'A paper', content: 'excerpt' }] } });
    const model = await modelOf('openrouter');
    const { agent } = rig(model, { harness: { builtins: await builtinsFor(model, ['web_search'], { searchParams: params }) } });
    const result = await agent.generate({ prompt: 'is it so?' });
    expect(server.requests[0]!.path).toBe('/v1/chat/completions');
    expect(server.requests[0]!.body.tools).toEqual([{ type: 'openrouter:web_search', parameters: params }]);
    expect(result.text).toBe('Per arXiv, yes.\n\nSources:\n- A paper: https://arxiv.org/abs/1');
  });

  it('without search_params.json: the bare tool, OpenRouter defaults', async () => {
    server.enqueue('ok');
    const model = await modelOf('openrouter');
    const { agent } = rig(model, { harness: { builtins: await builtinsFor(model, ['web_search']) } });
    await agent.generate({ prompt: 'x' });
    expect(server.requests[0]!.body.tools).toEqual([{ type: 'openrouter:web_search' }]);
  });
});

describe('availability: the provider decides, the grant switches on', () => {
  it('self-excludes where the provider or surface cannot run it, saying why', () => {
    const granted = new Set(['web_search', 'x_search', 'code_execution']);
    const on = (provider: string, surface: 'responses' | 'chat' | 'native') => builtinAvailability({ provider, surface, grants: granted });
    expect(on('openai', 'responses').active.map((b) => b.name)).toEqual(['web_search', 'code_execution']);
    expect(on('openai', 'chat').active).toEqual([]);
    expect(on('openai', 'chat').skipped.find((s) => s.name === 'web_search')!.reason).toMatch(/only on the responses surface.*ACX_MODEL_SURFACE=responses/);
    expect(on('xai', 'responses').active.map((b) => b.name)).toEqual(['web_search', 'x_search', 'code_execution']);
    expect(on('openrouter', 'chat').active.map((b) => b.name)).toEqual(['web_search']);
    expect(on('anthropic', 'native').active).toEqual([]);
    expect(on('anthropic', 'native').skipped.map((s) => s.name)).toEqual(['web_search', 'x_search', 'code_execution']);
    for (const provider of ['openai', 'xai', 'openrouter', 'anthropic', 'google']) {
      expect(builtinAvailability({ provider, surface: 'responses', grants: new Set() }), `${provider} without a grant`).toEqual({ active: [], skipped: [] });
    }
  });
});
