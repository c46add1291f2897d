// The router under attack: what a sender who can reach its port but does not hold a signing key
// (or holds one captured delivery) can make it do. Real HTTP on 127.0.0.1, router.db on disk, a
// stand-in wake process per wake; the router's clock is injected, so the replay window and the
// log throttle are exact, not timed.
import { afterEach, describe, expect, it } from 'vitest';
import type { RoutedAgent } from '../../../src/frontends/router/router.ts';
import { type StandInRouter, startStandInRouter } from '../../support/stand-in-router.ts';

const NOVA: RoutedAgent = { name: 'nova', dir: '/agents/nova', token: 'bc_uat_nova', uuid: '0190a5f2-0000-7000-8000-00000000000a', secret: 'nova-secret-0123456789' };
const ADA: RoutedAgent = { name: 'ada', dir: '/agents/ada', token: 'bc_uat_ada', uuid: '0190a5f2-0000-7000-8000-00000000000b', secret: 'ada-secret-0123456789' };
const SHARED = 'shared-secret-0123456789';
const STRANGER = '0190a5f2-0000-7000-8000-0000000000ff';
const TIMELINE = '0190a5f2-0000-7000-8000-0000000000c1';
const HOUR = 3600_000;

let clock = Date.parse('2026-03-01T12:00:00.000Z');
let running: StandInRouter | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function start(): Promise<StandInRouter> {
  clock = Date.parse('2026-03-01T12:00:00.000Z');
  running = await startStandInRouter({ agents: [NOVA, ADA], sharedSecrets: [SHARED], now: () => clock });
  return running;
}

/** A delivery body as the platform builds it (src/platform/events.ts). */
const delivery = (id: string, overrides: Record<string, unknown> = {}) => ({
  event: 'message.created',
  event_id: id,
  occurred_at: new Date(clock).toISOString(),
  actor_uuid: null,
  recipient_uuid: NOVA.uuid,
  timeline_uuid: TIMELINE,
  resource: { type: 'message', uuid: `m-${id}` },
  ...overrides,
});

const refusedLines = (r: StandInRouter) => r.logger.lines.filter((line) => line.startsWith('WARNING router delivery refused'));

