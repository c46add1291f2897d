// Item 5, transcript caps: the model reads a tool's full output on the turn it ran; the journal
// keeps a step's results within 4 KB and its arguments within 2 KB, water-filled, measured in
// characters as the model reads them.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { StoredMessage } from '../../src/store/journal.ts';
import { tool } from '../../src/tools/tool.ts';
import type { ModelServer } from '../support/model-server.ts';
import { openaiModel, pairing, rig, startModelServer, toolResultsIn } from './helpers.ts';

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
});

const MARKER = /\[\.\.\. [\d,]+ chars elided of [\d,]+ \.\.\.\]/;
const chars = (text: string) => Array.from(text).length;

/** A result of `size` characters with a recognisable head and tail. */
const fat = (id: string, size: number, fill = 'x') => `HEAD-${id}-${fill.repeat(size - 12 - 2 * id.length)}-TAIL-${id}`;

function dumpTool(outputs: Record<string, string>) {
  return tool({
    name: 'dump',
    description: 'Dump a mailbox',
    inputSchema: z.object({ id: z.string() }),
    capabilityScopes: [],
    kind: 'read',
    effect: 'read-only',
    execute: ({ id }) => outputs[id] ?? '',
  });
}

/** Stored tool results of a session, in order, as text. */
function storedResults(messages: readonly StoredMessage[]): string[] {
  return messages
    .filter((m) => m.kind === 'tool')
    .flatMap((m) => (m.message.content as Array<{ type: string; output: { type: string; value: unknown } }>))
    .filter((part) => part.type === 'tool-result')
    .map((part) => (typeof part.output.value === 'string' ? part.output.value : JSON.stringify(part.output.value)));
}

function storedCallInputs(messages: readonly StoredMessage[]): Array<Record<string, string>> {
  return messages
    .filter((m) => m.kind === 'assistant' && Array.isArray(m.message.content))
    .flatMap((m) => m.message.content as Array<{ type: string; input: Record<string, string> }>)
    .filter((part) => part.type === 'tool-call')
    .map((part) => part.input);
}

const calls = (...ids: string[]) => ({ toolCalls: ids.map((id) => ({ name: 'dump', input: { id } })) });

describe('tool results', () => {
  it('a 60 KB result is read in full on its turn, kept at ~4 KB with an honest marker, and the next turn sees the capped copy', async () => {
    const big = fat('one', 60_000);
    server.enqueue(calls('one'), 'Read it all.', 'Second turn answer.');
    const r = rig(await openaiModel(server), { agent: { tools: [dumpTool({ one: big })] } });
    const session = await r.agent.createSession({ sessionId: 's' });
    await r.agent.generate({ session, prompt: 'dump mailbox one' });

    const seen = toolResultsIn(server.requests[1]!);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.output, 'the model reads the whole 60 KB result on the turn it ran').toBe(big);

    const kept = storedResults(r.readJournal((j) => j.messages('s')));
    expect(kept).toHaveLength(1);
    expect(chars(kept[0]!)).toBeLessThanOrEqual(4096 + 60);
    expect(kept[0]!.startsWith('HEAD-one-')).toBe(true);
    expect(kept[0]!.endsWith('-TAIL-one')).toBe(true);
    expect(kept[0]).toContain('[... 55,904 chars elided of 60,000 ...]');

    await r.agent.generate({ session, prompt: 'and now?' });
    const later = toolResultsIn(server.requests[2]!);
    expect(later[0]!.output, 'the next turn replays the capped copy, not 60 KB').toBe(kept[0]);
  });

  it('three parallel 60 KB results share one 4 KB budget, each keeping its own head, tail and marker', async () => {
    const outputs = { a: fat('a', 60_000, 'a'), b: fat('b', 60_000, 'b'), c: fat('c', 60_000, 'c') };
    server.enqueue(calls('a', 'b', 'c'), 'done');
    const r = rig(await openaiModel(server), { agent: { tools: [dumpTool(outputs)] } });
    const session = await r.agent.createSession({ sessionId: 's' });
    await r.agent.generate({ session, prompt: 'dump a, b and c' });

    expect(toolResultsIn(server.requests[1]!).map((x) => x.output).sort()).toEqual([outputs.a, outputs.b, outputs.c]);
    const kept = storedResults(r.readJournal((j) => j.messages('s')));
    expect(kept).toHaveLength(3);
    const total = kept.reduce((n, text) => n + chars(text.replace(MARKER, '')), 0);
    expect(total, 'the step keeps at most 4 KB of result text between its calls').toBeLessThanOrEqual(4096 + 3 * 2);
    for (const [index, id] of ['a', 'b', 'c'].entries()) {
      expect(kept[index]!.startsWith(`HEAD-${id}-`)).toBe(true);
      expect(kept[index]!.endsWith(`-TAIL-${id}`)).toBe(true);
      expect(kept[index]).toMatch(MARKER);
    }
  });

  it('small results stay whole, even in a wide fan-out, and beside a fat one', async () => {
    const outputs: Record<string, string> = { big: fat('big', 20_000) };
    const small = Array.from({ length: 10 }, (_, i) => `s${i}`);
    for (const id of small) outputs[id] = `line for ${id}: ${'ok '.repeat(30)}`;
    server.enqueue(calls(...small, 'big'), 'done');
    const r = rig(await openaiModel(server), { agent: { tools: [dumpTool(outputs)] } });
    const session = await r.agent.createSession({ sessionId: 's' });
    await r.agent.generate({ session, prompt: 'fan out' });
    const kept = storedResults(r.readJournal((j) => j.messages('s')));
    expect(kept.slice(0, 10)).toEqual(small.map((id) => outputs[id]));
    expect(kept[10]).toMatch(MARKER);
    expect(kept.reduce((n, text) => n + chars(text.replace(MARKER, '')), 0)).toBeLessThanOrEqual(4096 + 2);
    const { called, answered } = r.readJournal((j) => pairing(j.messages('s')));
    expect(called).toHaveLength(11);
    expect(answered, 'every call keeps its result: none is dropped to save space').toEqual(called);
  });

  it('sizes are characters as the model reads them: 3,000 Japanese characters fit whole; 5,000 are cut by characters', async () => {
    const fits = '日本語のテキスト'.repeat(375); // 3,000 characters, 9,000 UTF-8 bytes
    const cut = '日'.repeat(5_000);
    expect(chars(fits)).toBe(3_000);
    server.enqueue(calls('fits'), 'ok', calls('cut'), 'ok');
    const r = rig(await openaiModel(server), { agent: { tools: [dumpTool({ fits, cut })] } });
    const session = await r.agent.createSession({ sessionId: 's' });
    await r.agent.generate({ session, prompt: 'one' });
    await r.agent.generate({ session, prompt: 'two' });
    const kept = storedResults(r.readJournal((j) => j.messages('s')));
    expect(kept[0], 'a 3,000-character result is under the 4,096-character budget').toBe(fits);
    expect(kept[1]).toContain('[... 904 chars elided of 5,000 ...]');
  });
});

