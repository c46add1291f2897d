// The acx command lines the docs show a user: every `acx <command> [subcommand] …` that a code span
// or a line of a shell/text code block of README.md and docs/*.md runs, with the flags written
// after it, and the flags a code span names alone (`--registry FILE`).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface DocCommand {
  /** `README.md:42`. */
  where: string;
  /** The words after `acx` up to the first that is not a plain word: `platform user add x`. */
  words: string[];
  /** Every `--flag` / `-f` written after the command, in the same command line. */
  flags: string[];
  /** The line as written, for the message. */
  text: string;
}

export interface DocFlag {
  where: string;
  flag: string;
}

/** The Markdown files whose commands a user runs: README.md and docs/*.md. */
export function docFiles(root: string): string[] {
  return ['README.md', ...readdirSync(join(root, 'docs')).filter((file) => file.endsWith('.md')).sort().map((file) => `docs/${file}`)];
}

// A command line that runs acx: `acx …`, `npx acx …`, `node bin/acx.js …`, after any `NAME=value`.
const ACX_LINE = /^(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:npx\s+|node\s+)?(?:\S*\/)?acx(?:\.js)?(?:\s+|$)/;
const FLAG = /(?:^|[\s[(|,=])(--?[a-zA-Z][\w-]*)/g;
// Block languages whose lines are commands or their output; code (ts, json) is checked elsewhere.
const COMMAND_BLOCKS = new Set(['', 'sh', 'bash', 'shell', 'console', 'text']);

export function docCommands(root: string): { commands: DocCommand[]; aloneFlags: DocFlag[] } {
  const commands: DocCommand[] = [];
  const aloneFlags: DocFlag[] = [];
  for (const file of docFiles(root)) {
    const lines = readFileSync(join(root, file), 'utf8').split('\n');
    let fence: string | undefined; // the open block's language
    for (let n = 0; n < lines.length; n += 1) {
      const line = lines[n]!;
      const opened = /^```(\S*)/.exec(line);
      if (opened) {
        fence = fence === undefined ? opened[1]! : undefined;
        continue;
      }
      const where = `${file}:${n + 1}`;
      if (fence !== undefined) {
        if (!COMMAND_BLOCKS.has(fence)) continue;
        // A shell line continued with `\` is one command; a `# comment` is prose.
        let text = line;
        while (text.endsWith('\\') && n + 1 < lines.length) text = `${text.slice(0, -1)} ${lines[++n]!}`;
        for (const segment of text.replace(/\s#\s.*$/, '').split(/\s(?:\||&&|;)\s/)) commands.push(...commandsIn(segment, where));
        continue;
      }
      for (const span of line.matchAll(/`([^`]+)`/g)) {
        const text = span[1]!;
        commands.push(...commandsIn(text, where));
        // A span that is a flag (`--registry FILE`), not another program's command line.
        if (text.startsWith('-')) for (const flag of flagsIn(text)) aloneFlags.push({ where, flag });
      }
    }
  }
  return { commands, aloneFlags };
}

/**
 * The acx command a command line or code span runs, if it runs one: acx is its program (so
 * `npm install acx ai` is not one), and its words are not a message's prefix (`acx wake: …`).
 */
function commandsIn(text: string, where: string): DocCommand[] {
  const program = ACX_LINE.exec(text.trim());
  if (!program) return [];
  const rest = text.trim().slice(program[0].length);
  const words = /^[a-z][\w-]*(?: +[a-z][\w-]*)*/.exec(rest)?.[0] ?? '';
  if (rest.slice(words.length).startsWith(':')) return [];
  return [{ where, words: words ? words.split(/ +/) : [], flags: flagsIn(rest), text: text.trim() }];
}

/** `--flag` and `-f` as written (`--flag=value` counts as `--flag`); not `-32602` or `a-b`. */
function flagsIn(text: string): string[] {
  return [...text.matchAll(FLAG)].map((match) => match[1]!).filter((flag) => flag.length > 2 || /^-[a-zA-Z]$/.test(flag));
}
