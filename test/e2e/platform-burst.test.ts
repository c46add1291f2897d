// A burst through the whole stack: 200 messages from a person across 20 timelines, each shared
// with two of three agents, delivered by the embedded platform (signed, per agent) to the router,
// which runs a real `acx wake --timeline` process per wake. The scripted model answers, through
// messages_create, every message that mentions its agent and no other, quoting the message's tag:
// counted on the platform, each tag gets exactly one reply from each agent it mentions, none twice.
//
// Parallelism: the router runs at most one wake per agent at a time, so at most three wake
// processes run at once; the platform sends up to 4 deliveries at once (its default). A message
// delivery that finds a wake for its agent and timeline still waiting joins it, so the 600
// deliveries cost far fewer processes (about 75 here; the test prints the count).
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { BaseCradleClient } from '../../src/channel/index.ts';
import { type RunningRouter, startRouter } from '../../src/frontends/router/router.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { cleanEnv } from '../support/cli.ts';
import { respondByTurn, startModelServer, type ModelServer } from '../support/model-server.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { scaled } from '../support/time-scale.ts';
import { burstReplies, loopReplies, timelineAgentDir } from '../support/timeline-agents.ts';
import { waitFor } from '../support/wait.ts';

const AGENTS = ['nova', 'ada', 'kai'] as const;
const TIMELINES = 20;
const PER_TIMELINE = 10;

let platform: TestPlatform | undefined;
let model: ModelServer | undefined;
let router: RunningRouter | undefined;
afterEach(async () => {
  await router?.close();
  await platform?.close();
  await model?.close();
  router = undefined;
  platform = undefined;
  model = undefined;
});

