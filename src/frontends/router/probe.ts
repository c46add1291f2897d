import type http from 'node:http';
import { findSigningSecret, headerValue } from '../../channel/webhook-signature.ts';
import type { RoutedAgent } from './agents.ts';

/**
 * The fleet's synthetic probe, as basecradle-router takes it: a POST signed with the router's own
 * probe key (`BASECRADLE_ROUTER_PROBE_WEBHOOK_SECRET`), not the platform's, carrying
 *
 * ```text
 * X-BaseCradle-Probe-Event: probe.wake
 * X-BaseCradle-Probe-Delivery: <id>
 * X-BaseCradle-Probe-Signature: sha256=<hex HMAC-SHA256 of the raw body>
 *
 * {"harness_key":"<handle>","marker":"BCNOC1 <nonce> <64 hex>"}
 * ```
 *
 * It asks whether this router is up, holds the key and hosts the agent. acx's router answers it
 * itself and never wakes the agent for it (a probe on a schedule would otherwise cost a process,
 * and with some harnesses a model call, each time): 200 with `BCNOC1-ACK <nonce>` for a hosted
 * agent. The signature is checked first, as for deliveries: 401 without a valid one; 400 for a
 * signed probe that is malformed; 200 "no agent here" for a handle not hosted; 404 when this
 * router holds no probe key (the probe is not enabled here). The marker is checked for its shape
 * only: its HMAC is the agent's to verify, with a key the router does not hold.
 */
export const PROBE_SIGNATURE_HEADER = 'X-BaseCradle-Probe-Signature';
export const PROBE_DELIVERY_HEADER = 'X-BaseCradle-Probe-Delivery';
export const PROBE_EVENT_HEADER = 'X-BaseCradle-Probe-Event';
export const PROBE_EVENT = 'probe.wake';
/** The variable the router's probe key is read from (basecradle-router's name for it). */
export const PROBE_SECRET_VARIABLE = 'BASECRADLE_ROUTER_PROBE_WEBHOOK_SECRET';

const MARKER = /^BCNOC1 ([A-Za-z0-9_-]{1,128}) [0-9a-f]{64}$/;

/** A request that says it is a probe (by either probe header) is answered as one, never as a delivery. */
export const isProbeRequest = (headers: http.IncomingHttpHeaders): boolean =>
  headerValue(headers, PROBE_SIGNATURE_HEADER) !== undefined || headerValue(headers, PROBE_EVENT_HEADER) !== undefined;

export interface ProbeAnswer {
  status: 200 | 400 | 401 | 404;
  /** For the log line: why. */
  reason: string;
  text: string;
  /** Set for an answered probe. */
  answered?: { agent: string; nonce: string; delivery: string };
}

export function answerProbe(raw: Buffer, headers: http.IncomingHttpHeaders, secret: string | undefined, hosted: (handle: string) => RoutedAgent | undefined): ProbeAnswer {
  if (!secret) return { status: 404, reason: 'probe-not-enabled', text: `this router takes no probes (it has no ${PROBE_SECRET_VARIABLE})` };
  const signed = findSigningSecret({ rawBody: raw, headers, secrets: [secret], header: PROBE_SIGNATURE_HEADER });
  if (!signed.ok) return { status: 401, reason: `signature-${signed.reason}`, text: `probe signature ${signed.reason}` };
  const bad = (reason: string, text: string): ProbeAnswer => ({ status: 400, reason, text });
  const event = headerValue(headers, PROBE_EVENT_HEADER) ?? PROBE_EVENT;
  if (event !== PROBE_EVENT) return bad('probe-event-unknown', `${PROBE_EVENT_HEADER} must be ${PROBE_EVENT}, not ${event}`);
  const delivery = headerValue(headers, PROBE_DELIVERY_HEADER);
  if (!delivery) return bad('headers-missing', `${PROBE_DELIVERY_HEADER} is required`);
  let body: { harness_key?: unknown; marker?: unknown } | undefined;
  try {
    const parsed: unknown = JSON.parse(raw.toString('utf8'));
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed;
  } catch {
    // body stays undefined
  }
  if (!body) return bad('body-not-json', 'the body is not a JSON object');
  if (typeof body.harness_key !== 'string' || body.harness_key === '') return bad('fields-missing', 'harness_key is required');
  const marker = typeof body.marker === 'string' ? MARKER.exec(body.marker) : null;
  if (!marker) return bad('marker-malformed', "marker must be 'BCNOC1 <nonce> <64 hex digits>'");
  const agent = hosted(body.harness_key);
  if (!agent) return { status: 200, reason: 'not-hosted', text: 'no agent here for this harness_key' };
  const nonce = marker[1]!;
  return { status: 200, reason: 'synthetic-probe', text: `BCNOC1-ACK ${nonce}`, answered: { agent: agent.name, nonce, delivery } };
}
