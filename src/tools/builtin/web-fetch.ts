import type http from 'node:http';
import type { Transform } from 'node:stream';
import { z } from 'zod';
import { NetGuardError, resolvePublicAddresses, type Resolver } from '../../util/net-guard.ts';
import type { Tool } from '../tool.ts';
import { HtmlTextError, htmlToText } from './html-text.ts';

/**
 * `web_fetch`: a read-only HTTPS GET of a model-chosen URL, fenced against SSRF. Only https; the
 * host is resolved and every address checked (util/net-guard.ts); the connection goes to the
 * validated address (pinned, no second lookup) with TLS verified against the URL's host name;
 * every redirect hop is checked the same way. The body is bounded, HTML is reduced to text and
 * binary bodies are described, not dumped. One signal (the tool's timeout or the turn's abort)
 * ends every phase: connecting, reading a body however it is encoded, and converting it.
 */
export interface WebFetchOptions {
  /** Raw body bytes read at most (default 2 MiB); the rest is cut with a note. */
  maxBytes?: number;
  /** Characters of text returned at most (default 100 000). */
  maxChars?: number;
  maxRedirects?: number;
  timeoutMs?: number;
  userAgent?: string;
  /** Extra trusted root certificates (PEM), added to Node's defaults. */
  ca?: string | Buffer | Array<string | Buffer>;
  resolve?: Resolver;
  /** TEST ONLY: addresses/CIDRs allowed although not public. Never wire to config or env. */
  unsafeAllowAddressesForTests?: readonly string[];
  /**
   * TEST ONLY: where to really connect for a validated address (e.g. a local TLS server standing
   * in for a public host). TLS is still verified against the URL's host. Never wire to config.
   */
  unsafeDialForTests?: (address: string, port: number) => { host: string; port: number };
}

export interface WebFetchResult {
  url: string;
  status: number;
  statusText: string;
  contentType: string;
  /** Body bytes received (decoded), at most maxBytes. */
  bytes: number;
  /** The body was longer than maxBytes (or the text longer than maxChars) and was cut. */
  truncated: boolean;
  binary: boolean;
  text: string;
  redirects: string[];
}

export const webFetchInputSchema = z.object({
  url: z.string().min(1).max(8192).describe('The https URL of the page to read.'),
});

const DEFAULTS = { maxBytes: 2 * 1024 * 1024, maxChars: 100_000, maxRedirects: 5, timeoutMs: 20_000 };

export async function webFetch(rawUrl: string, options: WebFetchOptions = {}, signal?: AbortSignal): Promise<WebFetchResult> {
  const maxRedirects = options.maxRedirects ?? DEFAULTS.maxRedirects;
  const timeoutMs = options.timeoutMs ?? DEFAULTS.timeoutMs;
  const combined = signal ? AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs);
  const redirects: string[] = [];
  let url = parseHttpsUrl(rawUrl);
  try {
    for (;;) {
      const response = await requestOnce(url, options, combined);
      const location = response.headers.location;
      if (response.statusCode && response.statusCode >= 300 && response.statusCode < 400 && location) {
        response.destroy();
        if (redirects.length >= maxRedirects) {
          throw new NetGuardError(`Refused: more than ${maxRedirects} redirects.`, 'Fetch the final URL directly.');
        }
        let next: URL;
        try {
          next = new URL(location, url);
        } catch {
          throw new NetGuardError(`The server redirected to an invalid URL "${location}".`);
        }
        redirects.push(url.href);
        url = parseHttpsUrl(next.href, `redirect from ${url.href}`);
        continue;
      }
      return await readResponse(url, response, redirects, options, combined);
    }
  } catch (error) {
    if (!combined.aborted) throw error;
    throw signal?.aborted
      ? new NetGuardError(`Fetching ${url.href} was cancelled.`, 'The call was stopped before the page was read.')
      : new NetGuardError(`Fetching ${url.href} timed out after ${timeoutMs / 1000} s.`, 'Try again later, or fetch a smaller page.');
  }
}

