// A loopback HTTP proxy that adds `Authorization: Bearer <token>` to every request, for
// clients that cannot be given a header (the MCP conformance suite's server mode takes only a
// URL). Bodies and streamed responses (SSE) pass through untouched. A Host header naming the
// proxy itself is rewritten to name the upstream, as a client pointed at the upstream would
// send it; any other Host (a DNS-rebinding probe) is forwarded as sent, so the upstream's own
// Host check still decides.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface BearerProxy {
  /** The upstream URL with the proxy's origin, e.g. http://127.0.0.1:41000/mcp */
  url: string;
  close(): Promise<void>;
}

export async function startBearerProxy(upstreamUrl: string, token: string): Promise<BearerProxy> {
  const upstream = new URL(upstreamUrl);
  let ownPort = 0;
  const server = http.createServer((req, res) => {
    const headers = { ...req.headers, authorization: `Bearer ${token}` };
    const host = req.headers.host ?? '';
    const match = /^(127\.0\.0\.1|localhost|\[::1\]):(\d+)$/.exec(host);
    if (match && Number(match[2]) === ownPort) headers.host = `${match[1]}:${upstream.port}`;
    const forward = http.request(
      { hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', (error) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`bearer proxy: ${error.message}`);
    });
    req.pipe(forward);
    res.on('close', () => forward.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  ownPort = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${ownPort}${upstream.pathname}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
