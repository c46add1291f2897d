import { existsSync, readFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import { KEYID, REVOCATION_REASONS, type RevocationReason, type TrustedKey } from '../../../cartridge/trust.ts';
import { readRegistryDocument, revokeKey, type TrustKeyInput } from '../../../cartridge/trust-store.ts';
import { resolveTrustFiles } from '../../../app/trust.ts';
import { AcxError } from '../../../core/errors.ts';
import { configHomeOption, jsonOption, orList, registryOption } from '../common-options.ts';
import { type AddFlags, addTrust, addTrustOptions, describeTrusted, type TrustFlags, trustInput } from '../trust-options.ts';

/**
 * `acx trust add|revoke|list`: edit and read the acx.trust-registry/1 file cartridge verdicts are
 * judged against (docs/trust.md). The file is the one `acx verify` and `acx run` read: --registry,
 * else ACX_TRUST_REGISTRY, else <config home>/trust-registry.json (created by the first add).
 */

export function register(program: Command): void {
  const trust = program.command('trust').description('add, revoke and list the keys whose cartridges you trust (acx.trust-registry/1; docs/trust.md)');

  addTrustOptions(
    trust
      .command('add')
      .description('trust a public key for a publisher (or change the validity of a key already trusted)')
      .argument('<key>', 'a public key PEM file (acx-signing.pub.pem), or the keyid of a key already in the registry')
      .option('--own', 'this key is one of this installation\'s own: cartridges it signs verify as local'),
  ).action((keyArg: string, flags: AddFlags) => {
    const files = resolveTrustFiles(flags);
    const result = addTrust(files, trustInput(keyOf(keyArg), flags), flags.own === true);
    if (flags.json) print({ registry: files.editable, change: result.change, own: result.own, entry: result.entry });
    else process.stdout.write(`${describeTrusted(files.editable, result).join('\n')}\n`);
  });

  trust
    .command('revoke')
    .description('revoke a trusted key: key-compromise makes everything it signed tampered; other reasons make it portable')
    .argument('<keyid>', 'the keyid to revoke (ed25519:…; `acx trust list` shows them)')
    .addOption(new Option('--reason <reason>', `why the key is revoked: ${orList(REVOCATION_REASONS)}`).choices([...REVOCATION_REASONS]).makeOptionMandatory())
    .addOption(registryOption())
    .addOption(configHomeOption())
    .addOption(jsonOption())
    .action((keyid: string, flags: TrustFlags & { reason: RevocationReason }) => {
      const files = resolveTrustFiles(flags);
      const result = revokeKey(files.editable, keyid, flags.reason);
      if (flags.json) return print({ registry: files.editable, change: result.change, entry: result.entry });
      const { entry } = result;
      const effect = entry.revocationReason === 'key-compromise' ? 'cartridges it signed now verify as tampered and never run' : 'cartridges it signed now verify as portable';
      const head = result.change === 'unchanged' ? `${entry.keyid} was already revoked (${entry.revocationReason}) at ${entry.revokedAt}` : `revoked ${entry.keyid} (${entry.revocationReason}) in ${files.editable}`;
      process.stdout.write(`${head}\n  ${effect}\n`);
    });

  trust
    .command('list')
    .description('list the keys in the trust registry, with their publisher, status and validity')
    .addOption(registryOption())
    .addOption(configHomeOption())
    .addOption(jsonOption('{registry, exists, keys: [{…entry, own}]}'))
    .action((flags: TrustFlags) => {
      const files = resolveTrustFiles(flags);
      const exists = existsSync(files.editable);
      const keys = readRegistryDocument(files.editable).keys.map((entry) => ({ ...entry, own: files.ownKeys.includes(entry.keyid) }));
      if (flags.json) return print({ registry: files.editable, exists, keys });
      if (!exists) {
        process.stdout.write(`No trust registry at ${files.editable}: every signer is portable.\n  → Trust a key with \`acx trust add KEY.pub.pem --publisher ID\` (or create yours with \`acx keygen --trust\`).\n`);
        return;
      }
      const lines = [`${files.editable}: ${keys.length} key${keys.length === 1 ? '' : 's'}`];
      for (const key of keys) lines.push(`${key.keyid}  ${key.publisherId}  ${statusOf(key)}  ${key.notBefore} → ${key.notAfter}${key.own ? '  own' : ''}`);
      process.stdout.write(`${lines.join('\n')}\n`);
    });
}

function keyOf(arg: string): TrustKeyInput['key'] {
  if (KEYID.test(arg)) return { keyid: arg };
  if (!existsSync(arg)) {
    throw new AcxError('usage', `${arg} is neither a keyid nor a file`, { hint: 'pass a public key PEM file (acx keygen writes acx-signing.pub.pem) or a keyid ed25519:<64 hex>' });
  }
  return { publicKeyPem: readFileSync(arg, 'utf8') };
}

function statusOf(key: TrustedKey): string {
  if (key.status === 'revoked') return `revoked (${key.revocationReason} at ${key.revokedAt})`;
  if (key.status === 'active' && Date.parse(key.notAfter) < Date.now()) return 'expired';
  return key.status;
}

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
