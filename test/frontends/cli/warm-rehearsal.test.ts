import { describe, expect, it } from 'vitest';
import { rehearseHttp, rehearseRecall, rehearseToolSchemas } from '../../../src/frontends/cli/warm-rehearsal.ts';

/** Open sockets and servers of this process, by kind. */
const network = () => process.getActiveResourcesInfo().filter((kind) => /TCP|Pipe/.test(kind)).sort();

/** `network()` once it is `expected` again, or after 50 turns of the event loop (a closed handle is released a turn or two later). */
async function networkSettledAt(expected: string[]): Promise<string[]> {
  for (let turn = 0; turn < 50 && network().join() !== expected.join(); turn++) await new Promise((resolve) => setImmediate(resolve));
  return network();
}

// A warm wake process rehearses before its event (src/frontends/cli/warm.ts); what it does must
// leave it as idle as it was, holding nothing open but the router's channel.
describe('a warm wake process rehearsing before its event', () => {
  it('the HTTP rehearsal closes its own server and every connection to it', async () => {
    const before = network();
    await rehearseHttp();
    expect(await networkSettledAt(before)).toEqual(before);
  });

  it('the tool schema and recall rehearsals open nothing either', async () => {
    const before = network();
    await rehearseToolSchemas();
    await rehearseRecall();
    expect(await networkSettledAt(before)).toEqual(before);
  });
});
