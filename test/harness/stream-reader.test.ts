// A kept turn stream read in one process while another process writes it (issue 32 §3: "a reader
// in another process must see parts as they are written"). The writer is a real child process on
// the same store (SQLite file, or a throwaway PostgreSQL cluster); the reader is readTurnStream in
// the test's process. The test lets the writer write more only once the reader has read every kept
// part and found the stream still open (it asked the store for the stream's state, which it does
// only then), so what follows can reach it only by looking again at the store.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { TextStreamPart, ToolSet } from 'ai';
import { afterAll, describe, expect, it } from 'vitest';
import { emptyUsage, type HarnessStreamPart } from '../../src/engine/events.ts';
import { encodePart } from '../../src/harness/stream-entries.ts';
import { readTurnStream } from '../../src/harness/stream-reader.ts';
import { TurnStreams } from '../../src/harness/turn-streams.ts';
import { openTurnStreamStore, type TurnStreamStore } from '../../src/store/turn-streams.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { postgresForSuite } from '../support/postgres.ts';
import { streamPlaces } from '../support/stream-places.ts';

const postgres = postgresForSuite();
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
});
const places = streamPlaces(postgres, 'stream-reader');
const key = { sessionId: 'chat-1', turnId: 'turn-1' };

/** The writer's process: the kept parts written, then more on the test's word (see stream-writer.ts). */
async function writer(location: string, parts: HarnessStreamPart[]) {
  // On PostgreSQL a writer lives by an expiry it renews: a minute, so a busy machine never makes it look gone.
  const config = { location, writer: 'w', parts: parts.map(encodePart), ...key, writerTtlMs: 60_000 };
  const child = spawn(process.execPath, [join(import.meta.dirname, '../support/stream-writer.ts'), JSON.stringify(config)], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  const said: string[] = [];
  const waits: Array<{ word: string; resolve: () => void }> = [];
  child.stdout!.on('data', (data: Buffer) => {
    said.push(...data.toString().split('\n').filter(Boolean));
    for (const wait of waits.filter((w) => said.includes(w.word))) wait.resolve();
  });
  const hears = (word: string) => new Promise<void>((resolve, reject) => {
    if (said.includes(word)) return resolve();
    waits.push({ word, resolve });
    child.once('exit', (code) => reject(new Error(`the writer exited (${code}) before it said ${word}`)));
  });
  await hears('ready');
  return {
    async append(more: HarnessStreamPart[]) {
      child.stdin!.write(`${JSON.stringify({ append: more.map(encodePart) })}\n`);
      await hears('appended');
    },
    async finish() {
      child.stdin!.write(`${JSON.stringify({ finish: true })}\n`);
      await hears('finished');
    },
  };
}

/** The store as the reader uses it, telling the test when the reader has read every kept part and found the stream still open. */
function watched(store: TurnStreamStore): { store: TurnStreamStore; caughtUp: Promise<void> } {
  let caughtUp = () => {};
  const reached = new Promise<void>((resolve) => (caughtUp = resolve));
  const proxy = new Proxy(store, {
    get(target, name) {
      if (name === 'info') {
        return async (k: typeof key) => {
          const info = await target.info(k);
          if (info?.status === 'open') caughtUp();
          return info;
        };
      }
      const value = Reflect.get(target, name) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store: proxy, caughtUp: reached };
}

const finishStep = { type: 'finish-step', step: 0, finishReason: 'stop', usage: emptyUsage() } as const;

describe.each(places)('a kept stream read while another process writes it (%s)', (_name, place, skip) => {
  it.skipIf(skip !== '')(`the reader gets the kept parts, then each part the other process writes, once, and ends when it finishes${skip}`, async () => {
    const location = place();
    const other = await writer(location, [{ type: 'start', ...key, resumed: false }, { type: 'start-step', step: 0 }, { type: 'text-delta', id: 't', text: 'Hel' }]);
    const opened = await openTurnStreamStore(location);
    try {
      const { store, caughtUp } = watched(opened);
      const streams = new TurnStreams(() => Promise.resolve(opened), { logger: silentLogger });
      const read: Array<TextStreamPart<ToolSet>> = [];
      const reading = (async () => {
        for await (const part of readTurnStream(store, streams, key, { toolNames: new Set(), model: { provider: 'test', modelId: 'm' } })) read.push(part as TextStreamPart<ToolSet>);
      })();
      await caughtUp;
      const text = () => read.flatMap((p) => (p.type === 'text-delta' ? [p.text] : [])).join('');
      expect(text()).toBe('Hel');

      await other.append([{ type: 'text-delta', id: 't', text: 'lo' }]);
      await expect.poll(text, { timeout: 30_000 }).toBe('Hello');
      await other.append([finishStep, { type: 'finish', finishReason: 'stop', totalUsage: emptyUsage() }]);
      await other.finish();
      await reading;
      expect(text()).toBe('Hello');
      expect(read.map((p) => p.type)).toEqual(['start', 'start-step', 'text-start', 'text-delta', 'text-delta', 'text-end', 'finish-step', 'finish']);
    } finally {
      await opened.close();
    }
  });
});
