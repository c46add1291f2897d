import { Command, CommanderError } from 'commander';
import { CliExit, EXIT, printError } from './output.ts';
import { ACX_VERSION } from './version.ts';

/**
 * The `acx` command. Each subcommand lives in `commands/<name>.ts` and exports `register`.
 */
type Register = (program: Command) => void;

const commandModules: Array<() => Promise<{ register: Register }>> = [];

export async function buildProgram(): Promise<Command> {
  const program = new Command('acx')
    .description('acx: build, verify and run signed agent cartridges on any model or ACP coding agent.')
    .version(ACX_VERSION, '-V, --version', 'print the acx version')
    .showHelpAfterError('(run `acx help` for the list of commands)')
    .exitOverride();
  for (const load of commandModules) (await load()).register(program);
  return program;
}

export async function main(argv: readonly string[]): Promise<number> {
  const program = await buildProgram();
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return EXIT.ok;
      if (error.code === 'commander.help') return EXIT.ok;
      return EXIT.usage;
    }
    if (error instanceof CliExit) return printError(error);
    return printError(error);
  }
}

if (process.argv[1] && /acx(\.js)?$/.test(process.argv[1])) {
  process.exitCode = await main(process.argv.slice(2));
}