/** One row count of a SQLite file, read without disturbing its writers. */
function count(path: string, sql: string): number {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return (db.prepare(sql).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/**
 * Waits until nothing more can happen: the platform has nothing left to deliver and the router
 * has no wake to run. Idle, then nothing pending, with no delivery received meanwhile: a wake
 * that posted had its deliveries pending by the time it ended, and a delivery the router took
 * is counted in its database before it is answered.
 */
async function settled(platform: TestPlatform, router: RunningRouter, home: string): Promise<void> {
  const received = () => count(join(home, 'router.db'), 'SELECT count(*) AS n FROM deliveries');
  const pending = () => count(join(platform.home, 'platform.db'), "SELECT count(*) AS n FROM deliveries WHERE state = 'pending'");
  await waitFor(
    'the platform and the router never settled',
    async () => {
      const before = received();
      await router.idle();
      return pending() === 0 && received() === before;
    },
    { withinMs: 60_000, explain: () => `${pending()} deliveries pending` },
  );
}

/**
 * As if `ms` had gone by for the per-timeline breaker of every agent under `home` (each in its
 * own channel.db): its recent wakes and its trip, moved that far into the past. Only while no
 * wake runs.
 */
function ageBreakers(home: string, timeline: string, ms: number): void {
  for (const path of readdirSync(home, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('channel.db'))) {
    const db = new DatabaseSync(join(home, path));
    try {
      db.prepare('UPDATE breaker_wakes SET at_ms = at_ms - ? WHERE timeline = ?').run(ms, timeline);
      db.prepare('UPDATE breaker_trips SET tripped_at_ms = tripped_at_ms - ? WHERE timeline = ?').run(ms, timeline);
    } finally {
      db.close();
    }
  }
}

/** Which of a timeline's two agents message i mentions: the first, the second, both, or neither. */
const mentioned = (pair: readonly string[], i: number): string[] => [[pair[0]!], [pair[1]!], [...pair], []][i % 4]!;

describe('a burst of platform messages through the router (e2e)', { timeout: scaled(180_000) }, () => {
  it('200 messages across 20 timelines to 3 agents: every mention answered exactly once, nothing else answered', async () => {
    platform = await startTestPlatform();
    model = await startModelServer({ fallback: respondByTurn(burstReplies) });
    const ana = platform.user('ana', 'human');
    // Everyone on a timeline must trust everyone else there: each agent trusts ana and the agents before it.
    const users = Object.fromEntries(AGENTS.map((handle, i) => [handle, platform!.user(handle, 'ai', { trust: ['ana', ...AGENTS.slice(0, i)] })]));
    const home = mkdtempSync(join(tmpdir(), 'acx-burst-'));
    const logger = createMemoryLogger('info');
    const secrets = Object.fromEntries(AGENTS.map((handle) => [handle, `burst-secret-${handle}-0123456789`]));
    router = await startRouter({
      agents: AGENTS.map((handle) => ({ name: handle, dir: timelineAgentDir(home, handle), token: users[handle]!.token, uuid: users[handle]!.uuid, secret: secrets[handle]! })),
      platformUrl: platform.url,
      databasePath: join(home, 'router.db'),
      logger,
      // Read-speed pacing off: a batch whose newest message is another agent's ack would be read
      // for 20 s first (test/frontends/wake/timeline-pacing.test.ts covers pacing, on a fake clock).
      env: cleanEnv({ OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: model.openaiBaseURL, ACX_HOME: home, ACX_CONFIG_HOME: home, HOME: home, ACX_PACE_ENABLED: '0' }),
      retryDelaysMs: [50, 100],
    });
    await platform.restart({ deliverTo: [router.url], webhookSecrets: secrets, delivery: { retryBaseMs: 50, maxBackoffMs: 200 } });

    const client = new BaseCradleClient({ env: {}, baseUrl: platform.url, token: ana.token });
    const rooms: Array<{ uuid: string; pair: string[] }> = [];
    for (let t = 0; t < TIMELINES; t++) {
      const pair = [AGENTS[t % 3]!, AGENTS[(t + 1) % 3]!];
      const room = await client.timelines.create(`burst ${t}`);
      for (const handle of pair) await client.timelines.addParticipant(room.uuid, users[handle]!.uuid);
      rooms.push({ uuid: room.uuid, pair });
    }
    // The expected replies, as "tag by handle"; posted round-robin so every timeline is busy at once.
    const expected: string[] = [];
    for (let i = 0; i < PER_TIMELINE; i++) {
      for (const [t, room] of rooms.entries()) {
        const tag = `#T${t}-${i}`;
        const who = mentioned(room.pair, i);
        await client.messages.create(room.uuid, `${who.map((handle) => `@${handle} `).join('')}item ${tag}: please ack`.trim(), { idempotencyKey: `burst-${t}-${i}` });
        for (const handle of who) expected.push(`${tag} by ${handle}`);
      }
    }
    expect(expected).toHaveLength(200);

    const replies = async (): Promise<string[]> => {
      const found: string[] = [];
      for (const room of rooms) {
        for await (const message of client.messages.list({ timeline: room.uuid })) {
          if (message.user.handle !== 'ana') found.push(`${/#T\d+-\d+/.exec(message.content.body)?.[0] ?? message.content.body} by ${message.user.handle}`);
        }
      }
      return found.sort();
    };
    // 400 deliveries of ana's messages (two agents each) and one for each reply (to the other
    // agent): all 600 received means every reply was posted. Counted in the router's database,
    // which is cheap to read; the replies themselves are listed once, at the end.
    const received = () => count(join(home, 'router.db'), 'SELECT count(*) AS n FROM deliveries');
    await waitFor('the router never received all 600 deliveries', () => received() >= 600, {
      withinMs: 150_000,
      everyMs: 250,
      explain: async () => `${(await replies()).length} replies, ${received()} deliveries\n${logger.lines.slice(-20).join('\n')}`,
    });
    await settled(platform, router, home);

    expect(await replies()).toEqual([...expected].sort());
    expect(received()).toBe(600);
    const wakes = logger.lines.filter((line) => line.includes('INFO router wake '));
    const failed = logger.lines.filter((line) => /ERROR|WARN/.test(line));
    expect(failed).toEqual([]);
    const coalesced = logger.lines.filter((line) => line.includes('router delivery coalesced')).length;
    expect(wakes.length + coalesced).toBe(600);
    console.log(`burst: ${wakes.length} wake processes for 600 deliveries (${coalesced} coalesced into a waiting wake)`);
  });

  it('two agents answering each other forever: the per-timeline breaker stops the loop, says so, and resets after its cooldown', async () => {
    platform = await startTestPlatform();
    model = await startModelServer({ fallback: respondByTurn(loopReplies) });
    const ana = platform.user('ana', 'human');
    const nova = platform.user('nova', 'ai', { trust: ['ana'] });
    const ada = platform.user('ada', 'ai', { trust: ['ana', 'nova'] });
    const home = mkdtempSync(join(tmpdir(), 'acx-loop-'));
    const logger = createMemoryLogger('debug');
    // A window no loaded machine's wakes can outlast, so the loop trips however slowly it runs;
    // the test then moves the breaker's records past it (ageBreakers) rather than waiting.
    const breaker = { max: 3, windowS: 600, cooldownS: 600 };
    router = await startRouter({
      agents: [
        { name: 'nova', dir: timelineAgentDir(home, 'nova'), token: nova.token, uuid: nova.uuid, secret: 'loop-secret-0123456789' },
        { name: 'ada', dir: timelineAgentDir(home, 'ada'), token: ada.token, uuid: ada.uuid, secret: 'loop-secret-0123456789' },
      ],
      platformUrl: platform.url,
      databasePath: join(home, 'router.db'),
      logger,
      env: cleanEnv({
        OPENAI_API_KEY: 'sk-test',
        OPENAI_BASE_URL: model.openaiBaseURL,
        ACX_HOME: home,
        ACX_CONFIG_HOME: home,
        HOME: home,
        ACX_WAKE_BREAKER_MAX: String(breaker.max),
        ACX_WAKE_BREAKER_WINDOW: String(breaker.windowS),
        ACX_WAKE_BREAKER_COOLDOWN: String(breaker.cooldownS),
        // The breaker is what this test is about: without pacing, which would read each of the
        // other agent's messages for 20 s and so slow the loop well under the trip line.
        ACX_PACE_ENABLED: '0',
      }),
      retryDelaysMs: [50, 100],
    });
    await platform.restart({ deliverTo: [router.url], webhookSecret: 'loop-secret-0123456789', delivery: { retryBaseMs: 50, maxBackoffMs: 200 } });
    const client = new BaseCradleClient({ env: {}, baseUrl: platform.url, token: ana.token });
    const room = await client.timelines.create('loop');
    await client.timelines.addParticipant(room.uuid, nova.uuid);
    await client.timelines.addParticipant(room.uuid, ada.uuid);
    const said = async () => {
      const all: string[] = [];
      for await (const message of client.messages.list({ timeline: room.uuid })) all.push(`${message.user.handle}: ${message.content.body}`);
      return all.reverse();
    };
    const tripped = (handle: string) => logger.lines.some((line) => line.includes(`wake output agent=${handle} line="WARNING wake breaker tripped timeline=${room.uuid}`));

    await client.messages.create(room.uuid, '@nova @ada what do you two think?', { idempotencyKey: 'loop-start' });
    await waitFor('the breaker never tripped', () => tripped('nova') || tripped('ada'), {
      withinMs: 60_000,
      everyMs: 200,
      explain: async () => `${(await said()).length} messages\n${logger.lines.filter((l) => /breaker|wake end/.test(l)).join('\n')}`,
    });
    // The loop stops: once the wakes in flight are done and their deliveries declined, nothing is
    // left to deliver or run (while the agents still answered each other, that moment never came).
    await settled(platform, router, home);
    const stopped = await said();
    // Whose breaker trips depends on how the wakes interleaved: the loop stops at the first trip,
    // and a wake answering in further rounds can put one agent a wake ahead.
    const trips = ['nova', 'ada'].filter(tripped);
    // Bounded: each agent spoke at most once per admitted wake, and at most `max` were admitted.
    const spoken = stopped.filter((line) => !line.startsWith('ana: '));
    const story = `${stopped.join('\n')}\n${logger.lines.filter((l) => /breaker|wake (start|end)|exited|failed/.test(l)).join('\n')}`;
    expect(spoken.length, story).toBeGreaterThanOrEqual(2);
    expect(spoken.length, story).toBeLessThanOrEqual(2 * breaker.max);
    // Each trip declined the wake that tripped it (or, tripped by a wake's further round, that
    // round: the wake ends saying so), and the ones after.
    const declined = logger.lines.filter((line) => /wake output .*INFO wake end .*(outcome=declined|rounds_stopped=\\?"circuit breaker tripped)/.test(line));
    expect(declined.length, story).toBeGreaterThanOrEqual(trips.length);

    // After the window has cleared of the burst (and the cooldown passed), the next wake resets
    // the breaker and is answered, with what was left unread.
    ageBreakers(home, room.uuid, (breaker.windowS + breaker.cooldownS) * 1000);
    await client.messages.create(room.uuid, '#STOP @nova @ada are you there?', { idempotencyKey: 'loop-stop' });
    await waitFor('no reply after the cooldown', async () => (await said()).filter((line) => line.endsWith(': back #STOP')).length >= 2, {
      withinMs: 30_000,
      everyMs: 200,
      explain: () => logger.lines.filter((l) => /breaker|wake end/.test(l)).join('\n'),
    });
    await router.idle();
    for (const handle of ['nova', 'ada']) {
      const resets = logger.lines.filter((line) => line.includes(`wake output agent=${handle} line="INFO wake breaker reset timeline=${room.uuid}`));
      expect(resets, `${handle}: reset once if it tripped`).toHaveLength(trips.includes(handle) ? 1 : 0);
    }
    expect((await said()).slice(stopped.length).sort()).toEqual(['ada: back #STOP', 'ana: #STOP @nova @ada are you there?', 'nova: back #STOP']);
  });
});
