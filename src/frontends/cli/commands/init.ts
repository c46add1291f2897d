import { relative } from 'node:path';
import type { Command } from 'commander';
import { DEFAULT_INIT_MODEL, scaffoldAgentDirectory } from '../../../app/agent-template.ts';
import { parseModelSpec, PROVIDERS } from '../../../model/providers.ts';
import { selfName } from '../self-name.ts';
import { jsonOption } from '../common-options.ts';

/**
 * `acx init [dir]`: a new agent directory that runs as it is (agent.json, prompts, one skill),
 * then the command that runs it.
 */
export function register(program: Command): void {
  program
    .command('init')
    .description('create a new agent directory (agent.json, prompts, one skill) that runs as it is')
    .argument('[dir]', 'where to create it (default the current directory)', '.')
    .option('--name <name>', "the agent's name (default the directory's name)")
    .option('-m, --model <provider:id>', `the model agent.json names (default ${DEFAULT_INIT_MODEL})`)
    .addOption(jsonOption('{dir, id, name, files, model, next}'))
    .action((dir: string, opts: { name?: string; model?: string; json?: boolean }) => {
      const model = opts.model ?? DEFAULT_INIT_MODEL;
      const { provider } = parseModelSpec(model); // a bad spec is refused before anything is written
      const result = scaffoldAgentDirectory({ dir, model, ...(opts.name ? { name: opts.name } : {}) });
      const shown = relative(process.cwd(), result.dir) || '.';
      const target = shown.startsWith('..') || shown.startsWith('/') ? result.dir : shown.startsWith('.') ? shown : `./${shown}`;
      const acx = selfName();
      const next = `${acx} run ${target} "What can you do?"`;
      const key = PROVIDERS[provider]!.keyEnv[0];
      if (opts.json) {
        process.stdout.write(`${JSON.stringify({ ...result, model, next }, null, 2)}\n`);
        return;
      }
      process.stdout.write(
        [
          `Created the agent "${result.name}" (id ${result.id}) in ${target}:`,
          ...result.files.map((file) => `  ${file}`),
          '',
          `Next: ${next}`,
          `      (it uses ${model}${key ? `: export ${key}=... first` : ''}; another model: --model provider:id; what it would use: ${acx} resolved-config ${target})`,
          '',
        ].join('\n'),
      );
    });
}
