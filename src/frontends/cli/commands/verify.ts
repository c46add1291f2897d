import type { Command } from 'commander';
import { keyIdsFromPemFiles } from '../../../cartridge/keys.ts';
import { verifyCartridge } from '../../../cartridge/verify.ts';
import { resolveTrustFiles } from '../../../app/trust.ts';
import { CliExit } from '../output.ts';

export function register(program: Command): void {
  program
    .command('verify')
    .description('check a cartridge: tampered / legacy / portable / trusted / local, and why')
    .argument('<file>', '.acx cartridge')
    .option('--registry <file>', 'acx.trust-registry/1 file (env ACX_TRUST_REGISTRY; default <config home>/trust-registry.json)')
    .option('--config-home <dir>', 'config home whose trust registry and own keys are used (env ACX_CONFIG_HOME)')
    .option('--own-key <pem...>', "this installation's own public/private key files (for the local verdict), besides those `acx keygen --trust` recorded")
    .option('--json', 'print the result as JSON')
    .action((file: string, opts: { registry?: string; configHome?: string; ownKey?: string[]; json?: boolean }) => {
      const trust = resolveTrustFiles(opts);
      const result = verifyCartridge(file, {
        ...(trust.registry ? { registry: trust.registry } : {}),
        ownKeys: [...trust.ownKeys, ...(opts.ownKey ? keyIdsFromPemFiles(opts.ownKey) : [])],
      });
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
