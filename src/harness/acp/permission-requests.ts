import type * as acp from '@agentclientprotocol/sdk';
import type { ApprovalRequest } from '../../engine/events.ts';
import { errorMessage } from '../../core/errors.ts';
import { modeAllows, type PermissionMode } from '../../tools/permission.ts';
import type { Logger } from '../../util/logger.ts';
import type { ActiveTurn } from './active-turn.ts';
import type { GuardedCalls } from './guarded-calls.ts';
import { answer, CANCELLED } from './permissions.ts';
import { permissionKindOf } from './translate.ts';

/**
 * The agent's `session/request_permission`: answered by the session's hooks when one allows or
 * denies the call (guarded-calls.ts), else by the permission mode where it allows the tool's
 * kind, otherwise decided as an acx approval (`decide`: the turn's onApprovalRequest, or a
 * pause until continue() answers it, the request held open meanwhile). A request outside the
 * current turn, or of a cancelled one, is answered `cancelled`.
 */

export interface PermissionPolicy {
  permissionMode: PermissionMode;
  /**
   * The profile maps the permission mode onto the agent's own (permissionModeMapping): the agent
   * already applies it, so whatever it still asks goes to the approval handler.
   */
  mapped: boolean;
  log: Logger;
  /** The session's hooks and tool guardrails, asked first about the agent's own tools (absent: none set). */
  guarded?: GuardedCalls | undefined;
}

export type Decide = (active: ActiveTurn, request: ApprovalRequest) => Promise<{ approved: boolean; reason?: string | undefined }>;

export async function answerPermission(
  policy: PermissionPolicy,
  active: ActiveTurn | undefined,
  params: acp.RequestPermissionRequest,
  signal: AbortSignal,
  decide: Decide,
): Promise<acp.RequestPermissionResponse> {
  if (!active || active.cancelled) return CANCELLED;
  const info = active.translator.toolFromPermission(params.toolCall);
  // Host tools are gated by acx itself (the host MCP server asks for an approval when the
  // permission mode requires it), so the agent's own prompt for them is answered here.
  if (!info.providerExecuted) return answer(params.options, true);
  // A hook's allow or deny answers the request (guarded-calls.ts); otherwise the mode and approvals do.
  const decided = await policy.guarded?.decidePermission(active, params, { toolCallId: info.toolCallId, toolName: info.toolName, input: params.toolCall.rawInput ?? info.input });
  if (decided) return decided;
  if (active.cancelled) return CANCELLED;
  const kind = permissionKindOf(params.toolCall.kind ?? info.kind);
  if (!policy.mapped && modeAllows(policy.permissionMode, kind) && params.options.some((o) => o.kind === 'allow_once')) return answer(params.options, true);
  // The approval's id is the agent's tool call id, as on the engine (one approval per call).
  const request: ApprovalRequest = { approvalId: info.toolCallId, toolCallId: info.toolCallId, toolName: info.toolName, input: params.toolCall.rawInput ?? info.input };
  return new Promise<acp.RequestPermissionResponse>((resolve) => {
    const settle = (r: acp.RequestPermissionResponse) => {
      active.pendingPermissions.delete(settle);
      resolve(r);
    };
    active.pendingPermissions.add(settle);
    signal.addEventListener('abort', () => settle(CANCELLED), { once: true });
    decide(active, request).then(
      (decision) => {
        if (active.cancelled) return settle(CANCELLED);
        if (!decision.approved) active.translator.denied(info.toolCallId, decision.reason);
        settle(answer(params.options, decision.approved));
      },
      (error: unknown) => {
        policy.log.warn('acp approval handler failed', { reason: errorMessage(error) });
        active.translator.denied(info.toolCallId, errorMessage(error));
        settle(answer(params.options, false));
      },
    );
  });
}
