// What must hold at the end, read from the parts themselves: the platform's timelines (every
// human message to an agent answered exactly once by it, or recorded as dead-lettered), the
// effect file (no effect performed twice), the queue (nothing left claimed or waiting), the
// platform's delivery outbox, and the integrity check of every database the fleet wrote.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { WAKE_DEAD_LETTER_QUEUE } from '../src/frontends/worker/queue.ts';
import { wakeJobStates } from '../test/support/worker-fleet.ts';
import { tagOf } from '../test/support/timeline-agents.ts';
import { EFFECTOR, failedReplyFor, replyFor } from './agents.ts';
import type { ChaosFleet } from './fleet.ts';

interface WireMessage {
  uuid: string;
  created_at: string;
  user: { handle: string };
  content: { body: string };
}

export interface Asked {
  /** The platform's uuid of the human's message. */
  uuid: string;
  tag: string;
  agent: string;
  timeline: string;
  at: number;
  /** When each reply quoting the tag was posted by the agent, oldest first. */
  replies: number[];
  /** Of them, how many said the effect failed (lex, its tool's call reported failed). */
  failureReplies: number;
  effects: number;
}

export interface PlatformView {
  asked: Asked[];
  /** Agent messages that quote no tag asked on their timeline. */
  strayReplies: string[];
}

async function timelineMessages(fleet: ChaosFleet, timeline: string): Promise<WireMessage[]> {
  const all: WireMessage[] = [];
  let before: string | null = null;
  do {
    const query: string = `/messages?timeline=${timeline}${before ? `&before=${before}` : ''}`;
    const response = await fetch(`${fleet.platformUrl}${query}`, { headers: { authorization: `Bearer ${fleet.tokens.ana}` } });
    if (!response.ok) throw new Error(`GET ${query}: ${response.status} ${await response.text()}`);
    const page = (await response.json()) as { messages: WireMessage[]; next_cursor: string | null };
    all.push(...page.messages);
    before = page.next_cursor;
  } while (before);
  return all;
}

export function effectCounts(effectFile: string): Map<string, number> {
  const counts = new Map<string, number>();
  let text = '';
  try {
    text = readFileSync(effectFile, 'utf8');
  } catch {
    return counts;
  }
  for (const line of text.split('\n').filter(Boolean)) counts.set(line, (counts.get(line) ?? 0) + 1);
  return counts;
}

/** Every tagged human message on the fleet's timelines, with its agent's replies and effects. */
export async function readPlatform(fleet: ChaosFleet): Promise<PlatformView> {
  const effects = effectCounts(fleet.effectFile);
  const asked: Asked[] = [];
  const strayReplies: string[] = [];
  for (const timeline of fleet.timelines) {
    const messages = await timelineMessages(fleet, timeline.uuid);
    const byTag = new Map<string, Asked>();
    for (const message of messages) {
      const tag = tagOf(message.content.body);
      if (message.user.handle !== timeline.agent && tag) {
        byTag.set(tag, { uuid: message.uuid, tag, agent: timeline.agent, timeline: timeline.uuid, at: Date.parse(message.created_at), replies: [], failureReplies: 0, effects: effects.get(tag) ?? 0 });
      }
    }
    for (const message of messages) {
      if (message.user.handle !== timeline.agent) continue;
      const tag = tagOf(message.content.body);
      const question = tag ? byTag.get(tag) : undefined;
      const failed = question !== undefined && timeline.agent === EFFECTOR && message.content.body === failedReplyFor(question.tag);
      if (question && (failed || message.content.body === replyFor(timeline.agent, question.tag))) {
        question.replies.push(Date.parse(message.created_at));
        if (failed) question.failureReplies += 1;
      } else strayReplies.push(message.content.body);
    }
    for (const question of byTag.values()) question.replies.sort((a, b) => a - b);
    asked.push(...byTag.values());
  }
  return { asked, strayReplies };
}

export interface QueueState {
  /** Wake jobs by state (pg-boss: created, retry, active, completed, failed, cancelled). */
  states: Record<string, number>;
  deadLettered: number;
  /** The platform messages the dead-lettered timeline jobs were about. */
  deadLetteredMessages: Set<string>;
  /** Deliveries in the platform's outbox by state (pending, delivered, failed). */
  deliveries: Record<string, number>;
}

export async function readQueue(fleet: ChaosFleet): Promise<QueueState> {
  const db = new pg.Client({ connectionString: fleet.storeUrl });
  await db.connect();
  try {
    const { states, deadLettered } = await wakeJobStates(db);
    const dead = await db.query<{ message: string | null }>("SELECT data->>'message' AS message FROM pgboss.job WHERE name = $1", [WAKE_DEAD_LETTER_QUEUE]);
    const deadLetteredMessages = new Set(dead.rows.map((row) => row.message).filter((uuid): uuid is string => uuid !== null));
    return { states, deadLettered, deadLetteredMessages, deliveries: readDeliveries(fleet) };
  } finally {
    await db.end();
  }
}

function readDeliveries(fleet: ChaosFleet): Record<string, number> {
  const rows = fleet.queryPlatform('SELECT state, count(*) AS n FROM deliveries GROUP BY state') as Array<{ state: string; n: number }>;
  return Object.fromEntries(rows.map((row) => [row.state, Number(row.n)]));
}

/** `PRAGMA integrity_check` of every SQLite file under the run's directory, and pg_amcheck: the problems found. */
export function integrityProblems(fleet: ChaosFleet): { checked: number; problems: string[] } {
  const problems: string[] = [];
  let checked = 0;
  const visit = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) visit(path);
      else if (/\.(db|sqlite)$/.test(name)) {
        checked++;
        const db = new DatabaseSync(path, { readOnly: true });
        try {
          const rows = db.prepare('PRAGMA integrity_check').all() as Array<{ integrity_check: string }>;
          const verdict = rows.map((row) => row.integrity_check).join('; ');
          if (verdict !== 'ok') problems.push(`${path}: ${verdict}`);
        } finally {
          db.close();
        }
      }
    }
  };
  visit(fleet.dir);
  // On its small disk, the platform's database is not under the run's directory as this process sees it.
  if (fleet.disk) {
    checked++;
    const verdict = (fleet.queryPlatform('PRAGMA integrity_check') as Array<{ integrity_check: string }>).map((row) => row.integrity_check).join('; ');
    if (verdict !== 'ok') problems.push(`${join(fleet.platformHome, 'platform.db')} (on the small disk): ${verdict}`);
  }
  const report = fleet.postgres.integrityReport();
  checked++;
  if (report !== '') problems.push(`PostgreSQL (pg_amcheck): ${report}`);
  return { checked, problems };
}
