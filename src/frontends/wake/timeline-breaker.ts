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
 * Returns whether the wake may go on.
 */
export async function passTimelineBreaker(
  state: ChannelState,
  timeline: string,
  settings: BreakerSettings,
  logger: Logger,
  fields: Record<string, string>,
): Promise<boolean> {
  const { change, wakesInWindow } = await state.admitWake(timeline, settings);
  const breaker = { max: settings.max, window: `${settings.windowMs / 1000}s`, cooldown: `${settings.cooldownMs / 1000}s` };
  if (change === 'tripped') {
    logger.warn('wake breaker tripped', { ...fields, wakes: wakesInWindow, ...breaker, note: 'wakes on this timeline are declined (its messages kept) until it resets' });
  } else if (change === 'reset') {
    logger.info('wake breaker reset', { ...fields, ...breaker });
  }
  if (change !== 'tripped' && change !== 'still-tripped') return true;
  logger.info('wake end', { ...fields, outcome: 'declined', posted: 0, reason: 'circuit breaker tripped', wakes: wakesInWindow });
  return false;
}
