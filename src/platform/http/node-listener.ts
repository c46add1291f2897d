import type { IncomingMessage, Server } from 'node:http';
import { getRequestListener } from '@hono/node-server';

/**
 * Serves the app on a node:http server so that an answer given before the request's body was
 * read (413 to an upload too large, 401 to an upload without a token) reaches the client, even
 * one that sends its whole body before it reads (as many do).
 *
 * Closing a socket while body bytes are still arriving makes the kernel answer them with a
 * reset, and a reset can destroy the answer before the client reads it (@hono/node-server's own
 * clean-up closed the socket after 64 MiB or 500 ms of unread body). Here the rest of the body
 * is read and thrown away once the answer is sent (nothing of it is kept, and Node's
 * requestTimeout still ends a request that never finishes), and a connection the client asked
 * to close is closed only when its body has all arrived.
 */
export function serveApp(server: Server, fetch: Parameters<typeof getRequestListener>[0]): void {
  const listener = getRequestListener(fetch, { autoCleanupIncoming: false });
  server.on('request', (incoming, outgoing) => {
    // Node would close a "Connection: close" request's socket as soon as the answer is sent,
    // unread body or not; keep it open, and close it below once the body is in.
    const closeAfter = hasBody(incoming) && /(^|[\s,])close($|[\s,])/i.test(incoming.headers.connection ?? '');
    if (closeAfter) outgoing.setHeader('connection', 'keep-alive');
    outgoing.once('finish', () => {
      const socket = incoming.socket;
      if (closeAfter) {
        if (incoming.complete) socket.end();
        else incoming.once('end', () => socket.end());
      }
      if (!incoming.complete && !incoming.destroyed) {
        // Whoever stopped reading (a body limit, a route that refused first) will not read again.
        incoming.removeAllListeners('data');
        incoming.resume();
      }
    });
    void listener(incoming, outgoing);
  });
}

function hasBody(incoming: IncomingMessage): boolean {
  return incoming.headers['transfer-encoding'] !== undefined || Number(incoming.headers['content-length'] ?? 0) > 0;
}
