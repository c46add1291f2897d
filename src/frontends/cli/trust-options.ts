import type { Command } from 'commander';
import { configHomeOption, jsonOption, publisherOption, registryOption } from './common-options.ts';
import { addOwnKey, trustKey, type TrustChange, type TrustKeyInput } from '../../cartridge/trust-store.ts';
import { keyIdsFromPemFiles } from '../../cartridge/keys.ts';
import { selfName } from './self-name.ts';
import { resolveTrustFiles, verifyOptionsOf, type TrustFiles } from '../../app/trust.ts';

/**
 * What the commands that judge a cartridge's trust share (`verify`, `inspect`): the registry, the
 * config home and extra own keys; and what `acx trust add` and `acx keygen --trust` share: their
 * flags, the edit, and its report.
 */

export interface VerifyTrustFlags {
  registry?: string;
  configHome?: string;
  ownKey?: string[];
}

/** --registry, --config-home and --own-key, worded the same on every command that judges trust. */
export function addVerifyTrustOptions(command: Command): Command {
  return command
    .addOption(registryOption())
    .addOption(configHomeOption())
    .option('--own-key <pem...>', "this installation's own public/private key files (for the local verdict), besides those `acx keygen --trust` recorded");
}

/** The trust files these flags name, and the options a verification takes from them. */
export function verifyTrust(flags: VerifyTrustFlags): { files: TrustFiles; options: { registry?: string; ownKeys: string[] } } {
  const files = resolveTrustFiles(flags);
  return { files, options: verifyOptionsOf(files, flags.ownKey ? keyIdsFromPemFiles(flags.ownKey) : []) };
}

export interface TrustFlags {
  registry?: string;
  configHome?: string;
  json?: boolean;
}

export interface AddFlags extends TrustFlags {
  publisher?: string;
  notBefore?: string;
  notAfter?: string;
  oidcSubject?: string;
  own?: boolean;
}

/** The options `acx trust add` and `acx keygen --trust` share. */
export function addTrustOptions(command: Command): Command {
  return command
    .addOption(publisherOption())
    .option('--not-before <time>', 'RFC 3339 start of the key\'s validity; cartridges signed earlier stay portable (default now)')
    .option('--not-after <time>', 'RFC 3339 end of the key\'s validity (default two years after --not-before)')
    .option('--oidc-subject <subject>', 'io.github.* publishers: the GitHub Actions OIDC subject proving the namespace, e.g. repo:alice/agents:ref:refs/heads/main')
    .addOption(registryOption())
    .addOption(configHomeOption())
    .addOption(jsonOption());
}

/** What `acx trust add` and `acx keygen --trust` record, from their shared flags. */
export function trustInput(key: TrustKeyInput['key'], flags: AddFlags): TrustKeyInput {
  return {
    key,
    ...(flags.publisher ? { publisherId: flags.publisher } : {}),
    ...(flags.notBefore ? { notBefore: flags.notBefore } : {}),
    ...(flags.notAfter ? { notAfter: flags.notAfter } : {}),
    ...(flags.oidcSubject ? { oidcSubject: flags.oidcSubject } : {}),
  };
}

/** Adds (or updates) a key and, when `own`, records it as this installation's own. */
export function addTrust(files: TrustFiles, input: TrustKeyInput, own: boolean): TrustChange & { own: boolean } {
  const result = trustKey(files.editable, input);
  if (own) addOwnKey(files.ownKeysPath, result.entry.keyid);
  return { ...result, own: own || files.ownKeys.includes(result.entry.keyid) };
}

/** The lines `acx trust add` and `acx keygen --trust` print for a trusted key. */
export function describeTrusted(registry: string, result: TrustChange & { own: boolean }): string[] {
  const { entry } = result;
  const proof = entry.namespaceProof;
  const namespace =
    proof?.method === 'dns-txt'
      ? `dns-txt ${proof.txtRecord}`
      : proof?.method === 'github-oidc'
        ? `github-oidc ${proof.oidcSubject}`
        : 'none';
  return [
    `${result.change === 'unchanged' ? 'already trusted' : result.change} ${entry.keyid} in ${registry}`,
    `  publisher: ${entry.publisherId}`,
    `  valid:     ${entry.notBefore} → ${entry.notAfter} (cartridges signed before the start stay portable; to trust those too: ${selfName()} trust add ${entry.keyid} --not-before <their signing time>)`,
    `  namespace: ${namespace}, recorded as verified by you (acx looks nothing up)`,
    `  own key:   ${result.own ? 'yes: cartridges it signs verify as local' : 'no: cartridges it signs verify as trusted'}`,
  ];
}
