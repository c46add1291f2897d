import type { ChannelState } from '../../store/channel-state.ts';
import type { BreakerSettings } from '../../store/breaker.ts';
import type { Logger } from '../../util/logger.ts';

/**
 * The timeline wake's circuit breaker, first thing in a wake: two agents that answer each
 * other's every message would wake each other forever, so a timeline woken more than
 * `max` times within the window declines its wakes until the cooldown has passed and the burst
 * has cleared (the session wake's rule and settings, ACX_WAKE_BREAKER_*, kept per timeline in
 * the channel state). A declined wake claims nothing and moves no mark: what it would have read is
 * answered by the first wake after the reset. Loud once, when it trips.
 *
 * Returns whether the wake may go on and, if it may, how to take its count back: a wake that
 * answers nothing is uncounted, whether its work is claimed by another wake (busy: a long turn, a
 * router's repeated delivery, a worker's deferred retry; the session wake's rule too) or there is
 * nothing new (another wake's rounds answered its message first). Only wakes that answer can feed
 * a loop; counting the rest tripped the breaker under plain human traffic (found by the chaos run:
 * 200 wakes a minute on one timeline, most of them finding nothing new, and then every delivery
 * declined for minutes).
 */
export async function passTimelineBreaker(
  state: ChannelState,
  timeline: string,
  settings: BreakerSettings,
  logger: Logger,
  fields: Record<string, string>,
  /** A wake's further gathering (timeline.ts rounds), counted as a wake of its own; declined, the wake just ends. */
  anotherRound = false,
): Promise<{ passed: false } | { passed: true; retract: () => Promise<void> }> {
  const { change, wakesInWindow, atMs } = await state.admitWake(timeline, settings);
  const breaker = { max: settings.max, window: `${settings.windowMs / 1000}s`, cooldown: `${settings.cooldownMs / 1000}s` };
  if (change === 'tripped') {
    logger.warn('wake breaker tripped', { ...fields, wakes: wakesInWindow, ...breaker, note: 'wakes on this timeline are declined (its messages kept) until it resets' });
  } else if (change === 'reset') {
    logger.info('wake breaker reset', { ...fields, ...breaker });
  }
  if (change !== 'tripped' && change !== 'still-tripped') return { passed: true, retract: () => state.retractWake(timeline, atMs) };
  if (!anotherRound) logger.info('wake end', { ...fields, outcome: 'declined', posted: 0, reason: 'circuit breaker tripped', wakes: wakesInWindow });
  return { passed: false };
}
