// A router killed after it took a delivery (the platform had its 202; the item is claimed, so the
// poll will not take it either) and before the delivery's wake finished: the next router on the
// same router.db takes it up. Found by the chaos run. A real router, router.db on disk, a
// stand-in process per wake.
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryLog } from '../../../src/frontends/router/delivery-log.ts';
import type { RoutedAgent } from '../../../src/frontends/router/router.ts';
import type { TimelineWakeJob, WakeQueue } from '../../../src/frontends/worker/queue.ts';
import { tempDir } from '../../support/cli.ts';
import { type StandInRouter, startStandInRouter } from '../../support/stand-in-router.ts';

const routers: StandInRouter[] = [];
afterEach(async () => {
  for (const router of routers.splice(0)) await router.close();
});

const TIMELINE = '0190a5f2-0000-7000-8000-0000000000d1';
const agent: RoutedAgent = { name: 'nova', dir: '/agents/nova', token: 'bc_uat_x', uuid: '0190a5f2-0000-7000-8000-0000000000a1', secret: 'nova-signing-secret-0123' };

describe('a router restarted over deliveries it had taken and not finished', () => {
  it('runs their wakes, once each, and leaves finished and ignored ones alone', async () => {
    const databasePath = join(tempDir('acx-router-restart-'), 'router.db');
    // What the killed router left: one delivery taken and never finished, one finished, one ignored.
    const earlier = new DeliveryLog(databasePath, Date.now, 3_600_000);
    const item = (uuid: string) => ({ kind: 'message' as const, uuid, atMs: Date.now() });
    earlier.admit({ id: 'e-taken', agent: 'nova', event: 'message.created', timeline: TIMELINE, state: 'queued', item: item('0190a5f2-0000-7000-8000-00000000e001'), via: 'webhook' });
    earlier.admit({ id: 'e-done', agent: 'nova', event: 'message.created', timeline: TIMELINE, state: 'queued', item: item('0190a5f2-0000-7000-8000-00000000e002'), via: 'webhook' });
    earlier.finished('e-done', 'done');
    earlier.admit({ id: 'e-ignored', agent: 'nova', event: 'timeline.updated', timeline: TIMELINE, state: 'ignored', via: 'webhook' });
    earlier.close();

    const router = await startStandInRouter({ agents: [agent], databasePath });
    routers.push(router);
    await router.router.idle();
    expect(router.wakes().map((wake) => [wake.env.BASECRADLE_DELIVERY_ID, wake.argv.slice(4).join(' ')])).toEqual([['e-taken', '--message 0190a5f2-0000-7000-8000-00000000e001']]);
    expect(router.logger.lines.join('\n')).toMatch(/INFO router delivery resumed agent=nova delivery=e-taken event=message.created timeline=\S+ note="taken before a restart and never finished"/);
    await router.close();
    routers.pop();

    // Finished now: a third router has nothing to take up.
    const again = await startStandInRouter({ agents: [agent], databasePath });
    routers.push(again);
    await again.router.idle();
    expect(again.wakes()).toEqual([]);
  });
});

describe('a router whose queue is away', () => {
  it('waits with the first message delivery of a timeline and joins the later ones there to it; other timelines keep their own', async () => {
    const sent: string[] = [];
    let reopen!: () => void;
    const away = new Promise<void>((resolve) => (reopen = resolve));
    const queue = {
      async sendWhenReachable(job: TimelineWakeJob, onRetry: (error: unknown, attempt: number) => void) {
        if (sent.length === 0 && !job.deliveryId.startsWith('after')) {
          onRetry(Object.assign(new Error('connect ENOENT /tmp/pg/.s.PGSQL.5432'), { code: 'ENOENT' }), 1);
          await away;
        }
        sent.push(job.deliveryId);
        return `job-${sent.length}`;
      },
    } as unknown as WakeQueue;
    const router = await startStandInRouter({ agents: [agent], queue });
    routers.push(router);
    const delivery = (id: string, timeline: string, uuid: string) => ({
      event: 'message.created',
      event_id: id,
      occurred_at: new Date().toISOString(),
      actor_uuid: '0190a5f2-0000-7000-8000-0000000000b1',
      recipient_uuid: agent.uuid,
      timeline_uuid: timeline,
      resource: { type: 'message', uuid },
    });
    const OTHER = '0190a5f2-0000-7000-8000-0000000000d2';
    expect((await router.post(delivery('e-1', TIMELINE, '0190a5f2-0000-7000-8000-00000000f001'))).status).toBe(202);
    expect((await router.post(delivery('e-2', TIMELINE, '0190a5f2-0000-7000-8000-00000000f002'))).status).toBe(202);
    expect((await router.post(delivery('e-3', TIMELINE, '0190a5f2-0000-7000-8000-00000000f003'))).status).toBe(202);
    expect((await router.post(delivery('after-1', OTHER, '0190a5f2-0000-7000-8000-00000000f004'))).status).toBe(202);
    reopen();
    await router.router.idle();
    expect(sent.sort()).toEqual(['after-1', 'e-1']);
    expect(router.rows().sort((a, b) => a.delivery.localeCompare(b.delivery))).toEqual([
      { delivery: 'after-1', state: 'enqueued' },
      { delivery: 'e-1', state: 'enqueued' },
      { delivery: 'e-2', state: 'coalesced' },
      { delivery: 'e-3', state: 'coalesced' },
    ]);
    expect(router.logger.lines.join('\n')).toMatch(/INFO router delivery coalesced agent=nova delivery=e-2 timeline=\S+ into=e-1 note="the queue is away; that delivery is enqueued once it is back"/);
  });
});

