import type { Command } from 'commander';
import { installConfigHome, NEW_SUFFIX, type DefaultsMap, type InstallSummary } from '../../../app/install.ts';
import { grantFileName, knownOptInsText, OPT_IN_TOOLS } from '../../../app/opt-in.ts';
import { resolveConfigHome } from '../../../app/paths.ts';
import { createLogger, type Logger } from '../../../util/logger.ts';
import { ACX_VERSION } from '../../../util/version.ts';
import { configHomeOption, jsonOption, orList } from '../common-options.ts';

/**
 * `acx install`: scaffold or upgrade the config home (prompts, mcp/ and tools/ overlays) and
 * record opt-in grants for powerful tools. Idempotent; safe to run after every upgrade.
 */
export interface InstallCommandOptions {
  configHome?: string;
  optIn?: string[];
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  version?: string;
  defaults?: DefaultsMap;
  /** The agent's provider for plugin defaults; default: the provider of ACX_MODEL (`provider:model`). */
  provider?: string;
  allProviders?: boolean;
}

export function runInstall(options: InstallCommandOptions = {}): InstallSummary {
  const env = options.env ?? process.env;
  const provider = options.provider ?? env.ACX_MODEL?.split(':')[0]?.trim();
  return installConfigHome({
    configHome: resolveConfigHome(options.configHome, env),
    version: options.version ?? ACX_VERSION,
    optIn: options.optIn ?? [],
    logger: options.logger ?? createLogger(),
    ...(options.defaults ? { defaults: options.defaults } : {}),
    ...(provider ? { provider } : {}),
    ...(options.allProviders ? { allProviders: true } : {}),
  });
}

function line(label: string, items: readonly string[]): string[] {
  return items.length > 0 ? [`${label.padEnd(24)}${items.join(', ')}`] : [];
}

/** The human summary: quiet about routine work, loud about every powerful tool that is on. */
export function formatInstallSummary(summary: InstallSummary): string {
  const out: string[] = [];
  const was = summary.previousVersion && summary.previousVersion !== summary.version ? `; upgraded from ${summary.previousVersion}` : '';
  out.push(`acx config home: ${summary.configHome} (acx ${summary.version}${was})`);
  out.push(...line('created:', summary.created));
  out.push(...line('refreshed:', summary.refreshed));
  out.push(...line('up to date:', summary.unchanged));
  for (const file of summary.keptEdited) {
    out.push(`${'kept your edits:'.padEnd(24)}${file} (the new default is beside it as ${file}${NEW_SUFFIX}; merge by hand)`);
  }
  out.push(...line('left deleted:', summary.respectedDeleted));
  out.push(...line('no longer shipped:', summary.retired.map((file) => `${file} (left as is)`)));
  out.push(...line('other-provider pruned:', summary.pruned));
  out.push(...line('other-provider skipped:', summary.otherProvider.filter((file) => !summary.pruned.includes(file))));
  out.push(...line('your files, untouched:', summary.untouchedUser));

  const granted = [...summary.optedIn, ...summary.grandfathered];
  if (granted.length === 0) {
    out.push(
      `${'powerful tools:'.padEnd(24)}none granted (they are off by default; grant one with acx install --opt-in NAME, known: ${Object.keys(OPT_IN_TOOLS).join(', ')})`,
    );
  }
  for (const name of summary.optedIn) {
    out.push(`!! OPT-IN GRANTED: ${name}: ${OPT_IN_TOOLS[name].summary}. Revoke: delete tools/${grantFileName(name)}`);
  }
  for (const name of summary.grandfathered) {
    out.push(
      `!! OPT-IN KEPT (granted earlier, not stripped): ${name}: ${OPT_IN_TOOLS[name].summary}. Revoke: delete tools/${grantFileName(name)}`,
    );
  }
  return `${out.join('\n')}\n`;
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

export function register(program: Command): void {
  program
    .command('install')
    .description('create or upgrade the config home (prompts, mcp/ and tools/ overlays); keeps your edits; idempotent')
    .addOption(configHomeOption())
    .option('--opt-in <names>', `grant powerful tools, comma-separated; repeatable: ${orList(Object.keys(OPT_IN_TOOLS))}`, collect)
    .option('--provider <name>', "lay down only the tool plugin defaults for this provider (default ACX_MODEL's provider, and all when it is unknown)")
    .option('--all-providers', "lay down every provider's tool plugin defaults")
    .addOption(jsonOption('the same lists as the text'))
    .addHelpText('after', () => `\nThe tools --opt-in grants (each off until granted):\n${knownOptInsText()}\n`)
    .action((opts: { configHome?: string; optIn?: string[]; json?: boolean; provider?: string; allProviders?: boolean }) => {
      const summary = runInstall({
        ...(opts.configHome ? { configHome: opts.configHome } : {}),
        optIn: opts.optIn ?? [],
        ...(opts.provider ? { provider: opts.provider } : {}),
        ...(opts.allProviders ? { allProviders: true } : {}),
      });
      process.stdout.write(opts.json ? `${JSON.stringify(summary, null, 2)}\n` : formatInstallSummary(summary));
    });
}
