import type { Command } from 'commander';
import { listBootstraps, removeBootstraps, type CachedBootstrap } from '../../../harness/acp/bootstrap-cache.ts';
import { defaultCacheDir } from '../../../harness/acp/bootstrap.ts';
import { formatBytes } from '../../../util/disk-usage.ts';
import { CliExit } from '../output.ts';
import { dryRunOption, jsonOption } from '../common-options.ts';

/**
 * `acx cache list|clean`: the ACP coding agents acx installed on first use (under ACX_CACHE_DIR,
 * default ~/.cache/acx), how big each is, and removing them (the next session installs again).
 */
export function register(program: Command): void {
  const cache = program.command('cache').description('list or remove the ACP coding agents acx installed on first use');
  cache
    .command('list')
    .description('each installed ACP agent: its source, size, and whether it is complete')
    .addOption(jsonOption('{cacheDir, totalBytes, entries: [{harnessId, dir, bytes, complete, source, finishedAt, installing}]}'))
    .action((options: { json?: boolean }) => {
      const cacheDir = defaultCacheDir();
      const entries = listBootstraps(cacheDir);
      const totalBytes = entries.reduce((sum, entry) => sum + entry.bytes, 0);
      if (options.json) {
        process.stdout.write(`${JSON.stringify({ cacheDir, totalBytes, entries })}\n`);
        return;
      }
      if (entries.length === 0) {
        process.stdout.write(`No ACP agents installed in ${cacheDir}.\n`);
        return;
      }
      for (const entry of entries) process.stdout.write(`${line(entry)}\n`);
      process.stdout.write(`${entries.length} in ${cacheDir}, ${formatBytes(totalBytes)} in all\n`);
    });
  cache
    .command('clean')
    .description('remove installed ACP agents (named, or --all); the next session installs them again')
    .argument('[harness...]', 'harness ids as `acx cache list` shows them, e.g. acp-claude-code')
    .option('--all', 'remove every installed ACP agent')
    .addOption(dryRunOption())
    .addOption(jsonOption('{cacheDir, dryRun, removed: [{harnessId, dir, bytes}], freedBytes}'))
    .action((names: string[], options: { all?: boolean; dryRun?: boolean; json?: boolean }) => {
      if (Boolean(options.all) === names.length > 0) {
        throw new CliExit('usage', 'acx cache clean: name the harnesses to remove (see acx cache list), or pass --all.');
      }
      const cacheDir = defaultCacheDir();
      const removed = removeBootstraps(cacheDir, options.all ? 'all' : names, { dryRun: Boolean(options.dryRun) });
      const freedBytes = removed.reduce((sum, entry) => sum + entry.bytes, 0);
      if (options.json) {
        const list = removed.map(({ harnessId, dir, bytes }) => ({ harnessId, dir, bytes }));
        process.stdout.write(`${JSON.stringify({ cacheDir, dryRun: Boolean(options.dryRun), removed: list, freedBytes })}\n`);
        return;
      }
      const verb = options.dryRun ? 'would remove' : 'removed';
      for (const entry of removed) process.stdout.write(`${verb} ${entry.harnessId} (${formatBytes(entry.bytes)}) ${entry.dir}\n`);
      process.stdout.write(removed.length === 0 ? `Nothing to remove in ${cacheDir}.\n` : `${verb} ${removed.length}, ${formatBytes(freedBytes)}\n`);
    });
}

function line(entry: CachedBootstrap): string {
  const state = entry.installing ? 'installing' : entry.complete ? `installed ${entry.finishedAt ?? ''}`.trim() : 'incomplete (reinstalled on next use)';
  return `${entry.harnessId.padEnd(22)} ${formatBytes(entry.bytes).padStart(9)}  ${entry.source ?? 'unknown source'}  ${state}`;
}
