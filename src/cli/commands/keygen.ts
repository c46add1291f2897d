import type { Command } from 'commander';
import { writeKeyPair } from '../../cartridge/keys.ts';

export function register(program: Command): void {
  program
    .command('keygen')
    .description('create an Ed25519 signing key pair (private key mode 0600, never inside a cartridge)')
    .option('-o, --out <dir>', 'directory for the key files (env ACX_KEY_DIR)', process.env.ACX_KEY_DIR ?? '.')
    .action((opts: { out: string }) => {
      const k = writeKeyPair(opts.out);
      process.stdout.write(`keyid:       ${k.keyid}\nprivate key: ${k.privateKeyPath}  (mode 0600; keep it secret, never commit it)\npublic key:  ${k.publicKeyPath}\n`);
    });
}