function parseHttpsUrl(raw: string, context = 'URL'): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new NetGuardError(`"${raw}" is not a valid URL.`, 'Give an absolute https:// URL.');
  }
  if (url.protocol !== 'https:') {
    throw new NetGuardError(`Refused ${context} ${url.href}: only https URLs can be fetched (got ${url.protocol}).`);
  }
  if (url.username || url.password) {
    throw new NetGuardError(`Refused ${context}: URLs with credentials are not fetched.`, 'Remove the user:password@ part.');
  }
  return url;
}

async function requestOnce(url: URL, options: WebFetchOptions, signal: AbortSignal): Promise<http.IncomingMessage> {
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const addresses = await resolvePublicAddresses(hostname, {
    resolve: options.resolve,
    unsafeAllowAddressesForTests: options.unsafeAllowAddressesForTests,
  });
  // Taken on the first fetch, not imported: importing node:http or node:tls as an ES module reads
  // every export, which loads Node's bundled undici (tens of ms on every acx start).
  const http = process.getBuiltinModule('node:http');
  const net = process.getBuiltinModule('node:net');
  const tls = process.getBuiltinModule('node:tls');
  const address = addresses[0]!;
  const port = url.port ? Number(url.port) : 443;
  const dial = options.unsafeDialForTests?.(address, port) ?? { host: address, port };
  const ca = options.ca === undefined ? undefined : [...tls.rootCertificates, ...(Array.isArray(options.ca) ? options.ca : [options.ca])];
  return new Promise((resolve, reject) => {
    const request = http.request({
      method: 'GET',
      path: `${url.pathname}${url.search}`,
      headers: {
        host: url.host,
        'user-agent': options.userAgent ?? 'acx-web-fetch/1',
        accept: 'text/html, text/plain, application/json, */*;q=0.5',
        'accept-encoding': 'gzip, deflate, br',
      },
      signal,
      // Connect to the validated address only (no second DNS lookup); verify TLS for the URL's host.
      createConnection: () =>
        tls.connect({
          host: dial.host,
          port: dial.port,
          servername: net.isIP(hostname) ? undefined : hostname,
          ca,
          ALPNProtocols: ['http/1.1'],
          checkServerIdentity: (_host, cert) => tls.checkServerIdentity(hostname, cert),
        }),
    });
    request.on('response', resolve);
    // After an abort, webFetch says which signal ended the call.
    request.on('error', (error) => reject(new Error(`Fetching ${url.href} failed: ${error.message}`)));
    request.end();
  });
}

async function readResponse(
  url: URL,
  response: http.IncomingMessage,
  redirects: string[],
  options: WebFetchOptions,
  signal: AbortSignal,
): Promise<WebFetchResult> {
  const maxBytes = options.maxBytes ?? DEFAULTS.maxBytes;
  const maxChars = options.maxChars ?? DEFAULTS.maxChars;
  const contentType = String(response.headers['content-type'] ?? '').trim();
  const { buffer, bytes, truncated: cut } = await readBody(url, response, maxBytes, signal);
  let truncated = cut;
  const mediaType = contentType.split(';')[0]!.trim().toLowerCase();
  const base = {
    url: url.href,
    status: response.statusCode ?? 0,
    statusText: response.statusMessage ?? '',
    contentType: contentType || 'unknown',
    bytes,
    redirects,
  };
  if (isBinary(mediaType, buffer)) {
    const declared = Number(response.headers['content-length']);
    const size = Number.isFinite(declared) && declared > 0 ? declared : bytes;
    const text = `Binary content (${contentType || 'unknown type'}, ${truncated ? `more than ${bytes}` : size} bytes); not shown.`;
    return { ...base, binary: true, truncated, text };
  }
  let text = decodeText(buffer, contentType);
  if (mediaType === 'text/html' || mediaType === 'application/xhtml+xml') {
    try {
      text = await htmlToText(text, signal);
    } catch (error) {
      if (!(error instanceof HtmlTextError)) throw error;
      throw new Error(`Fetching ${url.href}: the page could not be reduced to text (${error.message}).`);
    }
  }
  if (text.length > maxChars) {
    text = text.slice(0, maxChars);
    truncated = true;
  }
  return { ...base, binary: false, truncated, text };
}

