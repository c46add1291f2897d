// A real router (HTTP on 127.0.0.1, router.db on disk) whose wakes are a stand-in process: each
// wake writes the arguments and the environment it was started with to a file, so a test sees
// exactly what a real `acx wake` would have been given, without a model or a platform.
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { type RouterOptions, type RoutedAgent, type RunningRouter, startRouter } from '../../src/frontends/router/router.ts';
import { webhookSignature } from '../../src/channel/webhook-signature.ts';
import { createMemoryLogger } from '../../src/util/logger.ts';
import { ROOT, tempDir } from './cli.ts';

/**
 * Another harness's wake program, in sh (test/fixtures/router/record-wake.sh): run as
 * `[RECORD_WAKE_SH, dir]`, each wake writes the arguments the router appended and its whole
 * environment to a file in `dir`; shellWakes(dir) reads them back.
 */
export const RECORD_WAKE_SH = join(ROOT, 'test/fixtures/router/record-wake.sh');

/** The variables sh sets for itself, which the router did not give. */
const SHELL_OWN = new Set(['PWD', 'SHLVL', '_', 'OLDPWD']);

export function shellWakes(dir: string): RecordedWake[] {
  return readdirSync(dir)
    .filter((file) => file.endsWith('.wake'))
    .map((file) => {
      const wake: RecordedWake = { argv: [], env: {} };
      for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
        const [kind, value] = [line.slice(0, line.indexOf('\t')), line.slice(line.indexOf('\t') + 1)];
        if (kind === 'arg') wake.argv.push(value);
        const at = value.indexOf('=');
        if (kind === 'env' && !SHELL_OWN.has(value.slice(0, at))) wake.env[value.slice(0, at)] = value.slice(at + 1);
      }
      return wake;
    });
}

const RECORD_WAKE = [
  "const { writeFileSync } = require('node:fs');",
  'const [dir, ...argv] = process.argv.slice(1);',
  "writeFileSync(require('node:path').join(dir, `${process.pid}.json`), JSON.stringify({ argv, env: process.env }));",
].join('\n');

/**
 * The same record from a warm wake (warm-protocol.ts): started ahead, it says ready, and writes
 * what it was started with plus what the router handed it with the event.
 */
const RECORD_WARM_WAKE = [
  "const { writeFileSync } = require('node:fs');",
  'const [dir, ...argv] = process.argv.slice(1);',
  "process.once('message', (event) => {",
  "  writeFileSync(require('node:path').join(dir, `${process.pid}.json`), JSON.stringify({ argv: [...argv, ...event.args], env: { ...process.env, ...event.env } }));",
  '  process.disconnect();',
  '});',
  "process.send({ warm: 'ready' });",
].join('\n');

export interface RecordedWake {
  argv: string[];
  env: Record<string, string>;
}

export interface StandInRouter {
  router: RunningRouter;
  logger: ReturnType<typeof createMemoryLogger>;
  home: string;
  /** POSTs `body` as the platform would, signed with `secret` unless the headers say otherwise. */
  post(body: unknown, options?: { secret?: string; event?: string; delivery?: string; headers?: Record<string, string> }): Promise<{ status: number; text: string }>;
  /** The wakes run so far (after router.idle()). */
  wakes(): RecordedWake[];
  /** router.db's deliveries, as a user would list them. */
  rows(): Array<{ delivery: string; state: string }>;
  close(): Promise<void>;
}

/** `warm`: the wakes are warm processes (the router's `--warm-wake` protocol) rather than one started per event. */
export async function startStandInRouter(options: Partial<RouterOptions> & { agents: RoutedAgent[] }): Promise<StandInRouter> {
  const home = tempDir('acx-router-stand-in-');
  const records = join(home, 'wakes');
  mkdirSync(records);
  const logger = createMemoryLogger('debug');
  const router = await startRouter({
    platformUrl: 'http://127.0.0.1:9',
    databasePath: join(home, 'router.db'),
    logger,
    // `--` ends node's own options: a warm process's `--warm-wake` is the script's.
    wakeCommand: { command: process.execPath, args: ['-e', options.warm ? RECORD_WARM_WAKE : RECORD_WAKE, '--', records] },
    retryDelaysMs: [],
    ...options,
  });
  const defaultSecret = options.agents[0]!.secret!;
  return {
    router,
    logger,
    home,
    async post(body, post = {}) {
      const raw = typeof body === 'string' ? body : JSON.stringify(body);
      const event = post.event ?? (body as { event?: string }).event ?? 'message.created';
      const headers: Record<string, string> = {
        'x-basecradle-event': event,
        'x-basecradle-delivery': post.delivery ?? (body as { event_id?: string }).event_id ?? 'delivery-1',
        'x-basecradle-signature': webhookSignature(post.secret ?? defaultSecret, raw),
        ...post.headers,
      };
      for (const [name, value] of Object.entries(headers)) if (value === '') delete headers[name];
      const response = await fetch(router.url, { method: 'POST', body: raw, headers });
      return { status: response.status, text: (await response.text()).trim() };
    },
    wakes() {
      return readdirSync(records).map((file) => JSON.parse(readFileSync(join(records, file), 'utf8')) as RecordedWake);
    },
    rows() {
      const db = new DatabaseSync(join(home, 'router.db'), { readOnly: true });
      try {
        return db.prepare('SELECT delivery, state FROM deliveries ORDER BY received_at, delivery').all().map((row) => ({ delivery: String(row.delivery), state: String(row.state) }));
      } finally {
        db.close();
      }
    },
    close: () => router.close(),
  };
}
