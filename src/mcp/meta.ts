/**
 * The `_meta` key under which acx passes a tool call's idempotency key over MCP (tools/call),
 * both as a client calling a drop-in server and as the host-tool server reading it: a server
 * whose tool has side effects can use it to do the effect once, however often the call is
 * re-driven after a crash.
 */
export const IDEMPOTENCY_KEY_META = 'acx/idempotency-key';

/** The idempotency key a tools/call request carries, if any. */
export function idempotencyKeyOf(meta: Record<string, unknown> | undefined): string | undefined {
  const key = meta?.[IDEMPOTENCY_KEY_META];
  return typeof key === 'string' && key !== '' ? key : undefined;
}
