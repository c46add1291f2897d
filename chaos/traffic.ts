// The human users: at a steady rate, one of them posts a tagged message to one agent's timeline.
// A post the platform did not take (it was down) is kept as such: the checker holds the agents to
// what the platform has, and a post whose answer was lost in a cut may still have been stored.
import { humanMessage } from './agents.ts';
import { HUMANS, type Timeline } from './fleet.ts';
import type { Random } from './random.ts';

export interface Post {
  tag: string;
  agent: string;
  timeline: string;
  /** When the human sent it (ms since the epoch). */
  sentAt: number;
  outcome: 'posted' | 'refused' | 'unknown';
}

export interface Traffic {
  posts: Post[];
  /** Posts until stop(); resolves once the last post has settled. */
  stop(): Promise<void>;
}

export function startTraffic(platformUrl: string, tokens: Record<string, string>, timelines: readonly Timeline[], perSecond: number, random: Random): Traffic {
  const posts: Post[] = [];
  const pending = new Set<Promise<void>>();
  let next = 0;
  const post = async (): Promise<void> => {
    const timeline = random.pick(timelines);
    const human = random.pick(HUMANS);
    const tag = `#C${++next}`;
    const record: Post = { tag, agent: timeline.agent, timeline: timeline.uuid, sentAt: Date.now(), outcome: 'unknown' };
    posts.push(record);
    try {
      const response = await fetch(`${platformUrl}/timelines/${timeline.uuid}/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens[human]}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message: { body: humanMessage(timeline.agent, tag) } }),
        signal: AbortSignal.timeout(30_000),
      });
      record.outcome = response.status === 201 ? 'posted' : 'refused';
      // Read to its end under the same deadline: a body left unread can hold its connection (and this post) open.
      await response.arrayBuffer();
    } catch (error) {
      // Refused before a byte was sent: the platform is down and stored nothing.
      const code = (error as { cause?: { code?: string } }).cause?.code;
      record.outcome = code === 'ECONNREFUSED' ? 'refused' : 'unknown';
    }
  };
  const timer = setInterval(() => {
    const sending = post();
    pending.add(sending);
    void sending.finally(() => pending.delete(sending));
  }, 1000 / perSecond);
  return {
    posts,
    async stop() {
      clearInterval(timer);
      // Every post settles within its 30 s deadline; the cap only keeps a stuck socket from holding the run.
      await Promise.race([Promise.all(pending), new Promise((resolve) => setTimeout(resolve, 60_000))]);
    },
  };
}