describe('the router against replayed deliveries', () => {
  it('one captured delivery re-posted under fresh X-BaseCradle-Delivery ids wakes the agent once', async () => {
    const r = await start();
    const body = delivery('e-1');
    const answers = [];
    for (let i = 1; i <= 7; i++) answers.push(await r.post(body, { delivery: `fresh-${i}` }));
    await r.router.idle();
    expect(answers).toEqual([{ status: 202, text: 'accepted' }, ...Array(6).fill({ status: 200, text: 'already received' })]);
    expect(r.wakes()).toHaveLength(1);
    expect(r.wakes()[0]!.env.BASECRADLE_DELIVERY_ID).toBe('e-1');
    expect(r.rows()).toEqual([{ delivery: 'e-1', state: 'done' }]);
  });

  it("takes the event from the signed body: a header that disagrees is refused 400, with no wake and no row", async () => {
    const r = await start();
    // A signed message.updated (which wakes no one) passed off as message.created.
    expect(await r.post(delivery('e-1', { event: 'message.updated' }), { event: 'message.created' })).toEqual({
      status: 400,
      text: 'X-BaseCradle-Event says message.created but the signed body says message.updated',
    });
    expect(await r.post(delivery('e-2'), { event: 'asset.created' })).toMatchObject({ status: 400 });
    await r.router.idle();
    expect(r.wakes()).toEqual([]);
    expect(r.rows()).toEqual([]);
    expect(refusedLines(r)).toEqual([
      expect.stringContaining('status=400 reason=event-mismatch'),
      expect.stringContaining('status=400 reason=event-mismatch'),
    ]);
    // The same body under its own event name is taken for what it is: an event that wakes no one.
    expect(await r.post(delivery('e-1', { event: 'message.updated' }))).toEqual({ status: 200, text: 'message.updated wakes no one' });
    expect(r.rows()).toEqual([{ delivery: 'e-1', state: 'ignored' }]);
  });

  it('refuses a body whose occurred_at lies outside the window (24 h back, 5 min ahead) and takes one inside it', async () => {
    const r = await start();
    const at = (offset: number) => new Date(clock + offset).toISOString();
    expect(await r.post(delivery('old', { occurred_at: at(-25 * HOUR) }))).toMatchObject({ status: 400, text: expect.stringContaining("older than the router's replay window (24 h)") });
    expect(await r.post(delivery('ahead', { occurred_at: at(10 * 60_000) }))).toMatchObject({ status: 400, text: expect.stringContaining('ahead of the router') });
    expect(await r.post(delivery('garbled', { occurred_at: 'yesterday' }))).toEqual({ status: 400, text: 'occurred_at is not a date' });
    expect(await r.post(delivery('late', { occurred_at: at(-23 * HOUR) }))).toEqual({ status: 202, text: 'accepted' });
    expect(await r.post(delivery('skewed', { occurred_at: at(4 * 60_000) }))).toEqual({ status: 202, text: 'accepted' });
    await r.router.idle();
    expect(r.wakes()).toHaveLength(2);
    expect(r.rows().map((row) => row.delivery).sort()).toEqual(['late', 'skewed']);
    expect(refusedLines(r).map((line) => /reason=(\S+)/.exec(line)![1])).toEqual(['stale', 'future', 'occurred-at-invalid']);
  });

  it('prunes dedupe rows once they are older than the window, and a replay of a pruned delivery is still refused', async () => {
    const r = await start();
    const first = delivery('e-1');
    expect((await r.post(first)).status).toBe(202);
    await r.router.idle();
    clock += 25 * HOUR;
    expect((await r.post(delivery('e-2'))).status).toBe(202);
    await r.router.idle();
    expect(r.rows()).toEqual([{ delivery: 'e-2', state: 'done' }]);
    expect(await r.post(first, { delivery: 'fresh' })).toMatchObject({ status: 400 });
    await r.router.idle();
    expect(r.wakes()).toHaveLength(2);
  });

  it('a platform whose bodies carry no event_id is deduped on the delivery header and on the item, and the log says what is left replayable', async () => {
    const r = await start();
    const { event_id: _, occurred_at: __, ...bare } = delivery('unused');
    expect((await r.post(bare, { delivery: 'd-1' })).status).toBe(202);
    expect((await r.post(bare, { delivery: 'd-1' })).status).toBe(200);
    // The same body under a fresh header is about the same message, which has woken nova already.
    expect(await r.post(bare, { delivery: 'd-2' })).toEqual({ status: 200, text: 'already received' });
    expect((await r.post({ ...bare, resource: { type: 'message', uuid: 'm-other' } }, { delivery: 'd-3' })).status).toBe(202);
    await r.router.idle();
    expect(r.wakes()).toHaveLength(2);
    expect(r.rows()).toEqual([
      { delivery: 'd-1', state: 'done' },
      { delivery: 'd-2', state: 'duplicate' },
      { delivery: 'd-3', state: 'done' },
    ]);
    expect(r.logger.lines.filter((line) => line.includes('router delivery duplicate delivery=d-2'))).toEqual([expect.stringContaining('reason=item-seen item=m-unused covered_by=d-1')]);
    const warnings = r.logger.lines.filter((line) => line.startsWith('WARNING router deliveries replayable'));
    expect(warnings).toEqual([expect.stringContaining('carry no event_id'), expect.stringContaining('carry no occurred_at')]);
  });
});

