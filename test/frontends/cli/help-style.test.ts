// Issue 26 item 6: every command's --help in one style, so a user reads them all the same way.
// Walks every command and subcommand as `acx` builds them; a new option that breaks a rule fails
// here naming the command and the option.
import { describe, expect, it } from 'vitest';
import type { Argument, Command, Option } from 'commander';
import { cliCommands } from '../../support/cli-tree.ts';
import { runAcx } from '../../support/cli.ts';

const commands = await cliCommands();

interface Described {
  /** `acx run --max-steps`, `acx init [dir]`, `acx run`. */
  where: string;
  text: string;
}

const commandTexts = (): Described[] => commands.map(({ path, command }) => ({ where: path, text: command.description() }));
const optionsOf = ({ path, command }: { path: string; command: Command }) => command.options.map((option) => ({ where: `${path} ${option.long ?? option.short}`, option }));
const argumentsOf = ({ path, command }: { path: string; command: Command }) =>
  (command.registeredArguments as readonly Argument[]).map((argument) => ({ where: `${path} [${argument.name()}]`, argument }));
const allOptions = () => commands.flatMap(optionsOf);
const allArguments = () => commands.flatMap(argumentsOf);
const itemTexts = (): Described[] => [
  ...allOptions().map(({ where, option }) => ({ where, text: option.description })),
  ...allArguments().map(({ where, argument }) => ({ where, text: argument.description })),
];

/**
 * A description's closing `(env NAME; default VALUE)` (either part alone too): the parts, and the
 * text before it. Undefined parts when it has none.
 */
function envAndDefault(text: string): { body: string; env?: string; fallback?: string } {
  const match = /^(.*) \(((?:env [^()]+?)?(?:; )?(?:default [^()]+)?)\)$/s.exec(text);
  if (!match?.[2]) return { body: text };
  const [first, second] = match[2].split(/; (?=default )/);
  if (first!.startsWith('env ')) return { body: match[1]!, env: first!.slice(4), ...(second ? { fallback: second.slice(8) } : {}) };
  return { body: match[1]!, fallback: first!.slice(8) };
}

