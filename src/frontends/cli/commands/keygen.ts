import type { Command } from 'commander';
import { generateSigningKey, writeKeyPair } from '../../../cartridge/keys.ts';
import { trustKey } from '../../../cartridge/trust-store.ts';
import { resolveTrustFiles } from '../../../app/trust.ts';
import { CliExit } from '../output.ts';
import { type AddFlags, addTrust, addTrustOptions, describeTrusted, trustInput } from '../trust-options.ts';

export function register(program: Command): void {
  addTrustOptions(
    program
      .command('keygen')
      .description('create an Ed25519 signing key pair (private key mode 0600, never inside a cartridge)')
      .option('-o, --out <dir>', 'directory for the key files (env ACX_KEY_DIR; default the current directory)', process.env.ACX_KEY_DIR ?? '.')
      .option('--trust', 'also add the public key to your trust registry as your own, so cartridges you sign with it verify as local (needs --publisher)'),
  ).action((opts: AddFlags & { out: string; trust?: boolean }) => {
    const misplaced = (['notBefore', 'notAfter', 'oidcSubject', 'registry'] as const).filter((k) => opts[k] !== undefined);
    if (!opts.trust && misplaced.length > 0) throw new CliExit('usage', 'acx keygen: --not-before, --not-after, --oidc-subject and --registry apply only with --trust');
    const key = generateSigningKey();
    const files = opts.trust ? resolveTrustFiles(opts) : undefined;
    const input = trustInput({ publicKeyPem: key.publicKeyPem }, opts);
    // Everything that could refuse the trust entry is checked before a key file is written.
    if (files) trustKey(files.editable, input, { dryRun: true });
    const written = writeKeyPair(opts.out, key);
    const trusted = files ? addTrust(files, input, true) : undefined;
    if (opts.json) {
      const trust = trusted && files ? { registry: files.editable, change: trusted.change, own: trusted.own, entry: trusted.entry } : null;
      process.stdout.write(`${JSON.stringify({ ...written, trusted: trust }, null, 2)}\n`);
      return;
    }
    const lines = [
      `keyid:       ${written.keyid}`,
      `private key: ${written.privateKeyPath}  (mode 0600; keep it secret, never commit it)`,
      `public key:  ${written.publicKeyPath}`,
      ...(trusted && files ? describeTrusted(files.editable, trusted) : []),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  });
}