/**
 * Reads at most maxBytes of the decoded body. One pipeline from the socket through the decoder:
 * an abort, a reset connection or a corrupt stream destroys every stage, so a compressed body
 * that stalls ends with the signal instead of leaving the decoder waiting forever.
 */
async function readBody(
  url: URL,
  response: http.IncomingMessage,
  maxBytes: number,
  signal: AbortSignal,
): Promise<{ buffer: Buffer; bytes: number; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  let truncated = false;
  const collect = async (source: AsyncIterable<Buffer>): Promise<void> => {
    for await (const chunk of source) {
      const room = maxBytes - bytes;
      if (chunk.length > room) {
        chunks.push(chunk.subarray(0, room));
        bytes += room;
        truncated = true;
        return;
      }
      chunks.push(chunk);
      bytes += chunk.length;
    }
  };
  const decoder = decoderFor(response);
  try {
    const { pipeline } = process.getBuiltinModule('node:stream/promises');
    if (decoder) await pipeline(response, decoder, collect, { signal });
    else await pipeline(response, collect, { signal });
  } catch (error) {
    if (signal.aborted) throw error;
    // Stopping at the byte limit ends the pipeline early; that is not a failure.
    if (!truncated) throw new Error(`Fetching ${url.href} failed while reading the body: ${(error as Error).message}`);
  } finally {
    response.destroy();
  }
  return { buffer: Buffer.concat(chunks), bytes, truncated };
}

function decoderFor(response: http.IncomingMessage): Transform | undefined {
  const encoding = String(response.headers['content-encoding'] ?? '').trim().toLowerCase();
  // node:zlib and node:stream/promises load on the first fetch, not with the tool: most runs never fetch.
  const zlib = process.getBuiltinModule('node:zlib');
  if (encoding === 'gzip' || encoding === 'x-gzip') return zlib.createGunzip();
  if (encoding === 'deflate') return zlib.createInflate();
  if (encoding === 'br') return zlib.createBrotliDecompress();
  return undefined;
}

const TEXT_TYPES = /^(text\/|application\/(json|xml|javascript|ecmascript|x-yaml|yaml|toml|x-sh|ld\+json|rss\+xml|atom\+xml|xhtml\+xml)$|application\/[\w.-]+\+(json|xml)$)/;

function isBinary(mediaType: string, buffer: Buffer): boolean {
  if (mediaType) return !TEXT_TYPES.test(mediaType);
  return buffer.subarray(0, 8192).includes(0);
}

function decodeText(buffer: Buffer, contentType: string): string {
  const charset = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType)?.[1];
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(buffer);
  } catch {
    return new TextDecoder('utf-8').decode(buffer);
  }
}

export function formatWebFetchResult(result: WebFetchResult, maxBytes: number): string {
  const lines = [`URL: ${result.url}`, `Status: ${result.status} ${result.statusText}`.trimEnd(), `Content-Type: ${result.contentType}`];
  if (result.redirects.length > 0) lines.push(`Redirected from: ${result.redirects.join(' -> ')}`);
  lines.push('', result.text);
  if (result.truncated && !result.binary) lines.push(`\n[truncated: the page is longer than the ${maxBytes}-byte limit or the text limit; only the beginning is shown]`);
  return lines.join('\n');
}

export function createWebFetchTool(options: WebFetchOptions = {}): Tool<z.infer<typeof webFetchInputSchema>> {
  return {
    name: 'web_fetch',
    description:
      'Read one web page by URL (https only, public hosts only) and get its content as readable text. ' +
      'Long pages are cut; images and other binary files are described, not shown.',
    inputSchema: webFetchInputSchema,
    capabilityScopes: ['net.fetch'],
    kind: 'fetch',
    effect: 'read-only',
    async execute(input, context) {
      const result = await webFetch(input.url, options, context.abortSignal);
      return formatWebFetchResult(result, options.maxBytes ?? DEFAULTS.maxBytes);
    },
  };
}
