import type { ApprovalRequest } from '../engine/events.ts';
import type { Logger } from '../util/logger.ts';

/**
 * A process nobody attends (`acx run`, a wake) has no one to ask for an approval: a call the
 * permission mode does not allow is refused at once, never left waiting. The model reads why and
 * the remedy (so it can do without, or say it could not); the operator reads one WARNING with the
 * remedy, so a turn that quietly did less is not a mystery.
 */
export function refuseUnattended(
  logger: Logger,
  options: { subject: string; remedy: string; permissionMode?: string | undefined; fields?: Record<string, unknown> },
): (request: ApprovalRequest) => Promise<{ approved: false; reason: string }> {
  let warned = false;
  const mode = options.permissionMode;
  return async (request) => {
    if (!warned) {
      warned = true;
      logger.warn('tool call denied', { ...options.fields, tool: request.toolName, ...(mode ? { permission_mode: mode } : {}), why: `${options.subject} is non-interactive and nobody can approve it`, hint: options.remedy });
    }
    return { approved: false, reason: `${options.subject} is non-interactive and ${request.toolName} needs approval${mode ? ` under ${mode}` : ''}; ${options.remedy}.` };
  };
}

/** What a wake's operator does to allow a refused call. */
export const WAKE_APPROVAL_REMEDY = 'the operator can allow it with --permission-mode allow-all (ACX_PERMISSION_MODE)';