describe('the router answers as the BaseCradle router does: the signature first', () => {
  it('a delivery with no signature header, or a bad one, is 401 with no wake and no row', async () => {
    const r = await start();
    const body = delivery('e-1');
    expect(await r.post(body, { headers: { 'x-basecradle-signature': '' } })).toEqual({ status: 401, text: 'signature missing' });
    expect(await r.post(body, { headers: { 'x-basecradle-signature': 'sha256=00' } })).toEqual({ status: 401, text: 'signature malformed' });
    expect(await r.post(body, { secret: 'not-the-key' })).toEqual({ status: 401, text: 'signature mismatch' });
    // ada's key does not sign for nova: a recipient's deliveries are checked with its own key.
    expect(await r.post(body, { secret: ADA.secret })).toEqual({ status: 401, text: 'signature mismatch' });
    await r.router.idle();
    expect(r.wakes()).toEqual([]);
    expect(r.rows()).toEqual([]);
    expect(refusedLines(r).map((line) => /status=(\d+) reason=(\S+)/.exec(line)!.slice(1).join(' '))).toEqual([
      '401 signature-missing',
      '401 signature-malformed',
      '401 signature-mismatch',
      '401 signature-mismatch',
    ]);
  });

  it('without a valid signature it is 401 whatever else is missing or wrong', async () => {
    const r = await start();
    const unsigned = { headers: { 'x-basecradle-signature': '' } };
    expect((await r.post(delivery('e-1', { recipient_uuid: STRANGER }), unsigned)).status).toBe(401);
    expect((await r.post(delivery('e-2'), { headers: { 'x-basecradle-signature': '', 'x-basecradle-event': '', 'x-basecradle-delivery': '' } })).status).toBe(401);
    expect((await r.post('not json', unsigned)).status).toBe(401);
    expect((await r.post(delivery('e-3', { recipient_uuid: STRANGER }), { secret: 'not-any-key' })).status).toBe(401);
    expect(r.rows()).toEqual([]);
  });

  it('a validly signed delivery for a recipient not hosted here, an ignored event and a duplicate are all 200', async () => {
    const r = await start();
    expect(await r.post(delivery('e-1', { recipient_uuid: STRANGER }), { secret: SHARED })).toEqual({ status: 200, text: 'no agent here for this recipient_uuid' });
    expect(await r.post(delivery('e-2', { recipient_uuid: STRANGER }), { secret: ADA.secret })).toMatchObject({ status: 200 });
    expect(await r.post(delivery('e-3', { event: 'timeline.updated' }))).toEqual({ status: 200, text: 'timeline.updated wakes no one' });
    expect(await r.post(delivery('e-4'))).toEqual({ status: 202, text: 'accepted' });
    expect(await r.post(delivery('e-4'))).toEqual({ status: 200, text: 'already received' });
    await r.router.idle();
    expect(r.wakes()).toHaveLength(1);
    expect(r.rows()).toEqual([
      { delivery: 'e-3', state: 'ignored' },
      { delivery: 'e-4', state: 'done' },
    ]);
    const reasons = r.logger.lines.filter((line) => /^INFO router delivery (ignored|duplicate)/.test(line)).map((line) => /reason=(\S+)/.exec(line)![1]);
    expect(reasons).toEqual(['not-hosted', 'not-hosted', 'not-a-waking-event', 'seen-before']);
    // A signed delivery that is malformed is the sender's fault, not a forgery: 400.
    expect(await r.post('[1]')).toEqual({ status: 400, text: 'the body is not a JSON object' });
    expect(await r.post(delivery('e-5', { timeline_uuid: undefined }))).toEqual({ status: 400, text: 'recipient_uuid and timeline_uuid are required' });
  });
});

describe('the router under a flood of forged requests', () => {
  it('writes the first few refusals of a minute, then one line with how many it left out', async () => {
    const r = await start();
    for (let i = 0; i < 60; i++) expect((await r.post(delivery(`f-${i}`), { secret: 'forged' })).status).toBe(401);
    expect(refusedLines(r)).toHaveLength(5);
    clock += 60_000; // the window closes: the next refusal first reports the count
    expect((await r.post(delivery('f-last'), { secret: 'forged' })).status).toBe(401);
    expect(refusedLines(r).slice(5)).toEqual(['WARNING router delivery refused suppressed=55 window=60.00s', expect.stringMatching(/^WARNING router delivery refused status=401 reason=signature-mismatch/)]);
  });
});
