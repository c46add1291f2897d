import { type Command, CommanderError } from 'commander';
import { AcxError } from '../../core/errors.ts';
import { CliExit } from './output.ts';

/**
 * Every usage error in one form, whichever part of acx found it — the argument parser (an
 * unknown command or option, a bad choice, a missing argument, a flag value its parser refused)
 * or a command's own checks (`AcxError` with code `usage`):
 *
 *   acx: unknown option '--hme' for acx run (did you mean --home?)
 *     → run `acx run --help` for its usage
 *
 * exit 2, and under --json the same two parts as `{"error":{"code":"usage","message","hint"}}`.
 * A command's own usage error keeps its specific hint when it has one.
 */

const COMMAND_OF_ERROR = Symbol('acx.command');

/** Makes every command's parse errors say which command they came from. */
export function tagParseErrors(program: Command): void {
  const visit = (command: Command) => {
    command.exitOverride((error) => {
      throw Object.assign(error, { [COMMAND_OF_ERROR]: command });
    });
    command.commands.forEach(visit);
  };
  visit(program);
}

/** The error as acx reports it: a parse error or a usage error worded as above, anything else as it is. */
export function asUsageError(error: unknown, program: Command, argv: readonly string[]): unknown {
  if (error instanceof CommanderError) {
    const command = (error as CommanderError & { [COMMAND_OF_ERROR]?: Command })[COMMAND_OF_ERROR] ?? program;
    return new CliExit('usage', `acx: ${wording(error.message, command)}\n  → ${helpHint(command)}`);
  }
  if (CliExit.isInstance(error)) return error.code === 'usage' ? withHelpLine(error, commandNamed(program, argv)) : error;
  if (!AcxError.isInstance(error)) return error;
  if (error.code === 'usage' && !error.hint) {
    return new AcxError('usage', error.message, { hint: helpHint(commandNamed(program, argv)), ...(error.details ? { details: error.details } : {}) });
  }
  return error;
}

/** Commander's message, as one line in acx's voice, naming the command and folding in its suggestion. */
function wording(message: string, command: Command): string {
  const [first = '', ...rest] = message.replace(/^error: /, '').split('\n');
  const suggestion = /\(Did you mean (.+)\?\)/.exec(rest.join(' '))?.[1];
  const didYouMean = suggestion ? ` (did you mean ${suggestion}?)` : '';
  const name = pathOf(command);
  const unknown = /^unknown option '(.+)'$/.exec(first);
  if (unknown) return `unknown option ${unknown[1]} for ${name.replace(/^npx /, '')}${didYouMean}`;
  const option = /^option '([^']*)' argument (?:'(.*)' is invalid\. (.+)|(missing))$/.exec(first);
  if (option) {
    const flag = /--[\w-]+/.exec(option[1] ?? '')?.[0] ?? option[1];
    if (option[4]) return `${flag} needs a value`;
    const choices = /^Allowed choices are (.+)\.$/.exec(option[3] ?? '');
    if (choices) return `${flag} takes ${(choices[1] ?? '').replace(/, ([^,]+)$/, ' or $1')}, not "${option[2]}"`;
    return `${flag}: ${(option[3] ?? '').replace(/\.$/, '')} (got "${option[2]}")`;
  }
  const required = /^required option '([^']*)' not specified$/.exec(first);
  if (required) return `${/--[\w-]+/.exec(required[1] ?? '')?.[0] ?? required[1]} is required`;
  const missing = /^missing required argument '(.+)'$/.exec(first);
  if (missing) return `missing <${missing[1]}> (usage: ${name} ${command.usage()})`;
  return `${first.replace(/\.$/, '')}${didYouMean}`;
}

/**
 * A command's own one-line usage error (`acx run: give a prompt …`) in the two-line form:
 * `acx: give a prompt …` then where the usage is. One that already says what to do is kept.
 */
function withHelpLine(error: CliExit, command: Command): CliExit {
  if (error.message === '' || error.message.includes('\n')) return error;
  const prefixed = /^acx(?: [a-z-]+)*: (?=\S)/.exec(error.message);
  const text = prefixed ? `acx: ${error.message.slice(prefixed[0].length)}` : /^acx\b/.test(error.message) ? error.message : `acx: ${error.message}`;
  return new CliExit('usage', `${text}\n  → ${helpHint(command)}`, error.details ? { details: error.details } : {});
}

function helpHint(command: Command): string {
  return command.parent ? `run \`${pathOf(command)} --help\` for its usage` : `run \`${command.name()} help\` for the list of commands`;
}

/** `acx trust add`: the command's names from the root. */
function pathOf(command: Command): string {
  const names: string[] = [];
  for (let at: Command | null = command; at; at = at.parent) names.unshift(at.name());
  return names.join(' ');
}

/** The deepest command the words of argv name (options and their values are skipped over by name). */
function commandNamed(program: Command, argv: readonly string[]): Command {
  let command = program;
  for (const word of argv) {
    if (word === '--') break;
    const next = command.commands.find((sub) => sub.name() === word || sub.aliases().includes(word));
    if (next) command = next;
    else if (!word.startsWith('-') && command !== program) break;
  }
  return command;
}
