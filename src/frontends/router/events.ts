/** The platform items a wake is about, by the event that announces each. */
export type ItemKind = 'message' | 'asset' | 'task' | 'webhook_event';

export interface WakingEvent {
  kind: ItemKind;
  /** The wake's trigger flag for the item; a task has none (the wake takes up every activated task it has not seen). */
  flag: '--message' | '--asset' | '--event' | undefined;
}

/** The events that wake the recipient (FACTS.md "Router"); every other event is logged and ignored. */
export const WAKING_EVENTS: Readonly<Record<string, WakingEvent>> = {
  'message.created': { kind: 'message', flag: '--message' },
  'asset.created': { kind: 'asset', flag: '--asset' },
  'task.activated': { kind: 'task', flag: undefined },
  'webhook_event.received': { kind: 'webhook_event', flag: '--event' },
};

/** The wake's trigger arguments for an event about `resource`: `[--message, uuid]`, or none. */
export function triggerArgs(event: string, resource: string | undefined): string[] {
  const flag = WAKING_EVENTS[event]?.flag;
  return flag && resource ? [flag, resource] : [];
}
