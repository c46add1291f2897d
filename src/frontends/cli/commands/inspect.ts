import type { Command } from 'commander';
import { formatInspect, inspectCartridge } from '../../../cartridge/inspect.ts';
import { jsonOption } from '../common-options.ts';
import { addVerifyTrustOptions, verifyTrust, type VerifyTrustFlags } from '../trust-options.ts';

export function register(program: Command): void {
  addVerifyTrustOptions(
    program
      .command('inspect')
      .description('show what is inside a cartridge: meta, files, memory, skills, signatures, and its trust verdict')
      .argument('<file>', '.acx cartridge'),
  )
    .addOption(jsonOption())
    .action((file: string, opts: VerifyTrustFlags & { json?: boolean }) => {
      // The same trust files and verdict as `acx verify FILE` with these flags.
      const report = inspectCartridge(file, verifyTrust(opts).options);
      process.stdout.write(`${opts.json ? JSON.stringify(report, null, 2) : formatInspect(report)}\n`);
    });
}
