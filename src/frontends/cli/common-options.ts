import { type Command, Option } from 'commander';

/**
 * The options several commands share, worded once. Every option's help follows one style
 * (test/frontends/cli/help-style.test.ts holds it): a lowercase start, no final period, and the
 * environment variable and the default last, as `(env NAME; default VALUE)`. acx's help shows a
 * description exactly as written (`plainHelp`), so the default is stated there and nowhere else.
 */

/** Help that prints each description as written: commander would append its own `(default: …)`, `(choices: …)` and `(env: …)`. */
export function plainHelp(program: Command): Command {
  return program.configureHelp({
    optionDescription: (option) => option.description,
    argumentDescription: (argument) => argument.description,
  });
}

export const homeOption = (): Option =>
  new Option('--home <dir>', 'state home: journals, memory and wake state (env ACX_HOME; default $XDG_STATE_HOME/acx or ~/.local/state/acx)');

export const configHomeOption = (): Option =>
  new Option('--config-home <dir>', 'config home: prompts, drop-ins and the trust registry (env ACX_CONFIG_HOME; default $XDG_CONFIG_HOME/acx or ~/.config/acx)');

export const storeOption = (): Option =>
  new Option('--store <url>', 'the journal, wake state and memory on PostgreSQL: a postgres:// URL (env ACX_STORE; default the SQLite files under the state home)');

export const registryOption = (): Option =>
  new Option('--registry <file>', 'the trust registry, an acx.trust-registry/1 file (env ACX_TRUST_REGISTRY; default <config home>/trust-registry.json)');

export const allowPortableOption = (): Option =>
  new Option('--allow-portable', 'cartridges: accept one whose signer is not in the trust registry (env ACX_ALLOW_PORTABLE=1)');

export const publisherOption = (): Option => new Option('--publisher <id>', 'reverse-DNS publisher id, e.g. io.github.alice (env ACX_PUBLISHER)').env('ACX_PUBLISHER');

export const dryRunOption = (): Option => new Option('--dry-run', 'say what would be removed, remove nothing');

export const forceOption = (): Option => new Option('-f, --force', 'replace an existing output file');

/** `-o, --out FILE`, required: where `build` and `strip` write their cartridge. */
export const cartridgeOutOption = (): Option => new Option('-o, --out <file>', 'output .acx file').makeOptionMandatory();

/** `--json`: the same words on every command, then what the JSON holds where that helps. */
export const jsonOption = (shape?: string): Option => new Option('--json', `print the result as JSON${shape ? `: ${shape}` : ''}`);

/** `a, b or c`: how a description names an option's choices (the help shows no list of its own). */
export function orList(values: readonly string[]): string {
  return values.length > 1 ? `${values.slice(0, -1).join(', ')} or ${values.at(-1)}` : (values[0] ?? '');
}
