import type http from 'node:http';
import { findSigningSecret, headerValue } from '../../channel/webhook-signature.ts';
import type { RoutedAgent } from './agents.ts';

/**
 * Whether one POSTed delivery is the platform's, and what it says. The signature is checked
 * first, over the raw bytes: a request without a valid one is 401 whatever else is wrong with it
 * (FACTS.md "Router"), and nothing of it is believed or recorded. Only the body is signed (the
 * X-BaseCradle-Event and X-BaseCradle-Delivery headers are not), so what the router acts on comes
 * from the body where the body has it:
 *
 * - the id it dedupes on is the body's `event_id`; the delivery header only for a platform whose
 *   bodies carry none (such deliveries can be replayed under a fresh header, and the router says so);
 * - the event is the body's `event`; a request whose event header says otherwise is refused;
 * - a body whose `occurred_at` lies outside the replay window is refused, so a captured delivery
 *   stops working once the window has passed, and the dedupe rows need keeping only that long.
 */
export interface ReplayWindow {
  /** How old a delivery's occurred_at may be (the platform's retries and a router restart fit in it). */
  pastMs: number;
  /** How far ahead of this clock it may be (the two clocks' skew). */
  futureMs: number;
}

export const DEFAULT_REPLAY_WINDOW: ReplayWindow = { pastMs: 24 * 3600_000, futureMs: 5 * 60_000 };

export interface Keys {
  byRecipient: ReadonlyMap<string, RoutedAgent>;
  /** Every key a delivery here may be signed with: each hosted agent's and the shared secret(s). */
  all: readonly string[];
}

export interface VerifiedDelivery {
  /** What the router dedupes on: the body's event_id, else the X-BaseCradle-Delivery header. */
  id: string;
  /** false: `id` came from the unsigned header (the body has no event_id). */
  signedId: boolean;
  event: string;
  recipient: string;
  timeline: string;
  resource: string | undefined;
  /** The body's occurred_at (ms); undefined: it has none, so no window applies. */
  occurredAtMs: number | undefined;
  /** The hosted agent it is addressed to; undefined: a recipient not hosted here. */
  agent: RoutedAgent | undefined;
}

export type Admission = { ok: true; delivery: VerifiedDelivery } | { ok: false; status: 400 | 401; reason: string; message: string };

interface Body {
  event?: unknown;
  event_id?: unknown;
  occurred_at?: unknown;
  recipient_uuid?: unknown;
  timeline_uuid?: unknown;
  resource?: { uuid?: unknown } | null;
}

const refuse = (status: 400 | 401, reason: string, message: string): Admission => ({ ok: false, status, reason, message });
const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

export function admitDelivery(raw: Buffer, headers: http.IncomingHttpHeaders, keys: Keys, window: ReplayWindow, now: number): Admission {
  const body = parseBody(raw);
  // The key: the recipient's own when the body names a hosted agent (none for an agent only polled
  // for, whose every delivery is so refused), else any key held here. The body is not trusted for
  // anything else until the signature holds.
  const agent = body && typeof body.recipient_uuid === 'string' ? keys.byRecipient.get(body.recipient_uuid) : undefined;
  const own = agent?.secret !== undefined ? [agent.secret] : [];
  const signed = findSigningSecret({ rawBody: raw, headers, secrets: agent ? own : keys.all });
  if (!signed.ok) return refuse(401, `signature-${signed.reason}`, `signature ${signed.reason}`);
  if (!body) return refuse(400, 'body-not-json', 'the body is not a JSON object');

  const eventHeader = headerValue(headers, 'X-BaseCradle-Event');
  const deliveryHeader = headerValue(headers, 'X-BaseCradle-Delivery');
  if (!eventHeader || !deliveryHeader) return refuse(400, 'headers-missing', 'X-BaseCradle-Event and X-BaseCradle-Delivery are required');
  const event = text(body.event) ?? eventHeader;
  if (event !== eventHeader) return refuse(400, 'event-mismatch', `X-BaseCradle-Event says ${eventHeader} but the signed body says ${event}`);
  const recipient = text(body.recipient_uuid);
  const timeline = text(body.timeline_uuid);
  if (!recipient || !timeline) return refuse(400, 'fields-missing', 'recipient_uuid and timeline_uuid are required');

  let occurredAtMs: number | undefined;
  if (body.occurred_at !== undefined) {
    const at = typeof body.occurred_at === 'string' ? Date.parse(body.occurred_at) : Number.NaN;
    if (!Number.isFinite(at)) return refuse(400, 'occurred-at-invalid', 'occurred_at is not a date');
    if (now - at > window.pastMs) return refuse(400, 'stale', `occurred_at ${body.occurred_at} is older than the router's replay window (${hours(window.pastMs)})`);
    if (at - now > window.futureMs) return refuse(400, 'future', `occurred_at ${body.occurred_at} is ahead of the router's clock by more than ${hours(window.futureMs)}`);
    occurredAtMs = at;
  }
  const eventId = text(body.event_id);
  return {
    ok: true,
    delivery: {
      id: eventId ?? deliveryHeader,
      signedId: eventId !== undefined,
      event,
      recipient,
      timeline,
      resource: text(body.resource?.uuid),
      occurredAtMs,
      agent,
    },
  };
}

function parseBody(raw: Buffer): Body | undefined {
  try {
    const parsed: unknown = JSON.parse(raw.toString('utf8'));
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Body) : undefined;
  } catch {
    return undefined;
  }
}

const hours = (ms: number): string => (ms >= 3600_000 ? `${+(ms / 3600_000).toFixed(2)} h` : `${+(ms / 60_000).toFixed(2)} min`);
