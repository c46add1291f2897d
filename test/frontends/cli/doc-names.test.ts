// Issue 26 item 9: no doc names a command or a flag acx does not have. Every `acx <command>
// [subcommand]` in README.md and docs/*.md (code spans and shell blocks) must be one of acx's
// commands, each flag written after it one of that command's options, and a flag named alone one
// that some command has.
import { describe, expect, it } from 'vitest';
import type { Command } from 'commander';
import { cliCommands, flagsOf } from '../../support/cli-tree.ts';
import { docCommands } from '../../support/doc-commands.ts';
import { ROOT } from '../../support/cli.ts';

const commands = await cliCommands();
const root = commands.find(({ path }) => path === 'acx')!.command;
const { commands: named, aloneFlags } = docCommands(ROOT);

const hasFlag = (command: Command, flag: string) => flag === '--help' || flag === '-h' || command.options.some((option) => flagsOf(option).includes(flag));

/** The command the words name (`platform user add`), or what is wrong with them. */
function resolve(words: readonly string[]): { command: Command } | { wrong: string } {
  let command = root;
  for (const word of words) {
    const sub = command.commands.find((candidate) => candidate.name() === word);
    if (sub) {
      command = sub;
      continue;
    }
    if (command === root && word === 'help') break; // `acx help [command]`
    if (command === root) return { wrong: `acx has no command "${word}"` };
    // A command that only groups others (trust, platform, cache) takes nothing but their names.
    if (command.commands.length > 0 && command.registeredArguments.length === 0) return { wrong: `${pathOf(command)} has no subcommand "${word}"` };
    break;
  }
  return { command };
}

const pathOf = (command: Command): string => (command.parent ? `${pathOf(command.parent)} ${command.name()}` : 'acx');

describe('the docs name only commands and flags acx has (issue 26 item 9)', () => {
  it('finds the commands and flags the docs show', () => {
    // A floor, so an extractor that silently finds nothing fails.
    expect(named.length).toBeGreaterThan(100);
    expect(named.map((entry) => entry.words[0])).toEqual(expect.arrayContaining(['run', 'wake', 'trust', 'platform', 'mcp', 'acp', 'router', 'worker']));
    expect(aloneFlags.length).toBeGreaterThan(50);
  });

  it('every `acx <command> [subcommand]` exists, and every flag written after it is one of its options', () => {
    const wrong: string[] = [];
    for (const entry of named) {
      const found = resolve(entry.words);
      if ('wrong' in found) {
        wrong.push(`${entry.where}: ${found.wrong}: ${entry.text}`);
        continue;
      }
      for (const flag of entry.flags) if (!hasFlag(found.command, flag)) wrong.push(`${entry.where}: ${pathOf(found.command)} has no ${flag}: ${entry.text}`);
    }
    expect(wrong).toEqual([]);
  });

  it('every flag named alone is an option of some command', () => {
    // The benchmarks' own flags, named beside their `npx node bench/…` line (docs/acp.md).
    const notAcx = new Set(['--claude', '--npm']);
    const all = new Set(commands.flatMap(({ command }) => command.options.flatMap(flagsOf)));
    const wrong = aloneFlags.filter(({ flag }) => !all.has(flag) && flag !== '--help' && flag !== '-h' && !notAcx.has(flag));
    expect(wrong.map(({ where, flag }) => `${where}: ${flag}`)).toEqual([]);
  });
});
