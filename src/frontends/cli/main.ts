import { Command, CommanderError } from 'commander';
import { EXIT, exitCodeFor, printError } from './output.ts';
import { selfName } from './self-name.ts';
import { plainHelp } from './common-options.ts';
import { asUsageError, tagParseErrors } from './usage-errors.ts';
import { ACX_VERSION } from '../../util/version.ts';
import { WARM_FLAG } from '../router/warm-protocol.ts';

/**
 * The `acx` command. Each subcommand lives in `commands/<name>.ts` and exports `register`.
 */
type Register = (program: Command) => void;

/** Subcommand name → its module. Only the invoked one is imported, so start-up stays cheap. */
const commandModules: Record<string, () => Promise<{ register: Register }>> = {
  init: () => import('./commands/init.ts'),
  run: () => import('./commands/run.ts'),
  chat: () => import('./commands/chat.ts'),
  sessions: () => import('./commands/sessions.ts'),
  eval: () => import('./commands/eval.ts'),
  'resolved-config': () => import('./commands/resolved-config.ts'),
  install: () => import('./commands/install.ts'),
  keygen: () => import('./commands/keygen.ts'),
  trust: () => import('./commands/trust.ts'),
  build: () => import('./commands/build.ts'),
  verify: () => import('./commands/verify.ts'),
  inspect: () => import('./commands/inspect.ts'),
  strip: () => import('./commands/strip.ts'),
  spec: () => import('./commands/spec.ts'),
  handshake: () => import('./commands/handshake.ts'),
  mcp: () => import('./commands/mcp.ts'),
  acp: () => import('./commands/acp.ts'),
  wake: () => import('./commands/wake.ts'),
  cleanup: () => import('./commands/cleanup.ts'),
  platform: () => import('./commands/platform.ts'),
  cache: () => import('./commands/cache.ts'),
  router: () => import('./commands/router.ts'),
  worker: () => import('./commands/worker.ts'),
};

export async function buildProgram(only?: string): Promise<Command> {
  const program = plainHelp(new Command(selfName()))
    .description('acx: build, verify and run signed agent cartridges on any model or ACP coding agent')
    .version(ACX_VERSION, '-V, --version', 'print the acx version')
    // Commander's own error lines never reach the user: main() reports every usage error in acx's
    // two-line form (usage-errors.ts). Subcommands inherit these settings and plainHelp's.
    .configureOutput({ outputError: () => {} })
    .exitOverride();
  const loaders = only && commandModules[only] ? [commandModules[only]] : Object.values(commandModules);
  for (const load of loaders) (await load()).register(program);
  tagParseErrors(program);
  return program;
}

function quietOnBrokenPipe(error: NodeJS.ErrnoException): void {
  if (error.code !== 'EPIPE') throw error;
  process.exit(typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok);
}

/** Whether the command line asks for machine output: `--json` before any `--`. */
export function wantsJson(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).includes('--json');
}

export async function main(argv: readonly string[]): Promise<number> {
  // The cheap probe a fleet drift-guard runs: answer before loading any command.
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V')) {
    process.stdout.write(`${ACX_VERSION}\n`);
    return EXIT.ok;
  }
  // A wake `acx router` started before its event (warm.ts): it runs main() itself once handed one.
  if (argv[0] === WARM_FLAG) return (await import('./warm.ts')).runWarm(argv.slice(1), { main, buildProgram });
  const json = wantsJson(argv);
  // A reader that stops early (`acx sessions | head`) is no error: stop quietly, as git and gh do.
  // Not for the commands that speak a protocol on stdout: they end their own sessions.
  if (argv[0] !== 'acp' && argv[0] !== 'mcp') process.stdout.on('error', quietOnBrokenPipe);
  let program: Command | undefined;
  try {
    program = await buildProgram(argv[0]);
    await program.parseAsync([...argv], { from: 'user' });
    return EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError && exitCodeFor(error) === EXIT.ok) return EXIT.ok; // --help, --version
    return printError(program ? asUsageError(error, program, argv) : error, { json });
  }
}

if (process.argv[1] && /acx(\.js)?$/.test(process.argv[1])) {
  process.exitCode = await main(process.argv.slice(2));
}
