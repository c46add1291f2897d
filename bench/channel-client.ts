/**
 * What the typed BaseCradle client costs over a bare fetch, measured in one run against the
 * embedded platform on 127.0.0.1. Run: `npx node bench/channel-client.ts [messages=300] [rounds=5]`.
 *
 * Per round, on a fresh timeline each side:
 * - **create**: `messages` keyed creates, one after another — the client's `messages.create`
 *   vs `fetch` with the same JSON body, Bearer token and Idempotency-Key;
 * - **list**: reading them all back, 50 a page — the client's lazy `messages.list()` iterator
 *   vs a `fetch` loop that follows `next_cursor` as `?before=`.
 * Prints medians per operation and client / fetch ratios; no thresholds.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { BaseCradleClient } from '../src/channel/index.ts';
import { addUser, startPlatform } from '../src/platform/index.ts';
import { silentLogger } from '../src/util/logger.ts';

const MESSAGES = Number(process.argv[2] ?? 300);
const ROUNDS = Number(process.argv[3] ?? 5);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const home = mkdtempSync(join(tmpdir(), 'acx-bench-channel-'));
const platform = await startPlatform({ home, port: 0, logger: silentLogger });
const { token } = addUser(home, { handle: 'bench', kind: 'ai' });
const client = new BaseCradleClient({ env: {}, baseUrl: platform.url, token });
const headers = { authorization: `Bearer ${token}`, accept: 'application/json' };

async function rawCreate(timeline: string, body: string): Promise<void> {
  const response = await fetch(`${platform.url}/timelines/${timeline}/messages`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    body: JSON.stringify({ message: { body } }),
  });
  if (response.status !== 201) throw new Error(`create: ${response.status}`);
  await response.json();
}

async function rawListAll(timeline: string): Promise<number> {
  let count = 0;
  let before: string | null = null;
  do {
    const url: string = `${platform.url}/messages?timeline=${timeline}${before ? `&before=${before}` : ''}`;
    const page = (await (await fetch(url, { headers })).json()) as { messages: unknown[]; next_cursor: string | null };
    count += page.messages.length;
    before = page.next_cursor;
  } while (before);
  return count;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

const results = { clientCreate: [] as number[], rawCreate: [] as number[], clientList: [] as number[], rawList: [] as number[] };
for (let round = 0; round < ROUNDS; round++) {
  const mine = (await client.timelines.create(`client ${round}`)).uuid;
  const bare = (await client.timelines.create(`fetch ${round}`)).uuid;
  // Alternate which side goes first, so neither always gets the warmer process.
  const sides = [
    async () => results.clientCreate.push((await timed(async () => { for (let i = 0; i < MESSAGES; i++) await client.messages.create(mine, `m${i}`, { idempotencyKey: randomUUID() }); })) / MESSAGES),
    async () => results.rawCreate.push((await timed(async () => { for (let i = 0; i < MESSAGES; i++) await rawCreate(bare, `m${i}`); })) / MESSAGES),
  ];
  for (const side of round % 2 ? sides.reverse() : sides) await side();
  let listed = 0;
  const lists = [
    async () => results.clientList.push(await timed(async () => { for await (const _ of client.messages.list({ timeline: mine })) listed++; })),
    async () => results.rawList.push(await timed(async () => { if ((await rawListAll(bare)) !== MESSAGES) throw new Error('raw list short'); })),
  ];
  for (const side of round % 2 ? lists.reverse() : lists) await side();
  if (listed !== MESSAGES) throw new Error(`client listed ${listed} of ${MESSAGES}`);
}
await platform.close();

const line = (name: string, mine: number[], bare: number[], unit: string) =>
  console.log(`${name.padEnd(8)} client ${median(mine).toFixed(2)} ${unit}   fetch ${median(bare).toFixed(2)} ${unit}   ratio ${(median(mine) / median(bare)).toFixed(2)}×`);
console.log(`channel client vs bare fetch: ${MESSAGES} messages, ${ROUNDS} rounds (medians)`);
line('create', results.clientCreate, results.rawCreate, 'ms/message');
line('list', results.clientList, results.rawList, `ms/${MESSAGES}`);
