import ipaddr from 'ipaddr.js';
import { AcxError, errorMarker, setMarker } from '../core/errors.ts';

const NET_GUARD_MARKER = errorMarker('NetGuardError');

/**
 * Address classification for outbound requests whose destination the model chose (SSRF).
 * Only public unicast addresses pass: loopback, private (RFC 1918), link-local (incl. cloud
 * metadata 169.254.169.254), CGNAT, reserved/documentation, multicast, broadcast, unspecified,
 * IPv6 unique-local, IPv4-mapped/translated IPv6 and anything outside 2000::/3 are refused.
 */
export class NetGuardError extends AcxError {
  constructor(message: string, hint = 'Only public https addresses can be fetched.') {
    super('net-guard', message, { hint });
    setMarker(this, NET_GUARD_MARKER);
    this.name = 'NetGuardError';
  }

  static override isInstance(error: unknown): error is NetGuardError {
    return AcxError.hasMarker(error, NET_GUARD_MARKER);
  }
}

export interface AddressClass {
  address: string;
  family: 4 | 6;
  /** ipaddr.js range name ('unicast' for public), or 'invalid'. */
  range: string;
  public: boolean;
}

/** hostname -> every address it resolves to. */
export type Resolver = (hostname: string) => Promise<string[]>;

export const systemResolver: Resolver = async (hostname) => {
  // node:dns loads on the first lookup, not with the modules that may look one up.
  const results = await process.getBuiltinModule('node:dns').promises.lookup(hostname, { all: true, verbatim: true });
  return results.map((result) => result.address);
};

const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parse('2000::');

/** Accepts the usual and the non-standard IPv4 forms (decimal, hex, octal, short) and IPv6 (with or without brackets). */
export function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (!ipaddr.isValid(bare)) return undefined;
  try {
    return ipaddr.parse(bare);
  } catch {
    return undefined;
  }
}

export function classifyAddress(text: string): AddressClass {
  const parsed = parseAddress(text);
  if (!parsed) return { address: text, family: 4, range: 'invalid', public: false };
  if (parsed.kind() === 'ipv4') {
    const range = parsed.range();
    return { address: parsed.toString(), family: 4, range, public: range === 'unicast' };
  }
  const v6 = parsed as ipaddr.IPv6;
  const address = v6.toString();
  // Refused whatever IPv4 address it carries: such a destination is never a real public host.
  if (v6.isIPv4MappedAddress()) return { address, family: 6, range: 'ipv4Mapped', public: false };
  const range = v6.range();
  const global = v6.match(GLOBAL_UNICAST_V6, 3);
  return { address, family: 6, range: global ? range : range === 'unicast' ? 'notGlobalUnicast' : range, public: range === 'unicast' && global };
}

export interface GuardOptions {
  resolve?: Resolver;
  /**
   * TEST ONLY: addresses or CIDRs that pass although not public. Never wire this to config or
   * environment; it exists so tests can reach servers on 127.0.0.1.
   */
  unsafeAllowAddressesForTests?: readonly string[];
}

function allowedForTests(address: string, allow: readonly string[] | undefined): boolean {
  if (!allow || allow.length === 0) return false;
  const parsed = parseAddress(address);
  if (!parsed) return false;
  for (const entry of allow) {
    try {
      const [network, bits] = entry.includes('/') ? ipaddr.parseCIDR(entry) : [ipaddr.parse(entry), parsed.kind() === 'ipv4' ? 32 : 128];
      if (network.kind() === parsed.kind() && parsed.match(network as never, bits)) return true;
    } catch {
      // malformed test entry: ignore
    }
  }
  return false;
}

/** Throws NetGuardError unless `address` is public (or explicitly allowed for tests). */
export function assertPublicAddress(address: string, options: GuardOptions = {}, context = address): void {
  const verdict = classifyAddress(address);
  if (verdict.public || allowedForTests(address, options.unsafeAllowAddressesForTests)) return;
  throw new NetGuardError(
    verdict.range === 'invalid'
      ? `Refused ${context}: "${address}" is not an IP address.`
      : `Refused ${context}: ${verdict.address} is not a public address (${verdict.range}).`,
  );
}

/**
 * Resolves `hostname` (or takes an IP literal as is) and checks EVERY address it resolves to.
 * Returns the validated addresses; the caller connects to one of them and never resolves again.
 */
export async function resolvePublicAddresses(hostname: string, options: GuardOptions = {}): Promise<string[]> {
  if (!hostname) throw new NetGuardError('Refused: the URL has no host.');
  const literal = parseAddress(hostname);
  if (literal) {
    const address = literal.toString();
    assertPublicAddress(address, options, `host ${hostname}`);
    return [address];
  }
  let addresses: string[];
  try {
    addresses = await (options.resolve ?? systemResolver)(hostname);
  } catch (error) {
    throw new NetGuardError(`Could not resolve ${hostname}: ${(error as Error).message}`, 'Check the host name.');
  }
  if (addresses.length === 0) throw new NetGuardError(`${hostname} resolved to no address.`, 'Check the host name.');
  for (const address of addresses) assertPublicAddress(address, options, `host ${hostname} (resolves to ${address})`);
  return addresses.map((address) => parseAddress(address)!.toString());
}
