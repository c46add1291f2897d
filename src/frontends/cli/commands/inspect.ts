import type { Command } from 'commander';
import { formatInspect, inspectCartridge } from '../../../cartridge/inspect.ts';

export function register(program: Command): void {
  program
    .command('inspect')
    .description('show what is inside a cartridge: meta, files, memory, skills, signatures')
    .argument('<file>', '.acx cartridge')
    .option('--registry <file>', 'acx.trust-registry/1 file (env ACX_TRUST_REGISTRY)', process.env.ACX_TRUST_REGISTRY)
    .option('--json', 'print the report as JSON')
    .action((file: string, opts: { registry?: string; json?: boolean }) => {
      const report = inspectCartridge(file, opts.registry ? { registry: opts.registry } : {});
      process.stdout.write(`${opts.json ? JSON.stringify(report, null, 2) : formatInspect(report)}\n`);
    });
}
