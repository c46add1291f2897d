import type { Command } from 'commander';
import { stripCartridge } from '../../../cartridge/strip.ts';
import { cartridgeOutOption, forceOption, jsonOption } from '../common-options.ts';

export function register(program: Command): void {
  program
    .command('strip')
    .description('write a SAVE-free copy and prove its ROM hash equals the signed one')
    .argument('<file>', '.acx cartridge')
    .addOption(cartridgeOutOption())
    .addOption(forceOption())
    .addOption(jsonOption())
    .action((file: string, opts: { out: string; force?: boolean; json?: boolean }) => {
      const r = stripCartridge(file, opts.out, { overwrite: opts.force ?? false });
      if (opts.json) process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
      else {
        process.stdout.write(
          `wrote:     ${r.out}\nsigned:    ${r.signedHash}\nstripped:  ${r.strippedHash}\nequal:     yes (ROM untouched by field learning)\nremoved:   ${r.removed.memory} memory, ${r.removed.files} files, ${r.removed.objects} objects, ${r.removed.vectors} vectors\n`,
        );
      }
    });
}
