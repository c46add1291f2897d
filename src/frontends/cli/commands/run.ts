import type { Command } from 'commander';
import { prepareAgent } from '../../../app/prepare.ts';
import { resolveSettings } from '../../../app/settings.ts';
import { reconcileBeforeRun } from '../../../app/upgrade-on-run.ts';
import { CliExit } from '../output.ts';
import { createProgress } from '../progress.ts';
import { addRunOptions, runFlags } from '../run-options.ts';
import { readStdin } from '../stdin.ts';
import { commandLogger } from '../command-logger.ts';
import { refuseUnattended } from '../../unattended-approvals.ts';
import { jsonOption } from '../common-options.ts';

/**
 * `acx run <agent> "prompt"`: one turn, the reply on stdout, warnings and errors on stderr (command-logger.ts).
 * A turn interrupted earlier in the same session is finished first, by evidence.
 */
export function register(program: Command): void {
  addRunOptions(
    program
      .command('run')
      .description('run one turn of an agent (a directory or a .acx cartridge) and print its reply')
      .argument('<agent>', 'agent directory, .acx cartridge, or "default" for the config home\'s own agent')
      .argument('[prompt...]', 'the message; read from stdin when omitted')
      .addOption(jsonOption('{sessionId, turnId, text, finishReason, steps, usage, toolCalls, …}'))
      .option('--yes', 'approve every tool call the permission mode would ask about'),
  ).action(async (agent: string, promptWords: string[], options: Record<string, unknown>) => {
    const logger = commandLogger('answer');
    const prompt = promptWords.length > 0 ? promptWords.join(' ') : await readStdin();
    if (!prompt.trim()) throw new CliExit('usage', 'acx run: give a prompt as an argument or on stdin.');
    const settings = await resolveSettings(runFlags(agent, options), { logger });
    reconcileBeforeRun(settings, logger);
    const prepared = await prepareAgent(settings, { logger });
    try {
      const session = await prepared.agent.createSession(settings.sessionId ? { sessionId: settings.sessionId } : {});
      // Nobody can answer an approval here. The model is told why each call was refused; the user
      // is told once, on stderr, with the remedy, so a run that quietly did less is not a mystery.
      const onApprovalRequest = options.yes
        ? async () => ({ approved: true })
        : refuseUnattended(logger, { subject: 'acx run', remedy: 'rerun with --yes or --permission-mode allow-all to allow it', permissionMode: settings.permissionMode });
      // On a terminal, show what the turn is doing while it runs; elsewhere stay silent and cheap.
      const progress = createProgress();
      let result;
      try {
        if (process.stderr.isTTY) {
          const stream = prepared.agent.stream({ session, prompt, onApprovalRequest });
          for await (const part of stream.harnessStream) {
            if (part.type === 'start-step') progress.update(`thinking (step ${part.step} of ${settings.maxSteps})`);
            else if (part.type === 'tool-call') progress.update(`running ${part.toolName}`);
            else if (part.type === 'retry') progress.update(`retrying the model call (attempt ${part.attempt + 1})`);
          }
          result = await stream.result;
        } else {
          result = await prepared.agent.generate({ session, prompt, onApprovalRequest });
        }
      } finally {
        progress.done();
      }
      if (options.json) {
        process.stdout.write(
          `${JSON.stringify(
            {
              sessionId: result.sessionId,
              turnId: result.turnId,
              text: result.text,
              unspoken: result.unspoken,
              output: result.output,
              // acx's own reason and count, as this output always reported them.
              finishReason: result.rawFinishReason,
              steps: result.stepCount,
              usage: result.usage,
              toolCalls: result.toolCalls,
            },
            null,
            2,
          )}\n`,
        );
      } else if (result.text) {
        process.stdout.write(result.text.endsWith('\n') ? result.text : `${result.text}\n`);
      }
    } finally {
      await prepared.close();
    }
  });
}
