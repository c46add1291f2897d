// The embedded platform when its disk fills up (the chaos run's disk-full fault): `acx platform
// serve` as a real process, its home on a small tmpfs of its own (test/support/small-disk.ts).
// Before the fixes, a delivery that could not be recorded ended the process (so did a task
// activation), and a refused write was a bare 500 "Internal error".
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ACX_BIN, cleanEnv, ROOT, STACK_FRAME, tempDir } from '../support/cli.ts';
import { call } from '../support/platform.ts';
import { mountSmallDisk, type SmallDisk, smallDiskUnavailable } from '../support/small-disk.ts';
import { scaled } from '../support/time-scale.ts';
import { waitFor } from '../support/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

const NO_SMALL_DISK = smallDiskUnavailable();
const SKIP = NO_SMALL_DISK === undefined ? '' : ` (skipped: ${NO_SMALL_DISK})`;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function addUser(disk: SmallDisk, home: string, handle: string, kind: 'ai' | 'human', trust: readonly string[] = []): { token: string; uuid: string } {
  const [command, args] = disk.inside(process.execPath, [ACX_BIN, 'platform', 'user', 'add', '--handle', handle, '--kind', kind, '--home', home, '--json', ...trust.flatMap((t) => ['--trust', t])]);
  return JSON.parse(execFileSync(command, args, { cwd: ROOT, env: cleanEnv({ HOME: home }), encoding: 'utf8' })) as { token: string; uuid: string };
}

async function servePlatform(disk: SmallDisk, home: string, receiver: WebhookReceiver) {
  const [command, args] = disk.inside(process.execPath, [ACX_BIN, 'platform', 'serve', '--port', '0', '--home', home]);
  const child = spawn(command, args, { cwd: ROOT, env: cleanEnv({ HOME: home, ACX_PLATFORM_DELIVER_TO: receiver.url, ACX_PLATFORM_WEBHOOK_SECRET_NOVA: 'nova-key' }) });
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').once('data', (chunk: string) => resolve(chunk.split('\n')[0]!));
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
  });
  return { url, child, stderr: () => stderr };
}

describe('the embedded platform on a full disk', () => {
  it.skipIf(NO_SMALL_DISK !== undefined)(
    `refuses writes with 503 and Retry-After, keeps serving and delivering, corrupts nothing, and writes again once there is room${SKIP}`,
    async () => {
      const home = tempDir('acx-disk-full-');
      const disk = await mountSmallDisk(home, 16);
      cleanups.push(() => disk.close());
      const receiver = await startWebhookReceiver();
      cleanups.push(() => receiver.close());
      const ada = addUser(disk, home, 'ada', 'human');
      const nova = addUser(disk, home, 'nova', 'ai', ['ada']);
      const platform = await servePlatform(disk, home, receiver);
      const timeline = (await call(platform.url, 'POST', '/timelines', { token: ada.token, json: { timeline: { name: 'room' } } })).body.timeline.uuid as string;
      await call(platform.url, 'POST', `/timelines/${timeline}/participations`, { token: ada.token, json: { user_id: nova.uuid } });
      const post = (body: string) => call(platform.url, 'POST', `/timelines/${timeline}/messages`, { token: ada.token, json: { message: { body } } });

      // A task falls due while the disk is full: its activation cannot be written.
      const task = await call(platform.url, 'POST', `/timelines/${timeline}/tasks`, { token: ada.token, json: { task: { instructions: 'check in', activate_at: new Date(Date.now() + scaled(3000)).toISOString() } } });
      expect(task.status).toBe(201);
      // The disk fills while the first delivery is on the wire: it is sent, but cannot be recorded.
      receiver.onDelivery = () => {
        receiver.onDelivery = undefined;
        disk.fill();
      };
      expect((await post('before')).status).toBe(201);
      await waitFor('the delivery was not reported unrecorded', () => /ERROR delivery not recorded /.test(platform.stderr()), { withinMs: 30_000, explain: platform.stderr });

      const refused = await post('while full');
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('10');
      expect(refused.body).toMatchObject({ code: 'storage_full', status: 503, detail: "The platform's disk is full, so nothing was written. Try again shortly." });
      expect(platform.stderr()).toMatch(/ERROR request refused request=\S+ route=\/timelines\/:\w+\/messages reason="the disk is full" note="nothing was written; free space on the platform home"/);
      const read = await call(platform.url, 'GET', `/messages?timeline=${timeline}`, { token: ada.token });
      expect(read.status, 'reads are still answered').toBe(200);

      await waitFor('the task activation did not fail', () => /ERROR tasks not activated error="database or disk is full" retry_in_ms=5000/.test(platform.stderr()), { withinMs: 30_000, explain: platform.stderr });

      disk.empty();
      expect((await post('after')).status).toBe(201);
      // The unrecorded delivery is sent again (same id: the receiver dedups it), then the new one.
      const bodies = async () => new Set(receiver.received.map((delivery) => delivery.headers['x-basecradle-delivery']));
      const database = join(home, 'platform.db');
      await waitFor(
        'the deliveries did not all arrive and get recorded',
        async () => (await bodies()).size === 3 && disk.query(database, "SELECT uuid FROM deliveries WHERE state != 'delivered'").length === 0,
        { withinMs: 30_000, explain: platform.stderr },
      );
      expect(receiver.received.length, 'the unrecorded one came twice, the others once').toBe(4);
      expect(receiver.received.map((delivery) => delivery.body.event).sort()).toEqual(['message.created', 'message.created', 'message.created', 'task.activated']);

      expect(platform.child.exitCode, 'still running').toBeNull();
      expect(platform.stderr()).not.toMatch(STACK_FRAME);
      const messages = (await call(platform.url, 'GET', `/messages?timeline=${timeline}`, { token: ada.token })).body.messages as Array<{ content: { body: string } }>;
      expect(messages.map((message) => message.content.body).sort()).toEqual(['after', 'before']);
      expect(disk.query(database, 'PRAGMA integrity_check')).toEqual([{ integrity_check: 'ok' }]);
    },
    60_000,
  );
});