describe('acx --help: one style for every command (issue 26 item 6)', () => {
  it('walks every command: all 23 top-level ones and their subcommands', () => {
    expect(commands.find(({ path }) => path === 'acx')!.command.commands.length).toBe(23);
    expect(commands.map(({ path }) => path)).toEqual(expect.arrayContaining(['acx sessions show', 'acx trust revoke', 'acx platform user add', 'acx cache clean']));
  });

  it('every description of a command, option or argument starts in lowercase and has no final period', () => {
    // An acronym or a name may lead (MCP, RFC 3339, Ed25519); a capitalised word may not.
    const badStart = (text: string) => /^[A-Z][a-z]/.test(text) && !/^[A-Z][a-z]*[A-Z0-9]/.test(text);
    const wrong = [...commandTexts(), ...itemTexts()].filter(({ text }) => text === '' || badStart(text) || /\.$/.test(text.trim()));
    expect(wrong.map(({ where, text }) => `${where}: ${text}`)).toEqual([]);
  });

  it('an environment variable and a default are stated once, last, as (env NAME; default VALUE)', () => {
    const wrong: string[] = [];
    for (const { where, text } of itemTexts()) {
      const { body, env } = envAndDefault(text);
      if (env && /\bdefault\b/.test(env)) wrong.push(`${where}: the default is not set off by "; ": ${text}`);
      // Elsewhere in the text neither may appear: not commander's "(default: …)", not a second one. A quoted "default" is a value.
      const stray = body.replaceAll('"default"', '').match(/\(env\b|\benv [A-Z<$]|\bdefault\b|\(choices:/);
      if (stray) wrong.push(`${where}: "${stray[0]}" outside the closing (env …; default …): ${text}`);
    }
    expect(wrong).toEqual([]);
  });

  it('what acx prints is the description as written: no "(default: …)", "(choices: …)" or "(env: …)" added', () => {
    const added = commands.filter(({ command }) => /\((?:default|choices|env): /.test(command.helpInformation()));
    expect(added.map(({ path }) => path)).toEqual([]);
  });

  it('an option or argument with a default value says which, an env-backed one names its variable, and one with choices names them all', () => {
    const wrong: string[] = [];
    const items = [...allOptions().map(({ where, option }) => ({ where, item: option as Option | Argument })), ...allArguments().map(({ where, argument }) => ({ where, item: argument as Option | Argument }))];
    for (const { where, item } of items) {
      const { env, fallback } = envAndDefault(item.description);
      const value = item.defaultValue as unknown;
      const negated = 'negate' in item && item.negate;
      const stated = value === undefined || negated || (Array.isArray(value) && value.length === 0);
      if (!stated && fallback === undefined) wrong.push(`${where}: default ${JSON.stringify(value)} not stated`);
      const envVar = 'envVar' in item ? item.envVar : undefined;
      if (envVar && !env?.includes(envVar)) wrong.push(`${where}: reads ${envVar} but does not say so`);
      for (const choice of item.argChoices ?? []) if (!item.description.includes(choice)) wrong.push(`${where}: choice ${choice} not named`);
    }
    expect(wrong).toEqual([]);
  });

  it('the same option is worded the same on every command (its default may differ)', () => {
    // Flags that name a different thing on some commands: each such command has its own wording.
    const ownMeaning: Record<string, string[]> = {
      '--out': ['acx handshake'], // the descriptor file, not the cartridge `build` and `strip` write
      '--agents': ['acx platform serve', 'acx router', 'acx worker'], // a router in-process, a router, a worker's agents
      '--timeline': ['acx resolved-config', 'acx cleanup'], // what a timeline wake would offer / whose state to remove
      '--name': ['acx init', 'acx platform user add'], // an agent's name / a user's display name
      '--trust': ['acx keygen', 'acx platform user add'], // trust a key / trust between users
      '--mcp': ['acx handshake'], // servers whose tools are offered, not servers the agent connects to
      '--model': ['acx init'], // the model written to agent.json
      '--session': ['acx cleanup'], // the session to remove
      '--port': ['acx mcp', 'acx platform serve', 'acx router'], // each server its own port
      '--home': ['acx router'], // the router's own home
    };
    const worded = new Map<string, Map<string, string[]>>();
    for (const { where, option } of allOptions()) {
      const flag = option.long ?? option.short!;
      const command = where.slice(0, where.lastIndexOf(' '));
      if (ownMeaning[flag]?.includes(command)) continue;
      const { body, env } = envAndDefault(option.description);
      // --json names what it prints after the shared words.
      const words = flag === '--json' ? body.split(':')[0]! : body;
      const key = `${flag} (env ${env ?? 'none'})`;
      const byWords = worded.get(key) ?? new Map<string, string[]>();
      byWords.set(words, [...(byWords.get(words) ?? []), command]);
      worded.set(key, byWords);
    }
    const differing = [...worded].filter(([, byWords]) => byWords.size > 1).map(([key, byWords]) => `${key}: ${[...byWords].map(([words, on]) => `"${words}" on ${on.join(', ')}`).join(' / ')}`);
    expect(differing).toEqual([]);
    expect([...worded.get('--json (env none)')!.keys()]).toEqual(['print the result as JSON']);
  });

  it('run options only where they mean something: no session where the client or a job names it, no --mcp on acx mcp, no --harness where only the engine runs', () => {
    const runOptions = ['--model', '--max-steps', '--context-tokens', '--home', '--store', '--config-home', '--session', '--record', '--replay', '--permission-mode', '--workspace', '--mcp', '--allow-portable', '--registry', '--harness'];
    const offered = (path: string) => {
      const command = commands.find((entry) => entry.path === path)!.command;
      return runOptions.filter((flag) => command.options.some((option) => option.long === flag));
    };
    const without = (...left: string[]) => runOptions.filter((flag) => !left.includes(flag));
    expect(offered('acx run')).toEqual(runOptions);
    expect(offered('acx chat')).toEqual(runOptions);
    expect(offered('acx resolved-config')).toEqual(without('--session'));
    expect(offered('acx acp')).toEqual(without('--session'));
    expect(offered('acx mcp')).toEqual(without('--session', '--mcp', '--harness'));
    expect(offered('acx wake')).toEqual(without('--harness'));
    expect(offered('acx worker')).toEqual(without('--session', '--harness'));
  });

  it('`acx init --help` prints exactly that help on stdout and exits 0', async () => {
    const run = await runAcx(['init', '--help']);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe(commands.find(({ path }) => path === 'acx init')!.command.helpInformation());
    expect(run.stdout).toContain('where to create it (default the current directory)');
    expect(run.stdout).not.toContain('(default: ".")');
  });
});
