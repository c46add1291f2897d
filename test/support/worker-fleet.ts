// A fleet of real `acx worker` processes on one PostgreSQL store, for the multi-worker kill test
// and the wake-throughput benchmark: an agent whose only tool appends a line per event to a file
// (a visible side effect), a local model server that answers each batch of events by calling it
// once per event and then replying, and helpers to enqueue events and read the queue's state.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { openWakeQueue, WAKE_DEAD_LETTER_QUEUE, WAKE_QUEUE, type WakeQueue } from '../../src/frontends/worker/queue.ts';
import { createLogger } from '../../src/util/logger.ts';
import { ACX_BIN, cleanEnv, ROOT, tempDir } from './cli.ts';
import { type ModelServer, type RecordedRequest, respondByTurn, startModelServer } from './model-server.ts';

export const FLEET_AGENT = 'ledger';
const KEY = 'sk-test-FLEETKEY-7f20c1d9e4';

/** The plugin tool: one line per call, the event it was called for. Unsafe: never re-run blindly. */
const APPEND_PLUGIN = `import { appendFileSync } from 'node:fs';
export default {
  name: 'ledger_append', description: 'Appends one line to the ledger.', kind: 'edit', effect: 'unsafe', capabilityScopes: [],
  inputSchema: { type: 'object', properties: { line: { type: 'string' } }, required: ['line'] },
  execute: ({ line }) => { appendFileSync(process.env.LEDGER_FILE, line + '\\n'); return 'appended ' + line; },
};
`;

/** Event ids look like `evt-s07-e3`: a prompt names every event of its batch. */
const EVENT_ID = /evt-s\d+-e\d+/g;

/** The newest message the user (not the harness's brief) wrote in this request. */
function promptOf(request: RecordedRequest): string {
  const users = request.view.messages.filter((m) => m.role === 'user' && !m.text?.startsWith('<acx-brief>'));
  return users.at(-1)?.text ?? '';
}

/** The wake queue's jobs by state (pg-boss: created, retry, active, completed, …), and how many sit in the dead-letter queue. */
export async function wakeJobStates(db: Pick<pg.Pool, 'query'>): Promise<{ states: Record<string, number>; deadLettered: number }> {
  const { rows } = await db.query<{ name: string; state: string; n: string }>('SELECT name, state, count(*) AS n FROM pgboss.job WHERE name = ANY($1) GROUP BY name, state', [
    [WAKE_QUEUE, WAKE_DEAD_LETTER_QUEUE],
  ]);
  const states: Record<string, number> = {};
  let deadLettered = 0;
  for (const row of rows) {
    if (row.name === WAKE_DEAD_LETTER_QUEUE) deadLettered += Number(row.n);
    else states[row.state] = Number(row.n);
  }
  return { states, deadLettered };
}

export interface Fleet {
  home: string;
  agentDir: string;
  ledger: string;
  server: ModelServer;
  storeUrl: string;
  queue: WakeQueue;
  db: pg.Pool;
  /** Starts one `acx worker` (`nodeArgs` go to node itself, e.g. --cpu-prof); its stderr (the wake bookends) is kept on the returned handle. */
  startWorker(concurrency: number, extraArgs?: readonly string[], nodeArgs?: readonly string[]): FleetWorker;
  /** Enqueues `perSession` events for each of `sessions` sessions, interleaved; returns the event ids. */
  enqueue(sessions: number, perSession: number): Promise<string[]>;
  /** The wake queue's jobs by state, and how many sit in the dead-letter queue. */
  jobStates(): Promise<{ states: Record<string, number>; deadLettered: number }>;
  close(): Promise<void>;
}

export interface FleetWorker {
  child: ChildProcess;
  stderr(): string;
  exited: Promise<{ status: number | null; signal: NodeJS.Signals | null }>;
}

export async function startFleet(storeUrl: string, options: { modelDelayMs?: number } = {}): Promise<Fleet> {
  const home = tempDir('acx-fleet-');
  const agentDir = join(home, 'agent');
  mkdirSync(join(agentDir, 'tools'), { recursive: true });
  writeFileSync(
    join(agentDir, 'agent.json'),
    JSON.stringify({ id: FLEET_AGENT, name: 'Ledger', version: '0.1.0', description: 'Writes one ledger line per event, then says so.', model: 'openai:fleet-model', maxSteps: 4, permissionMode: 'allow-all', tools: [] }),
  );
  writeFileSync(join(agentDir, 'tools', 'ledger.mjs'), APPEND_PLUGIN);
  // Outside the config home (here the same directory as the state home): a worker takes a change there for a change to its agent.
  const ledger = join(tempDir('acx-ledger-'), 'ledger.txt');
  const delay = options.modelDelayMs ?? 0;
  const server = await startModelServer({
    fallback: respondByTurn(async ({ request }) => {
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
      const prompt = promptOf(request);
      // A "poison" event is one the provider refuses every time (a 400 is not retried in a turn).
      if (prompt.includes('poison')) return { fail: { status: 400 } };
      const events = [...new Set(prompt.match(EVENT_ID) ?? [])];
      const messages = request.view.messages;
      const toolRan = messages.findLastIndex((m) => m.role === 'tool') > messages.findLastIndex((m) => m.role === 'user' && m.text === prompt);
      if (!toolRan) return { toolCalls: events.map((event) => ({ name: 'ledger_append', input: { line: event } })) };
      return `Answered: ${events.join(' ')}`;
    }),
  });
  const queue = await openWakeQueue(storeUrl, createLogger({ level: 'warn' }), { superviseSeconds: 1 });
  const db = new pg.Pool({ connectionString: storeUrl, max: 2 });
  // An idle connection dropped by a server restart (the outage tests) is an event, not a failure: the next query reconnects.
  db.on('error', () => {});
  const env = cleanEnv({
    OPENAI_API_KEY: KEY,
    OPENAI_BASE_URL: server.openaiBaseURL,
    LEDGER_FILE: ledger,
    ACX_LOG_LEVEL: 'info',
  });
  return {
    home,
    agentDir,
    ledger,
    server,
    storeUrl,
    queue,
    db,
    startWorker(concurrency, extraArgs = [], nodeArgs = []) {
      const args = [...nodeArgs, ACX_BIN, 'worker', '--agents', `${FLEET_AGENT}=${agentDir}`, '--store', storeUrl, '--concurrency', String(concurrency)];
      // Pacing waits out human reading time and the breaker caps wakes per minute: neither is what is measured here.
      args.push('--no-pace', '--breaker-max', '0', '--supervise', '1', '--home', home, '--config-home', home, ...extraArgs);
      const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const exited = new Promise<{ status: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (status, signal) => resolve({ status, signal })));
      return { child, stderr: () => stderr, exited };
    },
    async enqueue(sessions, perSession) {
      const ids: string[] = [];
      for (let e = 0; e < perSession; e++) {
        for (let s = 0; s < sessions; s++) {
          const id = `evt-s${String(s).padStart(2, '0')}-e${e}`;
          ids.push(id);
          await queue.send({ kind: 'session', agent: FLEET_AGENT, sessionId: `room-${String(s).padStart(2, '0')}`, event: { id, text: `Please log ${id}.` } });
        }
      }
      return ids;
    },
    jobStates: () => wakeJobStates(db),
    async close() {
      await queue.close();
      await db.end();
      await server.close();
    },
  };
}
