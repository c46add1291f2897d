// A gate a chat app's `gate` tool waits at: an HTTP server on 127.0.0.1 whose every GET is held
// until the test opens the gate, so a turn is deterministically in the middle of a tool call.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Gate {
  url: string;
  /** Resolves once a request is waiting at the gate (the tool is running). */
  reached(): Promise<void>;
  /** Answers the waiting requests and every later one with `answer`. */
  open(answer?: string): void;
  close(): Promise<void>;
}

export async function startGate(): Promise<Gate> {
  const waiting: ServerResponse[] = [];
  const arrivals: Array<() => void> = [];
  let answer: string | undefined;
  const server = createServer((_req, res) => {
    if (answer !== undefined) return void res.end(answer);
    waiting.push(res);
    for (const arrived of arrivals.splice(0)) arrived();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    reached: () => (waiting.length > 0 ? Promise.resolve() : new Promise((resolve) => arrivals.push(resolve))),
    open(text = 'gate open') {
      answer = text;
      for (const res of waiting.splice(0)) res.end(text);
    },
    close: () =>
      new Promise((resolve) => {
        for (const res of waiting.splice(0)) res.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
