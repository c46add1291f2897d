// The fleet's synthetic probe (basecradle-router's probe.wake) and the liveness path: answered by
// the router itself, never by waking an agent. Real HTTP on 127.0.0.1, router.db on disk.
import { afterEach, describe, expect, it } from 'vitest';
import { webhookSignature } from '../../../src/channel/webhook-signature.ts';
import type { RoutedAgent } from '../../../src/frontends/router/router.ts';
import { type StandInRouter, startStandInRouter } from '../../support/stand-in-router.ts';

const NOVA: RoutedAgent = { name: 'nova', dir: '/agents/nova', token: 'bc_uat_nova', uuid: '0190a5f2-0000-7000-8000-00000000000a', secret: 'nova-secret-0123456789' };
const PROBE_KEY = 'probe-key-0123456789';
const NONCE = '5f0c2d9e4b7a41c8a3e2f1d0c9b8a7e6';
const MARKER = `BCNOC1 ${NONCE} ${'ab'.repeat(32)}`;

let running: StandInRouter | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function probe(router: StandInRouter, payload: unknown, headers: Record<string, string> = {}, key = PROBE_KEY): Promise<{ status: number; text: string }> {
  const raw = typeof payload === 'string' ? payload : JSON.stringify(payload);
  const all: Record<string, string> = {
    'x-basecradle-probe-event': 'probe.wake',
    'x-basecradle-probe-delivery': 'probe-delivery-1',
    'x-basecradle-probe-signature': webhookSignature(key, raw),
    ...headers,
  };
  for (const [name, value] of Object.entries(all)) if (value === '') delete all[name];
  const response = await fetch(`${router.router.url}/webhooks/probe`, { method: 'POST', body: raw, headers: all });
  return { status: response.status, text: (await response.text()).trim() };
}

describe('the synthetic probe', () => {
  it('a signed probe for a hosted agent is answered with its ack, and no agent is woken', async () => {
    running = await startStandInRouter({ agents: [NOVA], probeSecret: PROBE_KEY });
    expect(await probe(running, { harness_key: 'nova', marker: MARKER })).toEqual({ status: 200, text: `BCNOC1-ACK ${NONCE}` });
    expect(await probe(running, { harness_key: 'NOVA', marker: MARKER }, { 'x-basecradle-probe-event': '' })).toEqual({ status: 200, text: `BCNOC1-ACK ${NONCE}` });
    await running.router.idle();
    expect(running.wakes()).toEqual([]);
    expect(running.rows()).toEqual([]);
    expect(running.logger.lines.filter((line) => line.includes('router probe'))).toEqual([
      `INFO router probe answered agent=nova nonce=${NONCE} delivery=probe-delivery-1 reason=synthetic-probe note="no wake is run for a probe"`,
      `INFO router probe answered agent=nova nonce=${NONCE} delivery=probe-delivery-1 reason=synthetic-probe note="no wake is run for a probe"`,
    ]);
  });

  it('the signature first: 401 without a valid one whatever else is wrong; then 400 for a malformed probe, 200 for a handle not hosted', async () => {
    // A fixed clock: refusals are flood-controlled per minute, and this minute never ends.
    running = await startStandInRouter({ agents: [NOVA], probeSecret: PROBE_KEY, now: () => Date.parse('2026-03-01T12:00:00Z') });
    expect(await probe(running, 'not json', { 'x-basecradle-probe-signature': '' })).toEqual({ status: 401, text: 'probe signature missing' });
    expect(await probe(running, { harness_key: 'nova', marker: MARKER }, {}, NOVA.secret!)).toEqual({ status: 401, text: 'probe signature mismatch' });
    // The platform's own signature header does not make a probe: the probe key signs probes.
    const platformSigned = JSON.stringify({ harness_key: 'nova', marker: MARKER });
    expect(await probe(running, platformSigned, { 'x-basecradle-probe-signature': '', 'x-basecradle-signature': webhookSignature(NOVA.secret!, platformSigned) })).toMatchObject({ status: 401 });
    expect(await probe(running, { harness_key: 'nova', marker: 'BCNOC1 nonce short' })).toEqual({ status: 400, text: "marker must be 'BCNOC1 <nonce> <64 hex digits>'" });
    expect(await probe(running, { harness_key: 'nova', marker: MARKER }, { 'x-basecradle-probe-event': 'probe.sleep' })).toEqual({ status: 400, text: 'X-BaseCradle-Probe-Event must be probe.wake, not probe.sleep' });
    expect(await probe(running, { harness_key: 'nova', marker: MARKER }, { 'x-basecradle-probe-delivery': '' })).toEqual({ status: 400, text: 'X-BaseCradle-Probe-Delivery is required' });
    expect(await probe(running, { marker: MARKER })).toEqual({ status: 400, text: 'harness_key is required' });
    expect(await probe(running, { harness_key: 'ada', marker: MARKER })).toEqual({ status: 200, text: 'no agent here for this harness_key' });
    await running.router.idle();
    expect(running.wakes()).toEqual([]);
    // The first five refusals of the minute are written, the rest counted (as for deliveries).
    expect(running.logger.lines.filter((line) => line.includes('router probe refused')).map((line) => /status=(\d+) reason=(\S+)/.exec(line)!.slice(1).join(' '))).toEqual([
      '401 signature-missing',
      '401 signature-mismatch',
      '401 signature-missing',
      '400 marker-malformed',
      '400 probe-event-unknown',
    ]);
  });

  it('a router with no probe key answers 404 and says why; GET /up answers 200 while it runs', async () => {
    running = await startStandInRouter({ agents: [NOVA] });
    expect(await probe(running, { harness_key: 'nova', marker: MARKER })).toEqual({ status: 404, text: 'this router takes no probes (it has no BASECRADLE_ROUTER_PROBE_WEBHOOK_SECRET)' });
    const up = await fetch(`${running.router.url}/up`);
    expect([up.status, (await up.text()).trim()]).toEqual([200, 'up']);
    expect((await fetch(`${running.router.url}/elsewhere`)).status).toBe(405);
    expect(running.rows()).toEqual([]);
  });
});
