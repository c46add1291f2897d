import * as acp from '@agentclientprotocol/sdk';
import { AcxError } from '../../core/errors.ts';
import { clientReason } from './client-errors.ts';
import type { CommandRequest, CommandRunner } from '../../tools/builtin/execute.ts';
import type { ProcessResult } from '../../tools/sandbox/process.ts';
import type { ToolContext } from '../../tools/tool.ts';

/**
 * `execute` through the editor's terminal, for a client that advertised `terminal: true`:
 * terminal/create (`sh -c <command>` in the confined workspace, acx's output limit), the
 * terminal embedded in the call's content so the editor streams its output, then
 * terminal/wait_for_exit raced against acx's time limit and the turn's cancel (either one sends
 * terminal/kill), terminal/output for the final text, and terminal/release whatever happened.
 *
 * The terminal's id reaches the editor in the same ordered outbox as the call itself: the
 * engine may start a command before its tool_call update is sent, so a terminal made first is
 * embedded in that tool_call (announce), one made later gets its own tool_call_update.
 */
export interface ClientTerminalsOptions {
  client: acp.AgentContext;
  sessionId: string;
  /** The session's ordered update outbox. */
  send: (update: acp.SessionUpdate) => void;
}

const SHELL = '/bin/sh';

export const TERMINAL_RUNNER_DESCRIPTION =
  "in the editor's terminal, on the user's machine as the user, with the editor's environment and network access " +
  "(not in acx's sandbox), in the workspace directory; the user sees it run.";

export class ClientTerminals {
  private readonly options: ClientTerminalsOptions;
  /** Terminals by tool call id, until the call's result takes them. */
  private readonly terminals = new Map<string, string>();
  /** Calls whose tool_call update has been sent. */
  private readonly announced = new Set<string>();

  constructor(options: ClientTerminalsOptions) {
    this.options = options;
  }

  /** The tool_call of this call is being sent now: the terminal to embed in it, when it already exists. */
  announce(toolCallId: string): acp.ToolCallContent | undefined {
    this.announced.add(toolCallId);
    const terminalId = this.terminals.get(toolCallId);
    return terminalId ? { type: 'terminal', terminalId } : undefined;
  }

  /** The terminal of a finished call (once), so its final content keeps showing it. */
  take(toolCallId: string): acp.ToolCallContent | undefined {
    const terminalId = this.terminals.get(toolCallId);
    this.terminals.delete(toolCallId);
    this.announced.delete(toolCallId);
    return terminalId ? { type: 'terminal', terminalId } : undefined;
  }

  private attach(toolCallId: string, terminalId: string): void {
    this.terminals.set(toolCallId, terminalId);
    if (this.announced.has(toolCallId)) {
      this.options.send({ sessionUpdate: 'tool_call_update', toolCallId, content: [{ type: 'terminal', terminalId }] });
    }
  }

  get runner(): CommandRunner {
    return { describe: TERMINAL_RUNNER_DESCRIPTION, run: (request, context) => this.run(request, context) };
  }

  private async run(request: CommandRequest, context: ToolContext): Promise<ProcessResult> {
    const { client, sessionId } = this.options;
    const failed = (what: string, error: unknown) =>
      new AcxError('client-terminal', `The editor could not ${what} for "${request.command}": ${clientReason(error)}`, {
        hint: 'Check that the editor can run commands in this project, or try again.',
      });
    if (context.abortSignal.aborted) throw new AcxError('client-terminal', `Not run: the turn was cancelled before "${request.command}" started.`);
    let terminal: acp.TerminalHandle;
    try {
      terminal = await client.createTerminal({
        sessionId,
        command: SHELL,
        args: ['-c', request.command],
        cwd: request.cwd,
        outputByteLimit: request.maxOutputBytes,
      });
    } catch (error) {
      throw failed('open a terminal', error);
    }
    this.attach(context.toolCallId, terminal.id);
    try {
      const ending = await this.untilEnd(terminal, request.timeoutMs, context.abortSignal);
      if (ending.kind !== 'exited') await terminal.kill().catch(() => {}); // release kills too; the output is wanted first
      const output = await terminal.currentOutput();
      const status = ending.kind === 'exited' ? ending.status : output.exitStatus;
      return {
        exitCode: status?.exitCode ?? null,
        signal: (status?.signal ?? null) as NodeJS.Signals | null,
        timedOut: ending.kind === 'timeout',
        aborted: ending.kind === 'aborted',
        stdout: { text: output.output, totalBytes: Buffer.byteLength(output.output), truncated: output.truncated, kept: 'tail' },
        stderr: { text: '', totalBytes: 0, truncated: false },
        combined: true,
      };
    } catch (error) {
      throw failed('run the command', error);
    } finally {
      await terminal.release().catch(() => {}); // the client may have gone; nothing is left to free then
    }
  }

  /** The command's exit, acx's time limit or the turn's cancel, whichever comes first. */
  private untilEnd(
    terminal: acp.TerminalHandle,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<{ kind: 'exited'; status: acp.WaitForTerminalExitResponse } | { kind: 'timeout' } | { kind: 'aborted' }> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => finish({ kind: 'timeout' }), timeoutMs);
      const onAbort = () => finish({ kind: 'aborted' });
      signal.addEventListener('abort', onAbort, { once: true });
      function finish(value: Parameters<typeof resolve>[0]) {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      }
      if (signal.aborted) onAbort();
      terminal.waitForExit().then(
        (status) => finish({ kind: 'exited', status }),
        (error: unknown) => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      );
    });
  }
}