describe('tool-call arguments', () => {
  function noteTool(received: Array<Record<string, string>>) {
    return tool({
      name: 'note',
      description: 'Create a note',
      inputSchema: z.object({ action: z.string(), title: z.string(), body: z.string() }),
      capabilityScopes: [],
      kind: 'edit',
      effect: 'unsafe',
      execute: (input) => {
        received.push(input);
        return 'created';
      },
    });
  }

  it('are capped at 2 KB per step: the tool runs with everything, short arguments persist byte for byte', async () => {
    const received: Array<Record<string, string>> = [];
    const bodyA = `A-START ${'a'.repeat(10_000)} A-END`;
    const bodyB = `B-START ${'b'.repeat(10_000)} B-END`;
    server.enqueue(
      {
        toolCalls: [
          { name: 'note', input: { action: 'create', title: 'First note', body: bodyA } },
          { name: 'note', input: { action: 'create', title: 'Second note', body: bodyB } },
        ],
      },
      'created both',
    );
    const r = rig(await openaiModel(server), { agent: { tools: [noteTool(received)] } });
    const session = await r.agent.createSession({ sessionId: 's' });
    await r.agent.generate({ session, prompt: 'make two notes' });

    expect(received.map((x) => x.body), 'the tool ran with the full arguments').toEqual([bodyA, bodyB]);
    const inputs = storedCallInputs(r.readJournal((j) => j.messages('s')));
    expect(inputs).toHaveLength(2);
    expect(inputs.map((x) => [x.action, x.title])).toEqual([
      ['create', 'First note'],
      ['create', 'Second note'],
    ]);
    const total = inputs.reduce(
      (n, input) => n + Object.entries(input).reduce((m, [k, v]) => m + chars(k) + chars(v.replace(MARKER, '')), 0),
      0,
    );
    expect(total, 'a step keeps at most 2 KB of arguments').toBeLessThanOrEqual(2048 + 4);
    expect(inputs[0]!.body!.startsWith('A-START')).toBe(true);
    expect(inputs[0]!.body!.endsWith('A-END')).toBe(true);
    expect(inputs[1]!.body).toMatch(MARKER);
  });

  it('non-ASCII arguments are measured in characters, not JSON escapes or bytes', async () => {
    const received: Array<Record<string, string>> = [];
    const body = '東京の天気は晴れです。'.repeat(150); // 1,650 characters, ~5 KB of UTF-8, ~10 KB as \u escapes
    server.enqueue({ toolCalls: [{ name: 'note', input: { action: 'create', title: '天気', body } }] }, 'ok');
    const r = rig(await openaiModel(server), { agent: { tools: [noteTool(received)] } });
    const session = await r.agent.createSession({ sessionId: 's' });
    await r.agent.generate({ session, prompt: 'note the weather' });
    const inputs = storedCallInputs(r.readJournal((j) => j.messages('s')));
    expect(inputs[0]!.body, 'fits the 2,048-character budget, so it is kept whole').toBe(body);
    expect(inputs[0]!.title).toBe('天気');
  });
});
