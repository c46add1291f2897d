import { createInterface } from 'node:readline';
import type { Command } from 'commander';
import { prepareAgent } from '../../../app/prepare.ts';
import { reconcileBeforeRun } from '../../../app/upgrade-on-run.ts';
import { resolveSettings } from '../../../app/settings.ts';
import type { ApprovalRequest } from '../../../engine/events.ts';
import type { ElicitationRequest } from '../../../core/elicitation.ts';
import { askElicitation } from '../elicitation-prompt.ts';
import { AcxError, errorMessage } from '../../../core/errors.ts';
import { writeFinal } from '../output.ts';
import { addRunOptions, runFlags } from '../run-options.ts';
import { commandLogger } from '../command-logger.ts';
import { selfName } from '../self-name.ts';

/**
 * `acx chat <agent>`: an interactive session. Replies stream as they are written, each tool call
 * gets a line, approvals and a tool's questions (MCP elicitation) are answered at a prompt, and
 * Ctrl-C cancels the running turn (not the process); Ctrl-C or Ctrl-D at an empty prompt leaves.
 */
export function register(program: Command): void {
  addRunOptions(
    program
      .command('chat')
      .description('talk to an agent interactively (Ctrl-C cancels a turn; Ctrl-D or /exit leaves)')
      .argument('<agent>', 'agent directory, .acx cartridge, or "default" for the config home\'s own agent'),
  ).action(async (agent: string, options: Record<string, unknown>) => {
    const logger = commandLogger('answer');
    const settings = await resolveSettings(runFlags(agent, options), { logger });
    reconcileBeforeRun(settings, logger);
    const prepared = await prepareAgent(settings, { logger });
    const out = process.stdout;
    const rl = createInterface({ input: process.stdin, output: out, terminal: Boolean(process.stdin.isTTY) });
    // Lines are read through one buffered iterator, so lines piped in while a turn runs are kept
    // and the end of input ends the chat instead of leaving a question pending forever.
    const lines = rl[Symbol.asyncIterator]();
    let inputClosed = false;
    rl.on('close', () => (inputClosed = true));
    const ask: Ask = async (question, signal) => {
      // After piped input ends the interface is closed, but lines it buffered are still served.
      if (inputClosed) out.write(question);
      else {
        rl.setPrompt(question);
        rl.prompt();
      }
      const aborted = new Promise<IteratorResult<string>>((resolve) =>
        signal?.addEventListener('abort', () => resolve({ done: true, value: undefined }), { once: true }),
      );
      const next = await Promise.race([lines.next(), aborted]);
      return next.done ? undefined : next.value;
    };
    let turn: AbortController | undefined;
    rl.on('SIGINT', () => {
      if (turn) {
        turn.abort();
        out.write('\n[cancelling the turn]\n');
      } else {
        rl.close();
      }
    });
    try {
      const session = await prepared.agent.createSession(settings.sessionId ? { sessionId: settings.sessionId } : {});
      out.write(`acx chat: ${settings.agent.name} (session ${session.id}). Ctrl-C cancels a turn; /help lists commands; /exit leaves.\n`);
      const commands = chatCommands({ agent, sessionId: session.id, tools: prepared.toolset.tools.map((tool) => tool.name) });
      for (;;) {
        const line = await ask('you> ');
        if (line === undefined) break; // Ctrl-D, or the end of piped input
        const prompt = line.trim();
        if (!prompt) continue;
        // A lone `/word` is a chat command; anything longer (a path, a sentence) goes to the agent.
        if (/^\/[a-z]+$/.test(prompt)) {
          const command = commands[prompt];
          if (command === 'exit') break;
          out.write(command ?? `unknown command ${prompt}; /help lists the commands\n`);
          continue;
        }
        turn = new AbortController();
        try {
          await runTurn(prepared, session, prompt, turn.signal, ask);
        } catch (error) {
          if ((error as Error).name === 'AbortError') out.write('[turn cancelled]\n');
          // The same two parts every acx error has: what went wrong, then what to do.
          else writeFinal(out, `[error] ${AcxError.isInstance(error) ? error.describe() : errorMessage(error)}\n`);
        } finally {
          turn = undefined;
        }
      }
    } finally {
      rl.close();
      await prepared.close();
    }
  });
}

type Ask = (question: string, signal?: AbortSignal) => Promise<string | undefined>;

/** What each chat command prints (`exit` ends the chat). */
function chatCommands(chat: { agent: string; sessionId: string; tools: readonly string[] }): Record<string, string> {
  const help = [
    '/help     this list',
    '/session  this session\'s id, and how to come back to it',
    '/tools    the tools the agent has',
    '/exit     leave (also /quit, Ctrl-D, or Ctrl-C at an empty prompt)',
    'Ctrl-C during a reply cancels that turn; anything else you type goes to the agent.',
  ];
  return {
    '/help': `${help.join('\n')}\n`,
    '/session': `session ${chat.sessionId}; to come back to it: ${selfName()} chat ${chat.agent} --session ${chat.sessionId}\n`,
    '/tools': `${chat.tools.length > 0 ? chat.tools.join(', ') : '(no tools)'}\n`,
    '/exit': 'exit',
    '/quit': 'exit',
  };
}

async function runTurn(
  prepared: Awaited<ReturnType<typeof prepareAgent>>,
  session: Awaited<ReturnType<Awaited<ReturnType<typeof prepareAgent>>['agent']['createSession']>>,
  prompt: string,
  abortSignal: AbortSignal,
  ask: Ask,
): Promise<void> {
  const out = process.stdout;
  const onApprovalRequest = async (request: ApprovalRequest) => {
    out.write(`\n? ${request.toolName} wants to run with ${JSON.stringify(request.input)}\n`);
    const answer = ((await ask('  allow? [y/N] ', abortSignal)) ?? 'n').trim().toLowerCase();
    return answer === 'y' || answer === 'yes' ? { approved: true } : { approved: false, reason: 'The user declined.' };
  };
  // A tool's question for the user (an MCP server's elicitation) is asked at the prompt too.
  const onElicitation = (request: ElicitationRequest) => askElicitation(request, (question) => ask(question, abortSignal), (text) => out.write(text));
  const stream = prepared.agent.stream({ session, prompt, abortSignal, onApprovalRequest, onElicitation });
  let speaking = false;
  for await (const part of stream.harnessStream) {
    switch (part.type) {
      case 'text-delta':
        if (!speaking) out.write('agent> ');
        speaking = true;
        out.write(part.text);
        break;
      case 'tool-call':
        if (speaking) out.write('\n');
        speaking = false;
        out.write(`  ↳ ${part.toolName} ${truncate(JSON.stringify(part.input), 100)}\n`);
        break;
      case 'tool-error':
        out.write(`  ✗ ${part.toolName}: ${truncate(part.error, 160)}\n`);
        break;
      case 'tool-output-denied':
        out.write(`  ✗ ${part.toolName} denied\n`);
        break;
      case 'error':
        throw part.error;
      default:
        break;
    }
  }
  if (speaking) out.write('\n');
  await stream.result;
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
