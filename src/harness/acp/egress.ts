import type { LookupFunction } from 'node:net';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { errorMessage } from '../../core/errors.ts';
import { type Logger, silentLogger } from '../../util/logger.ts';
import { NetGuardError, resolvePublicAddresses } from '../../util/net-guard.ts';
import { describeNetworkPolicy, listedHost, NETWORK_POLICY_ENV, type NetworkPolicy } from './network-policy.ts';

/**
 * The broker's second job for a confined agent: its HTTP(S) proxy (HTTP_PROXY / HTTPS_PROXY
 * point here). Each destination is checked against the network policy before any connection is
 * made; a refusal is an HTTP 403 whose body says what was refused, why and how to allow it, so
 * the agent shows its user a reason instead of a DNS failure.
 */
export interface EgressGate {
  policy: NetworkPolicy;
  logger?: Logger;
  /** TEST ONLY: how names are resolved for the allow-all public-address check. */
  resolve?: (hostname: string) => Promise<string[]>;
}

type Verdict = { allowed: true; address?: string } | { allowed: false; reason: string };

export async function egressVerdict(gate: EgressGate, host: string): Promise<Verdict> {
  const { policy } = gate;
  if (listedHost(policy, host)) return { allowed: true };
  if (policy === 'deny-all') return { allowed: false, reason: 'the sandbox network policy is deny-all' };
  if (policy !== 'allow-all') return { allowed: false, reason: `it is not in the sandbox network policy (${describeNetworkPolicy(policy)})` };
  try {
    // allow-all means the public internet: the host's loopback services and private network
    // stay out of reach unless a host list names them. Connect to the checked address only.
    const [address] = await resolvePublicAddresses(host, gate.resolve ? { resolve: gate.resolve } : {});
    return { allowed: true, ...(address ? { address } : {}) };
  } catch (error) {
    return { allowed: false, reason: NetGuardError.isInstance(error) ? error.message : errorMessage(error) };
  }
}

function refusal(host: string, reason: string): string {
  return `acx sandbox: the connection to ${host} was refused: ${reason}. To allow it, set ${NETWORK_POLICY_ENV} (allow-all, or a comma-separated host list) or networkPolicy on the ACP profile.`;
}

const refusedOnce = new WeakMap<EgressGate, Set<string>>();

function logRefusal(gate: EgressGate, host: string, reason: string): void {
  const seen = refusedOnce.get(gate) ?? new Set<string>();
  refusedOnce.set(gate, seen);
  if (seen.has(host)) return;
  seen.add(host);
  (gate.logger ?? silentLogger).warn('acp sandbox egress refused', { host, reason });
}

/** A lookup that answers with the one address already checked (no second resolution to rebind). */
function fixedLookup(address: string): LookupFunction {
  const family = net.isIPv6(address) ? 6 : 4;
  return (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all) (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/** A proxied plain request (`GET http://host/path`). */
async function request(gate: EgressGate, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  let target: URL;
  try {
    target = new URL(req.url ?? '');
  } catch {
    res.writeHead(400, { 'content-type': 'text/plain' }).end('acx sandbox: not a URL');
    return;
  }
  const verdict = await egressVerdict(gate, target.hostname);
  if (!verdict.allowed) {
    logRefusal(gate, target.hostname, verdict.reason);
    res.writeHead(403, { 'content-type': 'text/plain' }).end(refusal(target.hostname, verdict.reason));
    return;
  }
  const headers: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) headers[k] = v;
  const send = target.protocol === 'https:' ? https.request : http.request;
  const upstream = send(target, { method: req.method ?? 'GET', headers, ...(verdict.address ? { lookup: fixedLookup(verdict.address) } : {}) }, (answer) => {
    const out: http.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(answer.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) out[k] = v;
    res.writeHead(answer.statusCode ?? 502, out);
    answer.pipe(res);
  });
  upstream.on('error', (error) => {
    if (res.headersSent) return void res.destroy();
    res.writeHead(502, { 'content-type': 'text/plain' }).end(`acx sandbox: cannot reach ${target.host}: ${describeNetworkError(error)}`);
  });
  res.on('close', () => upstream.destroy());
  req.pipe(upstream);
}

/** A tunnel (`CONNECT host:443`), for https and anything else spoken over TLS. */
async function connect(gate: EgressGate, req: http.IncomingMessage, client: net.Socket, head: Buffer): Promise<void> {
  client.on('error', () => {});
  const authority = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(req.url ?? '');
  const answer = (status: string, body: string) => client.end(`HTTP/1.1 ${status}\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  if (!authority) return void answer('400 Bad Request', 'acx sandbox: CONNECT needs host:port');
  const host = authority[1]!.replace(/^\[|\]$/g, '');
  const port = Number(authority[2]);
  const verdict = await egressVerdict(gate, host);
  if (!verdict.allowed) {
    logRefusal(gate, host, verdict.reason);
    return void answer('403 Forbidden', refusal(host, verdict.reason));
  }
  const upstream = net.connect({ host: verdict.address ?? host, port });
  let connected = false;
  upstream.once('connect', () => {
    connected = true;
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  upstream.on('error', (error) => {
    if (!connected) answer('502 Bad Gateway', `acx sandbox: cannot reach ${host}:${port}: ${describeNetworkError(error)}`);
    else client.destroy();
  });
  client.on('close', () => upstream.destroy());
}

export const serveEgress = {
  request: (gate: EgressGate, req: http.IncomingMessage, res: http.ServerResponse) => void request(gate, req, res),
  connect: (gate: EgressGate, req: http.IncomingMessage, socket: net.Socket, head: Buffer) => void connect(gate, req, socket, head),
};

export const UNKNOWN_HOST = new Set(['ENOTFOUND', 'EAI_NONAME', 'EAI_NODATA']);

/** A connection failure in words, naming what failed rather than an errno alone. */
export function describeNetworkError(error: Error): string {
  const code = (error as { code?: string }).code;
  if (code && UNKNOWN_HOST.has(code)) return 'the host name does not exist (DNS lookup failed)';
  if (code === 'ECONNREFUSED') return 'the connection was refused';
  if (code === 'ECONNRESET') return 'the connection was reset';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'the network cannot reach the host';
  return errorMessage(error);
}
