import { errorMessage } from '../../core/errors.ts';

/**
 * Why the editor refused a request acx sent it (fs/*, terminal/*, session/request_permission),
 * in its own words. A JSON-RPC error's message is often only its code's name ("Internal error":
 * what the ACP SDK answers when a client's handler throws, the reason then in `data.details`), so
 * the data's text is what says why; a message of the editor's own is kept as it is.
 */
const CODE_NAMES = /^(Internal error|Invalid params|Invalid request|Parse error|Request cancelled)$/;

export function clientReason(error: unknown): string {
  const message = errorMessage(error).trim();
  const details = detailsOf((error as { data?: unknown } | null)?.data);
  if (!details || message.includes(details)) return message;
  return CODE_NAMES.test(message) ? details : `${message} (${details})`;
}

function detailsOf(data: unknown): string | undefined {
  if (typeof data === 'string') return data.trim() || undefined;
  if (!data || typeof data !== 'object') return undefined;
  for (const key of ['details', 'message', 'reason']) {
    const value = (data as Record<string, unknown>)[key];
    if (typeof value === 'string' && value.trim()) return value.trim();
  }
  return undefined;
}
