// Every command of the `acx` CLI, built as `acx` builds it (src/frontends/cli/main.ts), with the
// path a user types: what the help-style and docs tests walk.
import type { Command, Option } from 'commander';
import { buildProgram } from '../../src/frontends/cli/main.ts';

export interface CliCommand {
  /** `acx platform user add`. */
  path: string;
  command: Command;
}

/**
 * The root and every subcommand, depth first. Built with no ACX_* variable set, so no option
 * default taken from the environment (`--key` from ACX_SIGNING_KEY, …) depends on the machine.
 */
export async function cliCommands(): Promise<CliCommand[]> {
  const saved = Object.entries(process.env).filter(([name]) => name.startsWith('ACX_'));
  for (const [name] of saved) delete process.env[name];
  try {
    const program = await buildProgram();
    const all: CliCommand[] = [];
    const visit = (command: Command, path: string) => {
      all.push({ path, command });
      for (const sub of command.commands) visit(sub, `${path} ${sub.name()}`);
    };
    visit(program, 'acx');
    return all;
  } finally {
    for (const [name, value] of saved) process.env[name] = value;
  }
}

/** An option's flags as a user types them: `--model` and `-m`. */
export function flagsOf(option: Option): string[] {
  return [option.long, option.short].filter((flag): flag is string => Boolean(flag));
}
