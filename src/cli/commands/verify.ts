import type { Command } from 'commander';
import { keyIdsFromPemFiles } from '../../cartridge/keys.ts';
import { verifyCartridge } from '../../cartridge/verify.ts';
import { CliExit, EXIT } from '../output.ts';

export function register(program: Command): void {
  program
    .command('verify')
    .description('check a cartridge: tampered / legacy / portable / trusted / local, and why')
    .argument('<file>', '.acx cartridge')
    .option('--registry <file>', 'acx.trust-registry/1 file (env ACX_TRUST_REGISTRY)', process.env.ACX_TRUST_REGISTRY)
    .option('--own-key <pem...>', "this installation's own public/private key files (for the local verdict)")
    .option('--json', 'print the result as JSON')
    .action((file: string, opts: { registry?: string; ownKey?: string[]; json?: boolean }) => {
      const result = verifyCartridge(file, {
        ...(opts.registry ? { registry: opts.registry } : {}),
        ...(opts.ownKey ? { ownKeys: keyIdsFromPemFiles(opts.ownKey) } : {}),
      });
      if (opts.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      else {
        const lines = [`verdict:   ${result.verdict}`];
        if (result.publisherId) lines.push(`publisher: ${result.publisherId}`);
        if (result.keyid) lines.push(`keyid:     ${result.keyid}`);
        if (result.signedAt) lines.push(`signedAt:  ${result.signedAt}`);
        if (result.manifestHash) lines.push(`rom hash:  ${result.manifestHash}`);
        for (const r of result.reasons) lines.push(`why:       ${r}`);
        for (const w of result.warnings) lines.push(`note:      ${w}`);
        process.stdout.write(`${lines.join('\n')}\n`);
      }
      if (result.verdict === 'tampered') throw new CliExit(EXIT.tampered, opts.json ? '' : 'acx verify: cartridge rejected (tampered); do not run it');
    });
}
