import type { Command } from 'commander';
import { verifyCartridge } from '../../../cartridge/verify.ts';
import { CliExit } from '../output.ts';
import { jsonOption } from '../common-options.ts';
import { addVerifyTrustOptions, verifyTrust, type VerifyTrustFlags } from '../trust-options.ts';

export function register(program: Command): void {
  addVerifyTrustOptions(
    program
      .command('verify')
      .description('check a cartridge: tampered / legacy / portable / trusted / local, and why')
      .argument('<file>', '.acx cartridge'),
  )
    .addOption(jsonOption())
    .action((file: string, opts: VerifyTrustFlags & { json?: boolean }) => {
      const { files: trust, options } = verifyTrust(opts);
      const result = verifyCartridge(file, options);
      if (opts.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      else {
        const lines = [`verdict:   ${result.verdict}`];
        if (result.publisherId) lines.push(`publisher: ${result.publisherId}`);
        if (result.keyid) lines.push(`keyid:     ${result.keyid}`);
        if (result.signedAt) lines.push(`signedAt:  ${result.signedAt}`);
        if (result.manifestHash) lines.push(`rom hash:  ${result.manifestHash}`);
        lines.push(`registry:  ${trust.registry ?? '(none: every signer is portable; `acx trust add` creates one)'}`);
        for (const r of result.reasons) lines.push(`why:       ${r}`);
        for (const w of result.warnings) lines.push(`note:      ${w}`);
        process.stdout.write(`${lines.join('\n')}\n`);
      }
      if (result.verdict === 'tampered') throw new CliExit('tampered', opts.json ? '' : 'acx verify: cartridge rejected (tampered); do not run it');
    });
}
