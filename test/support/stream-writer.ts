// A turn stream's writer in a process of its own, for tests that kill it or read it from another
// process: opens the stream named in its argument, appends the parts given, prints `ready`, then
// keeps itself alive (as a writer does where writers live by expiry) until it is killed. Each line
// on its stdin, when the test gives one, is more for it to write: `{"append":[…]}` (it prints
// `appended`) or `{"finish":true}` (it prints `finished`).
//   node stream-writer.ts '{"location":…,"agentId"?:…,"writerTtlMs"?:…,"sessionId":…,"turnId":…,"writer":…,"parts":[…]}'
import { createInterface } from 'node:readline';
import { openTurnStreamStore } from '../../src/store/turn-streams.ts';

const config = JSON.parse(process.argv[2]!) as { location: string; agentId?: string; writerTtlMs?: number; sessionId: string; turnId: string; writer: string; parts: string[] };
const store = await openTurnStreamStore(config.location, { ...(config.agentId ? { agentId: config.agentId } : {}), ...(config.writerTtlMs ? { writerTtlMs: config.writerTtlMs } : {}) });
const key = { sessionId: config.sessionId, turnId: config.turnId };
await store.open(key, config.writer);
if (!(await store.append(key, config.writer, config.parts))) throw new Error('the append was refused');
process.stdout.write('ready\n');
setInterval(() => void store.renew(key, config.writer), store.renewEveryMs ?? 60_000);
for await (const line of createInterface({ input: process.stdin })) {
  const order = JSON.parse(line) as { append?: string[]; finish?: true };
  if (order.append) {
    if (!(await store.append(key, config.writer, order.append))) throw new Error('the append was refused');
    process.stdout.write('appended\n');
  } else if (order.finish) {
    await store.finish(key, config.writer);
    process.stdout.write('finished\n');
  }
}
